package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/internal/wavtest"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/scheduler"
)

// fakeSched answers Submit with a function of the request (a fake at the scheduler seam).
type fakeSched struct {
	ready  bool
	submit func(ctx context.Context, req runners.Request, emit func(runners.Chunk) error) (runners.Result, error)
	mu     sync.Mutex
	last   any
	canary string // the canary state reported ("" = no monitor)
}

func (f *fakeSched) Submit(ctx context.Context, req runners.Request, emit func(runners.Chunk) error) (runners.Result, error) {
	f.mu.Lock()
	f.last = req
	f.mu.Unlock()
	return f.submit(ctx, req, emit)
}
func (f *fakeSched) Ready() bool               { return f.ready }
func (f *fakeSched) QueueLen() int             { return 0 }
func (f *fakeSched) QueueCap() int             { return 4 }
func (f *fakeSched) RetryAfter() time.Duration { return 7 * time.Second }
func (f *fakeSched) RestartWorker(id string) (scheduler.WorkerReset, error) {
	return scheduler.WorkerReset{Worker: id, State: "ready", Action: scheduler.ResetRestart}, nil
}
func (f *fakeSched) RestartAll() []scheduler.WorkerReset {
	return []scheduler.WorkerReset{{Worker: "0", State: "ready", Action: scheduler.ResetRestart}}
}
func (f *fakeSched) Canary() scheduler.CanaryStatus {
	if f.canary != "" {
		return scheduler.CanaryStatus{Enabled: true, State: f.canary, Alive: f.canary != scheduler.CanaryDead}
	}
	return scheduler.CanaryStatus{State: scheduler.CanaryDisabled, Alive: true}
}
func (f *fakeSched) Workers() map[string]scheduler.WorkerStatus {
	return map[string]scheduler.WorkerStatus{"0": {IsReady: f.ready, State: "ready"}}
}

func testSettings() *config.Settings {
	return &config.Settings{
		APIKey: "k", JWTSecret: "my-secret-string", NumInferenceSteps: 20, ImageQuality: 85,
		ImageReturnFormat: "JPEG", MaxAudioSizeBytes: 1 << 20, MaxAudioDuration: 60,
		MaxAudioDurationWithPreprocessing: 300, DefaultSampleRate: 16000, AllowAudioPreprocessing: true,
		ModelRunner: "tt-sdxl-trace", DeviceMeshShape: config.MeshShape{Rows: 1, Cols: 1},
	}
}

func newTestServer(svc runners.Service, f *fakeSched) http.Handler {
	return New(Deps{Settings: testSettings(), Service: svc, Sched: f}).Handler()
}

