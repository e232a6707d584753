package tests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tenstorrent/tt-media-server-go/internal/wavtest"
	"github.com/tenstorrent/tt-media-server-go/tests/e2e"

	"github.com/stretchr/testify/require"
)

// apiKey is the server's default API_KEY; bearer is the README's Authorization header value.
const (
	apiKey = "your-secret-key"
	bearer = "Bearer " + apiKey
)

var (
	// binPath is the tt-media-server binary built by TestMain.
	binPath string
	// repoRoot is the module root (the directory holding go.mod).
	repoRoot string
	// runDir is the servers' working directory: empty, so no .env file is picked up.
	runDir string
)

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	env, err := e2e.Prepare("tt-media-server-e2e-", true)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer env.Close()
	repoRoot, binPath, runDir = env.Root, env.Bin, env.RunDir
	return m.Run()
}

// testdataDir returns /work/shared/testdata/<sub> located relative to the repository, or skips
// the test when it is absent.
func testdataDir(t *testing.T, sub string) string {
	t.Helper()
	dir := filepath.Join(repoRoot, "..", "shared", "testdata", sub)
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("shared test data %s is absent (%v); skipping", dir, err)
	}
	return dir
}

// lockedBuffer collects a subprocess's stderr.
type lockedBuffer = e2e.LockedBuffer

// server is one tt-media-server subprocess.
type server struct {
	URL    string
	Port   int
	cmd    *exec.Cmd
	stderr *lockedBuffer
	done   chan struct{} // closed when the process has exited
	err    error         // cmd.Wait's result, valid after done
	mu     sync.Mutex
	stop   bool // SIGTERM already sent by stopAndCheck
}

// freePort asks the kernel for an unused loopback port (a variable for
// TestLaunchRetriesATakenPort, which is not parallel).
var freePort = func(t *testing.T) int { return e2e.FreePort(t) }

// serverEnv is the environment of a server: a minimal base (PATH, HOME), fast mock
// latencies, and the overrides. Variables of the test's own environment are not inherited so
// that a stray MODEL_RUNNER or API_KEY cannot change what is tested.
func serverEnv(port int, overrides map[string]string) []string {
	env := map[string]string{
		"PATH":                          os.Getenv("PATH"),
		"HOME":                          os.Getenv("HOME"),
		"SERVICE_HOST":                  "127.0.0.1",
		"SERVICE_PORT":                  strconv.Itoa(port),
		"MOCK_WARMUP_SECONDS":           "0.05",
		"MOCK_STEP_SECONDS":             "0.002",
		"MOCK_AUDIO_SECONDS_PER_SECOND": "0.001",
		"MOCK_CNN_SECONDS":              "0.001",
		"MOCK_DEVICES_COUNT":            "2",
		"RESET_DEVICE_SLEEP_TIME":       "0.1",
		"SHUTDOWN_GRACE_SECONDS":        "10",
		"LOG_LEVEL":                     "INFO",
	}
	for k, v := range overrides {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// launch starts the binary without waiting for it to be ready. The process is killed at the
// end of the test if it is still running, and its stderr is logged when the test failed.
//
// A port FreePort found free can be taken before the server binds it (by another test binary
// choosing ports, or a client connection): a server that could not bind is started again on
// another port, up to three times.
func launch(t *testing.T, env map[string]string) *server {
	t.Helper()
	for attempt := 1; ; attempt++ {
		s := launchOnce(t, env)
		if attempt == 3 || !s.bindFailed() {
			return s
		}
		t.Logf("port %d was taken before the server bound it; starting again on another", s.Port)
	}
}

func launchOnce(t *testing.T, env map[string]string) *server {
	t.Helper()
	port := freePort(t)
	s := &server{
		URL:    "http://127.0.0.1:" + strconv.Itoa(port),
		Port:   port,
		stderr: &lockedBuffer{},
		done:   make(chan struct{}),
	}
	s.cmd = exec.Command(binPath)
	s.cmd.Dir = runDir
	s.cmd.Env = serverEnv(port, env)
	s.cmd.Stdout = s.stderr
	s.cmd.Stderr = s.stderr
	require.NoError(t, s.cmd.Start())
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server %s (env %v) output:\n%s", s.URL, env, s.stderr.String())
		}
	})
	t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	})
	return s
}

