package decoding

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners/whisper/whispertokenizer"
)

func TestSuppressList(t *testing.T) {
	tok := testTokenizer(t, multi99)
	// _get_suppress_tokens always adds transcribe 50359, translate 50358, sot 50258,
	// sot_prev 50361, sot_lm 50360 and no_speech 50362 (multilingual ids).
	specials := []int{50258, 50358, 50359, 50360, 50361, 50362}
	require.Equal(t, specials, SuppressList(tok, nil))
	require.Equal(t, append([]int{7, 11}, specials...), SuppressList(tok, []int{11, 7, 11}))
	got := SuppressList(tok, []int{-1, 3})
	want := append(append([]int{}, tok.NonSpeechTokens()...), specials...)
	want = append(want, 3)
	require.ElementsMatch(t, want, got)
	require.IsIncreasing(t, got)
}

func TestBlankTokens(t *testing.T) {
	tok := testTokenizer(t, multi99)
	// encode(" ") is [220] in both vocabularies; EOT 50257 (HF's begin_suppress_tokens).
	require.Equal(t, []int{220, 50257}, BlankTokens(tok))
}

func TestFiltersApply(t *testing.T) {
	tok := testTokenizer(t, multi99)
	f, err := NewFilters(tok, DefaultOptions())
	require.NoError(t, err)
	tb := tok.TimestampBegin()

	// First step, all logits 0 except a strong blank: suppress_blank removes 220 and EOT,
	// the timestamp rules force a timestamp in <|0.00|>..<|1.00|> (index 50).
	logits := make([]float32, tok.NVocab())
	logits[220] = 10
	require.NoError(t, f.Apply(logits, nil))
	id, err := Greedy(logits)
	require.NoError(t, err)
	require.Equal(t, tb, id, "first token must be the first allowed timestamp")
	for i, v := range logits {
		allowed := i >= tb && i <= tb+50
		require.Equal(t, allowed, !math.IsInf(float64(v), -1), "token %d", i)
	}

	// After "<|0.00|> The": a strong " quick" (1702) stays selectable, non-speech "(" and
	// the task tokens are gone.
	logits = make([]float32, tok.NVocab())
	logits[1702] = 20
	require.NoError(t, f.Apply(logits, []int{tb, 440}))
	id, err = Greedy(logits)
	require.NoError(t, err)
	require.Equal(t, 1702, id)
	for _, s := range append(tok.NonSpeechTokens(), tok.Transcribe(), tok.NoSpeech(), tok.NoTimestamps(), tb) {
		require.True(t, math.IsInf(float64(logits[s]), -1), "token %d not suppressed", s)
	}

	// Without timestamps the first token may be text, and blank is still suppressed.
	opts := DefaultOptions()
	opts.WithoutTimestamps = true
	f2, err := NewFilters(tok, opts)
	require.NoError(t, err)
	logits = make([]float32, tok.NVocab())
	logits[220], logits[440] = 10, 5
	require.NoError(t, f2.Apply(logits, nil))
	id, err = Greedy(logits)
	require.NoError(t, err)
	require.Equal(t, 440, id)

	require.ErrorIs(t, f.Apply(make([]float32, 51872), nil), ErrLogitsSize, "padded vocab must be sliced by the caller")
	_, err = NewFilters(tok, Options{SuppressTokens: "99999999"})
	require.ErrorIs(t, err, ErrBadOption)
	_, err = NewFilters(tok, Options{SuppressTokens: "-1", MaxInitialTimestamp: -1})
	require.ErrorIs(t, err, ErrBadOption)
}

func TestDetectLanguage(t *testing.T) {
	tok := testTokenizer(t, multi99)
	logits := make([]float32, tok.NVocab())
	de, _ := tok.LanguageToken("de")
	fr, _ := tok.LanguageToken("fr")
	logits[de], logits[fr] = 5, 5
	logits[440] = 100 // a text token: masked, never a language
	got, err := DetectLanguage(logits, tok)
	require.NoError(t, err)
	// Tie between de and fr: argmax takes the first in LANGUAGES order, "de" (index 2).
	require.Equal(t, "de", got.Code)
	require.Equal(t, de, got.Token)
	require.Len(t, got.Probs, 99)
	// Softmax over the 99 language logits: exp(5) / (2 exp(5) + 97).
	want := math.Exp(5) / (2*math.Exp(5) + 97)
	require.InDelta(t, want, got.Probs["de"], 1e-9)
	require.InDelta(t, want, got.Probs["fr"], 1e-9)
	require.InDelta(t, 1/(2*math.Exp(5)+97), got.Probs["en"], 1e-9)
	var sum float64
	for _, p := range got.Probs {
		sum += p
	}
	require.InDelta(t, 1, sum, 1e-9)

	v3 := testTokenizer(t, whispertokenizer.Config{Multilingual: true, NumLanguages: 100})
	logits = make([]float32, v3.NVocab())
	yue, err := v3.LanguageToken("yue")
	require.NoError(t, err)
	logits[yue] = 3
	got, err = DetectLanguage(logits, v3)
	require.NoError(t, err)
	require.Equal(t, "yue", got.Code)
	_, err = DetectLanguage(make([]float32, 10), v3)
	require.ErrorIs(t, err, ErrLogitsSize)
}

func TestWindowText(t *testing.T) {
	tok := testTokenizer(t, multi99)
	tb := tok.TimestampBegin()
	// DecodingResult.text = tokenizer.decode(tokens).strip(): timestamps dropped.
	s, err := WindowText(tok, []int{tb, 440, 1702, 6292, 13, tb + 50})
	require.NoError(t, err)
	require.Equal(t, "The quick brown.", s)
}