func do(h http.Handler, method, path, ctype, auth string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func TestParseImageRequest(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		wantType string // first 422 error type, "" for success
		wantLoc  []any
		check    func(t *testing.T, r *imageRequest)
	}{
		{name: "readme body", body: `{"prompt":"Volcano on a beach","negative_prompt":"low quality","num_inference_steps":20,"seed":0,"guidance_scale":7.0,"number_of_images":1}`,
			check: func(t *testing.T, r *imageRequest) {
				require.Equal(t, "Volcano on a beach", r.Prompt)
				require.Equal(t, int64(0), *r.Seed)
				require.Equal(t, 7.0, r.GuidanceScale)
			}},
		{name: "defaults", body: `{"prompt":"a","guidance_scale":5}`, check: func(t *testing.T, r *imageRequest) {
			require.Equal(t, 20, r.NumInferenceSteps)
			require.Equal(t, 1, r.NumberOfImages)
			require.Nil(t, r.Seed)
		}},
		{name: "lax coercion", body: `{"prompt":"a","guidance_scale":"5","num_inference_steps":"30","number_of_images":2.0,"crop_coords_top_left":["3",4.5]}`,
			check: func(t *testing.T, r *imageRequest) {
				require.Equal(t, 5.0, r.GuidanceScale)
				require.Equal(t, 30, r.NumInferenceSteps)
				require.Equal(t, 2, r.NumberOfImages)
				require.Equal(t, [2]float64{3, 4.5}, r.CropCoordsTopLeft)
			}},
		{name: "null number_of_images is the default", body: `{"prompt":"a","guidance_scale":5,"number_of_images":null}`,
			check: func(t *testing.T, r *imageRequest) { require.Equal(t, 1, r.NumberOfImages) }},
		{name: "unknown field refused by name", body: `{"prompt":"a","guidance_scale":5,"width":512}`, wantType: "extra_forbidden", wantLoc: []any{"body", "width"}},
		{name: "missing prompt", body: `{"guidance_scale":5}`, wantType: "missing", wantLoc: []any{"body", "prompt"}},
		{name: "guidance defaults to 5 (HEAD)", body: `{"prompt":"a"}`, check: func(t *testing.T, r *imageRequest) {
			require.Equal(t, 5.0, r.GuidanceScale)
			require.Equal(t, "JPEG", r.ReturnFormat)
		}},
		{name: "steps under the runner floor", body: `{"prompt":"a","guidance_scale":5,"num_inference_steps":11}`, wantType: "value_error", wantLoc: []any{"body", "num_inference_steps"}},
		{name: "steps under the schema bound", body: `{"prompt":"a","num_inference_steps":3}`, wantType: "greater_than_equal", wantLoc: []any{"body", "num_inference_steps"}},
		{name: "png at quality 100 (HEAD's eval clients)", body: `{"prompt":"a","image_return_format":"PNG","image_quality":100}`, check: func(t *testing.T, r *imageRequest) {
			require.Equal(t, "PNG", r.ReturnFormat)
			require.Equal(t, 100, r.Quality)
		}},
		{name: "png at a lossy quality refused, not ignored", body: `{"prompt":"a","image_return_format":"PNG","image_quality":60}`, wantType: "value_error", wantLoc: []any{"body", "image_quality"}},
		{name: "webp refused", body: `{"prompt":"a","image_return_format":"WEBP"}`, wantType: "value_error", wantLoc: []any{"body", "image_return_format"}},
		{name: "lower-case png refused as HEAD does", body: `{"prompt":"a","image_return_format":"png"}`, wantType: "value_error", wantLoc: []any{"body", "image_return_format"}},
		{name: "quality under 50", body: `{"prompt":"a","image_quality":49}`, wantType: "greater_than_equal", wantLoc: []any{"body", "image_quality"}},
		{name: "quality over 100", body: `{"prompt":"a","image_quality":101}`, wantType: "less_than_equal", wantLoc: []any{"body", "image_quality"}},
		{name: "lora_scale out of range", body: `{"prompt":"a","lora_scale":3}`, wantType: "less_than_equal", wantLoc: []any{"body", "lora_scale"}},
		{name: "steps too high", body: `{"prompt":"a","guidance_scale":5,"num_inference_steps":51}`, wantType: "less_than_equal"},
		{name: "guidance too high", body: `{"prompt":"a","guidance_scale":20.5}`, wantType: "less_than_equal"},
		{name: "five images", body: `{"prompt":"a","guidance_scale":5,"number_of_images":5}`, wantType: "less_than_equal"},
		{name: "fractional steps", body: `{"prompt":"a","guidance_scale":5,"num_inference_steps":12.5}`, wantType: "int_from_float"},
		{name: "prompt not a string", body: `{"prompt":3,"guidance_scale":5}`, wantType: "string_type"},
		{name: "rescale out of range", body: `{"prompt":"a","guidance_scale":5,"guidance_rescale":1.5}`, wantType: "less_than_equal"},
		{name: "crop too long", body: `{"prompt":"a","guidance_scale":5,"crop_coords_top_left":[1,2,3]}`, wantType: "too_long"},
		{name: "crop too short", body: `{"prompt":"a","guidance_scale":5,"crop_coords_top_left":[1]}`, wantType: "missing", wantLoc: []any{"body", "crop_coords_top_left", 1}},
		{name: "timesteps not a list", body: `{"prompt":"a","guidance_scale":5,"timesteps":3}`, wantType: "list_type"},
		{name: "bad timestep", body: `{"prompt":"a","guidance_scale":5,"timesteps":[1,"x"]}`, wantType: "float_parsing", wantLoc: []any{"body", "timesteps", 1}},
		{name: "invalid json", body: `{"prompt":`, wantType: "json_invalid"},
		{name: "not an object", body: `[1,2]`, wantType: "model_attributes_type"},
		{name: "trailing data", body: `{"prompt":"a","guidance_scale":5} {}`, wantType: "json_invalid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := parseImageRequest([]byte(tc.body), imageDefaults{steps: 20, runner: "tt-sdxl-trace"})
			if tc.wantType == "" {
				require.NoError(t, err)
				if tc.check != nil {
					tc.check(t, r)
				}
				return
			}
			var ve *apiError
			require.ErrorAs(t, err, &ve)
			require.Equal(t, tc.wantType, ve.items[0].Type, "%+v", ve.items)
			if tc.wantLoc != nil {
				require.Equal(t, tc.wantLoc, ve.items[0].Loc)
			}
		})
	}
}

