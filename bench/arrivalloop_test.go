package bench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeClock is a clock whose Sleep moves time on at once (unless ctx is done): the open-loop
// scheduler runs a whole schedule without waiting, deterministically.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) {
	if ctx.Err() == nil {
		c.now = c.now.Add(d)
	}
}

func ms2d(ms ...int) []time.Duration {
	out := make([]time.Duration, len(ms))
	for i, m := range ms {
		out[i] = time.Duration(m) * time.Millisecond
	}
	return out
}

// TestArrivalLoopSchedule: the open-loop scheduler starts each request at its arrival offset,
// stops at the duration or the request count, drops (never queues) arrivals that find every
// in-flight place taken, starts late arrivals at once without skipping any, and stops when its
// context ends.
func TestArrivalLoopSchedule(t *testing.T) {
	poisson, err := ArrivalTimes(ArrivalPoisson, 5, 6, 7)
	require.NoError(t, err)
	tests := []struct {
		name        string
		kind        Arrival
		rate        float64
		dur         time.Duration
		n           int
		maxInFlight int
		// hold: the started requests never end (their places stay taken).
		hold bool
		// busy: starting a request takes the scheduler this long (it falls behind).
		busy time.Duration
		// cancelAt: the context ends when request cancelAt starts (-1: never).
		cancelAt    int
		wantStarts  []time.Duration
		wantIDs     []int
		wantDropped int
	}{
		{name: "constant 10/s for 1 s: 10 arrivals, the one at 1 s is outside", kind: ArrivalConstant, rate: 10, dur: time.Second,
			maxInFlight: 64, cancelAt: -1, wantStarts: ms2d(0, 100, 200, 300, 400, 500, 600, 700, 800, 900), wantIDs: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{name: "request count bound", kind: ArrivalConstant, rate: 4, n: 3, maxInFlight: 64, cancelAt: -1,
			wantStarts: ms2d(0, 250, 500), wantIDs: []int{0, 1, 2}},
		{name: "both bounds: the duration ends first", kind: ArrivalConstant, rate: 4, dur: 600 * time.Millisecond, n: 100, maxInFlight: 64, cancelAt: -1,
			wantStarts: ms2d(0, 250, 500), wantIDs: []int{0, 1, 2}},
		{name: "poisson: the seeded process's offsets", kind: ArrivalPoisson, rate: 5, n: 6, maxInFlight: 64, cancelAt: -1,
			wantStarts: poisson, wantIDs: []int{0, 1, 2, 3, 4, 5}},
		{name: "in-flight limit: held requests, later arrivals dropped", kind: ArrivalConstant, rate: 4, n: 5, maxInFlight: 2, hold: true, cancelAt: -1,
			wantStarts: ms2d(0, 250), wantIDs: []int{0, 1}, wantDropped: 3},
		{name: "in-flight limit: released places are reused", kind: ArrivalConstant, rate: 4, n: 5, maxInFlight: 1, cancelAt: -1,
			wantStarts: ms2d(0, 250, 500, 750, 1000), wantIDs: []int{0, 1, 2, 3, 4}},
		{name: "late: a 300 ms start at 10/s sends back to back, none skipped", kind: ArrivalConstant, rate: 10, n: 4, maxInFlight: 64, busy: 300 * time.Millisecond, cancelAt: -1,
			wantStarts: ms2d(0, 300, 600, 900), wantIDs: []int{0, 1, 2, 3}},
		{name: "the duration bounds arrival offsets, not send times: all 4 arrivals before 2 s are sent", kind: ArrivalConstant, rate: 2, dur: 2 * time.Second,
			maxInFlight: 64, busy: 700 * time.Millisecond, cancelAt: -1, wantStarts: ms2d(0, 700, 1400, 2100), wantIDs: []int{0, 1, 2, 3}},
		{name: "context ends: no further arrival", kind: ArrivalConstant, rate: 10, dur: time.Minute, maxInFlight: 64, cancelAt: 2,
			wantStarts: ms2d(0, 100, 200), wantIDs: []int{0, 1, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			arr, err := NewArrivals(tc.kind, tc.rate, 7)
			require.NoError(t, err)
			clk := &fakeClock{now: time.Date(2026, 11, 28, 5, 0, 0, 0, time.UTC)}
			t0 := clk.now
			var starts []time.Duration
			var ids []int
			dropped := arrivalLoop(ctx, clk, arr, tc.dur, tc.n, tc.maxInFlight, func(i int, release func()) {
				starts = append(starts, clk.now.Sub(t0))
				ids = append(ids, i)
				clk.now = clk.now.Add(tc.busy)
				if i == tc.cancelAt {
					cancel()
				}
				if !tc.hold {
					release()
				}
			})
			require.Equal(t, tc.wantStarts, starts)
			require.Equal(t, tc.wantIDs, ids)
			require.Equal(t, tc.wantDropped, dropped)
		})
	}
}
