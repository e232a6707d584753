package scheduler

// A worker's life: start, warm-up, restarts and their count, revival of a failed worker by a
// reset, and the scheduler's start and stop.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
)

// Start launches the workers, NEW_DEVICE_DELAY_SECONDS apart, and returns at once.
// The scheduler is ready as soon as the first worker has warmed up.
func (s *Scheduler) Start(ctx context.Context) {
	s.stopMu.Lock()
	s.runCtx, s.runCancel = context.WithCancel(context.WithoutCancel(ctx))
	s.stopMu.Unlock()
	if s.canary != nil {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.canary.run(s.runCtx)
		}()
	}
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
				w.loop(s.runCtx, false)
			}()
		}
	}()
}

// Stop stops taking work, lets in-flight and queued jobs finish until ctx ends, then fails what
// is left with ErrStopping, stops the workers and closes their runners.
func (s *Scheduler) Stop(ctx context.Context) error {
	s.stopMu.Lock()
	s.stopping.Store(true)
	s.stopMu.Unlock()
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
	if err != nil {
		// Jobs still running when the grace ended are answered "shutting down" (503 with
		// Retry-After), not with the cancellation the runners are about to see.
		for _, w := range s.workers {
			w.abandon(fmt.Errorf("%w: the shutdown grace period ended before the job finished", ErrStopping))
		}
	}
	if s.runCancel != nil {
		s.runCancel()
	}
	s.wg.Wait()
	return err
}

// What a reset did to one worker (WorkerReset.Action).
const (
	// ResetRestart: a serving worker restarts after its current batch (device reset, new
	// runner, warm-up); queued jobs stay queued.
	ResetRestart = "restart"
	// ResetRevived: a failed worker starts again (device reset, new runner, warm-up) with a
	// new count of failures.
	ResetRevived = "revived"
	// ResetAlreadyStarting: the worker is warming up or between two runners already.
	ResetAlreadyStarting = "already_starting"
	// ResetNotStarted: the worker has not started yet (NEW_DEVICE_DELAY_SECONDS); it starts on
	// its own.
	ResetNotStarted = "not_started"
	// ResetStopping: the server is shutting down; nothing is started.
	ResetStopping = "stopping"
)

// WorkerReset is what a reset did to one worker: its state when the reset came (as
// /tt-liveness shows it) and the action taken.
type WorkerReset struct {
	Worker string
	State  string
	Action string
}

// RestartWorker resets the named worker (see WorkerReset): a serving one restarts after its
// current batch, a failed one is revived, in the background.
func (s *Scheduler) RestartWorker(id string) (WorkerReset, error) {
	w, ok := s.byID[id]
	if !ok {
		ids := make([]string, 0, len(s.workers))
		for _, w := range s.workers {
			ids = append(ids, fmt.Sprintf("%q", w.group.ID))
		}
		return WorkerReset{}, fmt.Errorf("%w %q (workers: %v)", ErrUnknownWorker, id, ids)
	}
	return w.reset(), nil
}

// RestartAll resets every worker (the deep reset): each serving worker closes its runner after
// its current batch, failed ones are revived; the devices are reset and the workers warm up
// again.
func (s *Scheduler) RestartAll() []WorkerReset {
	out := make([]WorkerReset, 0, len(s.workers))
	for _, w := range s.workers {
		out = append(out, w.reset())
	}
	return out
}

// reset restarts a serving worker or revives a failed one and says which.
func (w *worker) reset() WorkerReset {
	st := w.status()
	out := WorkerReset{Worker: w.group.ID, State: st.State}
	switch {
	case w.s.stopping.Load():
		out.Action = ResetStopping
	case w.revive():
		out.Action = ResetRevived
	case st.State == stateFailed: // revived by a concurrent reset, or the server began to stop
		out.Action = ResetAlreadyStarting
		if w.s.stopping.Load() {
			out.Action = ResetStopping
		}
	case st.State == "pending":
		out.Action = ResetNotStarted
	case st.State == stateStarting || st.State == stateRestart:
		out.Action = ResetAlreadyStarting
	default:
		w.requestRestart()
		out.Action = ResetRestart
	}
	return out
}

