package transcribe

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners/whisper/decoding"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper/whispertokenizer"
)

// wantSeg is a segment as written out by hand from transcribe()'s rules.
type wantSeg struct {
	seek       int
	start, end float64
	text       string
	tokens     []int
	temp       float64
}

func requireSegments(t *testing.T, want []wantSeg, got []Segment) {
	t.Helper()
	require.Len(t, got, len(want))
	for i, w := range want {
		g := got[i]
		require.Equal(t, i, g.ID, "segment %d id", i)
		require.Equal(t, w.seek, g.Seek, "segment %d seek", i)
		require.InDelta(t, w.start, g.Start, 1e-9, "segment %d start", i)
		require.InDelta(t, w.end, g.End, 1e-9, "segment %d end", i)
		require.Equal(t, w.text, g.Text, "segment %d text", i)
		require.Equal(t, w.tokens, g.Tokens, "segment %d tokens", i)
		require.Equal(t, w.temp, g.Temperature, "segment %d temperature", i)
	}
}

func TestTranscribeRules(t *testing.T) {
	tok := byteTokenizer(t)
	en, _ := tok.LanguageToken("en")
	de, _ := tok.LanguageToken("de")
	ja, _ := tok.LanguageToken("ja")
	sot, tr, tl, prev := tok.SOT(), tok.Transcribe(), tok.Translate(), tok.SOTPrev()
	T := func(sec float64) int { return ts(tok, sec) }
	la := strings.Repeat(" la", 30)
	// nearZero: every sampled token was favoured by the margin, log p ~ -n_vocab*e^-30.
	nearZero := func(int) float64 { return 0 }

	tests := []struct {
		name     string
		audioSec float64
		opts     func(*Options)
		windows  []fakeWindow
		want     []wantSeg
		wantText string
		wantLang string
		// wantFed are the decoder inputs before the first sampled token, per attempt.
		wantFed [][]int
		// avgLogProb maps a segment index to its expected window avg_logprob.
		avgLogProb func(i int) float64
		noSpeech   []float64 // expected no_speech_prob per segment (nil: not checked)
	}{
		{
			name:     "plain two-segment window",
			audioSec: 10,
			windows: []fakeWindow{{attempts: [][]int{
				seq(tok, T(0), " Hello", T(2), T(2), " world", T(4.5)),
			}}},
			// Two timestamp pairs close two segments; a single timestamp at the end means the
			// rest of the window is silent, so seek moves past the window (10 s: done).
			want: []wantSeg{
				{0, 0, 2, " Hello", seq(tok, T(0), " Hello", T(2)), 0},
				{0, 2, 4.5, " world", seq(tok, T(2), " world", T(4.5)), 0},
			},
			wantText:   " Hello world",
			wantLang:   "en",
			wantFed:    [][]int{{sot, en, tr}},
			avgLogProb: nearZero,
			noSpeech:   []float64{1 / float64(tok.NVocab()), 1 / float64(tok.NVocab())},
		},
		{
			name:     "timestamp rules force pairs and monotonic timestamps",
			audioSec: 10,
			opts:     func(o *Options) { o.Temperatures = []float64{0} },
			windows: []fakeWindow{{attempts: [][]int{
				// The model wants text right after the lone <|1.00|> and later a timestamp
				// going back to <|0.80|>.
				seq(tok, T(0), " Hi", T(1), " there", T(0.8)),
			}}},
			// After the lone <|1.00|> text is forbidden; the 1451 timestamps >= <|1.00|> then
			// outweigh EOT and the language tokens, so only timestamps remain and greedy takes
			// the first, <|1.00|> (the " " of " there" is lost). After "there" a timestamp
			// must be later than <|1.00|>: <|0.80|> is suppressed and the 1450 timestamps from
			// <|1.02|> outweigh every text token, so <|1.02|> is taken; then EOT.
			want: []wantSeg{
				{0, 0, 1, " Hi", seq(tok, T(0), " Hi", T(1)), 0},
				{0, 1, 1.02, "there", seq(tok, T(1), "there", T(1.02)), 0},
			},
			wantText: " Hithere",
			wantLang: "en",
			wantFed:  [][]int{{sot, en, tr}},
			// The two forced timestamps had probability 1/1451 and 1/1450; 12 tokens + EOT.
			avgLogProb: func(int) float64 { return -(math.Log(1451) + math.Log(1450)) / 13 },
		},
		{
			name:     "max initial timestamp",
			audioSec: 10,
			windows: []fakeWindow{{attempts: [][]int{
				seq(tok, T(1.5), " Yo", T(2)),
			}}},
			// <|1.50|> is past max_initial_timestamp 1.0: only <|0.00|>..<|1.00|> remain, all
			// equal, and greedy takes <|0.00|>. No pair: one segment ending at the last
			// timestamp.
			want:     []wantSeg{{0, 0, 2, " Yo", seq(tok, T(0), " Yo", T(2)), 0}},
			wantText: " Yo",
			wantLang: "en",
			wantFed:  [][]int{{sot, en, tr}},
			// The first token had probability 1/51; 5 tokens + EOT.
			avgLogProb: func(int) float64 { return -math.Log(51) / 6 },
		},
		{
			name:     "fallback on repetition then success at 0.2",
			audioSec: 10,
			windows: []fakeWindow{{attempts: [][]int{
				seq(tok, T(0), la),
				seq(tok, T(0), " Hello", T(2)),
			}}},
			// " la la ..." compresses far beyond 2.4: decoded again at 0.2, which succeeds.
			want:       []wantSeg{{0, 0, 2, " Hello", seq(tok, T(0), " Hello", T(2)), 0.2}},
			wantText:   " Hello",
			wantLang:   "en",
			wantFed:    [][]int{{sot, en, tr}, {sot, en, tr}},
			avgLogProb: nearZero,
		},
		{
			name:     "no-speech window skipped, seek advances by the window",
			audioSec: 40,
			windows: []fakeWindow{
				// Silence: <|nospeech|> dominates at the SOT position and the model favours
				// nothing, so the forced first timestamp has log p = -ln 51 and
				// avg_logprob = -ln(51)/2 < -1: no fallback (silence), then skipped.
				{noSpeech: 40, attempts: [][]int{{flat}}},
				{attempts: [][]int{seq(tok, T(0), " Hi", T(1))}},
			},
			want:       []wantSeg{{3000, 30, 31, " Hi", seq(tok, T(0), " Hi", T(1)), 0}},
			wantText:   " Hi",
			wantLang:   "en",
			wantFed:    [][]int{{sot, en, tr}, {sot, en, tr}},
			avgLogProb: nearZero,
			noSpeech:   []float64{1 / float64(tok.NVocab())},
		},
		{
			name:     "language detection picks Japanese",
			audioSec: 10,
			opts:     func(o *Options) { o.Language = "" },
			windows: []fakeWindow{
				// Under 30 s the detection window (log-mel of the zero-padded audio) differs
				// from the decoded one (frames past the audio zeroed), so it is encoded apart.
				{language: ja},
				{attempts: [][]int{seq(tok, T(0), " こんにちは", T(1.5))}},
			},
			want:       []wantSeg{{0, 0, 1.5, " こんにちは", seq(tok, T(0), " こんにちは", T(1.5)), 0}},
			wantText:   " こんにちは",
			wantLang:   "ja",
			wantFed:    [][]int{{sot}, {sot, ja, tr}},
			avgLogProb: nearZero,
		},
		{
			name:     "seek advance across two windows, times re-based, previous text as prompt",
			audioSec: 50,
			windows: []fakeWindow{
				{attempts: [][]int{seq(tok, T(0), " A", T(10), T(10), " B", T(24), T(24), " C")}},
				{attempts: [][]int{seq(tok, T(0), " C", T(4), T(4), " D", T(5.6))}},
			},
			// Window 0 ends in unfinished text: " C" is dropped and the next window starts at
			// the last complete timestamp, 24 s (frame 2400). Window 1 holds 26 s (2600
			// frames) and ends with a single timestamp: seek moves to the end.
			want: []wantSeg{
				{0, 0, 10, " A", seq(tok, T(0), " A", T(10)), 0},
				{0, 10, 24, " B", seq(tok, T(10), " B", T(24)), 0},
				{2400, 24, 28, " C", seq(tok, T(0), " C", T(4)), 0},
				{2400, 28, 29.6, " D", seq(tok, T(4), " D", T(5.6)), 0},
			},
			wantText: " A B C D",
			wantLang: "en",
			wantFed: [][]int{
				{sot, en, tr},
				seq(tok, prev, T(0), " A", T(10), T(10), " B", T(24), sot, en, tr),
			},
			avgLogProb: nearZero,
		},
		{
			name:     "temperature above 0.5 resets the prompt",
			audioSec: 40,
			opts:     func(o *Options) { o.Temperatures = []float64{0, 0.6} },
			windows: []fakeWindow{
				{attempts: [][]int{seq(tok, T(0), la), seq(tok, T(0), " Hello", T(2))}},
				{attempts: [][]int{seq(tok, T(0), " Bye", T(1))}},
			},
			want: []wantSeg{
				{0, 0, 2, " Hello", seq(tok, T(0), " Hello", T(2)), 0.6},
				{3000, 30, 31, " Bye", seq(tok, T(0), " Bye", T(1)), 0},
			},
			wantText:   " Hello Bye",
			wantLang:   "en",
			wantFed:    [][]int{{sot, en, tr}, {sot, en, tr}, {sot, en, tr}},
			avgLogProb: nearZero,
		},
		{
			name:     "initial prompt conditions the first window and is not in the text",
			audioSec: 10,
			opts:     func(o *Options) { o.InitialPrompt = "  Glossary: Tenstorrent " },
			windows:  []fakeWindow{{attempts: [][]int{seq(tok, T(0), " Hi", T(1))}}},
			want:     []wantSeg{{0, 0, 1, " Hi", seq(tok, T(0), " Hi", T(1)), 0}},
			wantText: " Hi",
			wantLang: "en",
			wantFed: [][]int{
				seq(tok, prev, " Glossary: Tenstorrent", sot, en, tr),
			},
			avgLogProb: nearZero,
		},
		{
			name:     "translation task tokens in the SOT sequence",
			audioSec: 10,
			opts: func(o *Options) {
				o.Language = "German"
				o.Task = whispertokenizer.TaskTranslate
			},
			windows:    []fakeWindow{{attempts: [][]int{seq(tok, T(0), " Good morning", T(2))}}},
			want:       []wantSeg{{0, 0, 2, " Good morning", seq(tok, T(0), " Good morning", T(2)), 0}},
			wantText:   " Good morning",
			wantLang:   "de",
			wantFed:    [][]int{{sot, de, tl}},
			avgLogProb: nearZero,
		},
		{
			name:     "empty audio: the language is still detected, nothing decoded",
			audioSec: 0,
			opts:     func(o *Options) { o.Language = "" },
			windows:  []fakeWindow{{language: mustLang(t, tok, "fr")}},
			wantLang: "fr",
			wantFed:  [][]int{{sot}},
		},
		{
			name:     "instantaneous segment keeps its times but no text",
			audioSec: 10,
			windows: []fakeWindow{{attempts: [][]int{
				seq(tok, T(0), " Hi", T(1), T(1), " ", T(1.5)),
			}}},
			want: []wantSeg{
				{0, 0, 1, " Hi", seq(tok, T(0), " Hi", T(1)), 0},
				{0, 1, 1.5, "", nil, 0},
			},
			wantText:   " Hi",
			wantLang:   "en",
			wantFed:    [][]int{{sot, en, tr}},
			avgLogProb: nearZero,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := &fakeModel{tok: tok, windows: tc.windows}
			opts := byteOptions()
			if tc.opts != nil {
				tc.opts(&opts)
			}
			var streamed []Segment
			res, err := Transcribe(context.Background(), m, tok, silence(tc.audioSec), opts, func(s Segment) {
				streamed = append(streamed, s)
			})
			require.NoError(t, err)
			requireSegments(t, tc.want, res.Segments)
			require.Equal(t, res.Segments, streamed, "onSegment sees every segment in order")
			require.Equal(t, tc.wantText, res.Text)
			require.Equal(t, tc.wantLang, res.Language)
			require.Len(t, m.fed, len(tc.wantFed), "decoding attempts")
			for i, w := range tc.wantFed {
				require.GreaterOrEqual(t, len(m.fed[i]), len(w))
				require.Equal(t, w, m.fed[i][:len(w)], "attempt %d initial tokens", i)
			}
			require.Equal(t, len(tc.windows), m.encodes, "every scripted window encoded")
			require.Equal(t, m.encodes, m.closed, "every encoder state closed")
			for i, s := range res.Segments {
				require.InDelta(t, tc.avgLogProb(i), s.AvgLogProb, 1e-6, "segment %d avg_logprob", i)
				require.Less(t, s.CompressionRatio, 2.4)
				if tc.noSpeech != nil {
					require.InDelta(t, tc.noSpeech[i], s.NoSpeechProb, 1e-9, "segment %d no_speech_prob", i)
				}
			}
		})
	}
}

