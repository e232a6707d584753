package audio

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// speechClip decodes a shared speech file at 16 kHz and trims it to its first and last sample
// above -50 dBFS, so the clip's own edges are known speech boundaries.
func speechClip(t *testing.T, name string) []float32 {
	_, d, err := decodeShared(t, name)
	require.NoError(t, err)
	first, last := -1, -1
	for i, v := range d.Samples {
		if math.Abs(float64(v)) > 0.00316 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	require.Greater(t, last, first)
	return d.Samples[first : last+1]
}

type piece struct {
	silence float64 // seconds of silence, or 0 for a clip
	clip    []float32
}

// build concatenates pieces and returns the audio and the [start, end] of every clip.
func build(pieces []piece) ([]float32, [][2]float64) {
	var out []float32
	var spans [][2]float64
	for _, p := range pieces {
		if p.clip == nil {
			out = append(out, make([]float32, int(p.silence*16000))...)
			continue
		}
		s := float64(len(out)) / 16000
		out = append(out, p.clip...)
		spans = append(spans, [2]float64{s, float64(len(out)) / 16000})
	}
	return out, spans
}

func addNoise(x []float32, rmsDBFS float64, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 1))
	a := math.Pow(10, rmsDBFS/20)
	for i := range x {
		x[i] += float32(r.NormFloat64() * a)
	}
}

func TestSpeechSegmentsInsertedSilences(t *testing.T) {
	c := speechClip(t, "speech_c_16k_f32_mono.wav")
	a := speechClip(t, "speech_a_16k_s16_mono.wav")
	audio, spans := build([]piece{{silence: 0.5}, {clip: c}, {silence: 1.0}, {clip: a}, {silence: 0.7}, {clip: c}, {silence: 0.4}})
	for _, tc := range []struct {
		name  string
		noise float64 // dBFS of added white noise; 0 = none
	}{
		{"digital silence", 0},
		{"noise floor -70 dBFS", -70},
		{"noise floor -60 dBFS", -60},
		{"noise floor -50 dBFS", -50},
		{"noise floor -45 dBFS", -45},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := append([]float32(nil), audio...)
			if tc.noise != 0 {
				addNoise(x, tc.noise, 7)
			}
			segs := SpeechSegments(x, 16000)
			require.NotEmpty(t, segs)
			const tol = 0.050
			// Segments are ordered, disjoint and inside the audio.
			for i, s := range segs {
				require.Less(t, s.Start, s.End)
				require.GreaterOrEqual(t, s.Start, 0.0)
				require.LessOrEqual(t, s.End, float64(len(x))/16000)
				if i > 0 {
					require.GreaterOrEqual(t, s.Start, segs[i-1].End)
				}
				// No segment lies in an inserted silence: each overlaps a clip.
				inClip := false
				for _, sp := range spans {
					if s.Start < sp[1]+tol && s.End > sp[0]-tol {
						inClip = true
						require.GreaterOrEqual(t, s.Start, sp[0]-tol, "segment %v starts before clip %v", s, sp)
						require.LessOrEqual(t, s.End, sp[1]+tol, "segment %v ends after clip %v", s, sp)
					}
				}
				require.True(t, inClip, "segment %v is in a silence", s)
			}
			// Every clip boundary is a segment boundary within 50 ms.
			for _, sp := range spans {
				require.True(t, hasBoundary(segs, sp[0], true, tol), "no segment starts near %.3f: %v", sp[0], segs)
				require.True(t, hasBoundary(segs, sp[1], false, tol), "no segment ends near %.3f: %v", sp[1], segs)
			}
		})
	}
}

func hasBoundary(segs []Segment, t float64, start bool, tol float64) bool {
	for _, s := range segs {
		b := s.End
		if start {
			b = s.Start
		}
		if math.Abs(b-t) <= tol {
			return true
		}
	}
	return false
}

func TestSpeechSegmentsSynthetic(t *testing.T) {
	const rate = 16000
	burst := func(x []float32, from, to float64, amp float64) {
		for i := int(from * rate); i < int(to*rate); i++ {
			x[i] += float32(amp * math.Sin(2*math.Pi*440*float64(i)/rate))
		}
	}
	t.Run("all zeros", func(t *testing.T) {
		require.Nil(t, SpeechSegments(make([]float32, 5*rate), rate))
	})
	t.Run("near-silent hiss", func(t *testing.T) {
		x := make([]float32, 5*rate)
		addNoise(x, -75, 1)
		require.Nil(t, SpeechSegments(x, rate))
	})
	t.Run("stationary loud noise", func(t *testing.T) {
		x := make([]float32, 5*rate)
		addNoise(x, -20, 2)
		require.Nil(t, SpeechSegments(x, rate))
	})
	t.Run("empty and bad rate", func(t *testing.T) {
		require.Nil(t, SpeechSegments(nil, rate))
		require.Nil(t, SpeechSegments([]float32{1, 2}, 0))
	})
	t.Run("bursts in noise, short pause bridged, click dropped", func(t *testing.T) {
		x := make([]float32, 6*rate)
		addNoise(x, -50, 3)
		burst(x, 1.0, 2.0, 0.5)
		burst(x, 2.2, 2.5, 0.5) // 200 ms pause: bridged
		burst(x, 3.5, 3.55, 0.5)
		burst(x, 4.5, 5.0, 0.5)
		segs := SpeechSegments(x, rate)
		require.Len(t, segs, 2, "%v", segs)
		require.InDelta(t, 1.0, segs[0].Start, 0.05)
		require.InDelta(t, 2.5, segs[0].End, 0.05)
		require.InDelta(t, 4.5, segs[1].Start, 0.05)
		require.InDelta(t, 5.0, segs[1].End, 0.05)
	})
	t.Run("long speech is split at most every 30 s", func(t *testing.T) {
		// Syllable-like 4 Hz amplitude modulation (-26..-6 dBFS) with no pause long enough to split.
		x := make([]float32, 75*rate)
		burst(x, 0.5, 74.5, 0.5)
		for i := int(0.5 * rate); i < int(74.5*rate); i++ {
			x[i] *= float32(0.55 + 0.45*math.Sin(2*math.Pi*4*float64(i)/rate))
		}
		segs := SpeechSegments(x, rate)
		require.GreaterOrEqual(t, len(segs), 3)
		require.InDelta(t, 0.5, segs[0].Start, 0.05)
		require.InDelta(t, 74.5, segs[len(segs)-1].End, 0.05)
		for i, s := range segs {
			require.LessOrEqual(t, s.End-s.Start, 30.0)
			if i > 0 {
				require.InDelta(t, segs[i-1].End, s.Start, 1e-9, "split pieces are contiguous")
			}
		}
	})
}

func TestMergeSegments(t *testing.T) {
	in := []Segment{{0, 5}, {6, 20}, {21, 29.5}, {31, 40}, {41, 80}, {81, 82}}
	require.Equal(t, []Segment{{0, 29.5}, {31, 40}, {41, 80}, {81, 82}}, MergeSegments(in, 30))
	require.Nil(t, MergeSegments(nil, 30))
}
