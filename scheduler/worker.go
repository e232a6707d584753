package scheduler

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
)

// Worker states shown in /tt-liveness.
const (
	stateStarting = "starting"
	stateReady    = "ready"
	stateFailed   = "failed"
	stateRestart  = "restarting"
	stateStopped  = "stopped"
	// stateStuck: a batch has run longer than the request timeout plus stuckGrace. Its jobs
	// were already answered 504 by their deadlines; the runner ignores cancellation. With
	// process isolation the child is killed; in-process the operator is told (liveness,
	// metrics) and should reset the worker.
	stateStuck = "stuck"
)

// stuckGrace is how long a batch may overrun the request timeout before its worker is stuck.
var stuckGrace = 10 * time.Second

// worker drives one device group's runner.
type worker struct {
	s          *Scheduler
	group      config.DeviceGroup
	restartReq chan struct{}

	mu           sync.Mutex
	state        string
	startTime    time.Time
	readyTime    time.Time
	restartCount int
	errorCount   int
	lastError    string
	busySince    time.Time // start of the running batch; zero when idle
	busyCost     float64
	live         []*job         // the running batch's jobs (Stop answers them when its grace ends)
	runner       runners.Runner // the current runner, from its creation to its Close
	// isolated: this worker's runners run in processes of their own (ProcessIDer); between
	// two of them (a restart) it has no process, and shows no pid rather than the server's.
	isolated bool
	// progress is the running batch's last reported step, done<<32 | total (0: none); its
	// tasks' Task.Progress store it without taking mu.
	progress atomic.Uint64
}

// reportProgress records that a task of the running batch finished step done of total.
func (w *worker) reportProgress(done, total int) {
	if done < 0 || total <= 0 {
		return
	}
	w.progress.Store(uint64(uint32(done))<<32 | uint64(uint32(total)))
}

// current reports the running batch's start and cost.
func (w *worker) current() (time.Time, float64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.busySince, w.busyCost, !w.busySince.IsZero()
}

func (w *worker) status() WorkerStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	alive := w.state != "" && w.state != stateFailed && w.state != stateStopped
	st := WorkerStatus{
		IsAlive:      alive,
		StartTime:    w.startTime,
		IsReady:      w.state == stateReady,
		RestartCount: w.restartCount,
		ErrorCount:   w.errorCount,
		ReadyTime:    w.readyTime,
		State:        w.state,
		LastError:    w.lastError,
		Devices:      w.group.Devices,
	}
	if st.State == "" {
		st.State = "pending"
	}
	if st.State == stateReady && w.stuckLocked() {
		st.State = stateStuck
		st.IsReady = false
	}
	if st.State == stateReady && w.exitedLocked() {
		// Its process is gone; the loop is about to restart it.
		st.State = stateRestart
		st.IsReady = false
	}
	if alive {
		if p, ok := w.runner.(ProcessIDer); ok {
			st.PID = p.PID() // 0 (none shown) before the process started
		} else if !w.isolated {
			st.PID = pid
		}
	}
	if !w.busySince.IsZero() {
		p := w.progress.Load()
		st.StepsDone, st.StepsTotal = int(p>>32), int(uint32(p))
	}
	return st
}

// isReady reports whether the worker can take work now: warm, not stuck in a batch that
// overran its deadline, and (for a worker process) its process not gone.
func (w *worker) isReady() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.state == stateReady && !w.stuckLocked() && !w.exitedLocked()
}

// stuckLocked: the running batch has overrun the request timeout by more than stuckGrace.
func (w *worker) stuckLocked() bool {
	return !w.busySince.IsZero() && w.s.cfg.Timeout > 0 && time.Since(w.busySince) > w.s.cfg.Timeout+stuckGrace
}

// exitedLocked: the runner's process (runners.Exiter) has exited.
func (w *worker) exitedLocked() bool {
	e, ok := w.runner.(runners.Exiter)
	if !ok {
		return false
	}
	select {
	case <-e.Exited():
		return true
	default:
		return false
	}
}

func (w *worker) setState(state string, err error) {
	w.mu.Lock()
	w.state = state
	switch state {
	case stateStarting:
		w.startTime = time.Now()
		w.readyTime = time.Time{}
	case stateReady:
		w.readyTime = time.Now()
	}
	if err != nil {
		w.lastError = err.Error()
	}
	w.mu.Unlock()
	w.s.updateReady()
}

// ProcessIDer is implemented by a runner that runs in a process of its own (a worker
// process): /tt-liveness then shows that process's id for the worker instead of the server's.
// PID is 0 while there is no process.
type ProcessIDer interface {
	PID() int
}

