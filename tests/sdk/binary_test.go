package sdk_test

// The real tt-media-server binary as a subprocess: TestMain builds it once from
// ./cmd/tt-media-server (or takes TT_MEDIA_SERVER_E2E_BINARY), and startFleet runs the server
// configurations the conformance suites need on free loopback ports. Adapted from
// tests/helpers_test.go (test helpers are per package).

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/tenstorrent/tt-media-server-go/tests/e2e"

	"github.com/stretchr/testify/require"
)

var (
	// binPath is the tt-media-server binary under test.
	binPath string
	// runDir is the servers' working directory: empty, so no .env file is picked up.
	runDir string
)

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	env, err := e2e.Prepare("tt-media-server-sdk-", true)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sdk:", err)
		return 1
	}
	defer env.Close()
	binPath, runDir = env.Bin, env.RunDir
	return m.Run()
}

func repoRoot() (string, error) { return e2e.RepoRoot() }

// backend is TT_TEST_DEVICE_BACKEND: "python" runs every server of the suites on Python workers
// hosting the fake runners of workers/python/fakes (DEVICE_BACKEND=python), so the SDK
// conformance suites check the same answers from Tenstorrent's Python runner interface
// (scripts/test-python-backend.sh); "" runs them on the Go mock runners.
var backend = os.Getenv("TT_TEST_DEVICE_BACKEND")

// lockedBuffer collects a subprocess's output.
type lockedBuffer = e2e.LockedBuffer

// proc is one tt-media-server subprocess.
type proc struct {
	name string
	URL  string // http://127.0.0.1:port
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{} // closed when the process has exited
	err  error         // cmd.Wait's result, valid after done
}

// V1 is the base URL the SDKs take.
func (p *proc) V1() string { return p.URL + "/v1" }

func freePort(t *testing.T) int { return e2e.FreePort(t) }

// launch starts the binary with a minimal environment (PATH, HOME, loopback address, the
// SDK test key) plus env, without waiting for it to be ready. At the end of the test it is
// stopped with SIGTERM and must exit 0 within 5 s; its output is logged when the test failed.
// A server whose port was taken before it bound it (by another test binary's server or a
// client connection) is started again on another port, up to three times.
func launch(t *testing.T, name string, env map[string]string) *proc {
	t.Helper()
	var p *proc
	for attempt := 1; ; attempt++ {
		p = launchOnce(t, name, env)
		if attempt == 3 || !e2e.BindFailed(p.out.String, p.done) {
			break
		}
		t.Logf("%s: port of %s was taken before the server bound it; starting again on another", name, p.URL)
	}
	t.Cleanup(func() {
		if !p.exited() {
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Errorf("%s: SIGTERM: %v", name, err)
			}
		}
		select {
		case <-p.done:
			if code := p.cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("%s exited with status %d after SIGTERM, want 0 (%v)", name, code, p.err)
			}
		case <-time.After(5 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
			t.Errorf("%s did not exit within 5 s of SIGTERM", name)
		}
		if t.Failed() {
			t.Logf("%s (%s, env %v) output:\n%s", name, p.URL, env, p.out.String())
		}
	})
	return p
}

