package tests

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Shutdown (issue 21 item 6): a request still running when SHUTDOWN_GRACE_SECONDS ends is
// answered 503 "shutting down" with Retry-After (the client may retry elsewhere), not 499 as if
// it had gone away; inside a running NDJSON stream the closing line says the same.

func TestShutdownGraceEndAnswers503(t *testing.T) {
	t.Parallel()
	s := launch(t, map[string]string{
		"MODEL_RUNNER": "tt-sdxl-trace", "MOCK_STEP_SECONDS": "0.2", "MOCK_DEVICES_COUNT": "1",
		"SHUTDOWN_GRACE_SECONDS": "1",
	})
	s.waitReady(t, 15*time.Second)
	inflight := make(chan reply, 1)
	go func() {
		r, err := tryDo(http.MethodPost, s.URL+"/image/generations",
			[]byte(`{"prompt":"Volcano on a beach","guidance_scale":7.0,"seed":4,"num_inference_steps":40}`), // ~8 s
			"Content-Type", "application/json", "Authorization", bearer)
		if err != nil {
			r = reply{Status: -1, Body: []byte(err.Error())}
		}
		inflight <- r
	}()
	s.waitWorking(t) // the ~8 s job is on the device
	s.sigterm(t)
	r := <-inflight
	require.Equalf(t, http.StatusServiceUnavailable, r.Status, "%s", r)
	require.Contains(t, string(r.Body), "shutting down")
	require.NotEmpty(t, r.Header.Get("Retry-After"))
	require.Equal(t, 0, s.waitExit(t, 10*time.Second))
}

func TestShutdownGraceEndInStream(t *testing.T) {
	t.Parallel()
	s := launch(t, map[string]string{
		"MODEL_RUNNER": "tt-whisper", "MOCK_AUDIO_SECONDS_PER_SECOND": "0.25", "MOCK_DEVICES_COUNT": "1",
		"SHUTDOWN_GRACE_SECONDS": "1", "ALLOW_AUDIO_FANOUT": "false",
	})
	s.waitReady(t, 15*time.Second)
	// Eight tones 4 s apart (32 s, ~8 s of simulated device time): a chunk per speech segment.
	var parts [][]int16
	for i := range 8 {
		parts = append(parts, tone(16000, 1, 440+float64(60*i), 0.5), silence(16000, 3))
	}
	ct, body := multipartBody(t, file("x.wav", "audio/wav", wavPCM16(16000, concat(parts...))),
		field("stream", "true"), field("is_preprocessing_enabled", "true"))
	req, err := http.NewRequest(http.MethodPost, s.URL+audioPath, strings.NewReader(string(body)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Authorization", bearer)
	resp, err := http.DefaultClient.Do(req) // returns at the first chunk
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	s.sigterm(t)
	var last string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		last = sc.Text()
	}
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(last), &m), "last line %q", last)
	require.Equal(t, float64(http.StatusServiceUnavailable), m["status_code"], "last line %q", last)
	require.Contains(t, m["detail"], "shutting down")
	require.Greater(t, m["retry_after"], float64(0))
	require.Equal(t, 0, s.waitExit(t, 10*time.Second))
}