func TestValidationMessageMatchesFastAPI(t *testing.T) {
	h := newTestServer(runners.ServiceImage, &fakeSched{ready: true})
	w := do(h, "POST", "/image/generations", "application/json", "Bearer k", []byte(`{"prompt":"a","guidance_scale":5,"num_inference_steps":3}`))
	require.Equal(t, 422, w.Code)
	require.JSONEq(t, `{"detail":[{"type":"greater_than_equal","loc":["body","num_inference_steps"],"msg":"Input should be greater than or equal to 4","input":3,"ctx":{"ge":4}}]}`, w.Body.String())
	// HEAD's runner floor is a field validator: pydantic's value_error.
	w = do(h, "POST", "/image/generations", "application/json", "Bearer k", []byte(`{"prompt":"a","guidance_scale":5,"num_inference_steps":11}`))
	require.Equal(t, 422, w.Code)
	require.JSONEq(t, `{"detail":[{"type":"value_error","loc":["body","num_inference_steps"],"msg":"Value error, num_inference_steps must be >= 12 for tt-sdxl-trace, got 11","input":11,"ctx":{"error":{}}}]}`, w.Body.String())
}

func TestAuth(t *testing.T) {
	const pyToken = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ0ZWFtX2lkIjoidGVuc3RvcnJlbnQiLCJ0b2tlbl9pZCI6ImRlYnVnLXRlc3QifQ._DyDlvNgSAt7R1D-eOOtYwHJaogoCgYbIzGynnQvixc"
	sign := func(method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
		s, err := jwt.NewWithClaims(method, claims).SignedString(key)
		require.NoError(t, err)
		return s
	}
	secret := []byte("my-secret-string")
	now := time.Now()
	tests := []struct {
		name   string
		header string
		want   error
	}{
		{"api key", "Bearer k", nil},
		{"python client token (no exp)", "Bearer " + pyToken, nil},
		{"valid exp", "Bearer " + sign(jwt.SigningMethodHS256, secret, jwt.MapClaims{"exp": now.Add(time.Hour).Unix()}), nil},
		{"missing", "", errNoCredentials},
		{"no bearer prefix", "k", errBadCredentials},
		// The scheme is case-insensitive (RFC 7235 §2.1); the credential is not.
		{"lower-case scheme", "bearer k", nil},
		{"upper-case scheme", "BEARER k", nil},
		{"mixed-case scheme", "bEaReR k", nil},
		{"lower-case scheme with a token", "bearer " + pyToken, nil},
		{"credential case matters", "Bearer K", errBadCredentials},
		{"scheme without its space", "Bearerk", errBadCredentials},
		{"scheme alone", "bearer", errBadCredentials},
		{"other scheme", "Basic k", errBadCredentials},
		{"two spaces", "bearer  k", errBadCredentials},
		{"wrong key", "Bearer nope", errBadCredentials},
		{"expired", "Bearer " + sign(jwt.SigningMethodHS256, secret, jwt.MapClaims{"exp": now.Add(-time.Hour).Unix()}), errBadCredentials},
		{"not yet valid", "Bearer " + sign(jwt.SigningMethodHS256, secret, jwt.MapClaims{"nbf": now.Add(time.Hour).Unix()}), errBadCredentials},
		{"other secret", "Bearer " + sign(jwt.SigningMethodHS256, []byte("other"), jwt.MapClaims{}), errBadCredentials},
		{"HS512 not accepted", "Bearer " + sign(jwt.SigningMethodHS512, secret, jwt.MapClaims{}), errBadCredentials},
		{"alg none", "Bearer " + sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, jwt.MapClaims{}), errBadCredentials},
		{"oversized", "Bearer " + strings.Repeat("a", maxTokenLen), errBadCredentials},
	}
	a, err := newAuthenticator(AuthConfig{Keys: map[string]string{"api_key": "k"}, JWTSecret: "my-secret-string"})
	require.NoError(t, err)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := a.check(tc.header)
			if tc.want == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.want)
			}
		})
	}
	t.Run("exp required", func(t *testing.T) {
		strict, err := newAuthenticator(AuthConfig{Keys: map[string]string{"api_key": "k"}, JWTSecret: "my-secret-string", JWTRequireExp: true})
		require.NoError(t, err)
		require.Error(t, strict.check("Bearer "+pyToken))
	})
	t.Run("no JWT secret means no JWT", func(t *testing.T) {
		a, err := newAuthenticator(AuthConfig{Keys: map[string]string{"api_key": "k"}})
		require.NoError(t, err)
		require.Error(t, a.check("Bearer "+pyToken))
	})
}

