package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/scheduler"
)

// sseEvent is one parsed Server-Sent Event.
type sseEvent struct {
	name string
	data map[string]any
}

// parseSSE splits a text/event-stream body into events, checking the framing: every event is
// an "event:" line and one "data:" line, followed by a blank line.
func parseSSE(t *testing.T, body string) []sseEvent {
	t.Helper()
	require.True(t, strings.HasSuffix(body, "\n\n"), "the stream ends with a complete event: %q", body)
	var out []sseEvent
	for _, block := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		lines := strings.Split(block, "\n")
		require.Len(t, lines, 2, "event %q", block)
		name, ok := strings.CutPrefix(lines[0], "event: ")
		require.True(t, ok, "event line %q", lines[0])
		data, ok := strings.CutPrefix(lines[1], "data: ")
		require.True(t, ok, "data line %q", lines[1])
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(data), &m), data)
		require.Equal(t, name, m["type"], "the event name is the data's type")
		out = append(out, sseEvent{name: name, data: m})
	}
	return out
}

// solid is a w×w picture of one colour.
func solid(w int, c uint8) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, w))
	for i := range img.Pix {
		img.Pix[i] = c
	}
	return img
}

// streamFake emits partials previews (of side 4, grey levels 10, 20, ...) per job, then
// returns a side-16 picture; it records the requests and whether they streamed.
func streamFake(partials int) (*fakeSched, *atomic.Int64) {
	streamed := &atomic.Int64{}
	return &fakeSched{ready: true, submit: func(_ context.Context, req runners.Request, emit func(runners.Chunk) error) (runners.Result, error) {
		if emit != nil {
			streamed.Add(1)
			for i := range partials {
				if err := emit(&runners.ImagePartial{Index: i, Step: 5 * (i + 1), Steps: 20, Image: solid(4, uint8(10*(i+1)))}); err != nil {
					return nil, err
				}
			}
		}
		return &runners.ImageResult{Images: []image.Image{solid(16, 200)}}, nil
	}}, streamed
}

func decodeB64Image(t *testing.T, ev sseEvent, format string) image.Image {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(ev.data["b64_json"].(string))
	require.NoError(t, err)
	var img image.Image
	if format == "jpeg" {
		img, err = jpeg.Decode(bytes.NewReader(raw))
	} else {
		img, err = png.Decode(bytes.NewReader(raw))
	}
	require.NoError(t, err, "%s event is a %s", ev.name, format)
	return img
}

