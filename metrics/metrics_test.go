package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/scheduler"
)

type fakeSource struct{}

func (fakeSource) Stats() scheduler.Stats {
	return scheduler.Stats{RejectedFull: 3, TimeoutQueued: 2, CancelledRunning: 1, DrainRate: 12.5}
}
func (fakeSource) Workers() map[string]scheduler.WorkerStatus {
	return map[string]scheduler.WorkerStatus{"0": {State: "ready", RestartCount: 2, ErrorCount: 4}, "1": {State: "failed"}}
}
func (fakeSource) QueueLen() int { return 5 }
func (fakeSource) QueueCap() int { return 64 }

func TestScrape(t *testing.T) {
	m := New()
	m.AddSource("tt-sdxl-trace", fakeSource{})
	m.Request("/image/generations", "POST", 200, 120*time.Millisecond)
	m.JobDone("tt-sdxl-trace", "0", 10*time.Millisecond, 100*time.Millisecond, "ok")
	m.Images("tt-sdxl-trace", 2, 20)
	m.Transcribed("tt-whisper", 30, 3*time.Second)
	m.ClientRequest("bench", 429)

	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body, _ := io.ReadAll(w.Body)
	for _, want := range []string{
		`tt_media_server_requests_total{method="POST",route="/image/generations",status="200"} 1`,
		`tt_media_server_queue_wait_seconds_count{model="tt-sdxl-trace"} 1`,
		`tt_media_server_device_seconds_count{model="tt-sdxl-trace",worker="0"} 1`,
		`tt_media_server_jobs_total{model="tt-sdxl-trace",outcome="ok",worker="0"} 1`,
		`tt_media_server_images_generated_total{model="tt-sdxl-trace"} 2`,
		`tt_media_server_denoising_steps_total{model="tt-sdxl-trace"} 40`,
		`tt_media_server_audio_seconds_transcribed_total{model="tt-whisper"} 30`,
		`tt_media_server_transcription_real_time_factor_sum{model="tt-whisper"} 0.1`,
		`tt_media_server_queue_depth{model="tt-sdxl-trace"} 5`,
		`tt_media_server_queue_capacity{model="tt-sdxl-trace"} 64`,
		`tt_media_server_rejections_total{model="tt-sdxl-trace",reason="queue_full"} 3`,
		`tt_media_server_cancellations_total{cause="deadline",model="tt-sdxl-trace",stage="queued"} 2`,
		`tt_media_server_cancellations_total{cause="client",model="tt-sdxl-trace",stage="running"} 1`,
		`tt_media_server_worker_state{model="tt-sdxl-trace",state="ready",worker="0"} 1`,
		`tt_media_server_worker_state{model="tt-sdxl-trace",state="failed",worker="1"} 1`,
		`tt_media_server_worker_restarts_total{model="tt-sdxl-trace",worker="0"} 2`,
		`tt_media_server_drain_rate{model="tt-sdxl-trace"} 12.5`,
		`tt_media_server_client_requests_total{class="4xx",client="bench"} 1`,
		`go_goroutines`,
	} {
		require.Contains(t, string(body), want)
	}
}

func TestTwoModels(t *testing.T) {
	m := New()
	m.AddSource("tt-sdxl-trace", fakeSource{})
	m.AddSource("tt-whisper", fakeSource{})
	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body, _ := io.ReadAll(w.Body)
	require.Contains(t, string(body), `tt_media_server_queue_depth{model="tt-sdxl-trace"} 5`)
	require.Contains(t, string(body), `tt_media_server_queue_depth{model="tt-whisper"} 5`)
}