func TestLanguageProbs(t *testing.T) {
	tok := byteTokenizer(t)
	ja, _ := tok.LanguageToken("ja")
	m := &fakeModel{tok: tok, windows: []fakeWindow{
		// 40 s: the first window's features serve detection and decoding (one Encode).
		{language: ja, attempts: [][]int{seq(tok, tok.TimestampBegin(), " はい", ts(tok, 1))}},
		{attempts: [][]int{seq(tok, tok.TimestampBegin(), " いいえ", ts(tok, 1))}},
	}}
	opts := byteOptions()
	opts.Language = ""
	res, err := Transcribe(context.Background(), m, tok, silence(40), opts, nil)
	require.NoError(t, err)
	require.Equal(t, "ja", res.Language)
	require.Greater(t, res.LanguageProbs["ja"], 0.999)
	require.Equal(t, 2, m.encodes)
	require.Equal(t, " はい いいえ", res.Text)
}

// TestPartialUTF8 uses the real multilingual vocabulary, where a rare character is split
// over byte tokens.
func TestPartialUTF8(t *testing.T) {
	tok := realTokenizer(t)
	en, _ := tok.LanguageToken("en")
	// U+1D11E (4 bytes) is not a token of its own: check that it is split.
	clef := tok.Encode(" 𝄞")
	var partial int
	for _, id := range clef {
		b, err := tok.TokenBytes(id)
		require.NoError(t, err)
		if !utf8.Valid(b) {
			partial++
		}
	}
	require.Positive(t, partial, "the test needs a character split across tokens: %v", clef)
	T := func(sec float64) int { return ts(tok, sec) }

	t.Run("inside a segment", func(t *testing.T) {
		m := &fakeModel{tok: tok, windows: []fakeWindow{{attempts: [][]int{
			seq(tok, T(0), clef, " music", T(2)),
		}}}}
		opts := DefaultOptions()
		opts.Language = "en"
		var streamed strings.Builder
		res, err := Transcribe(context.Background(), m, tok, silence(5), opts, func(s Segment) { streamed.WriteString(s.Text) })
		require.NoError(t, err)
		requireSegments(t, []wantSeg{{0, 0, 2, " 𝄞 music", seq(tok, T(0), clef, " music", T(2)), 0}}, res.Segments)
		require.Equal(t, " 𝄞 music", res.Text)
		require.Equal(t, res.Text, streamed.String())
		require.Equal(t, []int{tok.SOT(), en, tok.Transcribe()}, m.fed[0][:3])
	})

	t.Run("across a segment boundary", func(t *testing.T) {
		// Each segment decodes its own bytes (invalid halves become U+FFFD, as whisper's
		// per-segment decode), while the full text joins the bytes across the timestamps.
		require.GreaterOrEqual(t, len(clef), 2)
		first, rest := clef[:len(clef)-1], clef[len(clef)-1:]
		firstText, err := tok.DecodeText(first)
		require.NoError(t, err)
		restText, err := tok.DecodeText(rest)
		require.NoError(t, err)
		require.Contains(t, restText, "\uFFFD")
		m := &fakeModel{tok: tok, windows: []fakeWindow{{attempts: [][]int{
			seq(tok, T(0), first, T(1), T(1), rest, T(2)),
		}}}}
		opts := DefaultOptions()
		opts.Language = "en"
		res, err := Transcribe(context.Background(), m, tok, silence(5), opts, nil)
		require.NoError(t, err)
		requireSegments(t, []wantSeg{
			{0, 0, 1, firstText, seq(tok, T(0), first, T(1)), 0},
			{0, 1, 2, restText, seq(tok, T(1), rest, T(2)), 0},
		}, res.Segments)
		require.Equal(t, " 𝄞", res.Text)
	})
}