func TestOpenAIImageStreamEvents(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		emitted    int // previews the runner emits
		wantPart   int // partial_image events per image
		format     string
		quality    string
		n          int
		wantPassed int // ImageRequest.PartialImages handed to the scheduler
	}{
		{"two partials, png", `{"prompt":"a","stream":true,"partial_images":2}`, 2, 2, "png", "auto", 1, 2},
		{"three, jpeg, high", `{"prompt":"a","stream":true,"partial_images":3,"output_format":"jpeg","output_compression":60,"quality":"high"}`, 3, 3, "jpeg", "high", 1, 3},
		{"zero partials: only completed", `{"prompt":"a","stream":true,"partial_images":0,"quality":"low"}`, 0, 0, "png", "low", 1, 0},
		{"absent partial_images", `{"prompt":"a","stream":"true"}`, 0, 0, "png", "auto", 1, 0},
		{"runner emits more than asked", `{"prompt":"a","stream":true,"partial_images":1,"quality":"standard"}`, 3, 1, "png", "medium", 1, 1},
		{"n=2", `{"prompt":"a","stream":true,"partial_images":2,"n":2,"seed":5}`, 2, 2, "png", "auto", 2, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, streamed := streamFake(tc.emitted)
			h := newOpenAIServer(runners.ServiceImage, "tt-sdxl-trace", f)
			before := time.Now().Unix()
			w := do(h, "POST", "/v1/images/generations", "application/json", "Bearer k", []byte(tc.body))
			require.Equal(t, 200, w.Code, w.Body.String())
			require.Equal(t, "text/event-stream; charset=utf-8", w.Header().Get("Content-Type"))
			require.Equal(t, "no-cache", w.Header().Get("Cache-Control"))
			require.EqualValues(t, tc.n, streamed.Load(), "every job streams")
			require.Equal(t, tc.wantPassed, f.last.(*runners.ImageRequest).PartialImages)

			events := parseSSE(t, w.Body.String())
			require.Len(t, events, tc.n*(tc.wantPart+1))
			next := map[int]int{}       // image → next partial_image_index
			completed := map[int]bool{} // image → completed seen
			for _, ev := range events {
				img := 0
				if tc.n > 1 {
					require.Contains(t, ev.data, "image_index")
					img = int(ev.data["image_index"].(float64))
				} else {
					require.NotContains(t, ev.data, "image_index", "n=1 events are OpenAI's, without extensions")
				}
				require.False(t, completed[img], "no event of image %d after its completed event", img)
				require.Equal(t, "opaque", ev.data["background"])
				require.Equal(t, tc.format, ev.data["output_format"])
				require.Equal(t, tc.quality, ev.data["quality"])
				require.Equal(t, "1024x1024", ev.data["size"])
				require.GreaterOrEqual(t, int64(ev.data["created_at"].(float64)), before)
				pic := decodeB64Image(t, ev, tc.format)
				switch ev.name {
				case eventPartialImage:
					require.EqualValues(t, next[img], ev.data["partial_image_index"])
					require.NotContains(t, ev.data, "usage")
					require.Equal(t, 4, pic.Bounds().Dx(), "previews are sent at the runner's preview size")
					r, _, _, _ := pic.At(1, 1).RGBA()
					require.InDelta(t, 10*(next[img]+1), r>>8, 3, "previews in emission order")
					next[img]++
				case eventImageCompleted:
					require.NotContains(t, ev.data, "partial_image_index")
					require.Equal(t, map[string]any{"input_tokens": 0.0, "output_tokens": 0.0, "total_tokens": 0.0,
						"input_tokens_details": map[string]any{"image_tokens": 0.0, "text_tokens": 0.0}}, ev.data["usage"])
					require.Equal(t, 16, pic.Bounds().Dx())
					require.Equal(t, tc.wantPart, next[img], "completed comes after all partials of its image")
					completed[img] = true
				default:
					t.Fatalf("unexpected event %q", ev.name)
				}
			}
			require.Len(t, completed, tc.n)
		})
	}
}

func TestOpenAIImageStreamValidation(t *testing.T) {
	f, streamed := streamFake(2)
	h := newOpenAIServer(runners.ServiceImage, "tt-sdxl-trace", f)
	for _, body := range []string{
		`{"prompt":"a","stream":true,"partial_images":4}`,
		`{"prompt":"a","stream":true,"partial_images":-1}`,
		`{"prompt":"a","stream":true,"partial_images":"two"}`,
		`{"prompt":"a","stream":true,"partial_images":1.5}`,
		`{"prompt":"a","partial_images":7}`,
	} {
		w := do(h, "POST", "/v1/images/generations", "application/json", "Bearer k", []byte(body))
		require.Equal(t, 400, w.Code, "%s: %s", body, w.Body.String())
		msg := requireEnvelope(t, w.Body.Bytes(), "invalid_request_error", "partial_images", nil)
		require.Contains(t, msg, "partial_images")
	}
	w := do(h, "POST", "/v1/images/generations", "application/json", "Bearer k", []byte(`{"prompt":"a","stream":"maybe"}`))
	require.Equal(t, 400, w.Code, w.Body.String())
	requireEnvelope(t, w.Body.Bytes(), "invalid_request_error", "stream", nil)

	// Without stream, previews cannot be sent: partial_images > 0 is refused (never accepted and
	// ignored); 0 asks for nothing and gets a plain JSON answer.
	w = do(h, "POST", "/v1/images/generations", "application/json", "Bearer k", []byte(`{"prompt":"a","stream":false,"partial_images":2}`))
	require.Equal(t, 400, w.Code, w.Body.String())
	requireEnvelope(t, w.Body.Bytes(), "invalid_request_error", "partial_images", nil)
	w = do(h, "POST", "/v1/images/generations", "application/json", "Bearer k", []byte(`{"prompt":"a","stream":false,"partial_images":0}`))
	require.Equal(t, 200, w.Code, w.Body.String())
	require.Contains(t, w.Header().Get("Content-Type"), "application/json")
	require.Zero(t, f.last.(*runners.ImageRequest).PartialImages)
	require.Zero(t, streamed.Load(), "no job streamed")
}

