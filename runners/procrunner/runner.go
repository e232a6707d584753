// Package procrunner runs a runner in a child process: the parent side is a runners.Runner
// that starts "tt-media-server device-worker" for one device group and speaks a framed
// protocol with it over the child's stdin and stdout; Serve is the child side. A crash, a
// broken pipe, missed heartbeats, or a job that stays silent past its deadline kills the child
// (its whole process group) and fails the in-flight jobs with runners.ErrDeviceLost, so the
// scheduler resets that group's chips and starts a new child. The parent never touches the
// device.
package procrunner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// Defaults of Config.
const (
	DefaultGrace            = 2 * time.Second
	DefaultHeartbeat        = time.Second
	DefaultMissedHeartbeats = 5
	DefaultStopTimeout      = 2 * time.Second
)

// ErrWorkerExited reports that the worker process is gone; it always comes wrapped together
// with runners.ErrDeviceLost.
var ErrWorkerExited = errors.New("worker process gone")

// ErrHung marks a job that stayed silent past its deadline plus the grace:
// the child was killed. It matches context.DeadlineExceeded as well, and comes wrapped
// together with runners.ErrDeviceLost.
var ErrHung = hungError{}

type hungError struct{}

func (hungError) Error() string        { return "worker did not answer after the job's deadline" }
func (hungError) Is(target error) bool { return target == context.DeadlineExceeded }

// Config describes one worker process.
type Config struct {
	// WorkerID names the device group in logs and errors.
	WorkerID string
	// Path is the executable; "" means this program (os.Executable).
	Path string
	// Args are the arguments after the program name; nil means {"device-worker", WorkerID}.
	Args []string
	// Env is added to this process's environment (later entries win).
	Env []string
	// Logger receives the child's stderr lines, tagged worker=<id>; nil discards them.
	Logger *slog.Logger
	// Grace is how long past a job's deadline the child may stay silent about it before it
	// is killed (default 2 s).
	Grace time.Duration
	// Heartbeat is the interval the child sends heartbeats at (default 1 s); after
	// MissedHeartbeats intervals without any message (default 5) the child counts as dead.
	// The count starts with the child's first message.
	Heartbeat        time.Duration
	MissedHeartbeats int
	// StopTimeout is how long Close waits for the child to exit after shutdown (default 2 s).
	StopTimeout time.Duration
	// ExportDir, when set, is this worker's own directory for the video files its runner
	// encodes itself (HEAD's self-encoding video runners): the child writes them in its "out"
	// subdirectory (its TT_VIDEO_OUTPUT_DIR, emptied at each start) and answers their paths;
	// a file result is taken only from there (file_result.go). "": file results are refused.
	ExportDir string
	// MaxFileBytes caps a file result (default DefaultMaxFileBytes).
	MaxFileBytes int64
}

// Runner is the parent side of one worker process. Like every runner it is used by one
// goroutine at a time (Warmup, Run, Close in sequence).
type Runner struct {
	cfg Config
	log *slog.Logger

	cmd    *exec.Cmd
	stdin  io.WriteCloser
	wmu    sync.Mutex // serialises frames to stdin
	events chan *message
	gone   chan struct{} // closed when the child has exited and been reaped
	quit   chan struct{} // closed by Close: stops the helper goroutines
	helper sync.WaitGroup

	lastSeen atomic.Int64 // unix nanos of the last message from the child

	mu       sync.Mutex
	reason   error // why the child is gone (first cause wins)
	pending  map[uint64]*pending
	stderr   []string // last lines of the child's stderr
	notable  []string // last lines that say why it might have died
	nextID   uint64
	probes   bool                     // the child answers probe messages (its ready said so)
	probeSeq uint64                   // the last probe's number
	probing  map[uint64]chan *message // probes waiting for their probe_result
	started  bool
	closed   bool
	closeErr error
}

// pending is a job the child has not answered yet.
type pending struct {
	task  runners.Task
	emits sync.WaitGroup // relayed chunks whose Emit has not returned yet
}

// stderrTail is how many of the child's last stderr lines a death report quotes.
const stderrTail = 5

