package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/jpeg"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// streamEvent is one Server-Sent Event read off the wire, with when it arrived.
type streamEvent struct {
	name string
	data map[string]any
	at   time.Duration
}

// openImageStream posts a streaming /v1/images/generations request and returns the response,
// whose status and Content-Type it has checked.
func openImageStream(t *testing.T, ctx context.Context, s *server, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/v1/images/generations", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", bearer)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	require.Equal(t, "text/event-stream; charset=utf-8", resp.Header.Get("Content-Type"))
	return resp
}

// nextEvent reads one "event: X" / "data: {...}" / blank-line event.
func nextEvent(t *testing.T, r *bufio.Reader, start time.Time) (streamEvent, bool) {
	t.Helper()
	var ev streamEvent
	for {
		line, err := r.ReadString('\n')
		if err == io.EOF && line == "" && ev.name == "" {
			return ev, false
		}
		require.NoError(t, err, "stream cut inside an event")
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			require.NotEmpty(t, ev.name, "an event without an event: line")
			require.NotNil(t, ev.data, "an event without data")
			require.Equal(t, ev.name, ev.data["type"])
			ev.at = time.Since(start)
			return ev, true
		case strings.HasPrefix(line, "event: "):
			ev.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.data), line)
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
}

func eventJPEG(t *testing.T, ev streamEvent) image.Image {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(ev.data["b64_json"].(string))
	require.NoError(t, err)
	img, err := jpeg.Decode(bytes.NewReader(raw))
	require.NoError(t, err, "%s is a JPEG", ev.name)
	return img
}

// isolations are the modes the streaming tests run under: the runner in the server process
// (WORKER_ISOLATION=inprocess), in a device-worker child that relays previews and progress
// over its pipe (process), and the Python worker hosting the fake SDXL runner (python:
// DEVICE_BACKEND=python, python_test.go).
var isolations = []string{"inprocess", "process", "python"}

// TestImageStreamingSSE streams /v1/images/generations from the real binary (mock SDXL), with
// the runner in process and in a worker process: the previews arrive as events before the
// final image, in order, with OpenAI's fields; a non-streaming request with the same seed
// gives the same final image.
func TestImageStreamingSSE(t *testing.T) {
	t.Parallel()
	for _, isolation := range isolations {
		t.Run(isolation, func(t *testing.T) {
			t.Parallel()
			testImageStreamingSSE(t, isolation)
		})
	}
}

func testImageStreamingSSE(t *testing.T, isolation string) {
	s := startServer(t, isolationEnv(t, isolation, map[string]string{"MODEL_RUNNER": "tt-sdxl-trace", "MOCK_STEP_SECONDS": "0.01",
		"MOCK_DEVICES_COUNT": "1"}))
	const body = `{"prompt":"Volcano on a beach","seed":3,"stream":true,"partial_images":2,"output_format":"jpeg","output_compression":90,"quality":"low"}`
	start := time.Now()
	resp := openImageStream(t, t.Context(), s, body)
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	var events []streamEvent
	for {
		ev, ok := nextEvent(t, r, start)
		if !ok {
			break
		}
		events = append(events, ev)
	}
	var names []string
	for _, ev := range events {
		names = append(names, ev.name)
	}
	require.Equal(t, []string{"image_generation.partial_image", "image_generation.partial_image", "image_generation.completed"}, names)
	for i, ev := range events[:2] {
		require.Equal(t, "image_generation.partial_image", ev.name)
		require.EqualValues(t, i, ev.data["partial_image_index"])
		require.Equal(t, 256, eventJPEG(t, ev).Bounds().Dx(), "mock previews are a quarter of the side")
		t.Logf("partial %d after %v", i, ev.at)
	}
	done := events[2]
	require.Equal(t, "image_generation.completed", done.name)
	require.Equal(t, 1024, eventJPEG(t, done).Bounds().Dx())
	t.Logf("completed after %v", done.at)
	for _, ev := range events {
		require.Equal(t, "jpeg", ev.data["output_format"])
		require.Equal(t, "low", ev.data["quality"])
		require.Equal(t, "1024x1024", ev.data["size"])
		require.Equal(t, "opaque", ev.data["background"])
		require.InDelta(t, float64(time.Now().Unix()), ev.data["created_at"], 60)
	}
	require.Contains(t, done.data, "usage")

	// The streamed final image is the image a plain request gets.
	plain := generateV1(t, s, `{"prompt":"Volcano on a beach","seed":3,"output_format":"jpeg","output_compression":90,"quality":"low"}`)
	raw, err := base64.StdEncoding.DecodeString(done.data["b64_json"].(string))
	require.NoError(t, err)
	require.Equal(t, plain[0], raw)

	// Bad partial_images: a 400 in OpenAI's envelope naming the field, before any stream.
	bad := s.postJSON(t, "/v1/images/generations", `{"prompt":"a","stream":true,"partial_images":4}`)
	require.Equal(t, http.StatusBadRequest, bad.Status, "%s", bad)
	require.Equal(t, "partial_images", bad.obj(t)["error"].(map[string]any)["param"])
}