func TestRoutesPerService(t *testing.T) {
	f := &fakeSched{ready: true}
	tests := []struct {
		svc    runners.Service
		path   string
		mounts bool
	}{
		{runners.ServiceImage, "/image/generations", true},
		{runners.ServiceImage, "/v1/images/generations", true},
		{runners.ServiceImage, "/audio/transcriptions", false},
		{runners.ServiceAudio, "/audio/transcriptions", true},
		{runners.ServiceAudio, "/v1/audio/transcriptions", true},
		{runners.ServiceAudio, "/cnn/search-image", false},
		{runners.ServiceCNN, "/cnn/search-image", true},
		{runners.ServiceCNN, "/v1/cnn/search-image", true},
		{runners.ServiceCNN, "/image/generations", false},
	}
	for _, tc := range tests {
		h := newTestServer(tc.svc, f)
		w := do(h, "POST", tc.path, "application/json", "", []byte(`{}`))
		if tc.mounts {
			require.Equal(t, 401, w.Code, "%s %s", tc.svc, tc.path)
		} else {
			require.Equal(t, 404, w.Code, "%s %s", tc.svc, tc.path)
			require.JSONEq(t, `{"detail":"Not Found"}`, w.Body.String())
		}
	}
	h := newTestServer(runners.ServiceImage, f)
	w := do(h, "GET", "/image/generations", "", "", nil)
	require.Equal(t, 405, w.Code)
	require.NotEmpty(t, w.Header().Get("Allow"))
}

