package audio

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRealFFT400 checks the power spectrum against a direct float64 DFT on random frames and
// on single tones at every bin (which exercise each twiddle of every stage).
func TestRealFFT400(t *testing.T) {
	f := newRealFFT400()
	var x [WhisperNFFT]float64
	var p [whisperNFreqs]float64
	var cosTab, sinTab [WhisperNFFT]float64
	for i := range cosTab {
		cosTab[i] = math.Cos(2 * math.Pi * float64(i) / WhisperNFFT)
		sinTab[i] = math.Sin(2 * math.Pi * float64(i) / WhisperNFFT)
	}
	check := func(name string) {
		f.power(&x, &p)
		var peak float64
		want := make([]float64, whisperNFreqs)
		for k := range want {
			var re, im float64
			for n, v := range x {
				re += v * cosTab[k*n%WhisperNFFT]
				im -= v * sinTab[k*n%WhisperNFFT]
			}
			want[k] = re*re + im*im
			peak = math.Max(peak, want[k])
		}
		for k := range want {
			if math.Abs(want[k]-p[k]) > 1e-12*peak+1e-20 {
				t.Fatalf("%s: bin %d: got %g, want %g", name, k, p[k], want[k])
			}
		}
	}
	seed := uint64(7)
	for r := 0; r < 5; r++ {
		for i := range x {
			seed = seed*6364136223846793005 + 1442695040888963407
			x[i] = float64(int64(seed)>>11) / (1 << 52)
		}
		check("random")
	}
	for k := 0; k <= 200; k += 11 {
		for i := range x {
			x[i] = math.Cos(2*math.Pi*float64(k*i)/WhisperNFFT + 0.3)
		}
		check("tone")
	}
}

func BenchmarkRealFFT400(b *testing.B) {
	f := newRealFFT400()
	var x [WhisperNFFT]float64
	var p [whisperNFreqs]float64
	for i := range x {
		x[i] = math.Sin(float64(i) * 0.37)
	}
	for b.Loop() {
		f.power(&x, &p)
	}
}

func TestLog10Clamped(t *testing.T) {
	for _, v := range []float64{0, -1, math.NaN(), 1e-11, 1e-10, 1.0000001e-10, 3e-7, 0.5, 1, math.Sqrt2,
		1.41421357, 2, 10, 123.456, 1e30, math.MaxFloat64, math.Inf(1)} {
		want := math.Log10(math.Max(v, 1e-10))
		if v != v {
			want = -10
		}
		require.InDelta(t, want, log10Clamped(v), 1e-12, "v=%g", v)
	}
	seed := uint64(3)
	for i := 0; i < 20000; i++ {
		seed = seed*6364136223846793005 + 1442695040888963407
		v := math.Exp(float64(seed>>11)/(1<<53)*40) * 1e-9 // 1e-9 … 1e-9·e^40
		if d := math.Abs(math.Log10(v) - log10Clamped(v)); d > 1e-12 {
			t.Fatalf("v=%g: log10 %v, got %v", v, math.Log10(v), log10Clamped(v))
		}
	}
}