// metricValue sums the samples of a Prometheus metric whose line matches re.
func metricValue(t *testing.T, s *server, re *regexp.Regexp) float64 {
	t.Helper()
	m := s.get(t, "/metrics")
	require.Equal(t, http.StatusOK, m.Status)
	sum := 0.0
	for _, line := range strings.Split(string(m.Body), "\n") {
		if re.MatchString(line) {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			require.NoError(t, err, line)
			sum += v
		}
	}
	return sum
}

// TestImageStreamProgressAndDisconnect watches a slow streamed generation, with the runner in
// process and in a worker process: /tt-liveness shows its step progress while it runs, and
// closing the connection after the first preview cancels the job on the device (counted as a
// running cancellation) instead of finishing it.
func TestImageStreamProgressAndDisconnect(t *testing.T) {
	t.Parallel()
	for _, isolation := range isolations {
		t.Run(isolation, func(t *testing.T) {
			t.Parallel()
			testImageStreamProgressAndDisconnect(t, isolation)
		})
	}
}

func testImageStreamProgressAndDisconnect(t *testing.T, isolation string) {
	// 50 steps of 0.2 s: 10 s of device time, far more than the test waits for.
	s := startServer(t, isolationEnv(t, isolation, map[string]string{"MODEL_RUNNER": "tt-sdxl-trace", "MOCK_STEP_SECONDS": "0.2",
		"DEVICE_IDS": "(0)"}))
	cancelledRunning := regexp.MustCompile(`^tt_media_server_cancellations_total\{.*stage="running".*\} `)
	before := metricValue(t, s, cancelledRunning)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	resp := openImageStream(t, ctx, s, `{"prompt":"a slow one","stream":true,"partial_images":3,"steps":50,"output_format":"jpeg"}`)
	ev, ok := nextEvent(t, bufio.NewReader(resp.Body), time.Now())
	require.True(t, ok)
	require.Equal(t, "image_generation.partial_image", ev.name)

	// The first preview comes after step 12 of 50; the worker reports the steps since.
	_, live := s.liveness(t)
	var progress map[string]any
	for _, w := range live["worker_info"].(map[string]any) {
		if p, ok := w.(map[string]any)["progress"]; ok {
			progress = p.(map[string]any)
		}
	}
	require.NotNil(t, progress, "a busy worker shows its progress: %v", live["worker_info"])
	require.EqualValues(t, 50, progress["total"])
	require.GreaterOrEqual(t, progress["done"], 12.0)
	require.Less(t, progress["done"], 50.0)

	cancel() // the client goes away
	resp.Body.Close()
	deadline := time.Now().Add(8 * time.Second) // the job would need about 7.6 s more
	for metricValue(t, s, cancelledRunning) < before+1 {
		require.True(t, time.Now().Before(deadline), "the disconnected job was not cancelled")
		time.Sleep(50 * time.Millisecond)
	}
	// The handler is answered at once; the runner stops at its next step boundary, and the
	// worker is idle again (no progress) long before the job's remaining steps would end.
	busy := func() bool {
		_, live := s.liveness(t)
		for _, w := range live["worker_info"].(map[string]any) {
			if _, ok := w.(map[string]any)["progress"]; ok {
				return true
			}
		}
		return false
	}
	for busy() {
		require.True(t, time.Now().Before(deadline), "the worker still runs the disconnected job")
		time.Sleep(50 * time.Millisecond)
	}
}