func TestSampleLenCap(t *testing.T) {
	tok := byteTokenizer(t)
	// 300 pseudo-random letters: the model never ends the window by itself.
	var b strings.Builder
	x := uint32(1)
	for range 300 {
		x = x*1664525 + 1013904223
		b.WriteByte("abcdefghijklmnopqrstuvwxyz "[x>>27%27])
	}
	text := b.String()
	script := tok.Encode(text)
	require.Len(t, script, 300)
	m := &fakeModel{tok: tok, windows: []fakeWindow{{attempts: [][]int{script}}}}
	opts := byteOptions()
	opts.Temperatures = []float64{0}
	opts.Decoding.WithoutTimestamps = true
	res, err := Transcribe(context.Background(), m, tok, silence(10), opts, nil)
	require.NoError(t, err)
	// No timestamps: one segment over the whole window with the first 224 tokens.
	requireSegments(t, []wantSeg{{0, 0, 10, text[:224], script[:224], 0}}, res.Segments)
	// [SOT] then the rest of the sot sequence, then one step per sampled token after the first.
	require.Equal(t, 2+223, m.steps)
	require.Equal(t, []int{tok.SOT(), mustLang(t, tok, "en"), tok.Transcribe(), tok.NoTimestamps()}, m.fed[0][:4])
	require.InDelta(t, 0, res.Segments[0].AvgLogProb, 1e-6)
	require.InDelta(t, decoding.CompressionRatio(decoding.Strip(text[:224])), res.Segments[0].CompressionRatio, 1e-12)
}

