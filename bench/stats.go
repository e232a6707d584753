package bench

import (
	"math"
	"slices"
)

// Summary describes a sample of latencies (milliseconds).
type Summary struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean_ms"`
	Std   float64 `json:"std_ms"`
	Min   float64 `json:"min_ms"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P95   float64 `json:"p95_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

// Summarize computes the summary of xs. Percentiles interpolate linearly between closest
// ranks (numpy.percentile's default, which vLLM's benchmark_serving and AIPerf use); Std is
// the population standard deviation (numpy.std's default). An empty sample gives a zero
// Summary. xs is not modified.
func Summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	var sum float64
	for _, x := range s {
		sum += x
	}
	mean := sum / float64(len(s))
	var ss float64
	for _, x := range s {
		ss += (x - mean) * (x - mean)
	}
	return Summary{
		Count: len(s),
		Mean:  mean,
		Std:   math.Sqrt(ss / float64(len(s))),
		Min:   s[0],
		P50:   Percentile(s, 50),
		P90:   Percentile(s, 90),
		P95:   Percentile(s, 95),
		P99:   Percentile(s, 99),
		Max:   s[len(s)-1],
	}
}

// Percentile returns the p-th percentile (0..100) of sorted, interpolating linearly between
// the closest ranks: rank = p/100·(n-1). sorted must be in ascending order; an empty slice
// gives 0 and p is clamped to [0, 100].
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	p = min(max(p, 0), 100)
	rank := p / 100 * float64(n-1)
	lo := int(math.Floor(rank))
	hi := int(math.Ceil(rank))
	if lo == hi {
		return sorted[lo]
	}
	frac := rank - float64(lo)
	return sorted[lo] + (sorted[hi]-sorted[lo])*frac
}
