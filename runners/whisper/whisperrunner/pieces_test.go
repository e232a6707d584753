package whisperrunner

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// ramp is n samples whose values are their indices, so a piece tells where it was cut.
func ramp(n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i)
	}
	return x
}

func TestSplitPieces(t *testing.T) {
	const n = 60 * 16000
	samples := ramp(n)
	type cut struct{ lo, hi int }
	tests := []struct {
		name  string
		spans []runners.Span
		want  []cut // nil spans: the whole audio
	}{
		{"no spans: the whole audio", nil, []cut{{0, n}}},
		{"whole seconds", []runners.Span{{Start: 1, End: 2}, {Start: 3.5, End: 4.25}}, []cut{{16000, 32000}, {56000, 68000}}},
		// 38.092 - 33.066 as a fanned-out chunk computes it: floor would give 80415.
		{"start a float error short of a sample", []runners.Span{{Start: 5.025999999999996, End: 6}}, []cut{{80416, 96000}}},
		{"end a float error short of a sample", []runners.Span{{Start: 0, End: 31.645999999999997}}, []cut{{0, 506336}}},
		// 3.704 - 0.695: ceil would give 48145.
		{"end a float error past a sample", []runners.Span{{Start: 1, End: 3.0090000000000003}}, []cut{{16000, 48144}}},
		{"start a float error past a sample", []runners.Span{{Start: 7.529000000000001, End: 8}}, []cut{{120464, 128000}}},
		{"fractions of a sample widen the piece", []runners.Span{{Start: 1.00003, End: 1.00009}}, []cut{{16000, 16002}}},
		{"clamped to the audio", []runners.Span{{Start: -1, End: 0.5}, {Start: 59.5, End: 70}}, []cut{{0, 8000}, {952000, n}}},
		{"end before start: empty", []runners.Span{{Start: 2, End: 1}}, []cut{{32000, 32000}}},
		{"past the end: empty", []runners.Span{{Start: 61, End: 62}}, []cut{{n, n}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := splitPieces(samples, tc.spans)
			require.Len(t, got, len(tc.want))
			for i, w := range tc.want {
				p := got[i]
				require.Len(t, p.samples, w.hi-w.lo, "piece %d", i)
				if w.hi > w.lo {
					require.Equal(t, float32(w.lo), p.samples[0], "piece %d first sample", i)
				}
				require.Equal(t, float64(w.lo)/16000, p.offset, "piece %d offset", i)
			}
		})
	}
}

// TestSplitPiecesIndependentOfChunking: a speech span (VAD times are whole milliseconds)
// gives the same samples whether the runner gets the whole file or a chunk of it that
// starts at another span's start, as runners/whisper/fanout cuts them (floor of the start times
// the rate, span times re-based by subtraction). Before snapping, about a quarter of such
// spans lost or gained a sample, which changes the window's log-mel and so the decode.
func TestSplitPiecesIndependentOfChunking(t *testing.T) {
	const rate, seconds = 16000, 180
	samples := ramp(rate * seconds)
	rng := rand.New(rand.NewPCG(1, 2))
	ms := func(lo, hi float64) float64 { return math.Round((lo+rng.Float64()*(hi-lo))*1000) / 1000 }
	for range 5000 {
		start := ms(1, seconds-2)
		end := math.Min(seconds, ms(start+0.1, start+2))
		chunk := ms(0, start) // the chunk's first span's start
		lo := int(math.Floor(chunk * rate))
		off := float64(lo) / rate
		whole := splitPieces(samples, []runners.Span{{Start: start, End: end}})[0]
		local := splitPieces(samples[lo:], []runners.Span{{Start: start - off, End: end - off}})[0]
		wantLo, wantHi := int(math.Round(start*rate)), int(math.Round(end*rate))
		require.Len(t, whole.samples, wantHi-wantLo, "span %v-%v", start, end)
		require.Equal(t, float32(wantLo), whole.samples[0], "span %v-%v", start, end)
		require.Equal(t, whole.samples, local.samples, "span %v-%v in a chunk from %v", start, end, chunk)
		require.InDelta(t, whole.offset, off+local.offset, 1e-9, "span %v-%v in a chunk from %v", start, end, chunk)
	}
}
