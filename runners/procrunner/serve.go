package procrunner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// stopWait bounds how long Serve waits, when it stops, for a warm-up or batch still running.
const stopWait = 5 * time.Second

// errCancelled is the cause of a job the parent cancelled (its client went away). It is a
// context.Canceled, as the runner's Emit error would be in process.
var errCancelled = fmt.Errorf("cancelled by the server: %w", context.Canceled)

// Serve is the worker-process side: it reads the parent's messages from in and answers on out
// until the parent sends shutdown or closes in (nil) or ctx ends (ctx.Err()). It warms r up
// when asked, runs each batch with one context per job (the job's deadline, cancelled by a
// cancel message), relays each task's Emit (transcript chunks, image previews) and Progress
// to the parent, sends one result per job, and sends a heartbeat at the
// interval the warmup message names, from its own goroutine, so a runner stuck in a device
// call keeps the heartbeat going (only the job deadline catches that). r is closed on return.
// Nothing else may write to out.
func Serve(ctx context.Context, r runners.Runner, in io.Reader, out io.Writer) (err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &server{out: out, jobs: map[uint64]context.CancelCauseFunc{}, acks: map[uint64]chan error{}}
	msgs := make(chan *message)
	readErr := make(chan error, 1)
	go func() {
		for {
			m, err := readFrame(in)
			if err != nil {
				readErr <- err
				return
			}
			select {
			case msgs <- m:
			case <-ctx.Done():
				readErr <- ctx.Err()
				return
			}
		}
	}()

	var bg sync.WaitGroup // heartbeat, warm-up and batch goroutines
	defer func() {
		cancel()
		s.cancelAll()
		stopped := make(chan struct{})
		go func() { bg.Wait(); close(stopped) }()
		select {
		case <-stopped:
			if cerr := r.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("close runner: %w", cerr)
			}
		case <-time.After(stopWait):
			// A device call that never returns cannot be interrupted; the process must exit.
			err = errors.Join(err, fmt.Errorf("runner still busy %s after the stop; leaving it to process exit", stopWait))
		}
	}()
	var hbOnce sync.Once
	for {
		var m *message
		select {
		case m = <-msgs:
		case err := <-readErr:
			if errors.Is(err, io.EOF) {
				return nil // the parent closed our stdin: it is gone or done with us
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
		switch m.Kind {
		case kindWarmup:
			if m.Version != ProtocolVersion {
				err := fmt.Errorf("%w: the server speaks protocol version %d, this worker %d (different builds)",
					ErrProtocol, m.Version, ProtocolVersion)
				_ = s.send(&message{Kind: kindReady, Version: ProtocolVersion, Err: toWireError(err)})
				continue
			}
			if every := m.Heartbeat; every > 0 {
				hbOnce.Do(func() { bg.Go(func() { s.heartbeats(ctx, time.Duration(every)) }) })
			}
			bg.Go(func() {
				err := r.Warmup(ctx)
				_ = s.send(&message{Kind: kindReady, Version: ProtocolVersion, Err: toWireError(err)})
			})
		case kindBatch:
			tasks, ids := s.startBatch(ctx, m.Jobs)
			bg.Go(func() { s.runBatch(ctx, r, tasks, ids) })
		case kindCancel:
			s.cancelJob(m.Job)
		case kindChunkAck:
			s.acked(m.Seq, m.Err.err())
		case kindShutdown:
			return nil
		default:
			return fmt.Errorf("%w: unexpected %v message from the server", ErrProtocol, m.Kind)
		}
	}
}

// server is Serve's state.
type server struct {
	wmu sync.Mutex
	out io.Writer

	mu   sync.Mutex
	jobs map[uint64]context.CancelCauseFunc
	seq  uint64                // the last chunk's number
	acks map[uint64]chan error // chunks waiting for the parent's answer, by number
}

func (s *server) send(m *message) error {
	b, err := encodeFrame(m) // outside the lock: a big frame must not delay heartbeats
	if err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if _, err := s.out.Write(b); err != nil {
		return fmt.Errorf("write %v frame: %w", m.Kind, err)
	}
	return nil
}

func (s *server) heartbeats(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.send(&message{Kind: kindHeartbeat}); err != nil {
				return
			}
		}
	}
}

