package tests

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// restartCounts returns each worker's restart_count and whether every worker is ready.
func restartCounts(t *testing.T, s *server) (counts map[string]float64, allReady bool, status int) {
	t.Helper()
	status, body := s.liveness(t)
	info, ok := body["worker_info"].(map[string]any)
	require.Truef(t, ok, "worker_info is %T", body["worker_info"])
	counts = make(map[string]float64, len(info))
	allReady = true
	for id, v := range info {
		w, ok := v.(map[string]any)
		require.True(t, ok)
		counts[id] = jsonNumber(t, w["restart_count"], "restart_count")
		if w["state"] != "ready" || w["is_ready"] != true {
			allReady = false
		}
	}
	return counts, allReady, status
}

// eventually polls cond every 20 ms until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for: %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestLivenessAndMaintenance(t *testing.T) {
	t.Parallel()
	s := startServer(t, map[string]string{"MODEL_RUNNER": "tt-sdxl-trace", "MOCK_DEVICES_COUNT": "2", "MAX_QUEUE_SIZE": "7"})

	t.Run("liveness body", func(t *testing.T) {
		// model_ready turns true with the first warm worker; wait for both.
		eventually(t, 10*time.Second, "both workers ready", func() bool {
			_, ready, _ := restartCounts(t, s)
			return ready
		})
		code, body := s.liveness(t)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, "alive", body["status"])
		require.Equal(t, true, body["model_ready"])
		require.Equal(t, float64(0), jsonNumber(t, body["queue_size"], "queue_size"))
		require.Equal(t, float64(7), jsonNumber(t, body["max_queue_size"], "max_queue_size"))
		require.Equal(t, []any{float64(1), float64(1)}, body["device_mesh_shape"])
		require.Equal(t, "tt-sdxl-trace", body["runner_in_use"])
		info, ok := body["worker_info"].(map[string]any)
		require.Truef(t, ok, "worker_info is %T", body["worker_info"])
		require.Len(t, info, 2)
		for _, id := range []string{"0", "1"} {
			w, ok := info[id].(map[string]any)
			require.Truef(t, ok, "worker_info has no worker %q: %v", id, info)
			require.Equal(t, true, w["is_alive"])
			require.Equal(t, true, w["is_ready"])
			require.Contains(t, w, "restart_count")
			require.Contains(t, w, "error_count")
		}
	})

	t.Run("health", func(t *testing.T) {
		r := s.get(t, "/health")
		require.Equalf(t, http.StatusOK, r.Status, "%s", r)
	})

	t.Run("unknown route is 404", func(t *testing.T) {
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			r := do(t, m, s.URL+"/no/such/route", nil, "Authorization", bearer)
			require.Equalf(t, http.StatusNotFound, r.Status, "%s", r)
			require.JSONEq(t, `{"detail":"Not Found"}`, string(r.Body))
		}
	})

	t.Run("GET on a POST route is 405", func(t *testing.T) {
		r := s.get(t, "/image/generations")
		require.Equalf(t, http.StatusMethodNotAllowed, r.Status, "%s", r)
		require.NotEmpty(t, r.obj(t)["detail"])
	})

	t.Run("reset device", func(t *testing.T) {
		r := do(t, http.MethodPost, s.URL+"/tt-reset-device?device_id=0", nil)
		require.Equalf(t, http.StatusUnauthorized, r.Status, "without credentials: %s", r)

		it := validationItem(t, do(t, http.MethodPost, s.URL+"/tt-reset-device", nil, "Authorization", bearer))
		require.Equal(t, "missing", it["type"])
		require.Equal(t, []any{"query", "device_id"}, it["loc"])

		r = do(t, http.MethodPost, s.URL+"/tt-reset-device?device_id=7", nil, "Authorization", bearer)
		require.Equalf(t, http.StatusNotFound, r.Status, "unknown device: %s", r)
		require.NotEmpty(t, r.obj(t)["detail"])

		before, _, _ := restartCounts(t, s)
		r = do(t, http.MethodPost, s.URL+"/tt-reset-device?device_id=0", nil, "Authorization", bearer)
		require.Equalf(t, http.StatusOK, r.Status, "%s", r)
		require.Equal(t, "Reset of device 0 scheduled", r.obj(t)["status"])
		require.Equal(t, map[string]any{"0": map[string]any{"state": "ready", "action": "restart",
			"detail": "restarts after its current batch: device reset, new runner, warm-up"}}, r.obj(t)["workers"])
		eventually(t, 10*time.Second, "worker 0 restarted and ready", func() bool {
			c, ready, status := restartCounts(t, s)
			return c["0"] >= before["0"]+1 && ready && status == http.StatusOK
		})
		after, _, _ := restartCounts(t, s)
		require.Equal(t, before["1"], after["1"], "worker 1 must not restart")
	})

	t.Run("deep reset", func(t *testing.T) {
		before, _, _ := restartCounts(t, s)
		r := do(t, http.MethodPost, s.URL+"/tt-deep-reset", nil, "Authorization", bearer)
		require.Equalf(t, http.StatusOK, r.Status, "%s", r)
		require.Equal(t, "Reset scheduled", r.obj(t)["status"])
		workers, _ := r.obj(t)["workers"].(map[string]any)
		require.Lenf(t, workers, len(before), "one entry per worker: %s", r)
		for id := range before {
			w, _ := workers[id].(map[string]any)
			require.Equalf(t, "restart", w["action"], "worker %s: %s", id, r)
		}
		eventually(t, 10*time.Second, "every worker restarted and ready", func() bool {
			c, ready, status := restartCounts(t, s)
			for id, n := range before {
				if c[id] < n+1 {
					return false
				}
			}
			return ready && status == http.StatusOK
		})
		imgs := generate(t, s, "/image/generations", smallImageBody)
		require.Len(t, imgs, 1)
		requireJPEG(t, imgs[0], 1024)
	})
}

