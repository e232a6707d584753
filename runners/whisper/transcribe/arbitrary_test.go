package transcribe

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// randomModel answers every decoder step with pseudo-random logits in [-scale, scale): a
// function of the seed, the window, the position and the last token (causal, as a decoder),
// and nothing like a trained model. It stands for a device whose programs return arbitrary
// numbers (the metal backend over the fake tt::runtime).
type randomModel struct {
	n       int
	seed    uint64
	scale   float32
	encodes uint64
	steps   int
}

func (m *randomModel) Encode(context.Context, []float32, int) (EncoderState, error) {
	m.encodes++
	return m.encodes, nil
}

func (m *randomModel) DecodeStep(_ context.Context, st EncoderState, tokens []int, offset int) ([]float32, error) {
	m.steps += len(tokens)
	x := m.seed ^ st.(uint64)<<40 ^ uint64(offset+len(tokens))<<20 ^ uint64(tokens[len(tokens)-1]) | 1
	logits := make([]float32, m.n)
	for i := range logits {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		logits[i] = (float32(x>>40)/float32(1<<24)*2 - 1) * m.scale
	}
	return logits, nil
}

// TestArbitraryLogitsTerminate: whatever the device returns, the long-form loop ends: each
// attempt samples at most sample_len tokens, each window tries the schedule's temperatures
// once, and every window moves seek forward (whisper's timestamp rules forbid a pair of
// equal timestamps, so a window that ends on an unfinished segment still advances).
func TestArbitraryLogitsTerminate(t *testing.T) {
	tok := byteTokenizer(t)
	for _, tc := range []struct {
		name  string
		seed  uint64
		scale float32
	}{
		{"flat logits in [-1, 1)", 1, 1},
		{"flat logits, another seed", 7, 1},
		{"peaked logits in [-20, 20)", 3, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &randomModel{n: tok.NVocab(), seed: tc.seed, scale: tc.scale}
			opts := DefaultOptions() // language detection, the whole temperature schedule, timestamps
			opts.Decoding.SuppressTokens = ""
			// A loop that did not end would hang the test: a window that does not move seek
			// forward, or a minute, ends it with an error instead.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var seeks []int
			opts.OnWindow = func(seek, _ int) {
				if len(seeks) > 0 && seek <= seeks[len(seeks)-1] {
					cancel()
				}
				seeks = append(seeks, seek)
			}
			res, err := Transcribe(ctx, m, tok, silence(45), opts, nil)
			require.NoError(t, err, "seeks %v", seeks)
			require.NotEmpty(t, seeks)
			prev := 0
			for _, s := range seeks {
				require.Greater(t, s, prev, "every window moves seek forward: %v", seeks)
				prev = s
			}
			windows := len(seeks)
			require.EqualValues(t, windows, m.encodes, "one encode per window")
			// Per window and temperature: the sot sequence (at most 4 tokens, plus a previous-text
			// prompt of at most n_text_ctx/2 - 1) and at most sample_len sampled tokens.
			perAttempt := 4 + opts.NTextCtx/2 + opts.SampleLen
			require.LessOrEqual(t, m.steps, windows*len(opts.Temperatures)*perAttempt)
			for _, s := range res.Segments {
				require.LessOrEqual(t, s.Start, s.End, "segment %+v", s)
				require.LessOrEqual(t, len(s.Tokens), opts.SampleLen, "segment %+v", s)
			}
			t.Logf("%d windows, %d decoder steps, %d segments, language %q", windows, m.steps, len(res.Segments), res.Language)
		})
	}
}
