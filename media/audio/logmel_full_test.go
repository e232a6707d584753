package audio

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestComputeFullMatchesComputeUnder30s: for audio up to 30 s, whisper's whole-file log-mel
// (padding=N_SAMPLES) and the pad_or_trim one agree on the first 3000 frames; so do ours, bit
// for bit, and both match the golden within the golden's tolerance.
func TestComputeFullMatchesComputeUnder30s(t *testing.T) {
	dir := sharedWhisperDir(t)
	for _, stem := range []string{"speech_a_16k_s16_mono", "speech_b_16k_s16_mono"} {
		for _, nMels := range []int{80, 128} {
			if stem == "speech_b_16k_s16_mono" && nMels == 128 {
				continue // the other three cover both banks and both files
			}
			t.Run(fmt.Sprintf("%s/%d", stem, nMels), func(t *testing.T) {
				wave := readF32(t, filepath.Join(dir, stem+".waveform.f32"))
				golden := readF32(t, filepath.Join(dir, fmt.Sprintf("%s.mel%d.f32", stem, nMels)))
				lm, err := WhisperLogMel(nMels)
				require.NoError(t, err)
				full, err := lm.ComputeFull(context.Background(), wave)
				require.NoError(t, err)
				require.Equal(t, len(wave)/WhisperHopLength+WhisperNFrames, full.Frames)
				require.Equal(t, len(wave)/WhisperHopLength, full.ContentFrames())
				// whisper's transcribe() detects the language on mel[:, :3000] (no zeroing).
				first := make([]float32, 0, nMels*WhisperNFrames)
				for m := range nMels {
					first = append(first, full.Data[m*full.Frames:m*full.Frames+WhisperNFrames]...)
				}
				window, err := lm.Compute(context.Background(), wave, nil)
				require.NoError(t, err)
				require.Equal(t, window, first)
				d, at := maxAbsDiff(first, golden)
				require.LessOrEqual(t, d, 1e-4, "at mel %d frame %d", at/WhisperNFrames, at%WhisperNFrames)
			})
		}
	}
}

// referenceFull is the unfloored (log10(max(mel, 1e-10)) + 4) / 4 of frame t of the whole
// signal x with 30 s of zeros appended, by a direct DFT.
func referenceFull(x []float32, f *MelFilters, t int) []float64 {
	power := make([]float64, f.NFreqs)
	for k := range power {
		var re, im float64
		for n := range WhisperNFFT {
			p := t*WhisperHopLength + n - WhisperNFFT/2
			if p < 0 {
				p = -p
			}
			var v float64
			if p < len(x) {
				v = float64(x[p]) * (0.5 - 0.5*math.Cos(2*math.Pi*float64(n)/WhisperNFFT))
			}
			a := 2 * math.Pi * float64(k*n%WhisperNFFT) / WhisperNFFT
			re += v * math.Cos(a)
			im -= v * math.Sin(a)
		}
		power[k] = re*re + im*im
	}
	col := make([]float64, f.NMels)
	for m := range col {
		var acc float64
		for k, p := range power {
			acc += float64(f.Weights[m*f.NFreqs+k]) * p
		}
		col[m] = (math.Log10(math.Max(acc, 1e-10)) + 4) / 4
	}
	return col
}

// TestComputeFullLongAudio: past 30 s the STFT runs across the window boundary and the floor
// is the whole file's: a quiet first half-minute is floored by the loud audio after it.
func TestComputeFullLongAudio(t *testing.T) {
	const n = 45 * WhisperSampleRate
	x := make([]float32, n)
	for i := range x {
		amp := 1e-6
		if i >= WhisperNSamples {
			amp = 0.5
		}
		ph := 2 * math.Pi * float64(i) / WhisperSampleRate
		x[i] = float32(amp * (math.Sin(440*ph) + 0.5*math.Sin(1234*ph) + 0.25*math.Sin(3321*ph)))
	}
	lm, err := WhisperLogMel(80)
	require.NoError(t, err)
	full, err := lm.ComputeFull(context.Background(), x)
	require.NoError(t, err)
	require.Equal(t, n/WhisperHopLength+WhisperNFrames, full.Frames)

	hi, lo := float32(math.Inf(-1)), float32(math.Inf(1))
	for _, v := range full.Data {
		hi, lo = max(hi, v), min(lo, v)
	}
	require.InDelta(t, float64(hi-2), float64(lo), 1e-6, "floor at the file's maximum - 8")

	f, err := SlaneyMelFilters(WhisperSampleRate, WhisperNFFT, 80)
	require.NoError(t, err)
	for _, frame := range []int{0, 1500, 2998, 2999, 3000, 3001, 4499, 4500, 4501, 7499} {
		want := referenceFull(x, f, frame)
		for m, w := range want {
			got := full.Data[m*full.Frames+frame]
			require.InDelta(t, math.Max(w, float64(lo)), float64(got), 1e-4, "mel %d frame %d", m, frame)
		}
	}

	// The quiet first window is floored by the loud part: a per-window log-mel is not.
	perWindow, err := lm.Compute(context.Background(), x[:WhisperNSamples], nil)
	require.NoError(t, err)
	win, err := full.Window(0, WhisperNFrames, nil)
	require.NoError(t, err)
	require.NotEqual(t, perWindow, win)
	for m := range 80 {
		for c := range 2990 { // the last frames reach into the loud part
			if v := win[m*WhisperNFrames+c]; math.Abs(float64(v-lo)) > 1e-6 {
				t.Fatalf("mel %d frame %d: %g, want the file's floor %g", m, c, v, lo)
			}
		}
	}
}

func TestFullLogMelWindow(t *testing.T) {
	lm, err := WhisperLogMel(80)
	require.NoError(t, err)
	x := make([]float32, 40*WhisperSampleRate)
	for i := range x {
		x[i] = float32(math.Sin(float64(i) * 0.05))
	}
	full, err := lm.ComputeFull(context.Background(), x)
	require.NoError(t, err)
	tests := []struct {
		name        string
		seek, count int
		err         bool
	}{
		{name: "first window", seek: 0, count: WhisperNFrames},
		{name: "last partial window", seek: 3000, count: 1000},
		{name: "empty", seek: 100, count: 0},
		{name: "negative seek", seek: -1, count: 10, err: true},
		{name: "longer than a window", seek: 0, count: WhisperNFrames + 1, err: true},
		{name: "past the end", seek: full.Frames - 10, count: 11, err: true},
	}
	dst := make([]float32, 5) // too small: replaced
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i := range dst {
				dst[i] = 42
			}
			got, err := full.Window(tc.seek, tc.count, dst)
			if tc.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			want := make([]float32, 80*WhisperNFrames)
			for m := range 80 {
				copy(want[m*WhisperNFrames:m*WhisperNFrames+tc.count], full.Data[m*full.Frames+tc.seek:])
			}
			require.Equal(t, want, got)
			dst = got
		})
	}
}

func TestComputeFullCancelled(t *testing.T) {
	lm, err := WhisperLogMel(80)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = lm.ComputeFull(ctx, make([]float32, 16000))
	require.ErrorIs(t, err, context.Canceled)
}
