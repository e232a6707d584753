package tests

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSpeechDisconnectStopsDecoder: a client that goes away in the middle of a streamed speech
// answer stops the SpeechT5 decoder loop within one step — the scheduler's metric
// tt_media_server_steps_after_cancel records at most one decoder step after the cancel, and
// the runner logs "decoder loop stopped" — and the device takes the next request.
func TestSpeechDisconnectStopsDecoder(t *testing.T) {
	s := startServer(t, map[string]string{"MODEL_RUNNER": "tt-speecht5-tts", "MOCK_TTS_STEP_SECONDS": "0.03", "MOCK_WARMUP_SECONDS": "0"})
	text := strings.Repeat("This long text keeps the decoder busy for many seconds after the first audio. ", 20)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/v1/audio/speech",
		strings.NewReader(`{"model":"tts-1","voice":"alloy","response_format":"pcm","input":"`+text+`"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", bearer)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	buf := make([]byte, 4096)
	n, err := resp.Body.Read(buf) // the first audio has come: the decoder is mid-text
	require.NoError(t, err)
	require.Positive(t, n)
	cancel()
	_ = resp.Body.Close()

	count := regexp.MustCompile(`^tt_media_server_steps_after_cancel_count\{model="tt-speecht5-tts"`)
	deadline := time.Now().Add(30 * time.Second)
	for metricValue(t, s, count) < 1 { // the event: the runner let go of the cancelled request
		require.True(t, time.Now().Before(deadline), "no steps_after_cancel sample within 30 s")
		time.Sleep(20 * time.Millisecond)
	}
	require.InDelta(t, 1, metricValue(t, s, count), 0)
	within := regexp.MustCompile(`^tt_media_server_steps_after_cancel_bucket\{model="tt-speecht5-tts",worker="[^"]+",le="1"\}`)
	require.InDelta(t, 1, metricValue(t, s, within), 0, "the decoder ran more than one step after the disconnect")
	require.Contains(t, s.stderr.String(), "decoder loop stopped")

	next := s.postJSON(t, "/v1/audio/speech", `{"model":"tts-1","voice":"alloy","response_format":"pcm","input":"Next."}`)
	require.Equal(t, http.StatusOK, next.Status, "%s", next)
	require.NotEmpty(t, next.Body)
}
