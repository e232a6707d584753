package scheduler

import (
	"context"
	"sync"
	"time"
)

// The request context the scheduler reads: the client a job is queued under (WithClient) and
// where a request's time went (WithTiming).

type clientKey struct{}

type timingKey struct{}

// Timing collects where a request's time went: queue wait and device (batch run) time, summed
// over its jobs (a multi-image request has several). The server reads it for response headers
// and the access log. Safe for concurrent jobs of one request.
type Timing struct {
	mu     sync.Mutex
	Wait   time.Duration
	Device time.Duration
	Jobs   int
}

func (t *Timing) add(wait, device time.Duration) {
	t.mu.Lock()
	t.Wait += wait
	t.Device += device
	t.Jobs++
	t.mu.Unlock()
}

// Snapshot returns the totals so far.
func (t *Timing) Snapshot() (wait, device time.Duration, jobs int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.Wait, t.Device, t.Jobs
}

// WithTiming makes the scheduler record the jobs of ctx's request into t.
func WithTiming(ctx context.Context, t *Timing) context.Context {
	return context.WithValue(ctx, timingKey{}, t)
}

func timingOf(ctx context.Context) *Timing {
	t, _ := ctx.Value(timingKey{}).(*Timing)
	return t
}

// WithClient tags ctx with the client (API key name or JWT subject) a job is queued under
// for fair sharing.
func WithClient(ctx context.Context, client string) context.Context {
	return context.WithValue(ctx, clientKey{}, client)
}

// ClientOf returns the client a context was tagged with by WithClient ("" if none).
func ClientOf(ctx context.Context) string {
	c, _ := ctx.Value(clientKey{}).(string)
	return c
}