func (w *worker) setRunner(r runners.Runner) {
	w.mu.Lock()
	w.runner = r
	if _, ok := r.(ProcessIDer); ok {
		w.isolated = true
	}
	w.mu.Unlock()
}

// closeRunner closes r and forgets it.
func (w *worker) closeRunner(r runners.Runner) error {
	w.setRunner(nil)
	return r.Close()
}

// serve runs batches until ctx ends (nil), a restart is asked for (nil), the queue closes
// (nil), or the runner crashes (the error).
func (w *worker) serve(ctx context.Context, r runners.Runner) error {
	// waitCtx ends the wait for work when a restart is asked for; a running batch is not
	// interrupted by it.
	waitCtx, stopWait := context.WithCancel(ctx)
	defer stopWait()
	var exited <-chan struct{} // nil (never ready) for runners without a process of their own
	if e, ok := r.(runners.Exiter); ok {
		exited = e.Exited()
	}
	var gone atomic.Bool
	go func() {
		select {
		case <-w.restartReq:
			stopWait()
		case <-exited:
			gone.Store(true)
			stopWait()
		case <-waitCtx.Done():
		}
	}()
	prober, _ := r.(runners.Prober)
	every := w.s.cfg.CanaryInterval
	for waitCtx.Err() == nil {
		idleCtx, stopIdle := waitCtx, context.CancelFunc(func() {})
		if prober != nil && every > 0 {
			idleCtx, stopIdle = context.WithTimeout(waitCtx, every)
		}
		batch := w.s.q.takeBatch(idleCtx, w.s.cfg.MaxBatchSize, w.s.cfg.MaxBatchDelay)
		stopIdle()
		if (gone.Load() || closed(exited)) && ctx.Err() == nil {
			// The process died while idle: restart now, before a request finds it dead. A
			// batch taken at that very moment goes back to the queue, for another worker.
			err := fmt.Errorf("%w: worker %q: its process exited while idle", ErrWorkerFailed, w.group.ID)
			if prober != nil {
				if perr := prober.Probe(ctx); perr != nil {
					err = fmt.Errorf("%w: worker %q: its process exited while idle: %w", ErrWorkerFailed, w.group.ID, perr)
				}
			}
			if batch != nil {
				for _, j := range w.s.q.requeue(batch) { // the queue closed meanwhile
					j.finish(runners.Outcome{Err: ErrStopping})
				}
			}
			w.s.log.Error("worker process exited; restarting the worker", "worker", w.group.ID, "err", err)
			return err
		}
		if batch == nil {
			if waitCtx.Err() != nil || prober == nil || every <= 0 || w.s.q.isClosed() {
				return nil // a closed queue (Stop) brings no more work: nothing to probe for
			}
			pctx, cancel := context.WithTimeout(ctx, every)
			err := prober.Probe(pctx)
			cancel()
			if err != nil && ctx.Err() == nil {
				w.s.log.Error("canary probe failed; restarting the worker", "worker", w.group.ID, "err", err)
				return fmt.Errorf("canary probe: %w", err)
			}
			continue
		}
		if err := w.runBatch(ctx, r, batch); err != nil {
			return err
		}
	}
	return nil
}

