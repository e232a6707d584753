package tests

import (
	"bytes"
	"fmt"
	"image/color"
	"image/jpeg"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/tests/e2e"
)

// Restarts that succeed start a new count of failures, and failed workers come back with a
// reset (issue 30 item 3): on the real binary, with real kills of real worker processes — the
// Go device-worker child (WORKER_ISOLATION=process) and the Python worker (DEVICE_BACKEND=python).

// workerRoads are the two roads whose workers are processes of their own.
var workerRoads = []string{"process", "python"}

// roadEnv is a one-worker CNN server on road, its device resets appended to resetLog.
func roadEnv(t *testing.T, road, resetLog string, extra map[string]string) map[string]string {
	env := map[string]string{"MODEL_RUNNER": "tt-xla-resnet", "DEVICE_IDS": "(0)", "RESET_DEVICE_SLEEP_TIME": "0.05",
		"RESET_DEVICE_COMMAND": `echo "reset $TT_VISIBLE_DEVICES" >> ` + resetLog}
	for k, v := range extra {
		env[k] = v
	}
	return isolationEnv(t, road, env)
}

// workerPID is worker id's process id, once it is ready in a process other than not; 0 while it
// is not.
func workerPID(t *testing.T, s *server, id string, not int) int {
	t.Helper()
	if _, err := tryDo(http.MethodGet, s.URL+"/tt-liveness", nil); err != nil {
		return 0
	}
	w := workerInfo(t, s)[id]
	if w["state"] != "ready" || w["pid"] == nil {
		return 0
	}
	pid := int(jsonNumber(t, w["pid"], "pid"))
	if pid == not {
		return 0
	}
	return pid
}

// classifyOnce sends one CNN request and requires a classification.
func classifyOnce(t *testing.T, s *server) {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, jpeg.Encode(&buf, drawPicture(64, 48, color.RGBA{R: 30, G: 160, B: 90, A: 255}), nil))
	r := s.postMultipart(t, "/v1"+cnnPath, file("x.jpg", "image/jpeg", buf.Bytes()), field("top_k", "3"))
	require.Equalf(t, http.StatusOK, r.Status, "%s", r)
	require.NotEmpty(t, r.obj(t)["image_data"])
}

func resetCount(t *testing.T, resetLog string) int {
	t.Helper()
	data, err := os.ReadFile(resetLog)
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(t, err)
	return strings.Count(string(data), "reset 0\n")
}

// TestKilledIdleWorkerComesBack: a healthy idle worker SIGKILLed ten times (twice
// MAX_WORKER_RESTART_COUNT=5: the OOM killer, an operator's tooling) is back, in a new
// process, after every kill: each restart that warms up starts a new count of failures.
func TestKilledIdleWorkerComesBack(t *testing.T) {
	t.Parallel()
	for _, road := range workerRoads {
		t.Run(road, func(t *testing.T) {
			t.Parallel()
			resetLog := filepath.Join(t.TempDir(), "reset.log")
			// HEAD's canary monitor off: the test is about kills alone. (A probe caught by a kill
			// once added one more error; a crash now counts once whatever it took down:
			// scheduler TestErrorCountRule.)
			s := startServer(t, roadEnv(t, road, resetLog, map[string]string{"MAX_WORKER_RESTART_COUNT": "5", "CANARY_ENABLED": "false"}))
			pid := 0
			for i := range 10 {
				eventually(t, e2e.WorkerStartLimit, fmt.Sprintf("worker ready in a new process before kill %d", i+1), func() bool {
					pid = workerPID(t, s, "0", pid)
					return pid != 0
				})
				require.EqualValues(t, i, workerInfo(t, s)["0"]["restart_count"])
				require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
				eventually(t, e2e.WorkerStartLimit, fmt.Sprintf("restart %d counted", i+1), func() bool {
					if _, err := tryDo(http.MethodGet, s.URL+"/tt-liveness", nil); err != nil {
						return false
					}
					w := workerInfo(t, s)["0"]
					require.NotEqual(t, "failed", w["state"], "kill %d: %v", i+1, w)
					return jsonNumber(t, w["restart_count"], "restart_count") == float64(i+1)
				})
			}
			eventually(t, e2e.WorkerStartLimit, "worker ready after the 10th kill", func() bool {
				pid = workerPID(t, s, "0", pid)
				return pid != 0
			})
			w := workerInfo(t, s)["0"]
			require.EqualValues(t, 10, w["restart_count"])
			require.EqualValues(t, 10, w["error_count"])
			require.Equal(t, 10, resetCount(t, resetLog), "one device reset per restart")
			classifyOnce(t, s)
			s.stopAndCheck(t)
		})
	}
}

// TestFailedWorkerRevivedByReset: a worker driven to failed (MAX_WORKER_RESTART_COUNT=0, its
// process killed: no restart allowed) leaves the server 503; /tt-deep-reset and
// /tt-reset-device revive it (device reset, new process, warm-up) and say so per worker.
func TestFailedWorkerRevivedByReset(t *testing.T) {
	t.Parallel()
	for _, road := range workerRoads {
		for _, route := range []string{"/tt-deep-reset", "/tt-reset-device?device_id=0"} {
			t.Run(road+" "+route, func(t *testing.T) {
				t.Parallel()
				resetLog := filepath.Join(t.TempDir(), "reset.log")
				s := startServer(t, roadEnv(t, road, resetLog, map[string]string{"MAX_WORKER_RESTART_COUNT": "0"}))
				pid := 0
				eventually(t, e2e.WorkerStartLimit, "worker ready", func() bool {
					pid = workerPID(t, s, "0", 0)
					return pid != 0
				})
				require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
				waitFailed(t, s, "0")
				status, _ := s.liveness(t)
				require.Equal(t, http.StatusServiceUnavailable, status, "every worker failed: not ready")
				require.Zero(t, resetCount(t, resetLog), "no restart was allowed")

				r := do(t, http.MethodPost, s.URL+route, nil, "Authorization", bearer)
				require.Equalf(t, http.StatusOK, r.Status, "%s", r)
				workers, _ := r.obj(t)["workers"].(map[string]any)
				w0, _ := workers["0"].(map[string]any)
				require.Equalf(t, "failed", w0["state"], "%s", r)
				require.Equalf(t, "revived", w0["action"], "%s", r)

				eventually(t, e2e.WorkerStartLimit, "revived worker ready in a new process", func() bool {
					return workerPID(t, s, "0", pid) != 0
				})
				status, _ = s.liveness(t)
				require.Equal(t, http.StatusOK, status)
				require.EqualValues(t, 1, workerInfo(t, s)["0"]["restart_count"])
				require.Equal(t, 1, resetCount(t, resetLog), "the revival reset the device first")
				classifyOnce(t, s)
				s.stopAndCheck(t)
			})
		}
	}
}
