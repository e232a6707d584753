//go:build cgo

package whisperrunner

import (
	"context"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners/whisper/decoding"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper/transcribe"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper/whispertokenizer"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// openDevice opens the simulator with the Whisper runner's options.
func openDevice(t testing.TB) *ttnn.Device {
	t.Helper()
	dev, err := ttnn.Open(context.Background(), DeviceOptions(ttnn.MeshShape{Rows: 1, Cols: 1}, 0))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, dev.Close()) })
	return dev
}

// loadModel loads the shipped programs on dev (the script in TTB_SIM_SCRIPT applies).
func loadModel(t testing.TB, dev *ttnn.Device) *Model {
	t.Helper()
	m, err := LoadModel(context.Background(), dev, ttnn.SimPrograms())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Close()) })
	return m
}

// wantSeg is a segment as written out by hand from transcribe()'s rules.
type wantSeg struct {
	seek       int
	start, end float64
	text       string
	temp       float64
}

// TestTranscribeOnSimulator runs openai/whisper's loop on the simulated device with scripted
// decoder steps. In a scripted step every logit is 0 except the favoured token's, so when a
// rule suppresses the favoured token greedy decoding picks the lowest allowed id, and when
// the favoured token is not text the timestamp rule (total timestamp probability above the
// best text token) leaves only timestamps.
func TestTranscribeOnSimulator(t *testing.T) {
	tok := largeV3(t)
	T := func(sec float64) int { return ts(tok, sec) }
	S := func(parts ...any) []int { return seq(tok, parts...) }
	lang := func(code string) int {
		id, err := tok.LanguageToken(code)
		require.NoError(t, err)
		return id
	}
	sot, tr, tl, eot := tok.SOT(), tok.Transcribe(), tok.Translate(), tok.EOT()
	en, de, fr := lang("en"), lang("de"), lang("fr")
	sotEn := []int{sot, en, tr}
	repeat := strings.Repeat(" the", 30)
	emoji := " 🙂 ok" // the emoji's four UTF-8 bytes span several tokens

	tests := []struct {
		name     string
		audioSec float64
		opts     func(*transcribe.Options)
		script   []dec
		want     []wantSeg
		wantText string
		wantLang string
		check    func(t *testing.T, res transcribe.Result)
	}{
		{
			name:     "timestamp pairs close segments, a single timestamp ends the window",
			audioSec: 10,
			script:   []dec{{expect: sotEn, checkProm: true, emit: S(T(0), " Hello world.", T(2), T(2), " Second part.", T(4.5))}},
			// The single timestamp at the end: the rest is silence, seek moves past the audio.
			want:     []wantSeg{{0, 0, 2, " Hello world.", 0}, {0, 2, 4.5, " Second part.", 0}},
			wantText: " Hello world. Second part.",
			wantLang: "en",
		},
		{
			name:     "the first token must be a timestamp",
			audioSec: 5,
			// " Hi" is suppressed at the first step: only <|0.00|>..<|1.00|> remain, and the
			// lowest of the tied timestamps, <|0.00|>, wins; the script goes on by position.
			script:   []dec{{expect: sotEn, emit: S(" Hi", " there", T(1.5))}},
			want:     []wantSeg{{0, 0, 1.5, " there", 0}},
			wantText: " there",
			wantLang: "en",
		},
		{
			name:     "max initial timestamp",
			audioSec: 5,
			// <|2.00|> is later than max_initial_timestamp (1 s): <|0.00|> instead.
			script:   []dec{{emit: S(T(2), " A", T(3))}},
			want:     []wantSeg{{0, 0, 3, " A", 0}},
			wantText: " A",
			wantLang: "en",
		},
		{
			name:     "timestamps never go back",
			audioSec: 8,
			// <|2.00|> after <|3.00|><|3.00|> B is suppressed; the others tie at 0 and the
			// timestamps' total beats every other token, so the earliest allowed timestamp,
			// <|3.02|>, closes " B". <|2.00|> again: still too early, and again <|3.02|> wins
			// (over EOT too), which opens the next segment; " C" and <|4.00|> follow as
			// scripted. The two unfavoured picks have log p of about -ln 1350, which would
			// trigger the fallback: the log-probability threshold is off here.
			opts:     func(o *transcribe.Options) { o.Thresholds.LogProb = math.NaN() },
			script:   []dec{{emit: S(T(0), " A", T(3), T(3), " B", T(2), T(2), " C", T(4))}},
			want:     []wantSeg{{0, 0, 3, " A", 0}, {0, 3, 3.02, " B", 0}, {0, 3.02, 4, " C", 0}},
			wantText: " A B C",
			wantLang: "en",
		},
		{
			name:     "repetition falls back to the next temperature",
			audioSec: 10,
			script: []dec{
				{expect: sotEn, emit: S(T(0), repeat, T(5))}, // compression ratio above 2.4
				{expect: sotEn, checkProm: true, emit: S(T(0), " Hello world.", T(2))},
			},
			want:     []wantSeg{{0, 0, 2, " Hello world.", 0.2}},
			wantText: " Hello world.",
			wantLang: "en",
			check: func(t *testing.T, res transcribe.Result) {
				require.Less(t, res.Segments[0].CompressionRatio, 2.4)
				require.Greater(t, res.Segments[0].AvgLogProb, -1.0)
			},
		},
		{
			name:     "a low average log probability falls back; temperature 0.6 resets the prompt",
			audioSec: 40,
			opts:     func(o *transcribe.Options) { o.Temperatures = []float64{0, 0.6} },
			script: []dec{
				{emit: S(T(0), " One", " two", " three", T(2)), lp: map[int]float64{1: -3, 2: -3, 3: -3}},
				{emit: S(T(0), " One two three.", T(2))},
				// Window 2 at 30 s gets no prompt: window 1 was decoded above 0.5.
				{expect: sotEn, checkProm: true, emit: S(T(0), " Four.", T(1))},
			},
			want:     []wantSeg{{0, 0, 2, " One two three.", 0.6}, {3000, 30, 31, " Four.", 0}},
			wantText: " One two three. Four.",
			wantLang: "en",
		},
		{
			name:     "silence is skipped, seek moves a whole window",
			audioSec: 40,
			script: []dec{
				// Window 1: <|nospeech|> at 0.9 and a low log probability (the forced <|0.00|>
				// has p = 1/51): no fallback, the window is skipped.
				{nospeech: 0.9},
				{expect: sotEn, checkProm: true, emit: S(T(0), " Hi.", T(1))},
			},
			want:     []wantSeg{{3000, 30, 31, " Hi.", 0}},
			wantText: " Hi.",
			wantLang: "en",
		},
		{
			name:     "a likely text is kept despite the no-speech probability",
			audioSec: 10,
			script:   []dec{{nospeech: 0.9, emit: S(T(0), " Hi.", T(1))}},
			want:     []wantSeg{{0, 0, 1, " Hi.", 0}},
			wantText: " Hi.",
			wantLang: "en",
			check: func(t *testing.T, res transcribe.Result) {
				require.InDelta(t, 0.9, res.Segments[0].NoSpeechProb, 1e-4)
			},
		},
		{
			name:     "language detection on the first window",
			audioSec: 10,
			opts:     func(o *transcribe.Options) { o.Language = "" },
			script: []dec{
				{expect: []int{sot}, emit: []int{de}},
				{expect: []int{sot, de, tr}, emit: S(T(0), " Hallo Welt.", T(2))},
			},
			want:     []wantSeg{{0, 0, 2, " Hallo Welt.", 0}},
			wantText: " Hallo Welt.",
			wantLang: "de",
			check: func(t *testing.T, res transcribe.Result) {
				require.Greater(t, res.LanguageProbs["de"], 0.99)
			},
		},
		{
			name:     "seek advances to the last complete segment; its text prompts the next window",
			audioSec: 50,
			script: []dec{
				{emit: S(T(0), " A", T(10), T(10), " B", T(24), T(24), " C")},
				{
					checkProm: true, prompt: S(T(0), " A", T(10), T(10), " B", T(24)),
					emit: S(T(0), " C", T(4), T(4), " D", T(5.6)),
				},
			},
			// Window 1 ends in unfinished text: " C" is dropped and window 2 starts at 24 s
			// (frame 2400); it holds 26 s and ends with a single timestamp.
			want: []wantSeg{
				{0, 0, 10, " A", 0}, {0, 10, 24, " B", 0},
				{2400, 24, 28, " C", 0}, {2400, 28, 29.6, " D", 0},
			},
			wantText: " A B C D",
			wantLang: "en",
		},
		{
			name:     "UTF-8 split across tokens decodes whole",
			audioSec: 5,
			script:   []dec{{emit: S(T(0), emoji, T(1))}},
			want:     []wantSeg{{0, 0, 1, emoji, 0}},
			wantText: emoji,
			wantLang: "en",
		},
		{
			name:     "translation",
			audioSec: 5,
			opts:     func(o *transcribe.Options) { o.Language, o.Task = "fr", whispertokenizer.TaskTranslate },
			script:   []dec{{expect: []int{sot, fr, tl}, emit: S(T(0), " Good morning.", T(1.2))}},
			want:     []wantSeg{{0, 0, 1.2, " Good morning.", 0}},
			wantText: " Good morning.",
			wantLang: "fr",
		},
		{
			name:     "initial prompt",
			audioSec: 5,
			opts:     func(o *transcribe.Options) { o.InitialPrompt = "  Tenstorrent glossary. " },
			script:   []dec{{checkProm: true, prompt: S(" Tenstorrent glossary."), expect: sotEn, emit: S(T(0), " Hi.", T(1))}},
			want:     []wantSeg{{0, 0, 1, " Hi.", 0}},
			wantText: " Hi.",
			wantLang: "en",
		},
		{
			name:     "EOT right away",
			audioSec: 5,
			// The only sampled token is the forced <|0.00|>: one empty segment, to the end.
			script:   []dec{{emit: []int{T(0), eot}, nospeech: 0.5}},
			want:     []wantSeg{{0, 0, 5, "", 0}},
			wantText: "",
			wantLang: "en",
		},
	}
	dev := openDevice(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			writeScript(t, tc.script...)
			m := loadModel(t, dev)
			opts := transcribe.DefaultOptions()
			opts.NMels, opts.Language = m.NMels(), "en"
			if tc.opts != nil {
				tc.opts(&opts)
			}
			var streamed []transcribe.Segment
			res, err := transcribe.Transcribe(context.Background(), m, tok, make([]float32, int(tc.audioSec*16000)), opts, func(s transcribe.Segment) {
				streamed = append(streamed, s)
			})
			require.NoError(t, err)
			require.Equal(t, tc.wantLang, res.Language)
			require.Equal(t, tc.wantText, res.Text)
			require.Equal(t, res.Segments, streamed, "every segment streamed, in order")
			require.Len(t, res.Segments, len(tc.want))
			for i, w := range tc.want {
				g := res.Segments[i]
				require.Equal(t, w.seek, g.Seek, "segment %d seek", i)
				require.InDelta(t, w.start, g.Start, 1e-9, "segment %d start", i)
				require.InDelta(t, w.end, g.End, 1e-9, "segment %d end", i)
				require.Equal(t, w.text, g.Text, "segment %d text", i)
				require.True(t, utf8.ValidString(g.Text))
				require.Equal(t, w.temp, g.Temperature, "segment %d temperature", i)
				if w.text != "" {
					require.Equal(t, w.text, mustDecode(t, tok, g.Tokens), "segment %d tokens", i)
				}
			}
			if tc.check != nil {
				tc.check(t, res)
			}
		})
	}
}