// runBatch runs one batch and delivers one outcome per job. A runner panic fails every job of
// the batch with ErrWorkerFailed and is returned so the worker restarts.
func (w *worker) runBatch(ctx context.Context, r runners.Runner, batch []*job) (crash error) {
	tasks := make([]runners.Task, 0, len(batch))
	var cost float64
	live := make([]*job, 0, len(batch))
	var watches []*cancelWatch // per live job: its cancel watch (nil: none)
	for _, j := range batch {
		if j.ctx.Err() != nil { // cancelled while queued: no device time
			j.finish(runners.Outcome{Err: w.s.ctxError(j.ctx)})
			continue
		}
		j.started.Store(true)
		progress := w.reportProgress
		if w.s.cfg.OnCancelFreed != nil && !j.probe {
			cw := watchCancel(j.ctx)
			watches = append(watches, cw)
			progress = func(done, total int) { cw.progress(done); w.reportProgress(done, total) }
		} else {
			watches = append(watches, nil)
		}
		tasks = append(tasks, runners.Task{Ctx: j.ctx, Request: j.req, Emit: j.emit, Progress: progress})
		live = append(live, j)
		cost += j.cost
	}
	if len(tasks) == 0 {
		return nil
	}
	defer func() {
		if p := recover(); p != nil {
			crash = fmt.Errorf("%w: worker %q: runner panicked: %v", ErrWorkerFailed, w.group.ID, p)
			w.s.log.Error("runner panicked", "worker", w.group.ID, "panic", p, "stack", string(debug.Stack()))
			for _, j := range live {
				j.finish(runners.Outcome{Err: crash})
			}
		}
	}()
	w.s.stats.deviceRuns.Add(int64(len(tasks)))
	start := time.Now()
	w.mu.Lock()
	w.busySince, w.busyCost, w.live = start, cost, live
	w.progress.Store(0)
	w.mu.Unlock()
	outs := r.Run(ctx, tasks)
	end := time.Now()
	took := end.Sub(start)
	for i, cw := range watches {
		if cw == nil {
			continue
		}
		if steps, after, ok := cw.freed(end); ok && !live[i].probe {
			w.s.cfg.OnCancelFreed(w.group.ID, steps, after)
		}
	}
	w.mu.Lock()
	w.busySince, w.busyCost, w.live = time.Time{}, 0, nil
	w.mu.Unlock()
	var lost error
	for i, j := range live {
		var o runners.Outcome
		if i < len(outs) {
			o = outs[i]
		} else {
			o = runners.Outcome{Err: fmt.Errorf("%w: worker %q: runner returned %d outcomes for %d tasks", ErrWorkerFailed, w.group.ID, len(outs), len(tasks))}
		}
		if o.Err == nil && o.Value == nil {
			o.Err = fmt.Errorf("%w: worker %q: no result generated", ErrWorkerFailed, w.group.ID)
		}
		if o.Err != nil && errors.Is(o.Err, runners.ErrDeviceLost) {
			lost = o.Err
			if !errors.Is(o.Err, ErrWorkerFailed) {
				o.Err = fmt.Errorf("%w: worker %q: %w", ErrWorkerFailed, w.group.ID, o.Err)
			}
		}
		outcome := "ok"
		switch {
		case o.Err != nil && ctx.Err() != nil && j.ctx.Err() == nil && w.s.stopping.Load():
			// The shutdown grace ended under it (Stop answered it already): not the client's doing.
			o.Err = fmt.Errorf("%w: the shutdown grace period ended before the job finished", ErrStopping)
			outcome = "cancelled"
		case o.Err != nil && j.ctx.Err() != nil && lost == nil:
			o.Err = w.s.ctxError(j.ctx)
			outcome = "cancelled"
		case o.Err != nil && lost == nil && errors.Is(o.Err, context.DeadlineExceeded):
			// The runner (e.g. a worker process, on its own clock) saw the deadline a moment
			// before this process did: it is still the job's deadline.
			o.Err = fmt.Errorf("%w: %w", ErrTimeout, o.Err)
			outcome = "cancelled"
		case o.Err != nil:
			outcome = "error"
			// error_count: a job that failed on a live worker counts once; a bad request
			// (4xx) does not, nor does a job the crash took down (the crash counts once, in
			// loop, however many jobs it took), nor a canary probe's miss (HEAD keeps probe
			// misses out of error_count: device_worker._run_canary_probe).
			if !errors.Is(o.Err, runners.ErrBadRequest) && !errors.Is(o.Err, runners.ErrDeviceLost) && !j.probe {
				w.mu.Lock()
				w.errorCount++
				w.mu.Unlock()
			}
		}
		if w.s.cfg.OnJobDone != nil && !j.probe { // probes are not client traffic
			w.s.cfg.OnJobDone(w.group.ID, start.Sub(j.queued), took, outcome)
		}
		if t := timingOf(j.ctx); t != nil {
			t.add(start.Sub(j.queued), took)
		}
		j.finish(o)
	}
	if lost != nil {
		return lost
	}
	if !anyCancelled(live) && !anyProbe(live) { // probes are not the workload's speed // a batch cut short by cancellation says nothing about speed
		w.s.rate.observe(cost, len(live), took)
	}
	return nil
}

func anyProbe(jobs []*job) bool {
	for _, j := range jobs {
		if j.probe {
			return true
		}
	}
	return false
}

func anyCancelled(jobs []*job) bool {
	for _, j := range jobs {
		if j.ctx.Err() != nil {
			return true
		}
	}
	return false
}

// closed reports whether ch is closed (false for nil).
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// abandon answers the running batch's jobs with err (Stop, when the shutdown grace ends before
// the batch does); the runner's late outcomes are then ignored.
func (w *worker) abandon(err error) {
	w.mu.Lock()
	live := w.live
	w.mu.Unlock()
	for _, j := range live {
		j.finish(runners.Outcome{Err: err})
	}
}
