package scheduler

import (
	"context"
	"sync"
	"time"
)

// queue is the bounded queue shared by one model's workers. Jobs wait in one FIFO per client
// and clients are served round-robin (weighted), so one client's burst cannot starve the
// others; the total stays within capacity. Unlike a channel it lets a job that was cancelled
// while waiting leave at once, so it neither holds a slot nor reaches a device.
type queue struct {
	mu        sync.Mutex
	cap       int
	perClient int            // 0: no per-client cap
	weights   map[string]int // client → jobs served per round (default 1)
	clients   map[string]*clientQueue
	ring      []*clientQueue // clients with waiting jobs, in service order
	next      int            // ring index served next
	total     int
	notify    chan struct{} // closed and replaced whenever jobs arrive or the queue closes
	closed    bool

	// Places held for requests of several jobs (Reservation): held is their sum, clientHeld
	// each client's share; unreserved counts the waiting jobs queued outside a reservation.
	// A plain push needs unreserved + held < cap; a job of a reservation uses its places.
	held       int
	clientHeld map[string]int
	unreserved int
}

type clientQueue struct {
	key        string
	jobs       []*job
	served     int // jobs served in the current round
	unreserved int // jobs queued outside a reservation
}

func newQueue(capacity, perClient int, weights map[string]int) *queue {
	return &queue{cap: capacity, perClient: perClient, weights: weights,
		clients: map[string]*clientQueue{}, notify: make(chan struct{}), clientHeld: map[string]int{}}
}

// pushResult says why a push failed.
type pushResult int

const (
	pushed pushResult = iota
	pushFull
	pushClientFull
	pushClosed
)

// push adds j at the tail of its client's queue: in a place of its reservation when it has
// one with a place free, else in a free place of the queue.
func (q *queue) push(j *job) pushResult {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return pushClosed
	}
	c := q.clients[j.client]
	if r := j.res; r != nil && !r.released && r.queued < r.size {
		r.queued++
	} else {
		j.res = nil
		if q.unreserved+q.held >= q.cap {
			return pushFull
		}
		if q.perClient > 0 && q.clientHeld[j.client]+c.unreservedCount() >= q.perClient {
			return pushClientFull
		}
		q.unreserved++
	}
	if c == nil {
		c = &clientQueue{key: j.client}
		q.clients[j.client] = c
		q.ring = append(q.ring, c)
	}
	if j.res == nil {
		c.unreserved++
	}
	c.jobs = append(c.jobs, j)
	q.total++
	q.wake()
	return pushed
}

func (c *clientQueue) unreservedCount() int {
	if c == nil {
		return 0
	}
	return c.unreserved
}

// left accounts for j leaving the queue (taken, removed or closed out). Caller holds mu.
func (q *queue) left(c *clientQueue, j *job) {
	q.total--
	if j.res != nil {
		j.res.queued--
		return
	}
	q.unreserved--
	if c != nil {
		c.unreserved--
	}
}

// reserve holds n places for one client's request, all or none.
func (q *queue) reserve(r *Reservation) pushResult {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.closed:
		return pushClosed
	case q.unreserved+q.held+r.size > q.cap:
		return pushFull
	case q.perClient > 0 && q.clientHeld[r.client]+q.clients[r.client].unreservedCount()+r.size > q.perClient:
		return pushClientFull
	}
	q.held += r.size
	q.clientHeld[r.client] += r.size
	return pushed
}

// unreserve gives r's places back; its jobs still waiting keep theirs until they leave.
func (q *queue) unreserve(r *Reservation) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if r.released {
		return
	}
	r.released = true
	q.held -= r.size
	if q.clientHeld[r.client] -= r.size; q.clientHeld[r.client] <= 0 {
		delete(q.clientHeld, r.client)
	}
	// Jobs of r still queued (their requests are ending) now count as unreserved.
	if r.queued > 0 {
		for _, cq := range q.ring {
			for _, j := range cq.jobs {
				if j.res == r {
					j.res = nil
					q.unreserved++
					cq.unreserved++
				}
			}
		}
		r.queued = 0
	}
}

// remove takes j out of the queue if it is still waiting. It reports whether it was there.
func (q *queue) remove(j *job) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	c := q.clients[j.client]
	if c == nil {
		return false
	}
	for i, it := range c.jobs {
		if it == j {
			c.jobs = append(c.jobs[:i], c.jobs[i+1:]...)
			q.left(c, j)
			q.dropIfEmpty(c)
			return true
		}
	}
	return false
}

