package bench

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestArrivalTimesConstant(t *testing.T) {
	got, err := ArrivalTimes(ArrivalConstant, 4, 5, 1)
	require.NoError(t, err)
	require.Equal(t, []time.Duration{0, 250 * time.Millisecond, 500 * time.Millisecond, 750 * time.Millisecond, time.Second}, got)
}

func TestArrivalTimesPoisson(t *testing.T) {
	const rate, n = 50.0, 20000
	got, err := ArrivalTimes(ArrivalPoisson, rate, n, 42)
	require.NoError(t, err)
	again, err := ArrivalTimes(ArrivalPoisson, rate, n, 42)
	require.NoError(t, err)
	require.Equal(t, got, again, "same seed, same schedule")
	other, err := ArrivalTimes(ArrivalPoisson, rate, n, 43)
	require.NoError(t, err)
	require.NotEqual(t, got, other, "another seed, another schedule")

	// Gaps are exponential with mean 1/rate: mean ≈ 20 ms, coefficient of variation ≈ 1,
	// and P(gap > mean) ≈ e^-1. With 20000 draws the standard errors are under 1%.
	var sum, sumSq float64
	above := 0
	prev := time.Duration(0)
	for i, at := range got {
		require.GreaterOrEqual(t, at, prev, "arrival %d goes back in time", i)
		gap := (at - prev).Seconds()
		if i == 0 {
			require.Positive(t, gap, "a Poisson process does not start with an arrival at 0")
		}
		sum += gap
		sumSq += gap * gap
		if gap > 1/rate {
			above++
		}
		prev = at
	}
	mean := sum / n
	std := math.Sqrt(sumSq/n - mean*mean)
	require.InEpsilon(t, 1/rate, mean, 0.03)
	require.InEpsilon(t, 1.0, std/mean, 0.05)
	require.InDelta(t, math.Exp(-1), float64(above)/n, 0.02)
}

func TestArrivalsErrors(t *testing.T) {
	for _, tc := range []struct {
		kind Arrival
		rate float64
	}{
		{ArrivalPoisson, 0}, {ArrivalConstant, -1}, {ArrivalConstant, math.NaN()}, {"bursty", 5},
	} {
		_, err := NewArrivals(tc.kind, tc.rate, 1)
		require.ErrorIs(t, err, ErrConfig, "%v at %v", tc.kind, tc.rate)
	}
}