func mustDecode(t *testing.T, tok *whispertokenizer.Tokenizer, ids []int) string {
	t.Helper()
	s, err := tok.Decode(ids)
	require.NoError(t, err)
	return s
}

// TestModelUnscripted: without a script the simulated decoder says " This is simulated
// speech number N." for each window, N from the encoder states, the same for the same audio.
func TestModelUnscripted(t *testing.T) {
	tok := largeV3(t)
	dev := openDevice(t)
	m := loadModel(t, dev)
	require.True(t, m.Traced())
	require.Equal(t, 128, m.NMels())
	require.Equal(t, 51866, m.NVocab())
	opts := transcribe.DefaultOptions()
	opts.NMels = m.NMels()
	var texts []string
	for _, x := range [][]float32{audio(3), audio(3), audio(7)} {
		res, err := transcribe.Transcribe(context.Background(), m, tok, x, opts, nil)
		require.NoError(t, err)
		require.Equal(t, "en", res.Language, "ties between the languages go to the first, English")
		require.Len(t, res.Segments, 1)
		s := res.Segments[0]
		require.Regexp(t, `^ This is simulated speech number [a-z]+\.$`, s.Text)
		require.Equal(t, 0.0, s.Start)
		require.Equal(t, 2.0, s.End)
		require.InDelta(t, 0.01, s.NoSpeechProb, 1e-4)
		texts = append(texts, s.Text)
	}
	require.Equal(t, texts[0], texts[1], "same audio, same transcript")
}