// New returns a runner for cfg; the process starts in Warmup.
func New(cfg Config) *Runner {
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.MissedHeartbeats <= 0 {
		cfg.MissedHeartbeats = DefaultMissedHeartbeats
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = DefaultStopTimeout
	}
	if cfg.MaxFileBytes <= 0 {
		cfg.MaxFileBytes = DefaultMaxFileBytes
	}
	if cfg.Args == nil {
		cfg.Args = []string{"device-worker", cfg.WorkerID}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Runner{
		cfg:     cfg,
		log:     log.With("worker", cfg.WorkerID),
		events:  make(chan *message, 16),
		gone:    make(chan struct{}),
		quit:    make(chan struct{}),
		pending: map[uint64]*pending{},
		probing: map[uint64]chan *message{},
	}
}

// PID is the child's process id, 0 before Warmup started it.
func (r *Runner) PID() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil || r.cmd.Process == nil {
		return 0
	}
	return r.cmd.Process.Pid
}

func (r *Runner) send(m *message) error {
	b, err := encodeFrame(m) // outside the lock: a big frame must not delay heartbeats
	if err != nil {
		return err
	}
	r.wmu.Lock()
	defer r.wmu.Unlock()
	if _, err := r.stdin.Write(b); err != nil {
		return fmt.Errorf("write %v frame: %w", m.Kind, err)
	}
	return nil
}

// Warmup starts the child, asks it to warm its runner up, and waits for "ready".
func (r *Runner) Warmup(ctx context.Context) error {
	r.mu.Lock()
	closed, started := r.closed, r.started
	r.mu.Unlock()
	if closed {
		return fmt.Errorf("worker %q: warm-up after close", r.cfg.WorkerID)
	}
	if started {
		return fmt.Errorf("worker %q: already warmed up", r.cfg.WorkerID)
	}
	if err := r.start(); err != nil {
		return err
	}
	if err := r.send(&message{Kind: kindWarmup, Version: ProtocolVersion, Worker: r.cfg.WorkerID, Heartbeat: millis(r.cfg.Heartbeat)}); err != nil {
		r.kill(err)
		<-r.gone
		return r.death()
	}
	for {
		select {
		case m := <-r.events:
			if m.Kind != kindReady {
				continue
			}
			if err := m.Err.err(); err != nil {
				r.kill(errors.New("warm-up failed"))
				return fmt.Errorf("worker %q (pid %d) warm-up: %w", r.cfg.WorkerID, r.PID(), err)
			}
			if m.Version != ProtocolVersion {
				r.kill(errors.New("protocol version mismatch"))
				return fmt.Errorf("worker %q (pid %d) warm-up: %w: the worker speaks protocol version %d, this server %d (different builds)",
					r.cfg.WorkerID, r.PID(), ErrProtocol, m.Version, ProtocolVersion)
			}
			r.mu.Lock()
			r.probes = m.Probes
			r.mu.Unlock()
			r.log.Info("worker process ready", "pid", r.PID(), "probes", m.Probes)
			return nil
		case <-r.gone:
			return fmt.Errorf("worker %q warm-up: %w", r.cfg.WorkerID, r.death())
		case <-ctx.Done():
			r.kill(fmt.Errorf("warm-up abandoned: %w", context.Cause(ctx)))
			return fmt.Errorf("worker %q warm-up: %w", r.cfg.WorkerID, context.Cause(ctx))
		}
	}
}

