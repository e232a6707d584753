package server

import (
	"context"
	"net/http"
	"runtime"
	"sync"
	"time"
)

// memBudget shares a memory budget among the requests in flight. IMAGE_MEMORY_BUDGET_BYTES:
// each image upload reserves the memory its decode will hold (imaging.DecodeCost, from the
// header) before any pixel is decoded, and keeps it until its request is answered, since the
// decoded image waits in the queue and runs on the device; LoRA checks reserve their header
// parse and factor scan from it too (lora.Budget). AUDIO_MEMORY_BUDGET_BYTES: each audio
// upload reserves its decode's samples (estimated from the container's frame count). So a
// flood of decompression bombs, or of big photos, holds at most the budget, whatever the
// queue size.
type memBudget struct {
	total int64
	// setting names the budget in refusals; what says what takes it.
	setting, what string
	// wait is how long a reservation waits for room before a 429 (imageBudgetWait; tests
	// shorten it).
	wait time.Duration

	mu      sync.Mutex
	used    int64
	changed chan struct{} // closed and replaced on every release
}

// defaultImageMemoryBudget is IMAGE_MEMORY_BUDGET_BYTES's default, for settings built by hand.
const defaultImageMemoryBudget = 512 << 20

// imageBudgetWait is how long an upload waits for room in the budget before a 429.
const imageBudgetWait = 10 * time.Second

func newMemBudget(total int64, setting, what string) *memBudget {
	if total <= 0 {
		total = defaultImageMemoryBudget
	}
	return &memBudget{total: total, setting: setting, what: what, wait: imageBudgetWait, changed: make(chan struct{})}
}

// Acquire is acquire with its own size check: n over the whole budget is a 413 naming it.
func (b *memBudget) Acquire(ctx context.Context, n int64) (release func(), err error) {
	if n > b.total {
		return nil, httpErr(http.StatusRequestEntityTooLarge, "this needs %d MiB of memory, over %s (%d MiB)", (n+1<<20-1)>>20, b.setting, b.total>>20)
	}
	return b.acquire(ctx, n)
}

// acquire reserves n bytes, waiting until they fit, ctx ends or b.wait passes. The
// caller checks n <= total first; release gives the bytes back.
func (b *memBudget) acquire(ctx context.Context, n int64) (release func(), err error) {
	var timeout <-chan time.Time
	for {
		b.mu.Lock()
		if b.used+n <= b.total {
			b.used += n
			b.mu.Unlock()
			var once sync.Once
			return func() { once.Do(func() { b.release(n) }) }, nil
		}
		changed := b.changed
		b.mu.Unlock()
		if timeout == nil {
			t := time.NewTimer(b.wait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-timeout:
			return nil, &apiError{status: http.StatusTooManyRequests, retryAfter: time.Second,
				msg: b.setting + " is taken by the " + b.what + " of other requests in flight; try again shortly"}
		}
	}
}

// gcAfter: releasing at least this much runs the garbage collector before the waiters are
// woken, so the next decode reuses the freed pixels' memory instead of growing the heap to
// twice the budget while they wait to be collected.
const gcAfter = 64 << 20

func (b *memBudget) release(n int64) {
	if n >= gcAfter {
		runtime.GC()
	}
	b.mu.Lock()
	b.used -= n
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}
