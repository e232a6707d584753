package whispertokenizer

import (
	"encoding/hex"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

var (
	cfgEnglish = Config{Multilingual: false, NumLanguages: 99}
	cfgMulti99 = Config{Multilingual: true, NumLanguages: 99}
	cfgV3      = Config{Multilingual: true, NumLanguages: 100}
)

func TestGoldenEncodeDecode(t *testing.T) {
	g := loadGolden(t)
	multi := newTokenizer(t, cfgMulti99)
	v3 := newTokenizer(t, cfgV3)
	gpt2 := newTokenizer(t, cfgEnglish)
	for _, c := range g.Cases {
		t.Run(c.Text, func(t *testing.T) {
			ids := multi.Encode(c.Text)
			require.Equal(t, c.MultilingualIDs, ids, "multilingual ids")
			// large-v3 shares the text vocabulary; only special ids move.
			require.Equal(t, c.MultilingualIDs, v3.Encode(c.Text), "large-v3 ids")
			require.Equal(t, c.GPT2IDs, gpt2.Encode(c.Text), "gpt2 ids")

			require.Len(t, c.TokenBytesHex, len(ids))
			for i, id := range ids {
				b, err := multi.TokenBytes(id)
				require.NoError(t, err)
				require.Equal(t, c.TokenBytesHex[i], hex.EncodeToString(b), "bytes of token %d", i)
			}
			for _, tc := range []struct {
				tok *Tokenizer
				ids []int
			}{{multi, c.MultilingualIDs}, {gpt2, c.GPT2IDs}} {
				for _, dec := range []func([]int) (string, error){tc.tok.Decode, tc.tok.DecodeText, tc.tok.DecodeWithTimestamps} {
					s, err := dec(tc.ids)
					require.NoError(t, err)
					require.Equal(t, c.Text, s)
				}
			}
		})
	}
}

func TestGoldenSpecialTokens(t *testing.T) {
	g := loadGolden(t)
	for _, tc := range []struct {
		key string
		cfg Config
	}{
		{"gpt2_english_only", cfgEnglish},
		{"multilingual_99_languages", cfgMulti99},
		{"multilingual_100_languages_large_v3", cfgV3},
	} {
		t.Run(tc.key, func(t *testing.T) {
			want, ok := g.SpecialTokens[tc.key]
			require.True(t, ok)
			tok := newTokenizer(t, tc.cfg)
			require.Equal(t, want.EOT, tok.EOT())
			require.Equal(t, want.SOT, tok.SOT())
			require.Equal(t, want.SOTPrev, tok.SOTPrev())
			require.Equal(t, want.SOTLM, tok.SOTLM())
			require.Equal(t, want.NoSpeech, tok.NoSpeech())
			require.Equal(t, want.NoTimestamps, tok.NoTimestamps())
			require.Equal(t, want.TimestampBegin, tok.TimestampBegin())
			require.Equal(t, want.Transcribe, tok.Transcribe())
			require.Equal(t, want.Translate, tok.Translate())
			require.Equal(t, want.NVocab, tok.NVocab())

			cfg, err := ConfigForVocabSize(want.NVocab)
			require.NoError(t, err)
			require.Equal(t, tc.cfg, cfg)

			// The last timestamp is <|30.00|>, the last id of the vocabulary.
			last, ok := tok.SpecialToken("<|30.00|>")
			require.True(t, ok)
			require.Equal(t, tok.NVocab()-1, last)
			sec, ok := tok.TimestampSeconds(last)
			require.True(t, ok)
			require.InDelta(t, 30.0, sec, 1e-9)
			_, ok = tok.TimestampSeconds(tok.EOT())
			require.False(t, ok)

			if !tc.cfg.Multilingual {
				seq, err := tok.SOTSequence("", "", false)
				require.NoError(t, err)
				require.Equal(t, []int{want.SOT}, seq)
				return
			}
			require.Len(t, want.LanguageTokens, tc.cfg.NumLanguages)
			codes, ids := tok.LanguageCodes(), tok.LanguageTokens()
			require.Len(t, ids, tc.cfg.NumLanguages)
			for i, code := range codes {
				require.Equal(t, want.LanguageTokens[code], ids[i], code)
				id, err := tok.LanguageToken(code)
				require.NoError(t, err)
				require.Equal(t, ids[i], id)
				back, ok := tok.LanguageOf(id)
				require.True(t, ok)
				require.Equal(t, code, back)
			}
			seq, err := tok.SOTSequence("en", TaskTranscribe, false)
			require.NoError(t, err)
			require.Equal(t, want.SOTSequenceEn, seq)
		})
	}
}

func TestGoldenDecoderExamples(t *testing.T) {
	g := loadGolden(t)
	tok := newTokenizer(t, cfgMulti99)
	require.NotEmpty(t, g.DecoderExamples)
	for _, ex := range g.DecoderExamples {
		t.Run(ex.What, func(t *testing.T) {
			s, err := tok.Decode(ex.IDs)
			require.NoError(t, err)
			require.Equal(t, ex.Decode, s)
			if ex.DecodeWithTimestamps != nil {
				s, err := tok.DecodeWithTimestamps(ex.IDs)
				require.NoError(t, err)
				require.Equal(t, *ex.DecodeWithTimestamps, s)
			}
			if ex.DecodeTextOnly != nil {
				s, err := tok.DecodeText(ex.IDs)
				require.NoError(t, err)
				require.Equal(t, *ex.DecodeTextOnly, s)
			}
		})
	}
}

func TestSOTSequence(t *testing.T) {
	multi := newTokenizer(t, cfgMulti99)
	v3 := newTokenizer(t, cfgV3)
	en := newTokenizer(t, cfgEnglish)
	// Expected ids from the golden special-token table: multilingual sot 50258, <|en|> 50259,
	// <|fr|> 50265, translate 50358, transcribe 50359, notimestamps 50363; large-v3 moves the
	// ids after the language block up by one (<|yue|> = 50358).
	tests := []struct {
		name     string
		tok      *Tokenizer
		language string
		task     Task
		noTS     bool
		want     []int
		wantErr  error
	}{
		{"defaults en transcribe", multi, "", "", false, []int{50258, 50259, 50359}, nil},
		{"french translate", multi, "fr", TaskTranslate, false, []int{50258, 50265, 50358}, nil},
		{"language by name and alias", multi, "Mandarin", TaskTranscribe, true, []int{50258, 50260, 50359, 50363}, nil},
		{"v3 yue", v3, "yue", TaskTranscribe, false, []int{50258, 50358, 50360}, nil},
		{"v3 cantonese notimestamps", v3, "cantonese", TaskTranslate, true, []int{50258, 50358, 50359, 50364}, nil},
		{"yue not in 99", multi, "yue", TaskTranscribe, false, nil, ErrUnknownLanguage},
		{"unknown language", multi, "klingon", TaskTranscribe, false, nil, ErrUnknownLanguage},
		{"unknown task", multi, "en", "summarize", false, nil, ErrUnknownTask},
		{"english-only", en, "", "", true, []int{50257, 50362}, nil},
		{"english-only en", en, "english", TaskTranscribe, false, []int{50257}, nil},
		{"english-only french", en, "fr", TaskTranscribe, false, nil, ErrNotMultilingual},
		{"english-only translate", en, "", TaskTranslate, false, nil, ErrNotMultilingual},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.tok.SOTSequence(tc.language, tc.task, tc.noTS)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestConfigForVocabSize(t *testing.T) {
	tests := []struct {
		nVocab int
		want   Config
		ok     bool
	}{
		{51864, cfgEnglish, true},
		{51865, cfgMulti99, true},
		{51866, cfgV3, true},
		{51867, Config{}, false},
		{51765, Config{}, false},
		{0, Config{}, false},
	}
	for _, tc := range tests {
		got, err := ConfigForVocabSize(tc.nVocab)
		if !tc.ok {
			require.ErrorIs(t, err, ErrBadConfig, "n_vocab %d", tc.nVocab)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tc.want, got)
	}
	_, err := New(&Ranks{}, Config{NumLanguages: 101})
	require.ErrorIs(t, err, ErrBadConfig)
	_, err = New(nil, cfgMulti99)
	require.ErrorIs(t, err, ErrBadConfig)
}

// Expected lists: Hugging Face's generation_config "suppress_tokens" of the openai/whisper-*
// checkpoints, which are whisper's non_speech_tokens followed by the special ids
// _get_suppress_tokens adds (50254 is the last text id in the multilingual list, 49146 in the
// English one; the ids from EOT up are cut off here). They are an independent check of
// NonSpeechTokens, which this package computes by encoding the symbols.
func TestNonSpeechTokens(t *testing.T) {
	multi := []int{1, 2, 7, 8, 9, 10, 14, 25, 26, 27, 28, 29, 31, 58, 59, 60, 61, 62, 63, 90, 91, 92, 93, 359, 503, 522, 542, 873, 893, 902, 918, 922, 931, 1350, 1853, 1982, 2460, 2627, 3246, 3253, 3268, 3536, 3846, 3961, 4183, 4667, 6585, 6647, 7273, 9061, 9383, 10428, 10929, 11938, 12033, 12331, 12562, 13793, 14157, 14635, 15265, 15618, 16553, 16604, 18362, 18956, 20075, 21675, 22520, 26130, 26161, 26435, 28279, 29464, 31650, 32302, 32470, 36865, 42863, 47425, 49870, 50254}
	english := []int{1, 2, 7, 8, 9, 10, 14, 25, 26, 27, 28, 29, 31, 58, 59, 60, 61, 62, 63, 90, 91, 92, 93, 357, 366, 438, 532, 685, 705, 796, 930, 1058, 1220, 1267, 1279, 1303, 1343, 1377, 1391, 1635, 1782, 1875, 2162, 2361, 2488, 3467, 4008, 4211, 4600, 4808, 5299, 5855, 6329, 7203, 9609, 9959, 10563, 10786, 11420, 11709, 11907, 13163, 13697, 13700, 14808, 15306, 16410, 16791, 17992, 19203, 19510, 20724, 22305, 22935, 27007, 30109, 30420, 33409, 34949, 40283, 40493, 40549, 47282, 49146}
	require.Equal(t, multi, newTokenizer(t, cfgMulti99).NonSpeechTokens())
	require.Equal(t, multi, newTokenizer(t, cfgV3).NonSpeechTokens())
	require.Equal(t, english, newTokenizer(t, cfgEnglish).NonSpeechTokens())
}

func TestDecodeUnknownToken(t *testing.T) {
	tok := newTokenizer(t, cfgMulti99)
	for _, id := range []int{-1, tok.NVocab(), 1 << 30} {
		_, err := tok.Decode([]int{1, id})
		require.ErrorIs(t, err, ErrUnknownToken)
		_, err = tok.NewStreamDecoder().Push(id)
		require.ErrorIs(t, err, ErrUnknownToken)
		_, err = tok.TokenBytes(id)
		require.ErrorIs(t, err, ErrUnknownToken)
	}
}

func TestEncodeIsOrdinary(t *testing.T) {
	// "<|en|>" in user text is encoded as characters, never as the control token.
	tok := newTokenizer(t, cfgMulti99)
	ids := tok.Encode("<|en|>")
	require.NotContains(t, ids, 50259)
	for _, id := range ids {
		require.Less(t, id, tok.EOT())
	}
	s, err := tok.Decode(ids)
	require.NoError(t, err)
	require.Equal(t, "<|en|>", s)
}

// Every golden sentence streamed token by token: each emission is valid UTF-8, the
// concatenation is the text, and the CJK/emoji sentences, whose characters are split over
// several tokens, have at least one token that emits nothing (a held-back partial character).
func TestStreamDecoderGolden(t *testing.T) {
	g := loadGolden(t)
	tok := newTokenizer(t, cfgMulti99)
	heldBack := 0
	for _, c := range g.Cases {
		sd := tok.NewStreamDecoder()
		var sb strings.Builder
		// Interleave specials and timestamps: they are skipped and do not break characters.
		_, err := sd.Push(tok.TimestampBegin())
		require.NoError(t, err)
		for i, id := range c.MultilingualIDs {
			s, err := sd.Push(id)
			require.NoError(t, err)
			require.True(t, utf8.ValidString(s), "token %d of %q emitted invalid UTF-8 %q", i, c.Text, s)
			if s == "" {
				heldBack++
			}
			sb.WriteString(s)
			_, err = sd.Push(tok.NoTimestamps())
			require.NoError(t, err)
		}
		sb.WriteString(sd.Flush())
		require.Equal(t, c.Text, sb.String())
	}
	require.Positive(t, heldBack)
}

func TestStreamDecoderPartial(t *testing.T) {
	tok := newTokenizer(t, cfgMulti99)
	// Token 246 is the lone continuation byte 0x82 in the golden decoder_examples, and
	// whisper's test_split_on_unicode sequence [8404, 871, 287, 6, 246, 526, 3210, 20378]
	// decodes to " elle est l'\ufffdéritoire".
	ids := []int{8404, 871, 287, 6, 246, 526, 3210, 20378}
	want, err := tok.Decode(ids)
	require.NoError(t, err)
	sd := tok.NewStreamDecoder()
	var sb strings.Builder
	for _, id := range ids {
		s, err := sd.Push(id)
		require.NoError(t, err)
		sb.WriteString(s)
	}
	sb.WriteString(sd.Flush())
	require.Equal(t, want, sb.String())
	require.Equal(t, " elle est l'\ufffdéritoire", sb.String())

	// A truncated character at the end of the stream is one U+FFFD at Flush, as in Decode.
	sd = tok.NewStreamDecoder()
	first, err := tok.TokenBytes(tok.Encode("🙂")[0])
	require.NoError(t, err)
	require.Less(t, len(first), 4, "the emoji must be split over tokens for this test")
	s, err := sd.Push(tok.Encode("🙂")[0])
	require.NoError(t, err)
	require.Empty(t, s)
	require.Equal(t, "\ufffd", sd.Flush())
	require.Empty(t, sd.Flush())
}