// Run sends the batch to the child and waits for its results, relaying chunks, forwarding
// cancellations (a task's context ending, or ctx's), and killing the child when it dies or
// the batch stays unanswered for more than the grace past the deadlines of all its
// unanswered jobs (a batch answers together, so a job that ran out of time may legitimately
// wait for a longer one; jobs without a deadline are never taken for hung).
func (r *Runner) Run(ctx context.Context, tasks []runners.Task) []runners.Outcome {
	out := make([]runners.Outcome, len(tasks))
	select {
	case <-r.gone:
		for i := range out {
			out[i].Err = r.death()
		}
		return out
	default:
	}
	type job struct {
		idx      int
		id       uint64
		limit    time.Time // deadline + grace; zero: no deadline
		canceled bool
	}
	jobs := map[uint64]*job{}
	wire := make([]wireJob, 0, len(tasks))
	cancels := make(chan uint64, len(tasks))
	r.mu.Lock()
	for i, t := range tasks {
		r.nextID++
		id := r.nextID
		w, err := toWireJob(id, t)
		if err != nil {
			out[i].Err = fmt.Errorf("worker %q: %w", r.cfg.WorkerID, err)
			continue
		}
		j := &job{idx: i, id: id}
		if w.Deadline > 0 {
			j.limit = fromUnixSeconds(w.Deadline).Add(r.cfg.Grace)
		}
		jobs[id] = j
		r.pending[id] = &pending{task: t}
		wire = append(wire, w)
	}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		var done []*pending
		for _, w := range wire {
			done = append(done, r.pending[w.ID])
			delete(r.pending, w.ID)
		}
		r.mu.Unlock()
		for _, p := range done { // no Emit of this batch's tasks outlives Run
			p.emits.Wait()
		}
	}()
	if len(wire) == 0 {
		return out
	}
	for _, j := range jobs {
		if t := tasks[j.idx]; t.Ctx != nil {
			id := j.id
			stop := context.AfterFunc(t.Ctx, func() { cancels <- id })
			defer stop()
		}
	}
	if err := r.send(&message{Kind: kindBatch, Jobs: wire}); err != nil {
		r.kill(fmt.Errorf("send batch: %w", err))
	}
	batchDone := ctx.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	cancel := func(j *job) {
		if j.canceled {
			return
		}
		j.canceled = true
		_ = r.send(&message{Kind: kindCancel, Job: j.id})
	}
	answer := func(m *message) {
		j := jobs[m.Job]
		if m.Kind != kindResult || j == nil {
			return
		}
		delete(jobs, m.Job)
		if err := m.Err.err(); err != nil {
			out[j.idx].Err = err
			return
		}
		v, err := m.Result.value()
		if err == nil {
			v, err = r.takeFiles(tasks[j.idx], v)
		}
		out[j.idx] = runners.Outcome{Value: v, Err: err}
	}
	for len(jobs) > 0 {
		// A batch answers together, so a hang shows as every unanswered job being past its
		// limit; a job without a deadline never counts as hung.
		var next time.Time
		for _, j := range jobs {
			if j.limit.IsZero() {
				next = time.Time{}
				break
			}
			if j.limit.After(next) {
				next = j.limit
			}
		}
		timer.Stop()
		var timeout <-chan time.Time
		if !next.IsZero() {
			timer.Reset(time.Until(next))
			timeout = timer.C
		}
		select {
		case m := <-r.events:
			answer(m)
		case id := <-cancels:
			if j := jobs[id]; j != nil {
				cancel(j)
			}
		case <-batchDone:
			batchDone = nil
			for _, j := range jobs {
				cancel(j)
			}
		case <-timeout:
			var late []string
			for _, j := range jobs {
				late = append(late, strconv.FormatUint(j.id, 10))
			}
			r.kill(fmt.Errorf("%w: job(s) %s silent %s past their deadline; killed", ErrHung, strings.Join(late, ","), r.cfg.Grace))
			<-r.gone
		case <-r.gone:
		}
		select {
		case <-r.gone:
			for drained := false; !drained; { // answers that arrived before the end stand
				select {
				case m := <-r.events:
					answer(m)
				default:
					drained = true
				}
			}
			err := r.death() // after a hang its reason wraps ErrHung
			for _, j := range jobs {
				out[j.idx].Err = err
			}
			return out
		default:
		}
	}
	return out
}

// Close asks the child to shut down, waits up to StopTimeout, then kills it. It is idempotent.
func (r *Runner) Close() error {
	r.mu.Lock()
	if r.closed {
		err := r.closeErr
		r.mu.Unlock()
		return err
	}
	r.closed = true
	started := r.started
	r.mu.Unlock()
	if !started {
		close(r.quit)
		return nil
	}
	_ = r.send(&message{Kind: kindShutdown})
	r.wmu.Lock()
	_ = r.stdin.Close()
	r.wmu.Unlock()
	var err error
	select {
	case <-r.gone:
	case <-time.After(r.cfg.StopTimeout):
		err = fmt.Errorf("worker %q did not exit within %s of shutdown; killed", r.cfg.WorkerID, r.cfg.StopTimeout)
		r.kill(err)
		<-r.gone
	}
	close(r.quit)
	r.helper.Wait()
	r.mu.Lock()
	r.closeErr = err
	r.mu.Unlock()
	if err == nil {
		r.log.Info("worker process stopped")
	}
	return err
}

var (
	_ runners.Runner = (*Runner)(nil)
	_ runners.Exiter = (*Runner)(nil)
)
