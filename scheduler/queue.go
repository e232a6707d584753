package scheduler

import (
	"context"
	"sync"
)

// queue is the bounded FIFO shared by one model's workers. Unlike a channel it lets a job
// that was cancelled while waiting leave at once, so it neither holds a slot nor reaches a
// device.
type queue struct {
	mu     sync.Mutex
	items  []*job
	cap    int
	notify chan struct{} // closed and replaced whenever items grow or the queue closes
	closed bool
}

func newQueue(capacity int) *queue {
	return &queue{cap: capacity, notify: make(chan struct{})}
}

// push adds j at the tail. It returns false when the queue is full or closed.
func (q *queue) push(j *job) (ok bool, position int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || len(q.items) >= q.cap {
		return false, len(q.items)
	}
	q.items = append(q.items, j)
	q.wake()
	return true, len(q.items)
}

// remove takes j out of the queue if it is still waiting. It reports whether it was there.
func (q *queue) remove(j *job) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, it := range q.items {
		if it == j {
			copy(q.items[i:], q.items[i+1:])
			q.items[len(q.items)-1] = nil
			q.items = q.items[:len(q.items)-1]
			return true
		}
	}
	return false
}

// len is the number of waiting jobs.
func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

// takeBatch blocks until at least one job waits (or ctx ends or the queue closes), then takes
// up to max jobs greedily without waiting for more, like the Python get_greedy_batch.
func (q *queue) takeBatch(ctx context.Context, max int) []*job {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			n := min(max, len(q.items))
			batch := make([]*job, n)
			copy(batch, q.items[:n])
			rest := copy(q.items, q.items[n:])
			clear(q.items[rest:])
			q.items = q.items[:rest]
			q.mu.Unlock()
			return batch
		}
		if q.closed {
			q.mu.Unlock()
			return nil
		}
		wait := q.notify
		q.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil
		case <-wait:
		}
	}
}

// close stops accepting jobs and returns the ones still waiting.
func (q *queue) close() []*job {
	q.mu.Lock()
	defer q.mu.Unlock()
	left := q.items
	q.items = nil
	if !q.closed {
		q.closed = true
		q.wake()
	}
	return left
}

func (q *queue) wake() {
	close(q.notify)
	q.notify = make(chan struct{})
}