// bindFailed waits until the server listens or exits, and reports whether it exited because
// its port was in use.
func (s *server) bindFailed() bool { return e2e.BindFailed(s.stderr.String, s.done) }

// startServer launches the binary, waits until /tt-liveness answers 200, and registers a
// graceful stop (SIGTERM, exit status 0 within a few seconds) at the end of the test. A server
// on Python workers gets e2e.WorkerStartLimit (HEAD's road imports torch in every worker).
func startServer(t *testing.T, env map[string]string) *server {
	t.Helper()
	if env["DEVICE_BACKEND"] == "python" {
		return startServerWithin(t, env, e2e.WorkerStartLimit)
	}
	return startServerWithin(t, env, 15*time.Second)
}

// startServerWithin is startServer with its own limit for the server to become ready.
func startServerWithin(t *testing.T, env map[string]string, ready time.Duration) *server {
	t.Helper()
	s := launch(t, env)
	s.waitReady(t, ready)
	t.Cleanup(func() { s.stopAndCheck(t) })
	return s
}

// exited reports whether the process has ended.
func (s *server) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// waitReady polls /tt-liveness until it answers 200, failing if the process exits first.
func (s *server) waitReady(t *testing.T, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	for {
		if s.exited() {
			t.Fatalf("server exited before it was ready: %v\n%s", s.err, s.stderr.String())
		}
		resp, err := client.Get(s.URL + "/tt-liveness")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not ready after %v (last error %v)\n%s", timeout, err, s.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitWorking polls /tt-liveness until a worker reports denoising progress (a step done), i.e.
// a request is on the device: an event to act on instead of a guess of how long it takes to get there.
func (s *server) waitWorking(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, live := s.liveness(t)
		if workers, ok := live["worker_info"].(map[string]any); ok {
			for _, w := range workers {
				if p, ok := w.(map[string]any)["progress"].(map[string]any); ok {
					if done, _ := p["done"].(float64); done >= 1 {
						return
					}
				}
			}
		}
		require.Falsef(t, time.Now().After(deadline), "no worker reported progress within 30 s: %v", live)
		time.Sleep(20 * time.Millisecond)
	}
}

// sigterm sends SIGTERM once.
func (s *server) sigterm(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop {
		return
	}
	s.stop = true
	if !s.exited() {
		require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	}
}

// waitExit waits for the process to end and returns its exit code (-1 when killed by a signal).
func (s *server) waitExit(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(timeout):
		_ = s.cmd.Process.Kill()
		<-s.done
		t.Fatalf("server did not exit within %v", timeout)
	}
	return s.cmd.ProcessState.ExitCode()
}

// stopAndCheck stops the server with SIGTERM and asserts a clean exit (status 0) within 5 s.
func (s *server) stopAndCheck(t *testing.T) {
	t.Helper()
	s.sigterm(t)
	code := s.waitExit(t, 5*time.Second)
	if code != 0 {
		t.Errorf("server exited with status %d after SIGTERM, want 0 (%v)", code, s.err)
	}
}

// reply is an HTTP answer read in full.
type reply struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing the test if it is not JSON.
func (r reply) JSON(t *testing.T, v any) {
	t.Helper()
	require.NoErrorf(t, json.Unmarshal(r.Body, v), "body is not JSON: %.300s", r.Body)
}

// obj decodes the body as a JSON object.
func (r reply) obj(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	r.JSON(t, &m)
	return m
}

func (r reply) String() string {
	return fmt.Sprintf("HTTP %d %.400s", r.Status, r.Body)
}

var httpClient = &http.Client{Timeout: 60 * time.Second}

// do sends one request; headers are name, value pairs.
func do(t *testing.T, method, url string, body []byte, headers ...string) reply {
	t.Helper()
	r, err := tryDo(method, url, body, headers...)
	require.NoError(t, err)
	return r
}