func mustLang(t *testing.T, tok *whispertokenizer.Tokenizer, code string) int {
	t.Helper()
	id, err := tok.LanguageToken(code)
	require.NoError(t, err)
	return id
}

func TestCancellation(t *testing.T) {
	tok := byteTokenizer(t)
	T := func(sec float64) int { return ts(tok, sec) }
	long := seq(tok, T(0), " one two three four five six", T(5))

	t.Run("between decoder steps", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		const at = 6
		m := &fakeModel{tok: tok, windows: []fakeWindow{{attempts: [][]int{long}}}}
		m.onStep = func(n int) {
			if n == at {
				cancel()
			}
		}
		opts := byteOptions()
		res, err := Transcribe(ctx, m, tok, silence(10), opts, func(Segment) { t.Error("no segment expected") })
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, at, m.steps, "no decoder step after the one that saw the cancellation")
		require.Empty(t, res.Segments)
		require.Equal(t, 1, m.closed)
	})

	t.Run("between windows", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		m := &fakeModel{tok: tok, windows: []fakeWindow{
			{attempts: [][]int{seq(tok, T(0), " Hi", T(1))}},
			{attempts: [][]int{seq(tok, T(0), " never", T(1))}},
		}}
		opts := byteOptions()
		res, err := Transcribe(ctx, m, tok, silence(40), opts, func(Segment) { cancel() })
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, 1, m.encodes, "the second window is not encoded")
		require.Len(t, res.Segments, 1)
		require.Equal(t, " Hi", res.Text)
	})
}