func TestErrorMapping(t *testing.T) {
	tests := []struct {
		err        error
		status     int
		retryAfter string
	}{
		{&scheduler.Rejection{Err: scheduler.ErrQueueFull, RetryAfter: 6500 * time.Millisecond}, 429, "7"},
		{scheduler.ErrQueueFull, 429, "7"},
		{scheduler.ErrNotReady, 503, "5"},
		{scheduler.ErrStopping, 503, "5"},
		{scheduler.ErrTimeout, 504, ""},
		{scheduler.ErrWorkerFailed, 503, "5"},
		{errors.New("mystery"), 500, ""},
	}
	for _, tc := range tests {
		t.Run(tc.err.Error(), func(t *testing.T) {
			f := &fakeSched{ready: true, submit: func(context.Context, runners.Request, func(runners.Chunk) error) (runners.Result, error) {
				return nil, tc.err
			}}
			w := do(newTestServer(runners.ServiceImage, f), "POST", "/image/generations", "application/json", "Bearer k", []byte(`{"prompt":"a","guidance_scale":5}`))
			require.Equal(t, tc.status, w.Code)
			require.Equal(t, tc.retryAfter, w.Header().Get("Retry-After"))
			var body map[string]string
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
			require.NotEmpty(t, body["detail"])
		})
	}
}

func TestImageFanOutSeedsAndFirstErrorWins(t *testing.T) {
	seeds := make(chan int64, 4)
	f := &fakeSched{ready: true, submit: func(_ context.Context, req runners.Request, _ func(runners.Chunk) error) (runners.Result, error) {
		r := req.(*runners.ImageRequest)
		seeds <- *r.Seed
		return &runners.ImageResult{Images: []image.Image{image.NewRGBA(image.Rect(0, 0, 8, 8))}}, nil
	}}
	w := do(newTestServer(runners.ServiceImage, f), "POST", "/image/generations", "application/json", "Bearer k", []byte(`{"prompt":"a","guidance_scale":5,"seed":10,"number_of_images":3}`))
	require.Equal(t, 200, w.Code, w.Body.String())
	close(seeds)
	got := map[int64]bool{}
	for s := range seeds {
		got[s] = true
	}
	require.Equal(t, map[int64]bool{10: true, 11: true, 12: true}, got)

	f.submit = func(ctx context.Context, req runners.Request, _ func(runners.Chunk) error) (runners.Result, error) {
		if *req.(*runners.ImageRequest).Seed == 1 {
			return nil, scheduler.ErrQueueFull
		}
		<-ctx.Done() // the others are cancelled by the first failure
		return nil, ctx.Err()
	}
	w = do(newTestServer(runners.ServiceImage, f), "POST", "/image/generations", "application/json", "Bearer k", []byte(`{"prompt":"a","guidance_scale":5,"seed":0,"number_of_images":3}`))
	require.Equal(t, 429, w.Code, w.Body.String())
}

func TestAudioStreamingNDJSON(t *testing.T) {
	wav := testWAV(16000, 16000)
	f := &fakeSched{ready: true}
	f.submit = func(_ context.Context, req runners.Request, emit func(runners.Chunk) error) (runners.Result, error) {
		r := req.(*runners.AudioRequest)
		require.NotNil(t, emit)
		for i, w := range []string{"héllo", "", "world"} {
			require.NoError(t, emit(runners.TranscriptChunk{Text: w, ChunkID: i + 1}))
		}
		return &runners.TranscriptionResult{Text: "héllo world", Task: "transcribe", Language: "english", Duration: r.Duration}, nil
	}
	h := newTestServer(runners.ServiceAudio, f)
	body, _ := json.Marshal(map[string]any{"file": wav, "stream": true})
	w := do(h, "POST", "/audio/transcriptions", "application/json", "Bearer k", body)
	require.Equal(t, 200, w.Code, w.Body.String())
	require.Equal(t, "application/x-ndjson", w.Header().Get("Content-Type"))
	lines := readLines(t, w.Body.Bytes())
	require.Equal(t, []string{
		`{"text": "h\u00e9llo", "chunk_id": 1}`,
		`{"text": "world", "chunk_id": 3}`,
		`{"text": "h\u00e9llo world", "task": "transcribe", "language": "english", "duration": 1}`,
	}, lines)

	// An error after the stream started ends it with a detail line, not a silent cut.
	f.submit = func(_ context.Context, req runners.Request, emit func(runners.Chunk) error) (runners.Result, error) {
		require.NoError(t, emit(runners.TranscriptChunk{Text: "partial", ChunkID: 1}))
		return nil, scheduler.ErrTimeout
	}
	w = do(h, "POST", "/audio/transcriptions", "application/json", "Bearer k", body)
	require.Equal(t, 200, w.Code)
	lines = readLines(t, w.Body.Bytes())
	require.Len(t, lines, 2)
	require.Contains(t, lines[1], `"status_code": 504`)

	// An error before the first chunk gets its own status.
	f.submit = func(context.Context, runners.Request, func(runners.Chunk) error) (runners.Result, error) {
		return nil, scheduler.ErrQueueFull
	}
	w = do(h, "POST", "/audio/transcriptions", "application/json", "Bearer k", body)
	require.Equal(t, 429, w.Code)
}

