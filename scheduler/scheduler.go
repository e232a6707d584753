// Package scheduler runs one model's device workers: a bounded FIFO queue shared by one worker
// goroutine per device group, greedy batching, per-request deadlines, warm-up in sequence,
// restart of failed workers, and graceful stop. It knows jobs and workers, not models: the
// requests it carries are opaque to it and runners do the work.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
)

// Sentinel errors; the HTTP layer maps each to a status code.
var (
	// ErrQueueFull: the queue holds MAX_QUEUE_SIZE jobs already (429).
	ErrQueueFull = errors.New("task queue is full")
	// ErrNotReady: no worker has warmed up yet, or every worker has failed (503).
	ErrNotReady = errors.New("model is not ready")
	// ErrStopping: the server is shutting down and takes no new work (503).
	ErrStopping = errors.New("server is shutting down")
	// ErrTimeout: the job's deadline passed before it finished (504).
	ErrTimeout = errors.New("inference timed out")
	// ErrWorkerFailed: the worker running the job crashed (503).
	ErrWorkerFailed = errors.New("device worker failed")
	// ErrUnknownWorker: a reset named a worker id that does not exist (404).
	ErrUnknownWorker = errors.New("unknown worker")
	// ErrClientQueueFull: this client already has its per-client share of the queue (429).
	ErrClientQueueFull = errors.New("too many queued requests for this client")
	// ErrDeadlineUnreachable: the predicted queue wait plus service time exceeds the job's
	// deadline, so it is refused now instead of timing out later (429).
	ErrDeadlineUnreachable = errors.New("request cannot finish before its deadline")
	// ErrTooManyJobs: a request of several jobs needs more queue places than MAX_QUEUE_SIZE
	// (or MAX_QUEUE_PER_CLIENT) has: it can never be admitted, so retrying is pointless (400).
	ErrTooManyJobs = errors.New("request needs more queue places than the server has")
)

// Reservation holds queue places for the jobs of one request (the images of number_of_images,
// the chunks of a fanned-out transcription), so they are admitted all or none: a request
// either gets all its places at once or is refused before any of its jobs runs, and once
// admitted none of its jobs is refused for a full queue. Jobs submitted with a context
// carrying it (WithReservation) take its places; a place comes back to the reservation when
// its job leaves the queue for a worker. Release gives them back to the queue.
type Reservation struct {
	q      *queue
	client string
	size   int
	// under q.mu:
	queued   int // the reservation's jobs waiting now
	released bool
}

type reservationKey struct{}

// WithReservation makes the jobs submitted with ctx take r's places.
func WithReservation(ctx context.Context, r *Reservation) context.Context {
	return context.WithValue(ctx, reservationKey{}, r)
}

// Release gives r's places back to the queue. Safe to call more than once.
func (r *Reservation) Release() {
	if r != nil {
		r.q.unreserve(r)
	}
}

// MaxReservation is the most places one request can ever hold: MAX_QUEUE_SIZE, or
// MAX_QUEUE_PER_CLIENT when that is smaller.
func (s *Scheduler) MaxReservation() int {
	n := s.cfg.QueueSize
	if s.cfg.PerClientCap > 0 {
		n = min(n, s.cfg.PerClientCap)
	}
	return n
}

