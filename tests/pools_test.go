package tests

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestModelPools serves SDXL and Whisper from one process, as one Galaxy host would with
// MODEL_POOLS, and checks each family has its routes, its own queue and workers, and that
// liveness, /v1/models and /metrics show both.
func TestModelPools(t *testing.T) {
	t.Parallel()
	s := startServer(t, map[string]string{
		"MODEL_POOLS": "tt-sdxl-trace:(0),(1);tt-whisper:(2)", "MOCK_DEVICES_COUNT": "3",
	})
	imgs := generate(t, s, "/image/generations", readmeImageBody)
	require.Len(t, imgs, 1)
	requireJPEG(t, imgs[0], 1024)

	wav := wavPCM16(16000, concat(tone(16000, 1, 300, 0.3), silence(16000, 1), tone(16000, 1, 300, 0.3)))
	r := s.postJSON(t, "/audio/transcriptions", `{"file":"`+base64.StdEncoding.EncodeToString(wav)+`"}`)
	require.Equal(t, http.StatusOK, r.Status, r.String())
	require.Contains(t, r.obj(t)["text"], "simulated")

	require.Equal(t, http.StatusNotFound, s.postJSON(t, "/cnn/search-image", `{"prompt":"x"}`).Status)

	code, live := s.liveness(t)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "tt-sdxl-trace,tt-whisper", live["runner_in_use"])
	require.EqualValues(t, 128, live["max_queue_size"], "two queues of MAX_QUEUE_SIZE")
	pools, ok := live["pools"].(map[string]any)
	require.True(t, ok, "liveness lists the pools: %v", live)
	whisper := pools["tt-whisper"].(map[string]any)
	require.Equal(t, "audio", whisper["service"])
	require.Len(t, whisper["worker_info"], 1)
	require.Len(t, pools["tt-sdxl-trace"].(map[string]any)["worker_info"], 2)
	require.Len(t, live["worker_info"], 3)

	models := do(t, http.MethodGet, s.URL+"/v1/models", nil, "Authorization", bearer)
	require.Equal(t, http.StatusOK, models.Status)
	for _, id := range []string{"tt-sdxl-trace", "tt-whisper", "whisper-1", "dall-e-3"} {
		require.Contains(t, string(models.Body), `"`+id+`"`)
	}
	metrics := s.get(t, "/metrics")
	for _, want := range []string{`tt_media_server_queue_capacity{model="tt-sdxl-trace"} 64`, `tt_media_server_queue_capacity{model="tt-whisper"} 64`} {
		require.True(t, strings.Contains(string(metrics.Body), want), "metrics lack %s", want)
	}

	// Resetting a worker of one pool leaves the other pool alone.
	rr := do(t, http.MethodPost, s.URL+"/tt-reset-device?device_id=2", nil, "Authorization", bearer)
	require.Equal(t, http.StatusOK, rr.Status, rr.String())
}