func TestAudioRequestParsing(t *testing.T) {
	f := &fakeSched{ready: true, submit: func(_ context.Context, req runners.Request, _ func(runners.Chunk) error) (runners.Result, error) {
		return &runners.TranscriptionResult{Text: "x", Duration: req.(*runners.AudioRequest).Duration}, nil
	}}
	h := newTestServer(runners.ServiceAudio, f)
	tests := []struct {
		name   string
		ctype  string
		body   string
		status int
	}{
		{"plain text", "text/plain", "hello", 400},
		{"missing file", "application/json", `{"stream":false}`, 422},
		{"bad base64", "application/json", `{"file":"!!!"}`, 400},
		{"not audio", "application/json", `{"file":"aGVsbG8gd29ybGQ="}`, 415},
		{"bad stream bool", "application/json", `{"file":"aGVsbG8=","stream":"maybe"}`, 422},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := do(h, "POST", "/audio/transcriptions", tc.ctype, "Bearer k", []byte(tc.body))
			require.Equal(t, tc.status, w.Code, w.Body.String())
		})
	}
	t.Run("preprocessing flag gives segments", func(t *testing.T) {
		body, _ := json.Marshal(map[string]any{"file": testWAV(16000, 16000), "is_preprocessing_enabled": true})
		w := do(h, "POST", "/audio/transcriptions", "application/json", "Bearer k", body)
		require.Equal(t, 200, w.Code, w.Body.String())
		require.NotNil(t, f.last.(*runners.AudioRequest).Segments)
		body, _ = json.Marshal(map[string]any{"file": testWAV(16000, 16000), "is_preprocessing_enabled": "false"})
		w = do(h, "POST", "/audio/transcriptions", "application/json", "Bearer k", body)
		require.Equal(t, 200, w.Code, w.Body.String())
		require.Nil(t, f.last.(*runners.AudioRequest).Segments)
	})
}

func TestLiveness(t *testing.T) {
	f := &fakeSched{ready: false}
	h := newTestServer(runners.ServiceImage, f)
	w := do(h, "GET", "/tt-liveness", "", "", nil)
	require.Equal(t, 503, w.Code)
	require.Equal(t, "5", w.Header().Get("Retry-After"))
	f.ready = true
	w = do(h, "GET", "/tt-liveness", "", "", nil)
	require.Equal(t, 200, w.Code)
	var got map[string]any
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &got))
	require.Equal(t, "alive", got["status"])
	require.Equal(t, true, got["model_ready"])
	require.Equal(t, []any{1.0, 1.0}, got["device_mesh_shape"])
	require.Equal(t, "Not defined", got["device"])
	require.Contains(t, got["worker_info"], "0")
}

func TestPyJSON(t *testing.T) {
	out, err := pyJSON(map[string]any{"a": "x, y: \"z\" 😀", "b": []int{1, 2}})
	require.NoError(t, err)
	require.Equal(t, `{"a": "x, y: \"z\" \ud83d\ude00", "b": [1, 2]}`, string(out))
}