// Reserve holds n queue places for the jobs of one request of ctx's client, all or none. A
// request that needs more than the server can ever hold is ErrTooManyJobs (naming the
// setting); a queue without n free places now is a *Rejection (ErrQueueFull, with
// Retry-After), as is a server not ready or stopping.
func (s *Scheduler) Reserve(ctx context.Context, n int) (*Reservation, error) {
	if s.stopping.Load() {
		return nil, s.reject(ErrStopping, &s.stats.rejectedStopping, 5*time.Second)
	}
	if !s.anyReady() {
		return nil, s.notReady()
	}
	if n > s.cfg.QueueSize {
		return nil, fmt.Errorf("%w: it needs %d at once, MAX_QUEUE_SIZE is %d", ErrTooManyJobs, n, s.cfg.QueueSize)
	}
	if s.cfg.PerClientCap > 0 && n > s.cfg.PerClientCap {
		return nil, fmt.Errorf("%w: it needs %d at once, MAX_QUEUE_PER_CLIENT is %d", ErrTooManyJobs, n, s.cfg.PerClientCap)
	}
	r := &Reservation{q: s.q, client: ClientOf(ctx), size: max(n, 0)}
	switch s.q.reserve(r) {
	case pushFull:
		return nil, s.reject(fmt.Errorf("%w: %d places needed at once", ErrQueueFull, n), &s.stats.rejectedFull, s.RetryAfter())
	case pushClientFull:
		return nil, s.reject(fmt.Errorf("%w (at most %d; %d needed at once)", ErrClientQueueFull, s.cfg.PerClientCap, n), &s.stats.rejectedFull, s.RetryAfter())
	case pushClosed:
		return nil, s.reject(ErrStopping, &s.stats.rejectedStopping, 5*time.Second)
	}
	return r, nil
}

// Rejection is an admission refusal with the time after which a retry is likely admitted.
type Rejection struct {
	Err        error
	RetryAfter time.Duration
}

func (r *Rejection) Error() string { return r.Err.Error() }
func (r *Rejection) Unwrap() error { return r.Err }

// Costed requests tell the scheduler their relative cost (denoising steps, seconds of audio,
// images) so wait predictions scale with the work queued. Requests without it cost 1.
type Costed interface{ Cost() float64 }

// Batchable requests say which others they may share a device batch with; jobs batch only
// with jobs of the same key. Requests without it batch with anything.
type Batchable interface{ BatchKey() string }

// RunnerFactory builds the runner of one device group.
type RunnerFactory func(group config.DeviceGroup) (runners.Runner, error)

// ResetFunc resets the chips of the given groups (RESET_DEVICE_COMMAND on hardware).
type ResetFunc func(ctx context.Context, groups []config.DeviceGroup) error

// Config is what a scheduler needs to know.
type Config struct {
	Groups        []config.DeviceGroup
	QueueSize     int
	MaxBatchSize  int
	MaxBatchDelay time.Duration  // wait at most this long to fill a batch (0: greedy, no wait)
	PerClientCap  int            // max queued jobs per client (0: no cap)
	ClientWeights map[string]int // jobs per round-robin turn per client (default 1)
	StartDelay    time.Duration  // between worker starts (NEW_DEVICE_DELAY_SECONDS)
	Timeout       time.Duration  // per request, queue wait included (DEFAULT_INFERENCE_TIMEOUT_SECONDS)
	MaxRestarts   int            // MAX_WORKER_RESTART_COUNT
	RestartDelay  time.Duration  // pause before re-warming a failed worker (RESET_DEVICE_SLEEP_TIME)
	CheckInterval time.Duration  // health monitor period (WORKER_CHECK_SLEEP_TIMEOUT)
	// CanaryInterval: an idle worker whose runner implements runners.Prober probes it this
	// often; a failed probe restarts the worker. 0 turns probing off.
	CanaryInterval time.Duration
	// Canary configures the canary health monitor (canary.go); without Canary.Enabled and
	// Canary.Probe there is none.
	Canary CanaryConfig
	Reset  ResetFunc // optional: resets devices before a worker restarts
	// OnJobDone, when set, hears about every job that reached a runner: its queue wait, the
	// run time of its batch, and its outcome ("ok", "error" or "cancelled").
	OnJobDone func(worker string, wait, device time.Duration, outcome string)
	// OnCancelFreed, when set, hears about every job cancelled while a runner ran it, once the
	// runner let go of it: the steps its task reported done after the cancellation (Task.Progress;
	// at most 1 for a runner that stops at the next step) and the time until the device was free.
	OnCancelFreed func(worker string, stepsAfter int, after time.Duration)
	Logger        *slog.Logger
}