func TestModelSequenceErrors(t *testing.T) {
	tok := largeV3(t)
	dev := openDevice(t)
	m := loadModel(t, dev)
	ctx := context.Background()
	mel := make([]float32, m.NMels()*3000)
	st, err := m.Encode(ctx, mel, m.NMels())
	require.NoError(t, err)
	_, err = m.DecodeStep(ctx, st, []int{tok.SOT(), 50259}, 0)
	require.NoError(t, err)
	_, err = m.DecodeStep(ctx, st, []int{50360}, 3)
	require.ErrorIs(t, err, ErrBadSequence, "a gap after 2 tokens")
	_, err = m.DecodeStep(ctx, st, []int{tok.NVocab()}, 0)
	require.ErrorIs(t, err, ErrBadSequence)
	_, err = m.Encode(ctx, mel[:10], m.NMels())
	require.Error(t, err)

	st2, err := m.Encode(ctx, mel, m.NMels())
	require.NoError(t, err)
	_, err = m.DecodeStep(ctx, st, []int{tok.SOT()}, 0)
	require.ErrorIs(t, err, ErrStaleState, "the device holds the newer window")
	require.NoError(t, st2.(interface{ Close() error }).Close())
	_, err = m.DecodeStep(ctx, st2, []int{tok.SOT()}, 0)
	require.ErrorIs(t, err, ErrStaleState, "closed")

	st3, err := m.Encode(ctx, mel, m.NMels())
	require.NoError(t, err)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = m.DecodeStep(cctx, st3, []int{tok.SOT()}, 0)
	require.ErrorIs(t, err, context.Canceled)
	logits, err := m.DecodeStep(ctx, st3, []int{tok.SOT(), 50259, 50360}, 0)
	require.NoError(t, err, "the device is usable after a cancelled step")
	require.Len(t, logits, tok.NVocab())
	require.Equal(t, tok.TimestampBegin(), argmaxOf(logits))
	_ = decoding.Strip
}

func argmaxOf(l []float32) int {
	best := 0
	for i, v := range l {
		if v > l[best] {
			best = i
		}
	}
	return best
}
