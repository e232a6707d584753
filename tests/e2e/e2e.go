// Package e2e holds what the end-to-end test packages (tests, tests/sdk, tests/web) share:
// finding the repository, building the server binary once per test binary (or taking a
// prebuilt one), free loopback ports, a concurrency-safe buffer for a subprocess's output, and
// the environment of a server on Python workers (PythonBackend).
package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BinaryEnv names a prebuilt server binary to test instead of building one (e.g. a `-tags
// ttnn` build on a hardware host).
const BinaryEnv = "TT_MEDIA_SERVER_E2E_BINARY"

// Env is what a test binary's end-to-end tests run with.
type Env struct {
	Root   string // the repository
	Bin    string // the tt-media-server binary under test
	RunDir string // the servers' working directory: empty, so no .env file is picked up
	tmp    string
}

// Close removes the temporary directory (the built binary and the run directory).
func (e *Env) Close() { _ = os.RemoveAll(e.tmp) }

// Prepare makes a temporary run directory and builds ./cmd/tt-media-server into it, unless
// build is false (the binary is then not needed) or BinaryEnv names a prebuilt binary.
func Prepare(prefix string, build bool) (*Env, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	e := &Env{Root: root, RunDir: filepath.Join(tmp, "run"), tmp: tmp}
	if err := os.Mkdir(e.RunDir, 0o755); err != nil {
		e.Close()
		return nil, fmt.Errorf("run dir: %w", err)
	}
	if prebuilt := os.Getenv(BinaryEnv); prebuilt != "" {
		if e.Bin, err = filepath.Abs(prebuilt); err != nil {
			e.Close()
			return nil, fmt.Errorf("%s: %w", BinaryEnv, err)
		}
		fmt.Fprintf(os.Stderr, "%stesting the prebuilt binary %s (%s)\n", prefix, e.Bin, BinaryEnv)
		return e, nil
	}
	if !build {
		return e, nil
	}
	e.Bin = filepath.Join(tmp, "tt-media-server")
	cmd := exec.Command("go", "build", "-o", e.Bin, "./cmd/tt-media-server")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		e.Close()
		return nil, fmt.Errorf("go build ./cmd/tt-media-server: %w\n%s", err, out)
	}
	return e, nil
}

// RepoRoot is the directory holding go.mod, searched upwards from the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("getwd: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// handedOut holds every port FreePort has returned in this process.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// FreePort asks the kernel for an unused loopback port that this process has not handed out
// before. The kernel gives a port that is closed again to a later Listen(":0") (here, 6-13
// times in 300 calls), so two parallel tests could get the same port before either server has
// bound it: one server would fail to start, or a test would talk to another test's server.
func FreePort(t testing.TB) int {
	t.Helper()
	var held []net.Listener // ports used before, kept bound so that the kernel offers others
	defer func() {
		for _, ln := range held {
			_ = ln.Close()
		}
	}()
	for range 1000 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("free port: %v", err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		handedOut.Lock()
		fresh := !handedOut.ports[port]
		handedOut.ports[port] = true
		handedOut.Unlock()
		if !fresh {
			held = append(held, ln)
			continue
		}
		if err := ln.Close(); err != nil {
			t.Fatalf("free port: %v", err)
		}
		return port
	}
	t.Fatalf("free port: no port this process has not used in 1000 tries")
	return 0
}

// BindFailed waits until a server started on a FreePort port logs that it serves (its
// "msg=serving" line, at LOG_LEVEL INFO or lower) or exits (done closed), and reports whether it
// exited because the port was in use: a free port can be taken before the server binds it (by
// another test binary choosing ports, or a client connection), and the caller then starts the
// server again on another port. A server that does neither within 30 s is left to the caller.
func BindFailed(output func() string, done <-chan struct{}) bool {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if strings.Contains(output(), "msg=serving") {
			return false
		}
		select {
		case <-done:
			return strings.Contains(output(), "address already in use")
		case <-time.After(10 * time.Millisecond):
		}
	}
	return false
}

