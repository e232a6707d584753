package procrunner

// Supervision: reading the worker's messages, relaying its chunks and progress, watching its
// heartbeats, and saying why it died.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// readLoop delivers the child's messages until its stdout ends, then reaps it.
func (r *Runner) readLoop(stdout io.Reader) {
	defer r.helper.Done()
	for {
		m, err := readFrame(stdout)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed) {
				r.kill(errors.New("worker closed its stdout"))
			} else {
				r.kill(fmt.Errorf("reading from the worker: %w", err))
			}
			break
		}
		switch m.Kind {
		case kindHeartbeat:
		case kindChunk:
			r.relayChunk(m)
		case kindProgress:
			r.relayProgress(m)
		case kindProbeResult:
			r.mu.Lock()
			ch := r.probing[m.Seq]
			r.mu.Unlock()
			if ch != nil {
				select {
				case ch <- m:
				default:
				}
			}
		case kindReady, kindResult:
			select {
			case r.events <- m:
			case <-r.quit:
			}
		default:
			r.kill(fmt.Errorf("%w: unexpected %v message from the worker", ErrProtocol, m.Kind))
		}
	}
	werr := r.cmd.Wait()
	r.mu.Lock()
	exit := "exited"
	if werr != nil {
		exit = werr.Error()
	} else if st := r.cmd.ProcessState; st != nil {
		exit = st.String()
	}
	if tail := r.tailLocked(); tail != "" {
		exit += "; last stderr: " + tail
	}
	if r.reason == nil {
		r.reason = errors.New(exit)
	} else {
		r.reason = fmt.Errorf("%w (%s)", r.reason, exit)
	}
	reason := r.reason
	r.mu.Unlock()
	if !r.isClosed() {
		r.log.Error("worker process gone", "reason", reason)
	}
	close(r.gone)
}

func (r *Runner) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// relayChunk hands a streamed chunk to its task's Emit and answers the child with Emit's
// error, which the child's Emit returns to the runner: the runner sees what it would see in
// process (a client gone, a stream that cannot carry previews) and decides. Emit runs on its
// own goroutine, so a slow client does not stop the reading of heartbeats and results; the
// child waits for the answer before its runner goes on, so a task's chunks, progress and
// result still reach the parent in the order the runner made them.
func (r *Runner) relayChunk(m *message) {
	ack := func(err error) {
		_ = r.send(&message{Kind: kindChunkAck, Job: m.Job, Seq: m.Seq, Err: toWireError(err)})
	}
	r.mu.Lock()
	p := r.pending[m.Job]
	if p != nil && p.task.Emit != nil {
		p.emits.Add(1) // under mu: Run's clean-up, which waits for emits, cannot miss it
	}
	r.mu.Unlock()
	if p == nil || p.task.Emit == nil {
		ack(fmt.Errorf("job %d does not stream in the server (any more)", m.Job))
		return
	}
	chunk, err := m.chunk()
	if err != nil {
		p.emits.Done()
		ack(err)
		return
	}
	go func() {
		defer p.emits.Done()
		err := p.task.Emit(chunk)
		if err != nil && p.task.Ctx != nil && p.task.Ctx.Err() != nil {
			// The client has gone: in process the runner would find its context done when
			// Emit fails, so the cancel goes first (the child reads in order).
			_ = r.send(&message{Kind: kindCancel, Job: m.Job})
		}
		ack(err)
	}()
}

// relayProgress tells the task's Progress; it is cheap, so it runs on the reading goroutine,
// which keeps it in order with the task's chunks.
func (r *Runner) relayProgress(m *message) {
	r.mu.Lock()
	p := r.pending[m.Job]
	r.mu.Unlock()
	if p != nil && p.task.Progress != nil {
		p.task.Progress(m.Done, m.Total)
	}
}

// watchHeartbeats kills a child that has been silent for MissedHeartbeats intervals.
func (r *Runner) watchHeartbeats() {
	defer r.helper.Done()
	t := time.NewTicker(r.cfg.Heartbeat)
	defer t.Stop()
	limit := time.Duration(r.cfg.MissedHeartbeats) * r.cfg.Heartbeat
	for {
		select {
		case <-r.gone:
			return
		case <-r.quit:
			return
		case <-t.C:
			last := r.lastSeen.Load()
			if last == 0 {
				continue // not started yet: Warmup's context bounds the start-up
			}
			if silent := time.Since(time.Unix(0, last)); silent > limit {
				r.kill(fmt.Errorf("no heartbeat for %s (%d missed)", silent.Round(time.Millisecond), r.cfg.MissedHeartbeats))
				return
			}
		}
	}
}

// Exited is closed when the child has exited and been reaped (runners.Exiter).
func (r *Runner) Exited() <-chan struct{} { return r.gone }

// Probe reports whether the child is alive: it has not exited and its heartbeats are on time
// (a silent child is killed by the heartbeat watcher). It costs no device time.
//
// A child whose ready said "probes" (the Python worker) is also asked: it runs its runner's
// health check (HEAD's health_check(deep=False)) off its runner thread and answers; a failed
// or unanswered (within ctx) check is the probe's error.
func (r *Runner) Probe(ctx context.Context) error {
	select {
	case <-r.gone:
		return r.death()
	default:
	}
	r.mu.Lock()
	if !r.probes {
		r.mu.Unlock()
		return ctx.Err()
	}
	r.probeSeq++
	seq := r.probeSeq
	ch := make(chan *message, 1)
	r.probing[seq] = ch
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.probing, seq)
		r.mu.Unlock()
	}()
	if err := r.send(&message{Kind: kindProbe, Seq: seq}); err != nil {
		return fmt.Errorf("worker %q: probe: %w", r.cfg.WorkerID, err)
	}
	select {
	case m := <-ch:
		if err := m.Err.err(); err != nil {
			return fmt.Errorf("worker %q: health check: %w", r.cfg.WorkerID, err)
		}
		return nil
	case <-r.gone:
		return r.death()
	case <-ctx.Done():
		return fmt.Errorf("worker %q: health check unanswered: %w", r.cfg.WorkerID, ctx.Err())
	}
}

// death is the error for jobs lost with the child.
func (r *Runner) death() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	reason := r.reason
	if reason == nil {
		reason = errors.New("unknown cause")
	}
	return fmt.Errorf("%w: worker %q: %w: %w", runners.ErrDeviceLost, r.cfg.WorkerID, ErrWorkerExited, reason)
}