func TestModelErrors(t *testing.T) {
	tok := byteTokenizer(t)
	// No scripted window: Encode fails and the error is wrapped.
	m := &fakeModel{tok: tok}
	opts := DefaultOptions()
	opts.Language = "en"
	_, err := Transcribe(context.Background(), m, tok, silence(1), opts, nil)
	require.ErrorContains(t, err, "encode window at frame 0")

	// Logits of the wrong size.
	_, err = Transcribe(context.Background(), shortLogits{}, tok, silence(1), opts, nil)
	require.ErrorIs(t, err, decoding.ErrLogitsSize)
}

type shortLogits struct{}

func (shortLogits) Encode(context.Context, []float32, int) (EncoderState, error) { return 1, nil }
func (shortLogits) DecodeStep(context.Context, EncoderState, []int, int) ([]float32, error) {
	return make([]float32, 10), nil
}

func TestOptionsValidation(t *testing.T) {
	tok := byteTokenizer(t)
	m := &fakeModel{tok: tok}
	tests := []struct {
		name string
		mod  func(*Options)
	}{
		{"unknown language", func(o *Options) { o.Language = "klingon" }},
		{"unknown task", func(o *Options) { o.Task = "summarize" }},
		{"no temperature", func(o *Options) { o.Temperatures = nil }},
		{"negative temperature", func(o *Options) { o.Temperatures = []float64{-1} }},
		{"NaN temperature", func(o *Options) { o.Temperatures = []float64{math.NaN()} }},
		{"sample_len too long", func(o *Options) { o.SampleLen = 449 }},
		{"zero sample_len", func(o *Options) { o.SampleLen = 0 }},
		{"bad mel bins", func(o *Options) { o.NMels = 0 }},
		{"bad suppress tokens", func(o *Options) { o.Decoding.SuppressTokens = "x" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := DefaultOptions()
			opts.Language = "en"
			tc.mod(&opts)
			_, err := Transcribe(context.Background(), m, tok, silence(1), opts, nil)
			require.ErrorIs(t, err, ErrBadOptions)
			require.Zero(t, m.encodes)
		})
	}
	_, err := Transcribe(context.Background(), nil, tok, silence(1), DefaultOptions(), nil)
	require.True(t, errors.Is(err, ErrBadOptions))
}

// byteOptions are DefaultOptions for byteTokenizer with English given. The byte vocabulary
// has no " -" or " ♪" token, so whisper's non-speech list ("-1") would name the space byte
// itself (encode(" -")[0]); suppress_tokens is therefore empty with it.
func byteOptions() Options {
	o := DefaultOptions()
	o.Language = "en"
	o.Decoding.SuppressTokens = ""
	return o
}
