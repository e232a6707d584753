package bench

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Arrival names an open-loop arrival process.
type Arrival string

const (
	// ArrivalPoisson draws exponential inter-arrival gaps with mean 1/rate.
	ArrivalPoisson Arrival = "poisson"
	// ArrivalConstant spaces arrivals exactly 1/rate apart.
	ArrivalConstant Arrival = "constant"
)

// Arrivals yields the offsets, from the start of a run, at which an open-loop run sends its
// requests. It is deterministic for a given seed, so a run can be repeated exactly.
type Arrivals struct {
	kind Arrival
	gap  float64 // mean gap in seconds
	rng  *rand.Rand
	next float64 // offset of the next arrival, seconds
	k    int     // arrivals yielded so far
}

// NewArrivals returns the arrival process kind at rate requests per second. The first
// arrival is at offset 0 for ArrivalConstant and after one random gap for ArrivalPoisson.
func NewArrivals(kind Arrival, rate float64, seed uint64) (*Arrivals, error) {
	if !(rate > 0) {
		return nil, fmt.Errorf("%w: arrival rate must be > 0, got %v", ErrConfig, rate)
	}
	a := &Arrivals{kind: kind, gap: 1 / rate, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	switch kind {
	case ArrivalConstant:
	case ArrivalPoisson:
		a.next = a.rng.ExpFloat64() * a.gap
	default:
		return nil, fmt.Errorf("%w: unknown arrival process %q (want poisson or constant)", ErrConfig, kind)
	}
	return a, nil
}

// Next returns the offset of the next arrival and advances the process.
func (a *Arrivals) Next() time.Duration {
	at := a.next
	a.k++
	if a.kind == ArrivalConstant {
		// k·gap, not a running sum of gaps: summing 0.1 ten times gives 0.9999999999999999,
		// which put an 11th arrival of 10/s inside a 1 s run.
		a.next = float64(a.k) * a.gap
	} else {
		a.next += a.rng.ExpFloat64() * a.gap
	}
	return time.Duration(at * float64(time.Second))
}

// ArrivalTimes returns the first n arrival offsets of the process.
func ArrivalTimes(kind Arrival, rate float64, n int, seed uint64) ([]time.Duration, error) {
	a, err := NewArrivals(kind, rate, seed)
	if err != nil {
		return nil, err
	}
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = a.Next()
	}
	return out, nil
}