// Scheduler owns one model's queue and workers.
type Scheduler struct {
	cfg     Config
	factory RunnerFactory
	log     *slog.Logger
	q       *queue

	ready    atomic.Bool
	stopping atomic.Bool
	stopMu   sync.Mutex     // orders inflight.Add before Stop's inflight.Wait (see enter)
	inflight sync.WaitGroup // accepted jobs not yet finished

	workers []*worker
	byID    map[string]*worker

	runCtx    context.Context
	runCancel context.CancelFunc
	wg        sync.WaitGroup

	rate  rateEstimator
	stats stats

	// canary is the health monitor (nil: none); realTraffic counts client jobs for it.
	canary *canary
	realTraffic
}

// New builds a scheduler; Start launches its workers.
func New(cfg Config, factory RunnerFactory) *Scheduler {
	if cfg.QueueSize < 1 {
		cfg.QueueSize = 1
	}
	if cfg.MaxBatchSize < 1 {
		cfg.MaxBatchSize = 1
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Scheduler{
		cfg:     cfg,
		factory: factory,
		log:     cfg.Logger,
		q:       newQueue(cfg.QueueSize, cfg.PerClientCap, cfg.ClientWeights),
		byID:    map[string]*worker{},
	}
	if cfg.Canary.Enabled && cfg.Canary.Probe != nil {
		s.canary = newCanary(s, cfg.Canary)
	}
	for _, g := range cfg.Groups {
		w := &worker{s: s, group: g, restartReq: make(chan struct{}, 1)}
		s.workers = append(s.workers, w)
		s.byID[g.ID] = w
	}
	return s
}

// job is one accepted request on its way to a terminal outcome.
type job struct {
	ctx      context.Context
	req      runners.Request
	emit     func(runners.Chunk) error
	client   string
	batchKey string
	cost     float64
	queued   time.Time
	res      *Reservation         // the places it takes (nil: a free place of the queue); under q.mu
	started  atomic.Bool          // a worker has handed it to a runner
	done     chan runners.Outcome // buffered 1: exactly one outcome is ever sent
	probe    bool                 // a canary probe, not client traffic
	once     sync.Once
}

func (j *job) finish(o runners.Outcome) { j.finishWith(o) }

// finishWith delivers o unless an outcome was delivered already; it reports whether o won.
func (j *job) finishWith(o runners.Outcome) bool {
	won := false
	j.once.Do(func() { j.done <- o; won = true })
	return won
}

// Submit queues req and waits for its terminal outcome: a result, or an error wrapping one of
// the sentinels above (or the runner's own error). emit, when not nil, receives streaming
// chunks from the worker goroutine; it must not block for long. The job's deadline is the
// earlier of ctx's and the configured inference timeout. Admission refusals are *Rejection
// values carrying a Retry-After estimate.
func (s *Scheduler) Submit(ctx context.Context, req runners.Request, emit func(runners.Chunk) error) (runners.Result, error) {
	if s.stopping.Load() {
		return nil, s.reject(ErrStopping, &s.stats.rejectedStopping, 5*time.Second)
	}
	if !s.anyReady() {
		return nil, s.notReady()
	}
	defer s.realTraffic.begin()()
	jctx, cancel := ctx, context.CancelFunc(func() {})
	if s.cfg.Timeout > 0 {
		jctx, cancel = context.WithTimeoutCause(ctx, s.cfg.Timeout, ErrTimeout)
	}
	defer cancel()
	j := &job{ctx: jctx, req: req, client: ClientOf(ctx), cost: 1, done: make(chan runners.Outcome, 1)}
	if c, ok := req.(Costed); ok && c.Cost() > 0 {
		j.cost = c.Cost()
	}
	if b, ok := req.(Batchable); ok {
		j.batchKey = b.BatchKey()
	}
	if r, ok := ctx.Value(reservationKey{}).(*Reservation); ok && r.q == s.q {
		j.res = r
	}
	if dl, ok := jctx.Deadline(); ok && j.res == nil { // a reserved request was admitted whole
		if wait, known := s.predictWait(j.cost); known && time.Until(dl) < wait {
			return nil, s.reject(fmt.Errorf("%w: predicted queue wait and service time %s, deadline in %s",
				ErrDeadlineUnreachable, wait.Round(time.Millisecond), time.Until(dl).Round(time.Millisecond)),
				&s.stats.rejectedDeadline, s.RetryAfter())
		}
	}
	if emit != nil {
		j.emit = func(c runners.Chunk) error {
			if jctx.Err() != nil {
				return s.ctxError(jctx)
			}
			return emit(c)
		}
	}
	if !s.enter() {
		return nil, s.reject(ErrStopping, &s.stats.rejectedStopping, 5*time.Second)
	}
	defer s.inflight.Done()
	j.queued = time.Now()
	switch s.q.push(j) {
	case pushFull:
		return nil, s.reject(ErrQueueFull, &s.stats.rejectedFull, s.RetryAfter())
	case pushClientFull:
		return nil, s.reject(fmt.Errorf("%w (at most %d)", ErrClientQueueFull, s.cfg.PerClientCap), &s.stats.rejectedFull, s.RetryAfter())
	case pushClosed:
		return nil, s.reject(ErrStopping, &s.stats.rejectedStopping, 5*time.Second)
	}
	s.stats.accepted.Add(1)
	select {
	case o := <-j.done:
		if o.Err == nil {
			s.stats.completed.Add(1)
		}
		return o.Value, o.Err
	case <-jctx.Done():
		queued := s.q.remove(j)
		err := s.ctxError(jctx)
		if j.finishWith(runners.Outcome{Err: err}) {
			s.countCancel(err, queued || !j.started.Load())
			return nil, err
		}
		// The worker delivered an outcome at the same moment: that one stands.
		o := <-j.done
		if o.Err != nil {
			s.countCancel(o.Err, false)
		} else {
			s.stats.completed.Add(1)
		}
		return o.Value, o.Err
	}
}

// notReady refuses work while no worker is ready: ErrStopping when a Stop that began since the
// caller's check of stopping is what made them so (it stops the workers after setting
// stopping), else ErrNotReady.
func (s *Scheduler) notReady() error {
	if s.stopping.Load() {
		return s.reject(ErrStopping, &s.stats.rejectedStopping, 5*time.Second)
	}
	return s.reject(ErrNotReady, &s.stats.rejectedNotReady, 5*time.Second)
}

func (s *Scheduler) reject(err error, counter *atomic.Int64, retry time.Duration) error {
	counter.Add(1)
	return &Rejection{Err: err, RetryAfter: retry}
}

func (s *Scheduler) countCancel(err error, queued bool) {
	timeout := errors.Is(err, ErrTimeout)
	switch {
	case queued && timeout:
		s.stats.timeoutQueued.Add(1)
	case queued:
		s.stats.cancelledQueued.Add(1)
	case timeout:
		s.stats.timeoutRunning.Add(1)
	default:
		s.stats.cancelledRunning.Add(1)
	}
}

// ctxError turns a job context's end into the error the client sees.
func (s *Scheduler) ctxError(ctx context.Context) error {
	cause := context.Cause(ctx)
	if errors.Is(cause, ErrTimeout) {
		return fmt.Errorf("%w after %s", ErrTimeout, s.cfg.Timeout)
	}
	if errors.Is(cause, context.DeadlineExceeded) {
		return fmt.Errorf("%w: the request's deadline passed", ErrTimeout)
	}
	return cause
}

// Ready reports whether at least one worker can take work now: warm, not stuck in a batch
// that overran its deadline, its process (if it has one) not gone.
func (s *Scheduler) Ready() bool { return !s.stopping.Load() && s.anyReady() }

// anyReady checks the workers themselves: stuck and process death are not state changes the
// ready flag hears about.
func (s *Scheduler) anyReady() bool {
	if !s.ready.Load() {
		return false
	}
	for _, w := range s.workers {
		if w.isReady() {
			return true
		}
	}
	return false
}

// QueueLen is the number of jobs waiting.
func (s *Scheduler) QueueLen() int { return s.q.len() }

// QueueCap is MAX_QUEUE_SIZE.
func (s *Scheduler) QueueCap() int { return s.cfg.QueueSize }

// RetryAfter estimates when a refused client should come back: the time until a queue slot
// frees, which is when the first busy worker is predicted to finish its batch (its start plus
// the batch's cost at the measured per-worker rate). Before anything was measured it is 1 s;
// it is at least 1 ms and at most 120 s.
func (s *Scheduler) RetryAfter() time.Duration {
	workers := s.readyWorkers()
	drain, jobCost, ok := s.rate.drain(workers)
	if !ok {
		return time.Second
	}
	perWorker := drain / float64(workers)
	now := time.Now()
	var first time.Duration = -1
	for _, w := range s.workers {
		start, cost, busy := w.current()
		if !busy {
			continue
		}
		left := start.Add(time.Duration(cost / perWorker * float64(time.Second))).Sub(now)
		if left < 0 { // overrunning its estimate: expect it soon
			left = time.Duration(0.1 * jobCost / perWorker * float64(time.Second))
		}
		if first < 0 || left < first {
			first = left
		}
	}
	if first < 0 { // nobody busy: one average job over the drain rate
		first = time.Duration(jobCost / drain * float64(time.Second))
	}
	return min(max(first, time.Millisecond), 120*time.Second)
}

// predictWait is the predicted time until a new job of the given cost finishes: the queued
// cost drained by all ready workers, plus its own service time on one worker.
func (s *Scheduler) predictWait(cost float64) (time.Duration, bool) {
	workers := s.readyWorkers()
	drain, _, ok := s.rate.drain(workers)
	if !ok {
		return 0, false
	}
	perWorker := drain / float64(workers)
	secs := s.q.cost()/drain + cost/perWorker
	return time.Duration(secs * float64(time.Second)), true
}

func (s *Scheduler) readyWorkers() int {
	n := 0
	for _, w := range s.workers {
		if w.isReady() {
			n++
		}
	}
	return max(n, 1)
}

// WorkerStatus is one worker's state, as /tt-liveness shows it.
type WorkerStatus struct {
	PID          int
	IsAlive      bool
	StartTime    time.Time
	IsReady      bool
	RestartCount int
	ErrorCount   int
	ReadyTime    time.Time
	State        string
	LastError    string
	Devices      []int
	// StepsDone of StepsTotal is the running batch's progress as its runner last reported it
	// (Task.Progress: denoising steps); both 0 when idle or when the runner reports none.
	StepsDone, StepsTotal int
}

// Workers returns every worker's status keyed by worker id.
func (s *Scheduler) Workers() map[string]WorkerStatus {
	out := make(map[string]WorkerStatus, len(s.workers))
	for _, w := range s.workers {
		out[w.group.ID] = w.status()
	}
	return out
}

// enter counts a job in flight unless the scheduler is stopping. A WaitGroup's Add must not
// race its Wait once the count may be zero, so the stopping check and the Add happen under
// stopMu, which Stop holds while it sets stopping: every job either entered before Stop began
// waiting (and is waited for) or is refused.
func (s *Scheduler) enter() bool {
	s.stopMu.Lock()
	defer s.stopMu.Unlock()
	if s.stopping.Load() {
		return false
	}
	s.inflight.Add(1)
	return true
}

func (s *Scheduler) updateReady() {
	for _, w := range s.workers {
		if w.isReady() {
			s.ready.Store(true)
			return
		}
	}
	s.ready.Store(false)
}

var pid = os.Getpid()
