package server

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/internal/bombwebm"
	"github.com/tenstorrent/tt-media-server-go/runners"
)

// TestAudioMemoryBudget: an upload whose decode alone needs more than AUDIO_MEMORY_BUDGET_BYTES
// is 413 naming it (both dialects); with the budget taken by others it waits, then 429 with
// Retry-After; an admitted upload holds its samples' bytes until it is answered.
func TestAudioMemoryBudget(t *testing.T) {
	bomb := bombwebm.OpusBlocks(4000) // 10 s: about 4.6 MiB to decode
	var heldDuringRun int64
	var srv *Server
	f := &fakeSched{ready: true, submit: func(_ context.Context, req runners.Request, _ func(runners.Chunk) error) (runners.Result, error) {
		srv.audioMem.mu.Lock()
		heldDuringRun = srv.audioMem.used
		srv.audioMem.mu.Unlock()
		return &runners.TranscriptionResult{Text: "x", Task: "transcribe", Language: "english", Duration: req.(*runners.AudioRequest).Duration}, nil
	}}
	settings := testSettings()
	settings.AudioMemoryBudget = 1 << 20
	srv = New(Deps{Settings: settings, Service: runners.ServiceAudio, Sched: f})
	h := srv.Handler()
	body, _ := json.Marshal(map[string]any{"file": bomb})
	w := do(h, "POST", "/audio/transcriptions", "application/json", "Bearer k", body)
	require.Equal(t, 413, w.Code, w.Body.String())
	require.Contains(t, w.Body.String(), "AUDIO_MEMORY_BUDGET_BYTES")
	ctype, form := multipartBody(t, bomb, "model", "whisper-1")
	w = do(h, "POST", "/v1/audio/transcriptions", ctype, "Bearer k", form)
	require.Equal(t, 413, w.Code, w.Body.String())
	require.Contains(t, w.Body.String(), "AUDIO_MEMORY_BUDGET_BYTES")
	require.Zero(t, srv.audioMem.used, "a refused upload holds nothing")

	settings = testSettings()
	settings.AudioMemoryBudget = 64 << 20
	srv = New(Deps{Settings: settings, Service: runners.ServiceAudio, Sched: f})
	srv.audioMem.wait = 50 * time.Millisecond
	h = srv.Handler()
	w = do(h, "POST", "/audio/transcriptions", "application/json", "Bearer k", body)
	require.Equal(t, 200, w.Code, w.Body.String())
	require.Equal(t, int64(4*16000*10+16), heldDuringRun, "the 10 s at 16 kHz and the one segment it keeps, held while it runs")
	require.Zero(t, srv.audioMem.used, "released once answered")

	release, err := srv.audioMem.acquire(context.Background(), 62<<20) // others' decodes in flight
	require.NoError(t, err)
	w = do(h, "POST", "/audio/transcriptions", "application/json", "Bearer k", body)
	require.Equal(t, 429, w.Code, w.Body.String())
	require.NotEmpty(t, w.Header().Get("Retry-After"))
	require.Contains(t, w.Body.String(), "AUDIO_MEMORY_BUDGET_BYTES")
	w = do(h, "POST", "/v1/audio/transcriptions", ctype, "Bearer k", form)
	require.Equal(t, 429, w.Code, w.Body.String())
	release()
	require.Zero(t, srv.audioMem.used)
	w = do(h, "POST", "/v1/audio/transcriptions", ctype, "Bearer k", form)
	require.Equal(t, 200, w.Code, w.Body.String())
}