// dropIfEmpty removes an idle client from the ring. Caller holds mu.
func (q *queue) dropIfEmpty(c *clientQueue) {
	if len(c.jobs) > 0 {
		return
	}
	delete(q.clients, c.key)
	for i, r := range q.ring {
		if r == c {
			q.ring = append(q.ring[:i], q.ring[i+1:]...)
			if q.next > i {
				q.next--
			}
			break
		}
	}
	if q.next >= len(q.ring) {
		q.next = 0
	}
}

// len is the number of waiting jobs.
func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.total
}

// cost is the summed cost of the waiting jobs.
func (q *queue) cost() float64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	var sum float64
	for _, c := range q.ring {
		for _, j := range c.jobs {
			sum += j.cost
		}
	}
	return sum
}

// popLocked takes the next job in weighted round-robin order whose batch key matches key
// ("" matches anything). Caller holds mu.
func (q *queue) popLocked(key string, any bool) *job {
	for tries := 0; tries < len(q.ring); tries++ {
		c := q.ring[q.next]
		for i, j := range c.jobs {
			if any || j.batchKey == key {
				c.jobs = append(c.jobs[:i], c.jobs[i+1:]...)
				q.left(c, j)
				c.served++
				w := max(q.weights[c.key], 1)
				if c.served >= w || len(c.jobs) == 0 {
					c.served = 0
					q.next = (q.next + 1) % len(q.ring)
				}
				q.dropIfEmpty(c)
				return j
			}
			break // only the head of each client's FIFO is eligible: keep per-client order
		}
		q.next = (q.next + 1) % len(q.ring)
	}
	return nil
}

// takeBatch blocks until a job waits (or ctx ends or the queue closes), then takes up to max
// jobs with the same batch key, in fair order. With delay > 0 it waits up to delay for more
// compatible jobs to fill the batch (Triton's max queue delay).
func (q *queue) takeBatch(ctx context.Context, max int, delay time.Duration) []*job {
	var batch []*job
	var deadline <-chan time.Time
	for {
		q.mu.Lock()
		if len(batch) == 0 && q.total > 0 {
			batch = append(batch, q.popLocked("", true))
		}
		for len(batch) > 0 && len(batch) < max {
			j := q.popLocked(batch[0].batchKey, false)
			if j == nil {
				break
			}
			batch = append(batch, j)
		}
		if len(batch) >= max || (len(batch) > 0 && delay <= 0) || (q.closed && len(batch) > 0) {
			q.mu.Unlock()
			return batch
		}
		if q.closed {
			q.mu.Unlock()
			return nil
		}
		wait := q.notify
		q.mu.Unlock()
		if len(batch) > 0 && deadline == nil {
			t := time.NewTimer(delay)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-ctx.Done():
			if len(batch) > 0 {
				return batch
			}
			return nil
		case <-deadline:
			return batch
		case <-wait:
		}
	}
}

// requeue puts jobs a worker took but cannot run (its process died) back at the head of their
// clients' queues, in order, for another worker; when the queue has closed it returns them.
func (q *queue) requeue(jobs []*job) []*job {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return jobs
	}
	for i := len(jobs) - 1; i >= 0; i-- {
		j := jobs[i]
		c := q.clients[j.client]
		if c == nil {
			c = &clientQueue{key: j.client}
			q.clients[j.client] = c
			q.ring = append(q.ring, c)
		}
		c.jobs = append([]*job{j}, c.jobs...)
		q.total++
		if j.res != nil {
			j.res.queued++
		} else {
			q.unreserved++
			c.unreserved++
		}
	}
	q.wake()
	return nil
}

// close stops accepting jobs and returns the ones still waiting.
func (q *queue) close() []*job {
	q.mu.Lock()
	defer q.mu.Unlock()
	var left []*job
	for _, c := range q.ring {
		left = append(left, c.jobs...)
		for _, j := range c.jobs {
			if j.res != nil {
				j.res.queued--
			}
		}
	}
	q.ring, q.clients, q.total, q.next, q.unreserved = nil, map[string]*clientQueue{}, 0, 0, 0
	if !q.closed {
		q.closed = true
		q.wake()
	}
	return left
}

// isClosed reports whether the queue has closed (Stop): no job will ever be queued again.
func (q *queue) isClosed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closed
}

func (q *queue) wake() {
	close(q.notify)
	q.notify = make(chan struct{})
}