func TestOpenAIImageStreamErrors(t *testing.T) {
	f := &fakeSched{ready: true}
	h := newOpenAIServer(runners.ServiceImage, "tt-sdxl-trace", f)
	body := []byte(`{"prompt":"a","stream":true,"partial_images":2}`)

	// After the first event: an error event ends the stream.
	f.submit = func(_ context.Context, _ runners.Request, emit func(runners.Chunk) error) (runners.Result, error) {
		require.NoError(t, emit(&runners.ImagePartial{Image: solid(4, 1)}))
		return nil, scheduler.ErrTimeout
	}
	w := do(h, "POST", "/v1/images/generations", "application/json", "Bearer k", body)
	require.Equal(t, 200, w.Code)
	events := parseSSE(t, w.Body.String())
	require.Len(t, events, 2)
	require.Equal(t, eventPartialImage, events[0].name)
	require.Equal(t, "error", events[1].name)
	e := events[1].data["error"].(map[string]any)
	require.Equal(t, "server_error", e["type"])
	require.Equal(t, "timeout", e["code"])
	require.NotEmpty(t, e["message"])
	require.Contains(t, e, "param")

	// Before the first event: a real status and the envelope.
	f.submit = func(context.Context, runners.Request, func(runners.Chunk) error) (runners.Result, error) {
		return nil, scheduler.ErrQueueFull
	}
	w = do(h, "POST", "/v1/images/generations", "application/json", "Bearer k", body)
	require.Equal(t, 429, w.Code)
	requireEnvelope(t, w.Body.Bytes(), "rate_limit_error", nil, "rate_limit_exceeded")

	// A runner answering something that is not an image.
	f.submit = func(context.Context, runners.Request, func(runners.Chunk) error) (runners.Result, error) {
		return &runners.CNNResult{}, nil
	} // not an image
	w = do(h, "POST", "/v1/images/generations", "application/json", "Bearer k", body)
	require.Equal(t, 500, w.Code)
	requireEnvelope(t, w.Body.Bytes(), "server_error", nil, nil)

	// n=2: one image fails mid-way, the other is cancelled; the stream ends with one error.
	var cancelled atomic.Int64
	f.submit = func(ctx context.Context, req runners.Request, emit func(runners.Chunk) error) (runners.Result, error) {
		if *req.(*runners.ImageRequest).Seed == 1 {
			<-ctx.Done()
			cancelled.Add(1)
			return nil, ctx.Err()
		}
		require.NoError(t, emit(&runners.ImagePartial{Image: solid(4, 1)}))
		return nil, runners.ErrDeviceLost
	}
	w = do(h, "POST", "/v1/images/generations", "application/json", "Bearer k", []byte(`{"prompt":"a","stream":true,"partial_images":1,"n":2,"seed":0}`))
	events = parseSSE(t, w.Body.String())
	require.Equal(t, "error", events[len(events)-1].name, w.Body.String())
	require.Equal(t, 1, strings.Count(w.Body.String(), "event: error"))
	require.EqualValues(t, 1, cancelled.Load(), "the other image's job was cancelled")
}