// startBatch decodes the jobs and gives each its context. A job whose request does not decode
// is answered at once and left out.
func (s *server) startBatch(ctx context.Context, jobs []wireJob) ([]runners.Task, []uint64) {
	tasks := make([]runners.Task, 0, len(jobs))
	ids := make([]uint64, 0, len(jobs))
	for _, j := range jobs {
		req, err := j.request()
		if err != nil {
			_ = s.send(&message{Kind: kindResult, Job: j.ID, Err: toWireError(err)})
			continue
		}
		jctx, cancel := context.WithCancelCause(ctx)
		if j.Deadline > 0 {
			var stop context.CancelFunc
			jctx, stop = context.WithDeadline(jctx, fromUnixSeconds(j.Deadline))
			inner := cancel
			cancel = func(cause error) { inner(cause); stop() }
		}
		s.mu.Lock()
		s.jobs[j.ID] = cancel
		s.mu.Unlock()
		t := runners.Task{Ctx: jctx, Request: req}
		if j.Stream {
			t.Emit = func(chunk runners.Chunk) error { return s.emit(jctx, j.ID, chunk) }
		}
		if j.Progress {
			t.Progress = func(done, total int) {
				_ = s.send(&message{Kind: kindProgress, Job: j.ID, Done: done, Total: total})
			}
		}
		tasks = append(tasks, t)
		ids = append(ids, j.ID)
	}
	return tasks, ids
}

// runBatch runs the batch and answers every job.
func (s *server) runBatch(ctx context.Context, r runners.Runner, tasks []runners.Task, ids []uint64) {
	if len(tasks) == 0 {
		return
	}
	outs := r.Run(ctx, tasks)
	for i, id := range ids {
		m := &message{Kind: kindResult, Job: id}
		switch {
		case i >= len(outs):
			m.Err = toWireError(fmt.Errorf("runner returned %d outcomes for %d tasks", len(outs), len(tasks)))
		case outs[i].Err != nil:
			m.Err = toWireError(outs[i].Err)
		default:
			res, err := toWireResult(outs[i].Value)
			m.Result, m.Err = res, toWireError(err)
		}
		s.mu.Lock()
		cancel := s.jobs[id]
		delete(s.jobs, id)
		s.mu.Unlock()
		if cancel != nil {
			cancel(nil)
		}
		if err := s.send(m); err != nil {
			return
		}
	}
}

// emit is a task's Emit: it sends the chunk to the parent and waits for the parent's Emit to
// answer, returning that answer (the client has gone, say) as the runner would get it in
// process. A job that ends meanwhile (cancel, deadline, stop) returns its cause at once.
func (s *server) emit(jctx context.Context, job uint64, chunk runners.Chunk) error {
	if jctx.Err() != nil {
		return context.Cause(jctx)
	}
	m := &message{Kind: kindChunk, Job: job}
	if !toWireMediaChunk(m, chunk) {
		tc, partial, err := toWireChunk(chunk)
		if err != nil {
			return err
		}
		m.Chunk, m.Partial = tc, partial
	}
	ack := make(chan error, 1)
	s.mu.Lock()
	s.seq++
	seq := s.seq
	s.acks[seq] = ack
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.acks, seq)
		s.mu.Unlock()
	}()
	m.Seq = seq
	if err := s.send(m); err != nil {
		return err
	}
	select {
	case err := <-ack:
		return err
	case <-jctx.Done():
		return context.Cause(jctx)
	}
}

// acked hands the parent's answer to the chunk numbered seq to its Emit, if it still waits.
func (s *server) acked(seq uint64, err error) {
	s.mu.Lock()
	ack := s.acks[seq]
	s.mu.Unlock()
	if ack != nil {
		select {
		case ack <- err:
		default: // answered twice: the first answer stands
		}
	}
}

func (s *server) cancelJob(id uint64) {
	s.mu.Lock()
	cancel := s.jobs[id]
	s.mu.Unlock()
	if cancel != nil {
		cancel(errCancelled)
	}
}

func (s *server) cancelAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, cancel := range s.jobs {
		cancel(errCancelled)
	}
}
