package tempo

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

const rate = 16000

// voiced is a 2 s vowel-like test tone: a 180 Hz fundamental with two harmonics and a slow
// amplitude swell, so that a time stretch that did not line up periods would smear it.
func voiced(n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		t := float64(i) / rate
		env := 0.6 + 0.3*math.Sin(2*math.Pi*3*t)
		x[i] = float32(env * (0.5*math.Sin(2*math.Pi*180*t) + 0.25*math.Sin(2*math.Pi*360*t+1) + 0.1*math.Sin(2*math.Pi*540*t+2)))
	}
	return x
}

// dominant is the strongest frequency (1 Hz steps, 60-1000 Hz) of x (a DFT by Goertzel).
func dominant(x []float32) float64 {
	best, bestP := 0.0, -1.0
	for f := 60.0; f <= 1000; f++ {
		w := 2 * math.Cos(2*math.Pi*f/rate)
		var s1, s2 float64
		for _, v := range x {
			s1, s2 = float64(v)+w*s1-s2, s1
		}
		if p := s1*s1 + s2*s2 - w*s1*s2; p > bestP {
			best, bestP = f, p
		}
	}
	return best
}

// rms is the root mean square of x.
func rms(x []float32) float64 {
	s := 0.0
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s / float64(len(x)))
}

// Every speed of OpenAI's range scales the duration by 1/speed and keeps the pitch (the
// dominant frequency within 2%) and the loudness; fed in pieces, the output is the same.
func TestSpeedKeepsPitch(t *testing.T) {
	x := voiced(2 * rate)
	in := dominant(x[rate/2 : rate])
	require.InDelta(t, 180, in, 1)
	for _, speed := range []float64{0.25, 0.5, 0.8, 1, 1.25, 2, 3, 4} {
		y, err := Stretch(x, rate, speed)
		require.NoError(t, err)
		require.Len(t, y, int(math.Round(float64(len(x))/speed)), "speed %v", speed)
		mid := y[len(y)/4 : len(y)/4+min(len(y)/2, rate/2)]
		got := dominant(mid)
		require.InDelta(t, in, got, 0.02*in, "speed %v: pitch %v Hz, input %v Hz", speed, got, in)
		require.InDelta(t, rms(x), rms(y[len(y)/10:len(y)*9/10]), 0.2*rms(x), "speed %v: loudness", speed)

		s, err := New(rate, speed)
		require.NoError(t, err)
		var pieces []float32
		for i := 0; i < len(x); i += 1234 {
			pieces = append(pieces, s.Write(x[i:min(i+1234, len(x))])...)
		}
		pieces = append(pieces, s.Flush()...)
		require.Equal(t, y, pieces, "speed %v: streamed in pieces", speed)
	}
}

func TestBadSpeed(t *testing.T) {
	for _, speed := range []float64{0, 0.2, 4.5, math.NaN(), math.Inf(1), -1} {
		_, err := New(rate, speed)
		require.Error(t, err, "speed %v", speed)
	}
	_, err := New(0, 2)
	require.Error(t, err)
}
