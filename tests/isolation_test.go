//go:build cgo

package tests

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Worker-process isolation (WORKER_ISOLATION=process; needs cgo for the simulator): each device group's runner runs in a
// "tt-media-server device-worker" child that drives the C simulator through cgo, with the
// simulator's fault injection (TTB_SIM_*) inherited from the server's environment.
//
// Execution counts: an SDXL worker's warm-up runs 4 programs (UNet and VAE compile runs, one
// step, one decode); a request of S steps runs S+1 more.

// processEnv is a process-isolated SDXL server with overrides.
func processEnv(overrides map[string]string) map[string]string {
	env := map[string]string{"MODEL_RUNNER": "tt-sdxl-trace", "WORKER_ISOLATION": "process"}
	for k, v := range overrides {
		env[k] = v
	}
	return env
}

func imageBody(steps string) string {
	return `{"prompt":"Volcano on a beach","guidance_scale":7.0,"seed":3,"num_inference_steps":` + steps + `}`
}

// workerInfo returns /tt-liveness's worker_info.
func workerInfo(t *testing.T, s *server) map[string]map[string]any {
	t.Helper()
	r := s.get(t, "/tt-liveness")
	body := r.obj(t)
	info, ok := body["worker_info"].(map[string]any)
	require.Truef(t, ok, "worker_info is %T in %s", body["worker_info"], r)
	out := map[string]map[string]any{}
	for id, v := range info {
		w, ok := v.(map[string]any)
		require.True(t, ok)
		out[id] = w
	}
	return out
}

// TestProcessIsolationSameImages: the same request gets the same picture from a worker process
// (on the simulator) as from an in-process runner.
func TestProcessIsolationSameImages(t *testing.T) {
	t.Parallel()
	proc := startServer(t, processEnv(map[string]string{"MOCK_DEVICES_COUNT": "1"}))
	inproc := startServer(t, map[string]string{"MODEL_RUNNER": "tt-sdxl-trace", "MOCK_DEVICES_COUNT": "1", "WORKER_ISOLATION": "inprocess"})
	a := generate(t, proc, "/image/generations", imageBody("12"))
	b := generate(t, inproc, "/image/generations", imageBody("12"))
	require.True(t, bytes.Equal(a[0], b[0]), "process and in-process images differ")
	require.Contains(t, proc.stderr.String(), `msg="worker process ready" worker=0`)
}

// TestProcessIsolationAbort: a worker that abort()s mid-request fails that request with 503;
// the other worker keeps serving; the crashed one comes back.
func TestProcessIsolationAbort(t *testing.T) {
	t.Parallel()
	// The 40th execution aborts: the 36th step of a 50-step request on a fresh worker, while
	// two 12-step requests (executions 5-30) fit on either worker.
	s := startServer(t, processEnv(map[string]string{"MOCK_DEVICES_COUNT": "2", "TTB_SIM_ABORT": "40"}))
	eventually(t, 15*time.Second, "both workers ready", func() bool {
		_, ready, _ := restartCounts(t, s)
		return ready
	})
	r := s.postJSON(t, "/image/generations", imageBody("50"))
	require.Equalf(t, http.StatusServiceUnavailable, r.Status, "%s", r)
	require.Contains(t, string(r.Body), "device lost")
	require.Contains(t, string(r.Body), "TTB_SIM_ABORT=40")

	generate(t, s, "/image/generations", imageBody("12")) // the other worker

	eventually(t, 15*time.Second, "the crashed worker is back", func() bool {
		counts, ready, _ := restartCounts(t, s)
		return ready && counts["0"]+counts["1"] == 1
	})
	generate(t, s, "/image/generations", imageBody("12"))
}

// TestProcessIsolationHang: a worker stuck in a device call is killed at the deadline plus the
// grace; the client gets 504 at its deadline; RESET_DEVICE_COMMAND runs with the group's chips;
// the worker comes back.
func TestProcessIsolationHang(t *testing.T) {
	t.Parallel()
	resetLog := filepath.Join(t.TempDir(), "reset.log")
	s := startServer(t, processEnv(map[string]string{
		"MOCK_DEVICES_COUNT":   "2",
		"DEVICE_MESH_SHAPE":    "(1,2)", // one worker on chips 0 and 1
		"TTB_SIM_HANG_SECONDS": "30",
		// The hang comes early in the request, well inside its 1 s on a slow machine, and after
		// the warm-up plus the 12 steps of the last request (a fresh process counts from 0).
		"TTB_SIM_HANG_AFTER":                "20",
		"DEFAULT_INFERENCE_TIMEOUT_SECONDS": "1",
		"RESET_DEVICE_COMMAND":              `echo "reset $TT_VISIBLE_DEVICES" >> ` + resetLog,
	}))
	start := time.Now()
	r := s.postJSON(t, "/image/generations", imageBody("50"))
	require.Equalf(t, http.StatusGatewayTimeout, r.Status, "%s", r)
	require.Less(t, time.Since(start), 3*time.Second, "504 at the 1 s deadline, not at the kill")

	eventually(t, 15*time.Second, "reset ran and the worker is back", func() bool {
		counts, ready, _ := restartCounts(t, s)
		return ready && counts["0,1"] == 1
	})
	data, err := os.ReadFile(resetLog)
	require.NoError(t, err)
	require.Equal(t, "reset 0,1\n", string(data))
	w := workerInfo(t, s)["0,1"]
	require.Contains(t, w["last_error"], "did not answer after the job's deadline")
	require.Contains(t, s.stderr.String(), "signal: killed")

	generate(t, s, "/image/generations", imageBody("12"))
}

// TestProcessIsolationTraceOutOfMemory: a trace region too small for the UNet's trace fails
// the worker's warm-up with the simulator's out-of-memory message, visible in /tt-liveness.
func TestProcessIsolationTraceOutOfMemory(t *testing.T) {
	t.Parallel()
	s := launch(t, processEnv(map[string]string{
		"MOCK_DEVICES_COUNT": "1", "TRACE_REGION_SIZE": "1000000", "MAX_WORKER_RESTART_COUNT": "0",
	}))
	var w map[string]any
	eventually(t, 15*time.Second, "worker failed", func() bool {
		r, err := tryDo(http.MethodGet, s.URL+"/tt-liveness", nil)
		if err != nil || r.Status == 0 {
			return false
		}
		w = workerInfo(t, s)["0"]
		return w["state"] == "failed"
	})
	lastErr, _ := w["last_error"].(string)
	require.Contains(t, lastErr, "capture trace of sdxl-unet (trace_region_size 1000000)")
	require.Contains(t, lastErr, "out of memory")
	require.Contains(t, lastErr, "trace region")
	require.True(t, strings.Contains(s.stderr.String(), "out of memory"), "the error is logged")
	s.sigterm(t)
	require.Equal(t, 0, s.waitExit(t, 10*time.Second))
}
