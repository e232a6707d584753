package audio

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func tone(freq float64, rate int, seconds float64, amp float64) []float32 {
	n := int(seconds * float64(rate))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(amp * math.Sin(2*math.Pi*freq*float64(i)/float64(rate)))
	}
	return x
}

func rmsDB(x []float32) float64 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return 10 * math.Log10(s/float64(len(x))+1e-300)
}

// middle drops the first and last 10 % (edge transients of a tone that starts abruptly).
func middle(x []float32) []float32 { return x[len(x)/10 : len(x)-len(x)/10] }

func TestResampleLength(t *testing.T) {
	for _, tc := range []struct{ n, from, to, want int }{
		{44100, 44100, 16000, 16000},
		{1, 44100, 16000, 0},
		{2, 44100, 16000, 1},
		{3, 8000, 16000, 6},
		{1001, 11025, 16000, 1453}, // 1452.7 → 1453
		{100, 16000, 16000, 100},
		{0, 48000, 16000, 0},
		{7, 44101, 16000, 3}, // non-standard rate: interpolated table
	} {
		t.Run(fmt.Sprintf("%d@%d→%d", tc.n, tc.from, tc.to), func(t *testing.T) {
			require.Len(t, Resample(make([]float32, tc.n), tc.from, tc.to), tc.want)
		})
	}
	x := []float32{1, 2, 3}
	y := Resample(x, 16000, 16000)
	y[0] = 9
	require.Equal(t, float32(1), x[0], "same rate must copy")
	require.Nil(t, Resample(x, 0, 16000))
}

// TestResampleStopband: tones above the 8 kHz output Nyquist must be ≥ 90 dB down.
func TestResampleStopband(t *testing.T) {
	for _, from := range []int{22050, 32000, 44100, 48000, 96000, 44101, 352801} {
		for _, f := range []float64{8500, 9000, 11000, 15000, 20000, 45000} {
			if f >= float64(from)/2 {
				continue
			}
			t.Run(fmt.Sprintf("%d/%g", from, f), func(t *testing.T) {
				x := tone(f, from, 0.1, 0.9)
				y := Resample(x, from, 16000)
				att := rmsDB(middle(y)) - rmsDB(x)
				require.LessOrEqual(t, att, -95.0, "alias of %g Hz only %.1f dB down", f, att)
			})
		}
	}
}

// TestResamplePassband: in-band tones keep their level (< 0.1 dB) and phase: the output must
// match the ideal tone sampled at the output instants (this also proves delay compensation).
func TestResamplePassband(t *testing.T) {
	for _, from := range []int{8000, 11025, 22050, 44100, 48000, 96000, 44101, 24000, 352801, 1013} {
		for _, f := range []float64{100, 1000, 2500, 3400, 6000} {
			if f > 0.85*float64(min(from, 16000))/2 {
				continue
			}
			t.Run(fmt.Sprintf("%d/%g", from, f), func(t *testing.T) {
				x := tone(f, from, max(0.1, 500/float64(from)), 0.5) // edges (10 %) longer than the filter
				y := Resample(x, from, 16000)
				ideal := tone(f, 16000, float64(len(y))/16000+1, 0.5)[:len(y)]
				gain := rmsDB(middle(y)) - rmsDB(middle(ideal))
				require.Less(t, math.Abs(gain), 0.1, "gain error %.4f dB", gain)
				diff := make([]float32, len(y))
				for i := range y {
					diff[i] = y[i] - ideal[i]
				}
				snr := rmsDB(middle(ideal)) - rmsDB(middle(diff))
				require.Greater(t, snr, 95.0, "in-band error only %.1f dB below the signal (misaligned?)", snr)
			})
		}
	}
}

func TestResampleCtxCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := resampleCtx(ctx, make([]float32, 48000), 48000, 16000)
	require.ErrorIs(t, err, context.Canceled)
}

// BenchmarkResample: 60 s of 44.1 kHz → 16 kHz. Report: ns/op and the realtime factor.
func BenchmarkResample(b *testing.B) {
	x := make([]float32, 60*44100)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)*0.05)) * 0.5
	}
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		Resample(x, 44100, 16000)
	}
	per := time.Since(start).Seconds() / float64(b.N)
	b.ReportMetric(60/per, "x_realtime")
}

// TestResampleConcurrent: the kernel cache is shared; run under -race.
func TestResampleConcurrent(t *testing.T) {
	x := tone(1000, 44100, 0.05, 0.5)
	want := Resample(x, 44100, 16000)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, from := range []int{44100, 48000, 22050, 44100} {
				Resample(x, from, 16000)
			}
		}()
	}
	wg.Wait()
	require.Equal(t, want, Resample(x, 44100, 16000))
}

// TestResampleParallelIdentical: long inputs are resampled by several goroutines; the output is
// exactly one goroutine's.
func TestResampleParallelIdentical(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs GOMAXPROCS ≥ 2 to take the parallel path")
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, rates := range [][2]int{{44100, 16000}, {8000, 16000}, {48000, 16000}} {
		x := make([]float32, rates[0]*12)
		for i := range x {
			x[i] = float32(r.NormFloat64() * 0.2)
		}
		got, err := resampleCtx(context.Background(), x, rates[0], rates[1])
		require.NoError(t, err)
		want := make([]float32, len(got))
		cachedKernel(rates[0], rates[1]).run(x, want, 0, int64(len(want)))
		require.Equal(t, want, got, "%d → %d Hz", rates[0], rates[1])

		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = resampleCtx(ctx, x, rates[0], rates[1])
		require.ErrorIs(t, err, context.Canceled)
	}
}
