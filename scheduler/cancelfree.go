package scheduler

import (
	"context"
	"sync/atomic"
	"time"
)

// cancelWatch measures how soon a runner lets go of a cancelled task: the denoising steps the
// task reported after its context ended, and the time from then until the runner returned
// the batch (the device is free again). The video service's "cancel stops the device at the
// next step" is this figure staying at most 1 (Config.OnCancelFreed; the metric
// tt_media_server_steps_after_cancel).
type cancelWatch struct {
	step     atomic.Int64  // the last step the task reported done
	atStep   int64         // step when the context ended; set before seen closes
	atTime   time.Time     // when the context ended; set before seen closes
	seen     chan struct{} // closed once the context's end is recorded
	stopHook func() bool
}

// watchCancel starts watching j's context for the batch now running it.
func watchCancel(ctx context.Context) *cancelWatch {
	c := &cancelWatch{seen: make(chan struct{})}
	c.stopHook = context.AfterFunc(ctx, func() {
		c.atTime, c.atStep = time.Now(), c.step.Load()
		close(c.seen)
	})
	return c
}

// progress records the task's step.
func (c *cancelWatch) progress(done int) { c.step.Store(int64(done)) }

// freed stops watching once the runner has returned; when the context ended while the task
// ran it reports the steps run since and the time the device took to come free.
func (c *cancelWatch) freed(now time.Time) (steps int, after time.Duration, cancelled bool) {
	if c.stopHook() { // the context had not ended
		return 0, 0, false
	}
	<-c.seen
	return int(max(0, c.step.Load()-c.atStep)), max(0, now.Sub(c.atTime)), true
}
