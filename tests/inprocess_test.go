//go:build cgo

package tests

import (
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// In-process isolation (WORKER_ISOLATION=inprocess, the default of a mock build): the server
// opens one parent mesh over every device group on the C simulator, and each worker's runner
// spends its device time on its group's submesh through the C ABI — so the simulator's fault
// injection (TTB_SIM_*) reaches in-process workers too.

// inprocessEnv is an in-process SDXL server with overrides.
func inprocessEnv(overrides map[string]string) map[string]string {
	env := map[string]string{"MODEL_RUNNER": "tt-sdxl-trace", "WORKER_ISOLATION": "inprocess"}
	for k, v := range overrides {
		env[k] = v
	}
	return env
}

// TestInProcessWorkersOnTheSimulator: the workers' warm-up runs on the simulator (an injected
// failure on every program run fails them with the simulator's message).
func TestInProcessWorkersOnTheSimulator(t *testing.T) {
	t.Parallel()
	s := launch(t, inprocessEnv(map[string]string{"TTB_SIM_FAIL_PROB": "1", "MAX_WORKER_RESTART_COUNT": "0"}))
	var info map[string]map[string]any
	eventually(t, 15*time.Second, "both workers failed", func() bool {
		if r, err := tryDo(http.MethodGet, s.URL+"/tt-liveness", nil); err != nil || r.Status == 0 {
			return false
		}
		info = workerInfo(t, s)
		return info["0"]["state"] == "failed" && info["1"]["state"] == "failed"
	})
	for _, id := range []string{"0", "1"} {
		lastErr, _ := info[id]["last_error"].(string)
		require.Contains(t, lastErr, "injected failure in sdxl-unet.forward (TTB_SIM_FAIL_PROB=1)")
		require.Contains(t, lastErr, "compile run of sdxl-unet")
	}
	require.Contains(t, s.stderr.String(), `msg="in-process workers share one parent mesh" mesh=2x1 chips=(0,1)`)
	s.sigterm(t)
	require.Equal(t, 0, s.waitExit(t, 10*time.Second))
}

// TestInProcessDeviceLost: a device lost mid-request fails that request with 503 and the
// other in-process worker keeps serving; the lost one cannot come back in this process (a
// lost device poisons its process, as on TT-Metal) and ends failed.
func TestInProcessDeviceLost(t *testing.T) {
	t.Parallel()
	// Each submesh counts its own executions: warm-up runs 4, a 50-step request 51; the 40th
	// is lost, while a 12-step request (executions 5-17) stays clear of it.
	s := startServer(t, inprocessEnv(map[string]string{"TTB_SIM_DEVICE_LOST": "40", "MAX_WORKER_RESTART_COUNT": "1"}))
	r := s.postJSON(t, "/image/generations", imageBody("50"))
	require.Equalf(t, http.StatusServiceUnavailable, r.Status, "%s", r)
	require.Contains(t, string(r.Body), "injected device loss on run 40")

	generate(t, s, "/image/generations", imageBody("12")) // the other worker

	var lost string
	eventually(t, 15*time.Second, "the lost worker is failed", func() bool {
		for id, w := range workerInfo(t, s) {
			if w["state"] == "failed" {
				lost = id
				return true
			}
		}
		return false
	})
	lastErr, _ := workerInfo(t, s)[lost]["last_error"].(string)
	require.Contains(t, lastErr, "a device was lost earlier in this process")
	generate(t, s, "/image/generations", imageBody("12"))
}

// TestInProcessParentDoesNotFit: a parent mesh larger than the visible chips is a clear
// start-up error.
func TestInProcessParentDoesNotFit(t *testing.T) {
	t.Parallel()
	s := launch(t, inprocessEnv(map[string]string{"MOCK_DEVICES_COUNT": "3", "TT_VISIBLE_DEVICES": "0,2"}))
	require.Equal(t, 1, s.waitExit(t, 15*time.Second))
	out := s.stderr.String()
	require.Contains(t, out, "WORKER_ISOLATION=inprocess: open the parent mesh 3x1 over chips (0,1,2)")
	require.Contains(t, out, "mesh 3x1 needs 3 chips but only 2 are visible (MOCK_DEVICES_COUNT=3, TT_VISIBLE_DEVICES=0,2)")
}

// TestLivenessShowsWorkerProcesses: with process isolation, /tt-liveness shows each worker's
// own child process id, not the server's.
func TestLivenessShowsWorkerProcesses(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/<pid>/cmdline")
	}
	s := startServer(t, processEnv(map[string]string{"MOCK_DEVICES_COUNT": "2"}))
	eventually(t, 15*time.Second, "both workers ready", func() bool {
		_, ready, _ := restartCounts(t, s)
		return ready
	})
	pids := map[int]string{}
	for id, w := range workerInfo(t, s) {
		f, ok := w["pid"].(float64)
		require.Truef(t, ok, "worker %s pid is %T", id, w["pid"])
		pid := int(f)
		require.NotEqual(t, s.cmd.Process.Pid, pid, "worker %s shows the server's pid", id)
		require.NotContains(t, pids, pid, "two workers with one pid")
		pids[pid] = id
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		require.NoError(t, err, "worker %s: pid %d is not a live process", id, pid)
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		require.Contains(t, args, "device-worker")
		require.Contains(t, args, id, "the child serves worker %s", id)
	}
	require.Len(t, pids, 2)
}