func TestWarmupAnswers503(t *testing.T) {
	t.Parallel()
	// A warm-up long next to a loaded machine's start-up and request times: the 503 checks
	// below must all fall inside it.
	s := launch(t, map[string]string{"MODEL_RUNNER": "tt-sdxl-trace", "MOCK_WARMUP_SECONDS": "5", "MOCK_DEVICES_COUNT": "1"})
	t.Cleanup(func() { s.stopAndCheck(t) })

	// Poll until the port answers anything; the first answer must be the warming-up 503.
	var first reply
	eventually(t, 5*time.Second, "the port to open", func() bool {
		require.False(t, s.exited(), "server exited: %s", s.stderr.String())
		r, err := tryDo(http.MethodGet, s.URL+"/tt-liveness", nil)
		if err != nil {
			return false
		}
		first = r
		return true
	})
	start := time.Now()
	require.Equalf(t, http.StatusServiceUnavailable, first.Status, "first liveness answer: %s", first)
	requireRetryAfter(t, first)
	body := first.obj(t)
	require.Equal(t, "alive", body["status"])
	require.Equal(t, false, body["model_ready"])

	r := s.postJSON(t, "/image/generations", smallImageBody)
	require.Equalf(t, http.StatusServiceUnavailable, r.Status, "image request while warming up: %s", r)
	requireRetryAfter(t, r)
	require.NotEmpty(t, r.obj(t)["detail"])

	r = s.get(t, "/health")
	require.Equalf(t, http.StatusServiceUnavailable, r.Status, "health while warming up: %s", r)
	require.Less(t, time.Since(start), 3*time.Second, "the 503 checks took too long to be inside the warm-up")

	s.waitReady(t, 10*time.Second)
	imgs := generate(t, s, "/image/generations", smallImageBody)
	require.Len(t, imgs, 1)
}

// requireRetryAfter checks a Retry-After header in integer seconds >= 1 and returns it.
func requireRetryAfter(t *testing.T, r reply) int {
	t.Helper()
	v := r.Header.Get("Retry-After")
	require.NotEmptyf(t, v, "no Retry-After header: %s", r)
	n, err := strconv.Atoi(v)
	require.NoErrorf(t, err, "Retry-After %q is not integer seconds", v)
	require.GreaterOrEqual(t, n, 1)
	return n
}
