package tests

import (
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestVideoPoolBesideImages serves an image pool and a video pool from one process
// (MODEL_POOLS): while a video job holds its device, image requests are answered by the image
// pool's own device; cancelling the running video job frees its device within one denoising
// step, which the metric tt_media_server_steps_after_cancel shows, and the next video job
// takes the device.
func TestVideoPoolBesideImages(t *testing.T) {
	needFFmpeg(t)
	dir := t.TempDir()
	s := startServer(t, videoServerEnv(dir, map[string]string{
		"MODEL_POOLS": "tt-sdxl-trace:(0);tt-wan2.2:(1)", "MOCK_DEVICES_COUNT": "2", "MOCK_STEP_SECONDS": "0.2",
	}))
	long := s.submitVideo(t, `{"prompt":"a long clip","num_inference_steps":50}`)
	s.waitJob(t, long, "a step done", func(j map[string]any) bool {
		p, _ := j["progress"].(float64)
		return j["status"] == "in_progress" && p > 0
	})

	// 12 image steps (2.4 s) against the video's 50 (10 s): the image pool does not wait for it.
	imgs := generate(t, s, "/image/generations", `{"prompt":"Volcano on a beach","num_inference_steps":12,"seed":1}`)
	require.Len(t, imgs, 1)
	requireJPEG(t, imgs[0], 1024)
	j := s.job(t, long)
	require.Equal(t, "in_progress", j["status"], "the image was answered while the video job still ran: %v", j)

	code, live := s.liveness(t)
	require.Equal(t, http.StatusOK, code)
	pools := live["pools"].(map[string]any)
	require.Equal(t, "video", pools["tt-wan2.2"].(map[string]any)["service"])
	require.Equal(t, "image", pools["tt-sdxl-trace"].(map[string]any)["service"])

	c := s.postJSON(t, "/v1/videos/generations/"+long+"/cancel", "")
	require.Equal(t, http.StatusOK, c.Status, c.String())
	count := regexp.MustCompile(`^tt_media_server_steps_after_cancel_count\{model="tt-wan2.2"`)
	deadline := time.Now().Add(30 * time.Second)
	for metricValue(t, s, count) < 1 { // the event: the runner let go of the cancelled job
		require.True(t, time.Now().Before(deadline), "no steps_after_cancel sample within 30 s")
		time.Sleep(20 * time.Millisecond)
	}
	require.InDelta(t, 1, metricValue(t, s, count), 0)
	within := regexp.MustCompile(`^tt_media_server_steps_after_cancel_bucket\{model="tt-wan2.2",worker="[^"]+",le="1"\}`)
	require.InDelta(t, 1, metricValue(t, s, within), 0, "the device ran more than one step after the cancel")
	require.Equal(t, "cancelled", s.job(t, long)["status"])

	next := s.submitVideo(t, `{"prompt":"the next clip","num_inference_steps":4}`)
	s.waitJob(t, next, "the next job completing on the freed device", status("completed"))
	require.Zero(t, metricValue(t, s, regexp.MustCompile(`^tt_media_server_steps_after_cancel_count\{model="tt-sdxl-trace"`)))
}