// LockedBuffer collects a subprocess's output; it is safe for concurrent use.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// PythonExe is the interpreter of the plain road's Python-worker tests: Debian's, not a pyenv
// shim that may be first on PATH.
const PythonExe = "/usr/bin/python3"

// WorkerStartLimit bounds how long a test waits for a Python worker to start (or start again
// after a kill): an upper bound only, never a pause. A worker on HEAD's road imports torch
// (HEAD's base class does): about 4 s of CPU, 15 s of wall time on a 2-core box at load 16.
const WorkerStartLimit = 2 * time.Minute

// PythonRoad is how a Python-worker test hosts the fake runners of workers/python/fakes.
type PythonRoad struct {
	Name string
	// Exe runs the worker (PYTHON_EXECUTABLE); RunnerPath is PYTHON_RUNNER_PATH; PythonPath,
	// when not empty, goes on PYTHONPATH (Debian modules the interpreter lacks).
	Exe, RunnerPath, PythonPath string
}

// Env is the road's environment entries (PYTHON_EXECUTABLE, PYTHON_RUNNER_PATH, PYTHONPATH).
func (r PythonRoad) Env() map[string]string {
	env := map[string]string{"PYTHON_EXECUTABLE": r.Exe, "PYTHON_RUNNER_PATH": r.RunnerPath, "PYTHONDONTWRITEBYTECODE": "1"}
	if r.PythonPath != "" {
		env["PYTHONPATH"] = r.PythonPath
	}
	return env
}