// TestOpenAIImageStreamClientDeadline: the client's own deadline (X-Request-Timeout) passing
// mid-stream is a timeout the client is told about, not a disconnect.
func TestOpenAIImageStreamClientDeadline(t *testing.T) {
	f := &fakeSched{ready: true, submit: func(ctx context.Context, _ runners.Request, emit func(runners.Chunk) error) (runners.Result, error) {
		if err := emit(&runners.ImagePartial{Image: solid(4, 1)}); err != nil {
			return nil, err
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	h := newOpenAIServer(runners.ServiceImage, "tt-sdxl-trace", f)
	req := httptest.NewRequest(http.MethodPost, "/v1/images/generations", strings.NewReader(`{"prompt":"a","stream":true,"partial_images":1}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer k")
	req.Header.Set("X-Request-Timeout", "0.2")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	require.Equal(t, 200, w.Code)
	events := parseSSE(t, w.Body.String())
	require.Len(t, events, 2, w.Body.String())
	require.Equal(t, eventError, events[1].name)
	e := events[1].data["error"].(map[string]any)
	require.Equal(t, "server_error", e["type"])
	require.Contains(t, e["message"], "timed out")
}

// TestOpenAIImageStreamDisconnectCancels runs the handler behind a real HTTP server: a client
// that goes away after the first preview cancels the job.
func TestOpenAIImageStreamDisconnectCancels(t *testing.T) {
	jobDone := make(chan error, 1)
	f := &fakeSched{ready: true, submit: func(ctx context.Context, _ runners.Request, emit func(runners.Chunk) error) (runners.Result, error) {
		if err := emit(&runners.ImagePartial{Image: solid(4, 1)}); err != nil {
			jobDone <- err
			return nil, err
		}
		select { // a long generation: ends only when cancelled
		case <-ctx.Done():
			jobDone <- ctx.Err()
			return nil, ctx.Err()
		case <-time.After(time.Minute):
			jobDone <- nil
			return &runners.ImageResult{Images: []image.Image{solid(16, 1)}}, nil
		}
	}}
	srv := httptest.NewServer(newOpenAIServer(runners.ServiceImage, "tt-sdxl-trace", f))
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/images/generations",
		strings.NewReader(`{"prompt":"a","stream":true,"partial_images":3}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer k")
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "event: "+eventPartialImage+"\n", line, "the preview arrives before the image is done")
	cancel() // the client goes away

	select {
	case err := <-jobDone:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("the job was not cancelled after the client went away")
	}
	_, _ = io.Copy(io.Discard, resp.Body)
}

// TestOpenAPIImageStreamContract checks a streamed answer against server/openapi.yaml: the
// request and the text/event-stream response validate, and every event's data validates
// against the event schema its type names.
func TestOpenAPIImageStreamContract(t *testing.T) {
	registerTextDecoders()
	doc := loadSpec(t)
	router, err := gorillamux.NewRouter(doc)
	require.NoError(t, err)
	schemas := map[string]string{eventPartialImage: "ImageGenPartialImageEvent",
		eventImageCompleted: "ImageGenCompletedEvent", eventError: "StreamErrorEvent"}

	tests := []struct {
		name string
		body string
		fail bool // the job fails after its first preview
	}{
		{"one image", `{"model":"gpt-image-1","prompt":"a fox","stream":true,"partial_images":2,"output_format":"jpeg","quality":"medium"}`, false},
		{"two images", `{"prompt":"a fox","stream":true,"partial_images":3,"n":2}`, false},
		{"error event", `{"prompt":"a fox","stream":true,"partial_images":1}`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := streamFake(3)
			if tc.fail {
				f.submit = func(_ context.Context, _ runners.Request, emit func(runners.Chunk) error) (runners.Result, error) {
					require.NoError(t, emit(&runners.ImagePartial{Image: solid(4, 1)}))
					return nil, runners.ErrDeviceLost
				}
			}
			h := specTestServer(f, runners.ServiceImage).Handler()
			req := httptest.NewRequest(http.MethodPost, "/v1/images/generations", strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer k")
			route, params, err := router.FindRoute(req)
			require.NoError(t, err)
			in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
				Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
			require.NoError(t, openapi3filter.ValidateRequest(context.Background(), in))
			req.Body = io.NopCloser(strings.NewReader(tc.body))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			require.Equal(t, 200, w.Code, w.Body.String())
			require.NoError(t, openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
				RequestValidationInput: in, Status: w.Code, Header: w.Header(), Body: io.NopCloser(bytes.NewReader(w.Body.Bytes())),
				Options: &openapi3filter.Options{IncludeResponseStatus: true},
			}))
			events := parseSSE(t, w.Body.String())
			require.NotEmpty(t, events)
			for _, ev := range events {
				name, ok := schemas[ev.name]
				require.True(t, ok, "event %q is not documented", ev.name)
				require.NoError(t, doc.Components.Schemas[name].Value.VisitJSON(ev.data), "%s event does not match %s", ev.name, name)
			}
			require.Equal(t, tc.fail, events[len(events)-1].name == eventError)
		})
	}
}

// TestLivenessWorkerProgress: /tt-liveness shows a busy worker's step progress and leaves the
// field out for an idle one.
func TestLivenessWorkerProgress(t *testing.T) {
	info := workerInfos(map[string]scheduler.WorkerStatus{
		"0": {State: "ready", IsReady: true, StepsDone: 7, StepsTotal: 20},
		"1": {State: "ready", IsReady: true},
	})
	busy, err := json.Marshal(info["0"])
	require.NoError(t, err)
	require.Contains(t, string(busy), `"progress":{"done":7,"total":20}`)
	idle, err := json.Marshal(info["1"])
	require.NoError(t, err)
	require.NotContains(t, string(idle), "progress")
}
