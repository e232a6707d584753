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
	"math"
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
)

// RunnerFactory builds the runner of one device group.
type RunnerFactory func(group config.DeviceGroup) (runners.Runner, error)

// ResetFunc resets the chips of the given groups (RESET_DEVICE_COMMAND on hardware).
type ResetFunc func(ctx context.Context, groups []config.DeviceGroup) error

// Config is what a scheduler needs to know.
type Config struct {
	Groups        []config.DeviceGroup
	QueueSize     int
	MaxBatchSize  int
	StartDelay    time.Duration // between worker starts (NEW_DEVICE_DELAY_SECONDS)
	Timeout       time.Duration // per request, queue wait included (DEFAULT_INFERENCE_TIMEOUT_SECONDS)
	MaxRestarts   int           // MAX_WORKER_RESTART_COUNT
	RestartDelay  time.Duration // pause before re-warming a failed worker (RESET_DEVICE_SLEEP_TIME)
	CheckInterval time.Duration // health monitor period (WORKER_CHECK_SLEEP_TIMEOUT)
	Reset         ResetFunc     // optional: resets devices before a worker restarts
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
	inflight sync.WaitGroup // accepted jobs not yet finished

	workers []*worker
	byID    map[string]*worker

	runCtx    context.Context
	runCancel context.CancelFunc
	wg        sync.WaitGroup

	ewmaNanos atomic.Int64 // smoothed service time of one batch
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
		q:       newQueue(cfg.QueueSize),
		byID:    map[string]*worker{},
	}
	for _, g := range cfg.Groups {
		w := &worker{s: s, group: g, restartReq: make(chan struct{}, 1)}
		s.workers = append(s.workers, w)
		s.byID[g.ID] = w
	}
	return s
}

// Start launches the workers, NEW_DEVICE_DELAY_SECONDS apart, and returns at once.
// The scheduler is ready as soon as the first worker has warmed up.
func (s *Scheduler) Start(ctx context.Context) {
	s.runCtx, s.runCancel = context.WithCancel(context.WithoutCancel(ctx))
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for i, w := range s.workers {
			if i > 0 && s.cfg.StartDelay > 0 {
				select {
				case <-s.runCtx.Done():
					return
				case <-time.After(s.cfg.StartDelay):
				}
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				w.loop(s.runCtx)
			}()
		}
	}()
}

// job is one accepted request on its way to a terminal outcome.
type job struct {
	ctx  context.Context
	req  any
	emit func(any) error
	done chan runners.Outcome // buffered 1: exactly one outcome is ever sent
	once sync.Once
}

func (j *job) finish(o runners.Outcome) {
	j.once.Do(func() { j.done <- o })
}

// Submit queues req and waits for its terminal outcome: a result, or an error wrapping one of
// the sentinels above (or the runner's own error). emit, when not nil, receives streaming
// chunks from the worker goroutine; it must not block for long. The job's deadline is the
// earlier of ctx's and the configured inference timeout.
func (s *Scheduler) Submit(ctx context.Context, req any, emit func(any) error) (any, error) {
	if s.stopping.Load() {
		return nil, ErrStopping
	}
	if !s.ready.Load() {
		return nil, ErrNotReady
	}
	jctx, cancel := ctx, context.CancelFunc(func() {})
	if s.cfg.Timeout > 0 {
		jctx, cancel = context.WithTimeoutCause(ctx, s.cfg.Timeout, ErrTimeout)
	}
	defer cancel()
	j := &job{ctx: jctx, req: req, done: make(chan runners.Outcome, 1)}
	if emit != nil {
		j.emit = func(c any) error {
			if err := jctx.Err(); err != nil {
				return s.ctxError(jctx)
			}
			return emit(c)
		}
	}
	s.inflight.Add(1)
	defer s.inflight.Done()
	if ok, _ := s.q.push(j); !ok {
		if s.stopping.Load() {
			return nil, ErrStopping
		}
		return nil, ErrQueueFull
	}
	select {
	case o := <-j.done:
		return o.Value, o.Err
	case <-jctx.Done():
		if s.q.remove(j) {
			s.log.Debug("job left the queue before it ran", "reason", context.Cause(jctx))
		}
		// Whatever the worker does later, this job's one outcome is the deadline/cancel.
		err := s.ctxError(jctx)
		j.finish(runners.Outcome{Err: err})
		return nil, err
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

// Ready reports whether at least one worker is warm.
func (s *Scheduler) Ready() bool { return s.ready.Load() && !s.stopping.Load() }

// QueueLen is the number of jobs waiting.
func (s *Scheduler) QueueLen() int { return s.q.len() }

// QueueCap is MAX_QUEUE_SIZE.
func (s *Scheduler) QueueCap() int { return s.cfg.QueueSize }

// RetryAfter estimates when a rejected client should come back: the time the ready workers need
// to drain the current queue at the measured batch service time, at least 1 s, at most 120 s.
func (s *Scheduler) RetryAfter() time.Duration {
	per := time.Duration(s.ewmaNanos.Load())
	if per <= 0 {
		per = time.Second
	}
	ready := 0
	for _, w := range s.workers {
		if w.isReady() {
			ready++
		}
	}
	ready = max(ready, 1)
	batches := math.Ceil(float64(s.q.len()+1) / float64(s.cfg.MaxBatchSize))
	d := time.Duration(batches * float64(per) / float64(ready))
	return min(max(d, time.Second), 120*time.Second)
}

func (s *Scheduler) observe(d time.Duration) {
	for {
		old := s.ewmaNanos.Load()
		next := int64(d)
		if old > 0 {
			next = int64(0.8*float64(old) + 0.2*float64(d))
		}
		if s.ewmaNanos.CompareAndSwap(old, next) {
			return
		}
	}
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
}

// Workers returns every worker's status keyed by worker id.
func (s *Scheduler) Workers() map[string]WorkerStatus {
	out := make(map[string]WorkerStatus, len(s.workers))
	for _, w := range s.workers {
		out[w.group.ID] = w.status()
	}
	return out
}

// RestartWorker closes the named worker's runner and warms a new one, in the background.
func (s *Scheduler) RestartWorker(id string) error {
	w, ok := s.byID[id]
	if !ok {
		ids := make([]string, 0, len(s.workers))
		for _, w := range s.workers {
			ids = append(ids, fmt.Sprintf("%q", w.group.ID))
		}
		return fmt.Errorf("%w %q (workers: %v)", ErrUnknownWorker, id, ids)
	}
	w.requestRestart()
	return nil
}

// RestartAll restarts every worker (the deep reset): each closes its runner after its current
// batch, the devices are reset, and the workers warm up again.
func (s *Scheduler) RestartAll() {
	for _, w := range s.workers {
		w.requestRestart()
	}
}

// Stop stops taking work, lets in-flight and queued jobs finish until ctx ends, then fails what
// is left with ErrStopping, stops the workers and closes their runners.
func (s *Scheduler) Stop(ctx context.Context) error {
	s.stopping.Store(true)
	drained := make(chan struct{})
	go func() {
		s.inflight.Wait()
		close(drained)
	}()
	var err error
	select {
	case <-drained:
	case <-ctx.Done():
		err = fmt.Errorf("stopping with jobs unfinished: %w", ctx.Err())
	}
	for _, j := range s.q.close() {
		j.finish(runners.Outcome{Err: ErrStopping})
	}
	if s.runCancel != nil {
		s.runCancel()
	}
	s.wg.Wait()
	return err
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
