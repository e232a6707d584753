package scheduler

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReserveAllOrNone: a request's jobs are admitted all or none. With MAX_QUEUE_SIZE 5 and the
// only worker held, a reservation of 4 leaves one place for others; its 4 jobs all queue even
// when plain jobs try to take the places; a second reservation that does not fit is refused
// whole (429, Retry-After) before any of its jobs is queued; one larger than the queue can
// never fit (ErrTooManyJobs, no Retry-After).
func TestReserveAllOrNone(t *testing.T) {
	h := newHarness(t, Config{QueueSize: 5}, true, "")
	h.start(t)
	waitFor(t, "ready", h.s.Ready)
	ctx := context.Background()

	go func() { _, _ = h.s.Submit(ctx, sreq("blocker"), nil) }() // holds the only worker
	waitFor(t, "blocker running", func() bool { return h.runs.Load() == 1 })

	r, err := h.s.Reserve(ctx, 4)
	require.NoError(t, err)
	_, err = h.s.Reserve(ctx, 2)
	var rej *Rejection
	require.ErrorAs(t, err, &rej, "2 more places do not fit: refused whole")
	require.ErrorIs(t, err, ErrQueueFull)
	require.Positive(t, rej.RetryAfter)
	_, err = h.s.Reserve(ctx, 6)
	require.ErrorIs(t, err, ErrTooManyJobs)
	require.Contains(t, err.Error(), "MAX_QUEUE_SIZE is 5")
	require.False(t, errors.As(err, &rej), "a request that can never fit is not retryable")

	// One plain job takes the last free place; the next is refused.
	plain := make(chan error, 2)
	go func() { _, err := h.s.Submit(ctx, sreq("plain-1"), nil); plain <- err }()
	waitFor(t, "plain queued", func() bool { return h.s.QueueLen() == 1 })
	_, err = h.s.Submit(ctx, sreq("plain-2"), nil)
	require.ErrorIs(t, err, ErrQueueFull)

	// The reservation's 4 jobs all queue though the free places are gone.
	rctx := WithReservation(ctx, r)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range 4 {
		wg.Go(func() { _, errs[i] = h.s.Submit(rctx, sreq("img"), nil) })
	}
	waitFor(t, "4 reserved jobs queued", func() bool { return h.s.QueueLen() == 5 })
	for range 6 { // let the blocker, the plain job and the 4 reserved ones run
		h.gate <- struct{}{}
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "reserved job %d", i)
	}
	require.NoError(t, <-plain)
	r.Release()
	r.Release() // twice is fine

	// The places are back: a reservation of 5 fits again.
	r2, err := h.s.Reserve(ctx, 5)
	require.NoError(t, err)
	r2.Release()
}

// TestReservePerClient: MAX_QUEUE_PER_CLIENT bounds a client's reservation too.
func TestReservePerClient(t *testing.T) {
	h := newHarness(t, Config{QueueSize: 8, PerClientCap: 2}, false, "")
	h.start(t)
	waitFor(t, "ready", h.s.Ready)
	ctx := WithClient(context.Background(), "alice")
	_, err := h.s.Reserve(ctx, 3)
	require.ErrorIs(t, err, ErrTooManyJobs)
	require.Contains(t, err.Error(), "MAX_QUEUE_PER_CLIENT is 2")
	r, err := h.s.Reserve(ctx, 2)
	require.NoError(t, err)
	_, err = h.s.Reserve(ctx, 1)
	require.ErrorIs(t, err, ErrClientQueueFull)
	_, err = h.s.Reserve(WithClient(context.Background(), "bob"), 2)
	require.NoError(t, err, "another client has its own share")
	r.Release()
	require.Equal(t, 2, h.s.MaxReservation())
}