// launchOnce starts the binary on a free port (LOG_LEVEL INFO: launch waits for its "serving"
// line).
func launchOnce(t *testing.T, name string, env map[string]string) *proc {
	t.Helper()
	port := freePort(t)
	vars := map[string]string{
		"PATH": os.Getenv("PATH"), "HOME": os.Getenv("HOME"),
		"SERVICE_HOST": "127.0.0.1", "SERVICE_PORT": strconv.Itoa(port),
		"API_KEY": apiKey, "MOCK_DEVICES_COUNT": "1", "LOG_LEVEL": "INFO",
		"SHUTDOWN_GRACE_SECONDS": "2",
	}
	for k, v := range env {
		vars[k] = v
	}
	if backend == "python" {
		root, err := repoRoot()
		require.NoError(t, err)
		n, err := strconv.Atoi(vars["MOCK_DEVICES_COUNT"])
		if err != nil {
			n = 1
		}
		e2e.PythonBackend(t, vars, root, n)
	}
	list := make([]string, 0, len(vars))
	for k, v := range vars {
		list = append(list, k+"="+v)
	}
	sort.Strings(list)
	p := &proc{name: name, URL: "http://127.0.0.1:" + strconv.Itoa(port), out: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(binPath)
	p.cmd.Dir, p.cmd.Env, p.cmd.Stdout, p.cmd.Stderr = runDir, list, p.out, p.out
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitLiveness polls /tt-liveness until it answers want (200: ready; 503: listening, still
// warming up), failing if the process exits first. On Python workers, ready gets at least
// e2e.WorkerStartLimit (HEAD's road imports torch in every worker).
func (p *proc) waitLiveness(t *testing.T, want int, timeout time.Duration) {
	t.Helper()
	if backend == "python" && want == http.StatusOK {
		timeout = max(timeout, e2e.WorkerStartLimit)
	}
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	for {
		if p.exited() {
			t.Fatalf("%s exited before answering %d: %v\n%s", p.name, want, p.err, p.out.String())
		}
		resp, err := client.Get(p.URL + "/tt-liveness")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == want {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no /tt-liveness %d after %v (last error %v)\n%s", p.name, want, timeout, err, p.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Server configurations of the conformance suites; each suite starts its own fleet so that
// the queue-filling checks of one cannot disturb the other.
var (
	// imageEnv: the mock SDXL with no latency, for the functional checks and 400/401/404/405/409.
	imageEnv = map[string]string{"MODEL_RUNNER": "tt-sdxl-trace", "MOCK_WARMUP_SECONDS": "0", "MOCK_STEP_SECONDS": "0"}
	// audioEnv: the mock Whisper with no latency and a small upload limit, for 413 and 415.
	audioEnv = map[string]string{"MODEL_RUNNER": "tt-whisper", "MOCK_WARMUP_SECONDS": "0",
		"MOCK_AUDIO_SECONDS_PER_SECOND": "0", "MAX_AUDIO_SIZE_BYTES": strconv.Itoa(maxAudioBytes)}
	// slowEnv: one worker, a queue of one and 2 s images (20 default steps × 0.1 s) against a
	// 1 s inference timeout: a running job and a queued one make the next request a 429, and
	// every admitted job a 504. No job ever completes, so the scheduler never learns a service
	// rate and cannot refuse a job early for a deadline it predicts to miss.
	slowEnv = map[string]string{"MODEL_RUNNER": "tt-sdxl-trace", "MOCK_WARMUP_SECONDS": "0",
		"MOCK_STEP_SECONDS": "0.1", "MAX_QUEUE_SIZE": "1", "DEFAULT_INFERENCE_TIMEOUT_SECONDS": "1"}
	// warmingEnv: a worker that warms up for ten minutes, so every inference request is a 503.
	warmingEnv = map[string]string{"MODEL_RUNNER": "tt-sdxl-trace", "MOCK_WARMUP_SECONDS": "600"}
)

// fleet is one suite's servers: four real binaries and the in-process fault server (500).
type fleet struct {
	image, audio, slow, warming *proc
	fault                       string // /v1 base URL of faultServer
}

// startFleet launches the four binaries at once and waits until each is ready (warming: until
// it listens and reports 503).
func startFleet(t *testing.T) fleet {
	t.Helper()
	f := fleet{
		image:   launch(t, "image server", imageEnv),
		audio:   launch(t, "audio server", audioEnv),
		slow:    launch(t, "slow server", slowEnv),
		warming: launch(t, "warming server", warmingEnv),
		fault:   faultServer(t),
	}
	for _, p := range []*proc{f.image, f.audio, f.slow} {
		p.waitLiveness(t, http.StatusOK, 20*time.Second)
	}
	f.warming.waitLiveness(t, http.StatusServiceUnavailable, 20*time.Second)
	return f
}