func readLines(t *testing.T, b []byte) []string {
	t.Helper()
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// testWAV is n samples of a 440 Hz-ish square wave at rate, 16-bit mono, base64-encoded by
// the JSON encoder of the caller (returned as bytes).
func testWAV(rate, n int) []byte {
	samples := make([]int16, n)
	for i := range samples {
		samples[i] = 8000
		if (i/18)%2 == 0 {
			samples[i] = -8000
		}
	}
	return wavtest.PCM16(rate, samples)
}

func imageOK(context.Context, runners.Request, func(runners.Chunk) error) (runners.Result, error) {
	return &runners.ImageResult{Images: []image.Image{image.NewRGBA(image.Rect(0, 0, 4, 4))}}, nil
}

// TestValidationEchoIsBounded: a 422 echoes the offending input cut to a bounded depth and
// size, so a 5,000-deep body comes back as JSON any client (Python's json module: ~1,000
// levels) can parse.
func TestValidationEchoIsBounded(t *testing.T) {
	deep := strings.Repeat("[", 5000) + strings.Repeat("]", 5000)
	h := newTestServer(runners.ServiceImage, &fakeSched{ready: true})
	for _, tc := range []struct{ name, body, loc string }{
		{"deep field", `{"prompt":` + deep + `,"guidance_scale":5,"num_inference_steps":20}`, "prompt"},
		{"deep body", deep, ""},
		{"long string field", `{"prompt":5,"guidance_scale":"` + strings.Repeat("x", 100000) + `","num_inference_steps":20}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := do(h, "POST", "/image/generations", "application/json", "Bearer k", []byte(tc.body))
			require.Equal(t, 422, w.Code)
			require.Less(t, w.Body.Len(), 4000, "echo not bounded")
			depth, maxDepth := 0, 0
			for _, c := range w.Body.String() {
				switch c {
				case '[', '{':
					depth++
					maxDepth = max(maxDepth, depth)
				case ']', '}':
					depth--
				}
			}
			require.LessOrEqual(t, maxDepth, maxEchoDepth+4)
			var v map[string]any
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &v))
			if tc.loc != "" {
				require.Contains(t, w.Body.String(), `"`+tc.loc+`"`)
			}
		})
	}
}

// TestCustomScheduleStepLimit: timesteps and sigmas are held to the 50-step limit and the job is
// priced by the steps it will run (SDXL: N+1 sigmas are N steps; SD3.5: N sigmas are N steps).
func TestCustomScheduleStepLimit(t *testing.T) {
	list := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = strconv.FormatFloat(float64(n-i)/float64(n), 'f', 4, 64)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	tests := []struct {
		name, field string
		n           int
		runner      string
		wantSteps   int // 0: refused naming field
	}{
		{"1000 sigmas", "sigmas", 1000, "tt-sdxl-trace", 0},
		{"51 sigmas are 50 SDXL steps", "sigmas", 51, "tt-sdxl-trace", 50},
		{"52 sigmas are 51 SDXL steps", "sigmas", 52, "tt-sdxl-trace", 0},
		{"51 sigmas are 51 SD3.5 steps", "sigmas", 51, "tt-sd3.5", 0},
		{"50 sigmas are 50 SD3.5 steps", "sigmas", 50, "tt-sd3.5", 50},
		{"30 timesteps", "timesteps", 30, "tt-sdxl-trace", 30},
		{"51 timesteps", "timesteps", 51, "tt-sdxl-trace", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"prompt":"a","guidance_scale":5,"num_inference_steps":20,"` + tt.field + `":` + list(tt.n) + `}`
			r, err := parseImageRequest([]byte(body), imageDefaults{steps: 20, runner: tt.runner, format: "JPEG", quality: 85})
			if tt.wantSteps == 0 {
				var ve *apiError
				require.ErrorAs(t, err, &ve)
				require.Equal(t, []any{"body", tt.field}, ve.items[0].Loc)
				require.Contains(t, ve.items[0].Msg, "at most 50")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wantSteps, r.ScheduleSteps)
			require.Equal(t, float64(tt.wantSteps), r.Cost(), "priced by the steps it runs")
		})
	}
}
