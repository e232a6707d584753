//go:build cgo

package tests

import (
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Readiness that cannot lie (issue 21 item 4), on the real binary.

// TestKilledIdleWorkerIsNotReady: kill -9 of an idle worker process: at once (no canary, which
// is set far away here) that worker is not ready in /tt-liveness, every next request is served
// 200 by the healthy worker, and the dead one comes back with a pid of its own (never the
// server's, also while it restarts).
func TestKilledIdleWorkerIsNotReady(t *testing.T) {
	t.Parallel()
	s := startServer(t, processEnv(map[string]string{
		"MOCK_DEVICES_COUNT": "2", "CANARY_INTERVAL_SECONDS": "600", "RESET_DEVICE_SLEEP_TIME": "1",
	}))
	eventually(t, 15*time.Second, "both workers ready", func() bool {
		_, ready, _ := restartCounts(t, s)
		return ready
	})
	before := workerInfo(t, s)
	pid := int(before["0"]["pid"].(float64))
	require.NotEqual(t, s.cmd.Process.Pid, pid)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))

	eventually(t, 2*time.Second, "worker 0 not ready", func() bool {
		return workerInfo(t, s)["0"]["is_ready"] == false
	})
	w0 := workerInfo(t, s)["0"]
	if p, ok := w0["pid"].(float64); ok {
		require.NotEqual(t, float64(s.cmd.Process.Pid), p, "a restarting worker shows the server's pid: %v", w0)
	}
	for i := range 4 {
		r := s.postJSON(t, "/image/generations", imageBody("12"))
		require.Equalf(t, http.StatusOK, r.Status, "request %d after the kill: %s", i, r)
	}
	eventually(t, 20*time.Second, "worker 0 back", func() bool {
		w := workerInfo(t, s)["0"]
		p, _ := w["pid"].(float64)
		return w["is_ready"] == true && p != 0 && int(p) != pid && int(p) != s.cmd.Process.Pid
	})
	require.Contains(t, workerInfo(t, s)["0"]["last_error"], "exited while idle")
}

// TestStuckOnlyWorkerHealth503: an in-process worker hung in a device call past its request's
// deadline plus the stuck grace (10 s) is "stuck", not ready, and /health answers 503 when it
// is the only worker; when the call returns it is ready again.
func TestStuckOnlyWorkerHealth503(t *testing.T) {
	t.Parallel()
	s := startServer(t, inprocessEnv(map[string]string{
		"MOCK_DEVICES_COUNT":   "1",
		"TTB_SIM_HANG_SECONDS": "14",
		// Early in the request (after the warm-up's runs), well inside its 1 s on a slow machine.
		"TTB_SIM_HANG_AFTER":                "20",
		"DEFAULT_INFERENCE_TIMEOUT_SECONDS": "1",
	}))
	require.Equal(t, http.StatusOK, s.get(t, "/health").Status)
	r := s.postJSON(t, "/image/generations", imageBody("50"))
	require.Equalf(t, http.StatusGatewayTimeout, r.Status, "%s", r)
	eventually(t, 13*time.Second, "/health 503 while the only worker is stuck", func() bool {
		return s.get(t, "/health").Status == http.StatusServiceUnavailable
	})
	w := workerInfo(t, s)["0"]
	require.Equal(t, "stuck", w["state"])
	require.Equal(t, false, w["is_ready"])
	eventually(t, 20*time.Second, "ready again when the call returns", func() bool {
		return s.get(t, "/health").Status == http.StatusOK
	})
}
