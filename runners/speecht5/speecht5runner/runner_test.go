package speecht5runner

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/speecht5/simvoice"
)

func speak(t *testing.T, r *Runner, req *runners.SpeechRequest) *runners.SpeechResult {
	t.Helper()
	out := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(), Request: req}})
	require.NoError(t, out[0].Err)
	res, ok := runners.ResultAs[*runners.SpeechResult](out[0].Value)
	require.True(t, ok)
	return res
}

func rms(s []float32) float64 {
	sum := 0.0
	for _, v := range s {
		sum += float64(v) * float64(v)
	}
	return math.Sqrt(sum / float64(max(len(s), 1)))
}

func TestSimulatedVoice(t *testing.T) {
	r := New(Config{})
	require.NoError(t, r.Warmup(context.Background()))
	defer r.Close()

	a := speak(t, r, &runners.SpeechRequest{Text: "Hello world, this is a test."})
	require.Equal(t, "speaker_7306", a.SpeakerID)
	require.Equal(t, 16000, a.SampleRate)
	require.Greater(t, rms(a.Samples), 0.01, "audible")
	for _, v := range a.Samples {
		require.False(t, math.IsNaN(float64(v)))
		require.LessOrEqual(t, math.Abs(float64(v)), 1.0)
	}
	again := speak(t, r, &runners.SpeechRequest{Text: "Hello world, this is a test."})
	require.Equal(t, a.Samples, again.Samples, "deterministic")

	other := speak(t, r, &runners.SpeechRequest{Text: "Hello world, this is a tent."})
	require.NotEqual(t, a.Samples, other.Samples, "per text")
	voice := speak(t, r, &runners.SpeechRequest{Text: "Hello world, this is a test.", SpeakerID: "speaker_0100"})
	require.Equal(t, "speaker_0100", voice.SpeakerID)
	require.NotEqual(t, a.Samples, voice.Samples, "per speaker")

	// The length follows the text: about StepsPerToken steps of 32 ms per token.
	long := speak(t, r, &runners.SpeechRequest{Text: "Hello world, this is a test. And here it goes on for a while longer."})
	ratio := float64(len(long.Samples)) / float64(len(a.Samples))
	require.InDelta(t, 70.0/30, ratio, 0.3)
	secs := float64(len(a.Samples)) / 16000
	require.InDelta(t, 30*simvoice.StepsPerToken*0.032, secs, 0.2)

	emb := make([]float32, runners.SpeechEmbeddingDim)
	emb[3] = 0.5
	custom := speak(t, r, &runners.SpeechRequest{Text: "Hello world, this is a test.", Embedding: emb})
	require.Empty(t, custom.SpeakerID)
	require.NotEqual(t, a.Samples, custom.Samples)

	out := r.Run(context.Background(), []runners.Task{{Request: &runners.SpeechRequest{Text: "x", SpeakerID: "nobody"}}})
	require.ErrorIs(t, out[0].Err, runners.ErrBadRequest)
}

func TestStreamsChunksAndStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	steps := 0
	r := New(Config{OnStep: func(chunk, step int) {
		steps++
		if chunk == 1 && step == 3 {
			cancel()
		}
	}})
	require.NoError(t, r.Warmup(context.Background()))
	steps = 0
	text := ""
	for range 10 {
		text += "Streaming speech goes out one chunk at a time as it is ready. "
	}
	var chunks []*runners.SpeechChunk
	progressed := 0
	out := r.Run(context.Background(), []runners.Task{{Ctx: ctx, Request: &runners.SpeechRequest{Text: text, Stream: true},
		Progress: func(done, total int) {
			progressed++
			require.Equal(t, progressed, done, "done counts the decoder steps")
			require.Greater(t, total, done)
		},
		Emit: func(c runners.Chunk) error {
			sc, ok := runners.ChunkAs[*runners.SpeechChunk](c)
			require.True(t, ok)
			chunks = append(chunks, sc)
			return nil
		}}})
	require.True(t, errors.Is(out[0].Err, context.Canceled))
	// Chunk 0 went out before the cancel, in two pieces (its lead, then the rest).
	require.Len(t, chunks, 2, "chunk 0 went out before the cancel")
	require.Equal(t, 0, chunks[0].Index)
	require.Equal(t, 0, chunks[1].Index)
	require.Greater(t, chunks[0].Chunks, 1)
	first := (len(chunks[0].Samples)+len(chunks[1].Samples))/(2*256) + 4 // chunk 0's steps, then steps 0-3 of chunk 1
	require.Equal(t, first, steps, "no decoder step after the cancel")
	require.Equal(t, steps, progressed, "every decoder step is reported to the scheduler's cancel watch")
}

// The first audio of a streamed 200-word text comes after as many decoder steps as that of a
// 10-word text: StreamLeadSteps, the first chunk's lead (pipeline.LeadSteps).
func TestTimeToFirstAudioDoesNotGrow(t *testing.T) {
	short := "The quick brown fox jumps over the lazy dog today."
	long := ""
	for len(strings.Fields(long)) < 200 {
		long += "Streaming speech starts with a short first chunk, and the rest of this long text follows it in larger chunks. "
	}
	firstAudioSteps := func(text string) int {
		steps := 0
		first := -1
		r := New(Config{OnStep: func(int, int) { steps++ }})
		out := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(), Request: &runners.SpeechRequest{Text: text, Stream: true},
			Emit: func(runners.Chunk) error {
				if first < 0 {
					first = steps
				}
				return nil
			}}})
		require.NoError(t, out[0].Err)
		require.Positive(t, first)
		return first
	}
	s, l := firstAudioSteps(short), firstAudioSteps(long)
	t.Logf("decoder steps before the first audio: 10 words %d, 200 words %d", s, l)
	require.Equal(t, StreamLeadSteps, s)
	require.Equal(t, StreamLeadSteps, l)
}
