package procrunner

// Spawning: the worker process, its environment, its stderr, and its killing.

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

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
	if r.cfg.ExportDir != "" {
		out, err := r.prepareExport()
		if err != nil {
			return fmt.Errorf("worker %q: %w", r.cfg.WorkerID, err)
		}
		cmd.Env = append(cmd.Env, "TT_VIDEO_OUTPUT_DIR="+out)
	}
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
// a signal report of the Go runtime ("SIGABRT: abort"), a Python worker's fatal error or
// traceback, or a message of the device backend.
func notable(line string) bool {
	for _, p := range []string{"panic:", "fatal error:", "SIG", "ttb ", "TT_THROW", "terminate called", "Fatal Python error", "Traceback"} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return strings.Contains(line, "level=ERROR")
}

// WorkerEnv is the environment of the worker process for spec: TT_VISIBLE_DEVICES (the group's
// chips; unset for the all-devices group), TT_METAL_CACHE (a per-group directory under
// cacheBase), the resolved mesh, TRACE_REGION_SIZE when it was set, and
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
		// JSON: the form HEAD's Settings (pydantic) parses in a Python worker; config reads it too.
		env = append(env, "DEVICE_MESH_SHAPE="+jsonPair(spec.Mesh.Rows, spec.Mesh.Cols))
	}
	if spec.Settings != nil && spec.Settings.TraceRegionSizeSet {
		env = append(env, "TRACE_REGION_SIZE="+strconv.Itoa(spec.Settings.TraceRegionSize))
	}
	if opTimeout > 0 {
		env = append(env, "TT_METAL_OPERATION_TIMEOUT_SECONDS="+strconv.FormatFloat(opTimeout.Seconds(), 'f', -1, 64))
	}
	return env
}

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
