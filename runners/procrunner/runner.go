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
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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

// start launches the child and its helper goroutines.
func (r *Runner) start() error {
	path := r.cfg.Path
	if path == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("worker %q: find own executable: %w", r.cfg.WorkerID, err)
		}
		path = exe
	}
	cmd := exec.Command(path, r.cfg.Args...)
	cmd.Env = append(os.Environ(), r.cfg.Env...)
	// Own process group: a kill reaches anything the worker started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = &lineWriter{r: r}
	cmd.WaitDelay = time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("worker %q: %w", r.cfg.WorkerID, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("worker %q: %w", r.cfg.WorkerID, err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("worker %q: start %s: %w", r.cfg.WorkerID, path, err)
	}
	r.mu.Lock()
	r.cmd, r.stdin, r.started = cmd, stdin, true
	r.mu.Unlock()
	r.log.Info("worker process started", "pid", cmd.Process.Pid, "path", path, "args", r.cfg.Args)
	r.helper.Add(2)
	go r.readLoop(&aliveReader{r: stdout, seen: &r.lastSeen})
	go r.watchHeartbeats()
	return nil
}

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

// kill SIGKILLs the child's process group, recording why (the first reason wins).
func (r *Runner) kill(reason error) {
	r.mu.Lock()
	if r.reason == nil {
		r.reason = reason
	}
	cmd := r.cmd
	r.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	select {
	case <-r.gone:
		return
	default:
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}

// Probe reports whether the child is alive: it has not exited and its heartbeats are on time
// (a silent child is killed by the heartbeat watcher). It costs no device time.
func (r *Runner) Probe(ctx context.Context) error {
	select {
	case <-r.gone:
		return r.death()
	default:
	}
	return ctx.Err()
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
	if err := r.send(&message{Kind: kindWarmup, Version: ProtocolVersion, Heartbeat: r.cfg.Heartbeat}); err != nil {
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
			r.log.Info("worker process ready", "pid", r.PID())
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
		if !w.Deadline.IsZero() {
			j.limit = w.Deadline.Add(r.cfg.Grace)
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

// lineWriter forwards the child's stderr to the logger, one record per line, and keeps the
// last lines for death reports.
type lineWriter struct {
	r   *Runner
	buf []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := strings.IndexByte(string(w.buf), '\n')
		if i < 0 {
			break
		}
		w.line(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 64<<10 { // an endless line: flush it in pieces
		w.line(string(w.buf))
		w.buf = w.buf[:0]
	}
	return len(p), nil
}

func (w *lineWriter) line(s string) {
	s = strings.TrimRight(s, "\r")
	if s == "" {
		return
	}
	w.r.mu.Lock()
	w.r.stderr = keepLast(append(w.r.stderr, s), stderrTail)
	if notable(s) {
		w.r.notable = keepLast(append(w.r.notable, s), stderrTail)
	}
	w.r.mu.Unlock()
	w.r.log.Info("worker: " + s)
}

// tailLocked quotes the child's last notable stderr lines (fatal signals, panics, the
// simulator's own messages), or its last lines when none was notable.
func (r *Runner) tailLocked() string {
	if len(r.notable) > 0 {
		return strings.Join(r.notable, " | ")
	}
	return strings.Join(r.stderr, " | ")
}

func keepLast(lines []string, n int) []string {
	if len(lines) > n {
		return lines[len(lines)-n:]
	}
	return lines
}

// notable reports whether a stderr line says why a process died: a Go panic or fatal error,
// a signal report of the Go runtime ("SIGABRT: abort"), or a message of the device backend.
func notable(line string) bool {
	for _, p := range []string{"panic:", "fatal error:", "SIG", "ttb ", "TT_THROW", "terminate called"} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return strings.Contains(line, "level=ERROR")
}

// WorkerEnv is the environment of the worker process for spec: TT_VISIBLE_DEVICES (the group's
// chips; unset for the all-devices group), TT_METAL_CACHE (a per-group directory under
// cacheBase), the resolved mesh and trace-region settings, and
// TT_METAL_OPERATION_TIMEOUT_SECONDS (opTimeout, when > 0). Entries go after os.Environ().
func WorkerEnv(spec runners.WorkerSpec, cacheBase string, opTimeout time.Duration) []string {
	env := []string{}
	if len(spec.Devices) > 0 {
		ids := make([]string, len(spec.Devices))
		for i, d := range spec.Devices {
			ids[i] = strconv.Itoa(d)
		}
		env = append(env, "TT_VISIBLE_DEVICES="+strings.Join(ids, ","))
	}
	if cacheBase != "" {
		group := strings.ReplaceAll(spec.WorkerID, ",", "_")
		if group == "" {
			group = "all"
		}
		env = append(env, "TT_METAL_CACHE="+filepath.Join(cacheBase, "group-"+group))
	}
	if spec.Mesh.Chips() > 0 {
		env = append(env, fmt.Sprintf("DEVICE_MESH_SHAPE=(%d,%d)", spec.Mesh.Rows, spec.Mesh.Cols))
	}
	if spec.Settings != nil {
		env = append(env, "TRACE_REGION_SIZE="+strconv.Itoa(spec.Settings.TraceRegionSize))
	}
	if opTimeout > 0 {
		env = append(env, "TT_METAL_OPERATION_TIMEOUT_SECONDS="+strconv.FormatFloat(opTimeout.Seconds(), 'f', -1, 64))
	}
	return env
}

var _ runners.Runner = (*Runner)(nil)

// aliveReader records when bytes last arrived: a frame still being received counts as a sign
// of life, like a heartbeat.
type aliveReader struct {
	r    io.Reader
	seen *atomic.Int64
}

func (a *aliveReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if n > 0 {
		a.seen.Store(time.Now().UnixNano())
	}
	return n, err
}