func tryDo(method, url string, body []byte, headers ...string) (reply, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return reply{}, fmt.Errorf("new request: %w", err)
	}
	if len(headers)%2 != 0 {
		return reply{}, errors.New("headers must be name, value pairs")
	}
	for i := 0; i < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return reply{}, fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, fmt.Errorf("read body: %w", err)
	}
	return reply{Status: resp.StatusCode, Header: resp.Header, Body: data}, nil
}

// get sends GET path without credentials.
func (s *server) get(t *testing.T, path string, headers ...string) reply {
	t.Helper()
	return do(t, http.MethodGet, s.URL+path, nil, headers...)
}

// postJSON sends a JSON body with the README's Authorization header.
func (s *server) postJSON(t *testing.T, path, body string) reply {
	t.Helper()
	return do(t, http.MethodPost, s.URL+path, []byte(body),
		"Content-Type", "application/json", "Authorization", bearer)
}

// postMultipart sends a multipart form with the README's Authorization header.
func (s *server) postMultipart(t *testing.T, path string, parts ...formPart) reply {
	t.Helper()
	ct, body := multipartBody(t, parts...)
	return do(t, http.MethodPost, s.URL+path, body, "Content-Type", ct, "Authorization", bearer)
}

// liveness returns /tt-liveness's status and JSON body.
func (s *server) liveness(t *testing.T) (int, map[string]any) {
	t.Helper()
	r := s.get(t, "/tt-liveness")
	return r.Status, r.obj(t)
}

// formPart is one part of a multipart/form-data body; a part with a filename is a file.
type formPart struct {
	name, filename, contentType string
	data                        []byte
}

func field(name, value string) formPart { return formPart{name: name, data: []byte(value)} }

func file(filename, contentType string, data []byte) formPart {
	return formPart{name: "file", filename: filename, contentType: contentType, data: data}
}

// multipartBody builds a multipart/form-data body as curl -F does.
func multipartBody(t *testing.T, parts ...formPart) (contentType string, body []byte) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, p := range parts {
		h := make(textproto.MIMEHeader)
		cd := fmt.Sprintf(`form-data; name="%s"`, p.name)
		if p.filename != "" {
			cd += fmt.Sprintf(`; filename="%s"`, p.filename)
			ct := p.contentType
			if ct == "" {
				ct = "application/octet-stream"
			}
			h.Set("Content-Type", ct)
		}
		h.Set("Content-Disposition", cd)
		pw, err := w.CreatePart(h)
		require.NoError(t, err)
		_, err = pw.Write(p.data)
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	return w.FormDataContentType(), buf.Bytes()
}

// wavPCM16 encodes mono 16-bit PCM samples as a canonical 44-byte-header WAV file.
func wavPCM16(rate int, samples []int16) []byte {
	return wavtest.PCM16(rate, samples)
}

// tone is seconds of a sine at freq Hz with peak amplitude amp (0..1).
func tone(rate int, seconds, freq, amp float64) []int16 {
	return wavtest.Tone(rate, seconds, freq, amp)
}

// silence is seconds of digital silence.
func silence(rate int, seconds float64) []int16 {
	return make([]int16, int(math.Round(seconds*float64(rate))))
}

func concat(parts ...[]int16) []int16 {
	var out []int16
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// ndjsonLines splits an NDJSON body into its lines, failing on a missing final newline.
func ndjsonLines(t *testing.T, body []byte) []string {
	t.Helper()
	require.NotEmpty(t, body, "empty NDJSON body")
	require.Equalf(t, byte('\n'), body[len(body)-1], "NDJSON body does not end with a newline: %.200q", body[max(0, len(body)-200):])
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		require.NotEmpty(t, strings.TrimSpace(line), "blank line in NDJSON body")
		lines = append(lines, line)
	}
	require.NoError(t, sc.Err())
	return lines
}

// jsonNumber reads a JSON number decoded into any (float64).
func jsonNumber(t *testing.T, v any, what string) float64 {
	t.Helper()
	f, ok := v.(float64)
	require.Truef(t, ok, "%s is %T (%v), want a number", what, v, v)
	return f
}