// revive starts a failed worker's loop again (its last one returned when it was marked failed):
// device reset, new runner, warm-up, with a new count of failures. False when the worker is not
// failed or the scheduler is stopping. stopMu orders the WaitGroup's Add before Stop's Wait.
func (w *worker) revive() bool {
	s := w.s
	s.stopMu.Lock()
	defer s.stopMu.Unlock()
	if s.stopping.Load() || s.runCtx == nil || s.runCtx.Err() != nil {
		return false
	}
	w.mu.Lock()
	if w.state != stateFailed {
		w.mu.Unlock()
		return false
	}
	w.state = stateRestart // no second revival of it; setState below tells the ready flag
	w.mu.Unlock()
	select { // a restart asked for while it was failed must not restart the revived runner
	case <-w.restartReq:
	default:
	}
	s.log.Info("reviving failed worker", "worker", w.group.ID)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		w.loop(s.runCtx, true)
	}()
	return true
}

func (w *worker) requestRestart() {
	select {
	case w.restartReq <- struct{}{}:
	default:
	}
}

// loop brings the runner up, serves batches, and restarts it when it fails or a reset is
// asked for. A runner that warmed up starts a new count of failures: only more than
// MaxRestarts failures in a row without a successful warm-up between them (failed warm-ups, a
// crash followed by failed warm-ups) mark the worker failed, and the loop returns; a
// configuration error (runners.ErrConfig) marks it failed at once. revived: the worker was
// failed and a reset starts it again (device reset first, as for any restart). It ends when
// ctx ends or the queue closes.
func (w *worker) loop(ctx context.Context, revived bool) {
	log := w.s.log.With("worker", w.group.ID)
	failures := 0
	first := !revived
	// A closed queue (Stop, just before it cancels ctx) brings no more work: the worker stops
	// rather than reset its devices and build a runner on the way out.
	for ctx.Err() == nil && !w.s.q.isClosed() {
		if !first {
			w.mu.Lock()
			w.restartCount++
			w.mu.Unlock()
			w.setState(stateRestart, nil)
			if w.s.cfg.Reset != nil {
				if err := w.s.cfg.Reset(ctx, []config.DeviceGroup{w.group}); err != nil {
					log.Error("device reset failed", "err", err)
				}
			}
			if !sleepCtx(ctx, w.s.cfg.RestartDelay) {
				break
			}
		}
		first = false
		w.setState(stateStarting, nil)
		r, err := w.warm(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			failures++
			w.mu.Lock()
			w.errorCount++
			w.mu.Unlock()
			log.Error("worker warm-up failed", "err", err, "attempt", failures)
			if errors.Is(err, runners.ErrConfig) { // retrying (and resetting the chips) cannot help
				w.setState(stateFailed, err)
				log.Error("worker marked failed: configuration error, not retried (a reset retries it)", "err", err)
				return
			}
			if failures > w.s.cfg.MaxRestarts {
				w.setState(stateFailed, err)
				log.Error("worker marked failed: restart limit reached (a reset revives it)", "max_restarts", w.s.cfg.MaxRestarts)
				return
			}
			w.setState(stateRestart, err)
			continue
		}
		failures = 0 // it came up: a later failure starts a new count
		w.setState(stateReady, nil)
		log.Info("worker ready", "devices", w.group.Devices)
		crashed := w.serve(ctx, r)
		w.setState(stateRestart, nil)
		if err := w.closeRunner(r); err != nil {
			log.Warn("runner close failed", "err", err)
		}
		if crashed != nil {
			failures++
			w.mu.Lock()
			w.errorCount++
			w.mu.Unlock()
			w.setState(stateRestart, crashed)
			if failures > w.s.cfg.MaxRestarts {
				w.setState(stateFailed, crashed)
				log.Error("worker marked failed: restart limit reached (a reset revives it)", "max_restarts", w.s.cfg.MaxRestarts)
				return
			}
		}
	}
	w.setState(stateStopped, nil)
}

// warm builds and warms a runner, turning a panic into an error.
func (w *worker) warm(ctx context.Context) (r runners.Runner, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("runner panicked during warm-up: %v", p)
			if r != nil {
				_ = w.closeRunner(r)
			}
			r = nil
		}
	}()
	r, err = w.s.factory(w.group)
	if err != nil {
		return nil, fmt.Errorf("create runner: %w", err)
	}
	w.setRunner(r)
	if err := r.Warmup(ctx); err != nil {
		_ = w.closeRunner(r)
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	return r, nil
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