// skipOrFail skips t, or fails it under CI=true, where the project's scripts install everything.
func skipOrFail(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// RequirePython skips (fails under CI=true) unless PythonExe with PIL and numpy can run the
// fake runners of workers/python/fakes.
func RequirePython(t testing.TB) {
	t.Helper()
	out, err := exec.Command(PythonExe, "-c", "import PIL, numpy").CombinedOutput()
	if err == nil {
		return
	}
	skipOrFail(t, fmt.Sprintf("%s with PIL and numpy is needed for the Python worker tests (scripts/install-python-worker-deps.sh): %v %s", PythonExe, err, out))
}

// PlainRoad hosts the fake runners on our own stand-ins of HEAD's base class and request
// classes (workers/python/fakes/plain: plain objects, no pydantic) with Debian's python3.
func PlainRoad(t testing.TB, root string) PythonRoad {
	t.Helper()
	RequirePython(t)
	fakes := filepath.Join(root, "workers", "python", "fakes")
	return PythonRoad{Name: "plain", Exe: PythonExe, RunnerPath: fakes + string(os.PathListSeparator) + filepath.Join(fakes, "plain")}
}

// HeadDir is tt-media-server HEAD's source beside the repository (../shared/tt-media-server-head).
func HeadDir(root string) string {
	return filepath.Join(root, "..", "shared", "tt-media-server-head")
}

// headModules are HEAD's imports beyond pydantic: Debian packages (python3-numpy, python3-pil,
// python3-torch, python3-prometheus-client) by their module directories.
var headModules = []string{"numpy", "PIL", "torch", "prometheus_client"}

// debianModules is where Debian's python3-* packages put their modules.
const debianModules = "/usr/lib/python3/dist-packages"

// HeadRoad hosts the fake runners as subclasses of HEAD's REAL BaseDeviceRunner, receiving
// HEAD's real request models and reading HEAD's real Settings: PYTHON_RUNNER_PATH is the fakes
// (their runner modules, at HEAD's module paths, shadow HEAD's) then HEAD's tree; the
// interpreter is the python3 on PATH that has pydantic 2 and pydantic-settings (HEAD's
// README-SUBSET.md), with Debian's numpy, PIL, torch and prometheus_client linked into a
// directory on PYTHONPATH when it lacks them (only those: its own typing_extensions is newer
// than Debian's). Skips (fails under CI=true) when HEAD's tree or an interpreter is missing.
func HeadRoad(t testing.TB, root string) PythonRoad {
	t.Helper()
	head := HeadDir(root)
	if _, err := os.Stat(filepath.Join(head, "tt_model_runners", "base_device_runner.py")); err != nil {
		skipOrFail(t, fmt.Sprintf("HEAD's tree is absent (%v): it lives beside the repository in ../shared/tt-media-server-head", err))
	}
	// python3 on PATH first; pyenv's shim when PATH lacks it (a non-login shell).
	candidates := []string{"python3"}
	if r := os.Getenv("PYENV_ROOT"); r != "" {
		candidates = append(candidates, filepath.Join(r, "shims", "python3"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		candidates = append(candidates, filepath.Join(home, ".pyenv", "shims", "python3"))
	}
	var exe string
	var tried []string
	for _, c := range candidates {
		out, err := exec.Command(c, "-c", "import sys, pydantic_settings; print(sys.executable)").CombinedOutput()
		if err == nil {
			exe = strings.TrimSpace(string(out))
			break
		}
		tried = append(tried, fmt.Sprintf("%s: %v %s", c, err, bytes.TrimSpace(out)))
	}
	if exe == "" {
		skipOrFail(t, fmt.Sprintf("no python3 with pydantic 2 and pydantic-settings (HEAD's README-SUBSET.md): %s", strings.Join(tried, "; ")))
	}
	links := t.TempDir()
	for _, m := range headModules {
		if exec.Command(exe, "-c", "import "+m).Run() == nil {
			continue // its own
		}
		if err := os.Symlink(filepath.Join(debianModules, m), filepath.Join(links, m)); err != nil {
			t.Fatal(err)
		}
	}
	check := exec.Command(exe, "-c", "import "+strings.Join(headModules, ", ")+", pydantic_settings")
	check.Env = append(os.Environ(), "PYTHONPATH="+links)
	if out, err := check.CombinedOutput(); err != nil {
		skipOrFail(t, fmt.Sprintf("%s cannot import HEAD's dependencies with Debian's linked in (scripts/install-python-worker-deps.sh installs python3-numpy, python3-pil, python3-torch, python3-prometheus-client): %v %s", exe, err, out))
	}
	fakes := filepath.Join(root, "workers", "python", "fakes")
	return PythonRoad{Name: "head", Exe: exe, RunnerPath: fakes + string(os.PathListSeparator) + head, PythonPath: links}
}

// PythonBackend turns a mock-server environment (vars, changed in place) into its
// Python-worker twin: DEVICE_BACKEND=python hosting the fake runners of root/workers/python/fakes
// on the plain road (PlainRoad), one single-chip group per chip (devices) unless DEVICE_IDS is
// set, no start-up delay, and a harmless RESET_DEVICE_COMMAND unless one is set (nothing is
// simulated with the python backend, so the command really runs).
//
// TT_TEST_PYTHON_ROAD=head puts them on HEAD's road (HeadRoad) instead.
func PythonBackend(t testing.TB, vars map[string]string, root string, devices int) {
	t.Helper()
	if os.Getenv("TT_TEST_PYTHON_ROAD") == "head" {
		PythonBackendOn(t, HeadRoad(t, root), vars, devices)
		return
	}
	PythonBackendOn(t, PlainRoad(t, root), vars, devices)
}

// PythonBackendOn is PythonBackend on the given road.
func PythonBackendOn(t testing.TB, road PythonRoad, vars map[string]string, devices int) {
	t.Helper()
	delete(vars, "WORKER_ISOLATION")
	vars["DEVICE_BACKEND"] = "python"
	for k, v := range road.Env() {
		vars[k] = v
	}
	if _, ok := vars["DEVICE_IDS"]; !ok {
		ids := make([]string, max(devices, 1))
		for i := range ids {
			ids[i] = "(" + strconv.Itoa(i) + ")"
		}
		vars["DEVICE_IDS"] = strings.Join(ids, ",")
	}
	for k, v := range map[string]string{"NEW_DEVICE_DELAY_SECONDS": "0", "RESET_DEVICE_COMMAND": "true"} {
		if _, ok := vars[k]; !ok {
			vars[k] = v
		}
	}
}
