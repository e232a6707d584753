package scheduler

import (
	"sync"
	"sync/atomic"
	"time"
)

// stats are the scheduler's counters, shown in /tt-liveness and used by metrics.
type stats struct {
	accepted, completed                atomic.Int64
	rejectedFull, rejectedDeadline     atomic.Int64
	rejectedNotReady, rejectedStopping atomic.Int64
	cancelledQueued, cancelledRunning  atomic.Int64
	timeoutQueued, timeoutRunning      atomic.Int64
	deviceRuns                         atomic.Int64 // tasks handed to runners
}

// Stats is a snapshot of the scheduler's counters.
type Stats struct {
	Accepted         int64 `json:"accepted"`
	Completed        int64 `json:"completed"`
	RejectedFull     int64 `json:"rejected_queue_full"`
	RejectedDeadline int64 `json:"rejected_deadline"`
	RejectedNotReady int64 `json:"rejected_not_ready"`
	RejectedStopping int64 `json:"rejected_stopping"`
	CancelledQueued  int64 `json:"cancelled_queued"`
	CancelledRunning int64 `json:"cancelled_running"`
	TimeoutQueued    int64 `json:"timeout_queued"`
	TimeoutRunning   int64 `json:"timeout_running"`
	DeviceRuns       int64 `json:"device_runs"`
	// DrainRate is measured cost units per second over ready workers (0 before any sample).
	DrainRate float64 `json:"drain_rate"`
}

// Stats returns the counters.
func (s *Scheduler) Stats() Stats {
	drain, _, _ := s.rate.drain(s.readyWorkers())
	return Stats{
		Accepted: s.stats.accepted.Load(), Completed: s.stats.completed.Load(),
		RejectedFull: s.stats.rejectedFull.Load(), RejectedDeadline: s.stats.rejectedDeadline.Load(),
		RejectedNotReady: s.stats.rejectedNotReady.Load(), RejectedStopping: s.stats.rejectedStopping.Load(),
		CancelledQueued: s.stats.cancelledQueued.Load(), CancelledRunning: s.stats.cancelledRunning.Load(),
		TimeoutQueued: s.stats.timeoutQueued.Load(), TimeoutRunning: s.stats.timeoutRunning.Load(),
		DeviceRuns: s.stats.deviceRuns.Load(), DrainRate: drain,
	}
}

// rateEstimator keeps exponentially weighted averages of one worker's throughput (cost units
// per second of batch service time) and of the cost of one job.
type rateEstimator struct {
	mu      sync.Mutex
	perSec  float64 // cost units per second, one worker
	jobCost float64
	samples int
}

const ewmaAlpha = 0.2

// observe records one batch: its summed cost, its job count and how long the runner took.
func (r *rateEstimator) observe(cost float64, jobs int, took time.Duration) {
	if took <= 0 || jobs == 0 || cost <= 0 {
		return
	}
	rate := cost / took.Seconds()
	per := cost / float64(jobs)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.samples == 0 {
		r.perSec, r.jobCost = rate, per
	} else {
		r.perSec += ewmaAlpha * (rate - r.perSec)
		r.jobCost += ewmaAlpha * (per - r.jobCost)
	}
	r.samples++
}

// drain is the queue's drain rate over workers ready workers and the average job cost.
func (r *rateEstimator) drain(workers int) (perSec, jobCost float64, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.samples == 0 {
		return 0, 0, false
	}
	return r.perSec * float64(workers), r.jobCost, true
}
