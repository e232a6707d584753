package tests

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestQueueAndDeviceTimeHeaders: answers say how much of their latency was queue wait and how
// much device time, and the access log line says the same.
func TestQueueAndDeviceTimeHeaders(t *testing.T) {
	t.Parallel()
	s := startServer(t, map[string]string{"MODEL_RUNNER": "tt-sdxl-trace", "MOCK_STEP_SECONDS": "0.05", "DEVICE_IDS": "(0)"})
	r := s.postJSON(t, "/image/generations", `{"prompt":"a","guidance_scale":5,"num_inference_steps":20,"number_of_images":2,"seed":1}`)
	require.Equal(t, http.StatusOK, r.Status, r.String())
	device, err := strconv.Atoi(r.Header.Get("X-Device-Time-Ms"))
	require.NoError(t, err, "X-Device-Time-Ms missing")
	wait, err := strconv.Atoi(r.Header.Get("X-Queue-Time-Ms"))
	require.NoError(t, err, "X-Queue-Time-Ms missing")
	// Two images of 20 steps at 50 ms each on one worker: ≥ 2 s of device time, and the second
	// image waited for the first (about 1 s; its job can reach the queue late on a loaded
	// machine, so the bound is half of that: with 10 ms steps, 55 ms was seen).
	require.GreaterOrEqual(t, device, 2000)
	require.GreaterOrEqual(t, wait, 500)
	require.Eventually(t, func() bool {
		return strings.Contains(s.stderr.String(), "jobs=2 queue_ms=")
	}, 5e9, 1e7, "the access line carries the split")
}
