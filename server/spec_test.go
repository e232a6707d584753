package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/internal/wavtest"
	"github.com/tenstorrent/tt-media-server-go/metrics"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/scheduler"
)

// loadSpec loads the document /openapi.json serves and validates it as OpenAPI 3.1.
func loadSpec(t *testing.T) *openapi3.T {
	t.Helper()
	data, err := OpenAPISpec()
	require.NoError(t, err)
	doc, err := openapi3.NewLoader().LoadFromData(data)
	require.NoError(t, err)
	require.NoError(t, doc.Validate(context.Background()))
	return doc
}

func TestOpenAPISpecIsValid31(t *testing.T) {
	doc := loadSpec(t)
	require.Equal(t, "3.1.0", doc.OpenAPI)
	require.True(t, doc.IsOpenAPI31OrLater())

	// The YAML→JSON conversion at start-up must not change the document.
	fromYAML, err := openapi3.NewLoader().LoadFromData(openAPIYAML)
	require.NoError(t, err)
	want, err := json.Marshal(fromYAML)
	require.NoError(t, err)
	got, err := json.Marshal(doc)
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got))

	// Every operation documents its success and has an id; every legacy or /v1 inference
	// operation documents the auth failure and the overload answer.
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			name := method + " " + path
			require.NotEmpty(t, op.OperationID, name)
			require.NotEmpty(t, op.Summary, name)
			ok := false
			for code := range op.Responses.Map() {
				ok = ok || strings.HasPrefix(code, "2") || strings.HasPrefix(code, "3")
			}
			require.True(t, ok || op.Extensions["x-tt-refused"] == true, "%s documents no success answer", name)
			// Inference: a POST with a body (not GET /v1/audio/voices, a video job's cancel, or a
			// route that only refuses, x-tt-refused).
			if op.Extensions["x-tt-service"] != nil && method == http.MethodPost && op.RequestBody != nil && op.Extensions["x-tt-refused"] == nil {
				for _, code := range []string{"401", "429", "503", "504"} {
					require.NotNil(t, op.Responses.Value(code), "%s lacks %s", name, code)
				}
			}
		}
	}
}

// openAPIPath turns a gin route pattern into an OpenAPI path template.
var ginParam = regexp.MustCompile(`[:*]([A-Za-z0-9_]+)`)

func openAPIPath(ginPath string) string { return ginParam.ReplaceAllString(ginPath, "{$1}") }

// specOperations are the "METHOD path" entries of the spec mounted for the services given
// (operations without x-tt-service are mounted for every service).
func specOperations(doc *openapi3.T, services ...runners.Service) []string {
	return specOperationsFor(doc, catalogue.RunnerSDXL, services...)
}

// specOperationsFor is specOperations with imageRunner as the image family's runner: an
// operation with x-tt-runners is mounted only for those runners, and an image-input runner
// (image-to-image, edits) mounts only its own image operations.
func specOperationsFor(doc *openapi3.T, imageRunner string, services ...runners.Service) []string {
	_, inputRunner := imageInputRouteFor(imageRunner)
	var out []string
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			svc, _ := op.Extensions["x-tt-service"].(string)
			if svc != "" && !slices.Contains(services, runners.Service(svc)) {
				continue
			}
			if svc == string(runners.ServiceImage) {
				var only []string
				if raw, ok := op.Extensions["x-tt-runners"].([]any); ok {
					for _, r := range raw {
						only = append(only, fmt.Sprint(r))
					}
				}
				if (only != nil && !slices.Contains(only, imageRunner)) || (only == nil && inputRunner) {
					continue
				}
			}
			out = append(out, method+" "+path)
		}
	}
	sort.Strings(out)
	return out
}

func routerOperations(s *Server) []string {
	var out []string
	for _, r := range s.engine.Routes() {
		out = append(out, r.Method+" "+openAPIPath(r.Path))
	}
	sort.Strings(out)
	return out
}

func specTestServer(f *fakeSched, services ...runners.Service) *Server {
	pools := make([]Pool, 0, len(services))
	for _, svc := range services {
		pools = append(pools, Pool{Service: svc, Runner: map[runners.Service]string{
			runners.ServiceImage: "tt-sdxl-trace", runners.ServiceAudio: "tt-whisper", runners.ServiceCNN: "tt-xla-resnet",
			runners.ServiceTextToSpeech: "tt-speecht5-tts",
		}[svc], Sched: f})
	}
	return New(Deps{Settings: testSettings(), Pools: pools, Sched: f, Metrics: metrics.New()})
}

// TestOpenAPIMatchesRouter: for each family (one per MODEL_RUNNER) and for all of them
// together (MODEL_POOLS), the routes registered on the router are exactly the spec's
// operations for those families: none missing from the spec, none in the spec unrouted.
func TestOpenAPIMatchesRouter(t *testing.T) {
	doc := loadSpec(t)
	all := []runners.Service{runners.ServiceImage, runners.ServiceAudio, runners.ServiceCNN, runners.ServiceTextToSpeech}
	cases := [][]runners.Service{{runners.ServiceImage}, {runners.ServiceAudio}, {runners.ServiceCNN}, {runners.ServiceTextToSpeech}, all}
	for _, services := range cases {
		t.Run(fmt.Sprint(services), func(t *testing.T) {
			s := specTestServer(&fakeSched{ready: true}, services...)
			require.Equal(t, specOperations(doc, services...), routerOperations(s))
		})
	}
	for _, runner := range []string{catalogue.RunnerSDXLImg2Img, catalogue.RunnerSDXLEdit} {
		t.Run(runner, func(t *testing.T) {
			s := New(Deps{Settings: testSettings(), Pools: []Pool{{Service: runners.ServiceImage, Runner: runner, Sched: &fakeSched{ready: true}}},
				Sched: &fakeSched{ready: true}, Metrics: metrics.New()})
			ops := routerOperations(s)
			require.Equal(t, specOperationsFor(doc, runner, runners.ServiceImage), ops)
			require.NotContains(t, ops, "POST /v1/images/generations")
		})
	}
}

var (
	decodersOnce   = make(chan struct{}, 1)
	textMediaTypes = []string{"application/x-ndjson", "text/event-stream", "text/vtt", "text/html", "text/javascript"}
)

// registerTextDecoders lets the validator read the streamed and text answers as strings.
func registerTextDecoders() {
	select {
	case decodersOnce <- struct{}{}:
		for _, ct := range textMediaTypes {
			openapi3filter.RegisterBodyDecoder(ct, openapi3filter.PlainBodyDecoder)
		}
	default:
	}
}

func specPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 32, 24))
	for y := range 24 {
		for x := range 32 {
			img.Set(x, y, color.RGBA{uint8(x * 8), uint8(y * 10), 90, 255})
		}
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

// specWAV is a second of a 440 Hz tone, 16 kHz mono PCM16.
func specWAV() []byte {
	const rate, n = 16000, 16000
	samples := make([]int16, n)
	for i := range samples {
		samples[i] = int16(8000 * math.Sin(2*math.Pi*440*float64(i)/rate))
	}
	return wavtest.PCM16(rate, samples)
}

// specSubmit answers like the runners do: an image, a transcription (streamed in two
// chunks when asked), or a classification.
func specSubmit(_ context.Context, req runners.Request, emit func(runners.Chunk) error) (runners.Result, error) {
	switch r := req.(type) {
	case *runners.ImageRequest:
		return &runners.ImageResult{Images: []image.Image{image.NewRGBA(image.Rect(0, 0, 64, 64))}}, nil
	case *runners.AudioRequest:
		if emit != nil {
			for i, w := range []string{"[SPEAKER_00] hello", "world"} {
				if err := emit(runners.TranscriptChunk{Text: w, ChunkID: i + 1}); err != nil {
					return nil, err
				}
			}
		}
		res := &runners.TranscriptionResult{Text: "hello world", Task: "transcribe", Language: "english", Duration: r.Duration}
		if r.Segments != nil {
			res.Segments = []runners.TranscriptionSegment{{ID: 0, Speaker: "SPEAKER_00", StartTime: 0, EndTime: r.Duration, Text: "hello world"}}
			res.SpeakerCount, res.Speakers = 1, []string{"SPEAKER_00"}
		}
		return res, nil
	case *runners.CNNRequest:
		return &runners.CNNResult{Top: []runners.Classification{{Label: "tabby, tabby cat", Index: 281, Probability: 0.61}, {Label: "tiger cat", Index: 282, Probability: 0.2}}}, nil
	}
	return nil, fmt.Errorf("unexpected request %T", req)
}

type specCase struct {
	name     string
	svc      runners.Service
	notReady bool
	method   string
	path     string
	ctype    string
	body     []byte
	auth     bool
	status   int
	skipReq  bool // the request is deliberately invalid (the spec would refuse it too)
	// first, when set, is sent before the request with the same Idempotency-Key.
	first []byte
}

func specMultipart(t *testing.T, fields map[string]string, fileName string, file []byte) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		require.NoError(t, w.WriteField(k, fields[k]))
	}
	if file != nil {
		fw, err := w.CreateFormFile("file", fileName)
		require.NoError(t, err)
		_, err = fw.Write(file)
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	return w.FormDataContentType(), buf.Bytes()
}

// TestOpenAPIContract sends real requests through the router and checks, with kin-openapi,
// that each request is valid for the spec and that the answer (status, content type, body)
// is one the spec documents.
func TestOpenAPIContract(t *testing.T) {
	registerTextDecoders()
	doc := loadSpec(t)
	router, err := gorillamux.NewRouter(doc)
	require.NoError(t, err)

	wav, pngImg := specWAV(), specPNG(t)
	b64 := base64.StdEncoding.EncodeToString
	mpAudio, mpAudioBody := specMultipart(t, map[string]string{"stream": "false"}, "a.wav", wav)
	mpAudioStream, mpAudioStreamBody := specMultipart(t, map[string]string{"stream": "true"}, "a.wav", wav)
	mpV1, mpV1Body := specMultipart(t, map[string]string{"model": "whisper-1"}, "a.wav", wav)
	mpV1Verbose, mpV1VerboseBody := specMultipart(t, map[string]string{"model": "whisper-1", "response_format": "verbose_json", "timestamp_granularities[]": "word"}, "a.wav", wav)
	mpV1SRT, mpV1SRTBody := specMultipart(t, map[string]string{"model": "whisper-1", "response_format": "srt"}, "a.wav", wav)
	mpV1VTT, mpV1VTTBody := specMultipart(t, map[string]string{"model": "whisper-1", "response_format": "vtt"}, "a.wav", wav)
	mpV1SSE, mpV1SSEBody := specMultipart(t, map[string]string{"model": "whisper-1", "stream": "true"}, "a.wav", wav)
	mpV1Bad, mpV1BadBody := specMultipart(t, map[string]string{"model": "whisper-1", "response_format": "xml"}, "a.wav", wav)
	mpV1Tr, mpV1TrBody := specMultipart(t, map[string]string{"model": "whisper-1", "response_format": "text"}, "a.wav", wav)
	mpCNN, mpCNNBody := specMultipart(t, map[string]string{"top_k": "2", "response_format": "verbose_json"}, "a.png", pngImg)
	const js = "application/json"
	img, aud, cnn := runners.ServiceImage, runners.ServiceAudio, runners.ServiceCNN
	cases := []specCase{
		{name: "legacy image", svc: img, method: "POST", path: "/image/generations", ctype: js, auth: true, status: 200,
			body: []byte(`{"prompt":"a fox","guidance_scale":7,"num_inference_steps":20,"seed":3,"number_of_images":2}`)},
		{name: "legacy image 422", svc: img, method: "POST", path: "/image/generations", ctype: js, auth: true, status: 422, skipReq: true,
			body: []byte(`{"guidance_scale":7}`)},
		{name: "legacy image 401", svc: img, method: "POST", path: "/image/generations", ctype: js, status: 401,
			body: []byte(`{"prompt":"a","guidance_scale":7}`)},
		{name: "legacy image 503", svc: img, notReady: true, method: "POST", path: "/image/generations", ctype: js, auth: true, status: 503,
			body: []byte(`{"prompt":"a","guidance_scale":7}`)},
		{name: "openai image", svc: img, method: "POST", path: "/v1/images/generations", ctype: js, auth: true, status: 200,
			body: []byte(`{"model":"gpt-image-1","prompt":"a fox","n":1,"size":"1024x1024","output_format":"jpeg","output_compression":80,"quality":"low","seed":1}`)},
		{name: "openai image 400", svc: img, method: "POST", path: "/v1/images/generations", ctype: js, auth: true, status: 400, skipReq: true,
			body: []byte(`{"prompt":"a fox","n":9}`)},
		{name: "openai image 404", svc: img, method: "POST", path: "/v1/images/generations", ctype: js, auth: true, status: 404,
			body: []byte(`{"prompt":"a fox","model":"nope"}`)},
		{name: "legacy image 409", svc: img, method: "POST", path: "/image/generations", ctype: js, auth: true, status: 409,
			first: []byte(`{"prompt":"a","guidance_scale":7}`), body: []byte(`{"prompt":"b","guidance_scale":7}`)},
		{name: "openai image 409", svc: img, method: "POST", path: "/v1/images/generations", ctype: js, auth: true, status: 409,
			first: []byte(`{"prompt":"a","n":1}`), body: []byte(`{"prompt":"b","n":1}`)},
		{name: "openai image 401", svc: img, method: "POST", path: "/v1/images/generations", ctype: js, status: 401,
			body: []byte(`{"prompt":"a fox"}`)},
		{name: "legacy audio json", svc: aud, method: "POST", path: "/audio/transcriptions", ctype: js, auth: true, status: 200,
			body: []byte(`{"file":"` + b64(wav) + `","stream":false,"is_preprocessing_enabled":true}`)},
		{name: "legacy audio multipart", svc: aud, method: "POST", path: "/audio/transcriptions", ctype: mpAudio, body: mpAudioBody, auth: true, status: 200},
		{name: "legacy audio ndjson", svc: aud, method: "POST", path: "/audio/transcriptions", ctype: mpAudioStream, body: mpAudioStreamBody, auth: true, status: 200},
		{name: "legacy audio 400", svc: aud, method: "POST", path: "/audio/transcriptions", ctype: js, auth: true, status: 400,
			body: []byte(`{"file":"***"}`)},
		{name: "v1 transcription json", svc: aud, method: "POST", path: "/v1/audio/transcriptions", ctype: mpV1, body: mpV1Body, auth: true, status: 200},
		{name: "v1 transcription verbose", svc: aud, method: "POST", path: "/v1/audio/transcriptions", ctype: mpV1Verbose, body: mpV1VerboseBody, auth: true, status: 200},
		{name: "v1 transcription srt", svc: aud, method: "POST", path: "/v1/audio/transcriptions", ctype: mpV1SRT, body: mpV1SRTBody, auth: true, status: 200},
		{name: "v1 transcription vtt", svc: aud, method: "POST", path: "/v1/audio/transcriptions", ctype: mpV1VTT, body: mpV1VTTBody, auth: true, status: 200},
		{name: "v1 transcription sse", svc: aud, method: "POST", path: "/v1/audio/transcriptions", ctype: mpV1SSE, body: mpV1SSEBody, auth: true, status: 200},
		{name: "v1 transcription 400", svc: aud, method: "POST", path: "/v1/audio/transcriptions", ctype: mpV1Bad, body: mpV1BadBody, auth: true, status: 400, skipReq: true},
		{name: "v1 transcription openai json 400", svc: aud, method: "POST", path: "/v1/audio/transcriptions", ctype: js, body: []byte(`{"model":"whisper-1"}`), auth: true, status: 400, skipReq: true},
		{name: "v1 transcription python json", svc: aud, method: "POST", path: "/v1/audio/transcriptions", ctype: js, auth: true, status: 200,
			body: []byte(`{"file":"` + b64(wav) + `","stream":false,"is_preprocessing_enabled":true}`)},
		{name: "v1 transcription python 422", svc: aud, method: "POST", path: "/v1/audio/transcriptions", ctype: js, body: []byte(`{}`), auth: true, status: 422, skipReq: true},
		{name: "v1 image python", svc: img, method: "POST", path: "/v1/images/generations", ctype: js, auth: true, status: 200,
			body: []byte(`{"prompt":"a","guidance_scale":7,"number_of_images":1}`)},
		{name: "v1 image mixed 400", svc: img, method: "POST", path: "/v1/images/generations", ctype: js, auth: true, status: 400, skipReq: true,
			body: []byte(`{"prompt":"a","n":2,"number_of_images":2}`)},
		{name: "v1 translation", svc: aud, method: "POST", path: "/v1/audio/translations", ctype: mpV1Tr, body: mpV1TrBody, auth: true, status: 200},
		{name: "cnn json", svc: cnn, method: "POST", path: "/cnn/search-image", ctype: js, auth: true, status: 200,
			body: []byte(`{"prompt":"` + b64(pngImg) + `","top_k":3,"min_confidence":0}`)},
		{name: "cnn v1 multipart", svc: cnn, method: "POST", path: "/v1/cnn/search-image", ctype: mpCNN, body: mpCNNBody, auth: true, status: 200},
		{name: "cnn 422", svc: cnn, method: "POST", path: "/cnn/search-image", ctype: js, auth: true, status: 422, skipReq: true,
			body: []byte(`{"prompt":"` + b64(pngImg) + `","top_k":0}`)},
		{name: "models", svc: aud, method: "GET", path: "/v1/models", auth: true, status: 200},
		{name: "model", svc: aud, method: "GET", path: "/v1/models/whisper-1", auth: true, status: 200},
		{name: "model 404", svc: aud, method: "GET", path: "/v1/models/nope", auth: true, status: 404},
		{name: "models 401", svc: aud, method: "GET", path: "/v1/models", status: 401},
		{name: "liveness", svc: img, method: "GET", path: "/tt-liveness", status: 200},
		{name: "liveness 503", svc: img, notReady: true, method: "GET", path: "/tt-liveness", status: 503},
		{name: "health", svc: img, method: "GET", path: "/health", status: 200},
		{name: "health 503", svc: img, notReady: true, method: "GET", path: "/health", status: 503},
		{name: "metrics", svc: img, method: "GET", path: "/metrics", status: 200},
		{name: "deep reset", svc: img, method: "POST", path: "/tt-deep-reset", auth: true, status: 200},
		{name: "deep reset 401", svc: img, method: "POST", path: "/tt-deep-reset", status: 401},
		{name: "reset device", svc: img, method: "POST", path: "/tt-reset-device?device_id=0", auth: true, status: 200},
		{name: "reset device 422", svc: img, method: "POST", path: "/tt-reset-device", auth: true, status: 422, skipReq: true},
		{name: "openapi", svc: img, method: "GET", path: "/openapi.json", status: 200},
		{name: "docs", svc: img, method: "GET", path: "/docs", status: 200},
		{name: "ui redirect", svc: img, method: "GET", path: "/ui", status: 301},
		{name: "ui script", svc: img, method: "GET", path: "/ui/app.js", status: 200},
		{name: "ui 404", svc: img, method: "GET", path: "/ui/nope.js", status: 404},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeSched{ready: !tc.notReady, submit: specSubmit}
			if tc.notReady {
				f.submit = func(context.Context, runners.Request, func(runners.Chunk) error) (runners.Result, error) {
					return nil, scheduler.ErrNotReady
				}
			}
			h := specTestServer(f, tc.svc).Handler()
			if tc.first != nil {
				first := httptest.NewRequest(tc.method, tc.path, bytes.NewReader(tc.first))
				first.Header.Set("Content-Type", tc.ctype)
				first.Header.Set("Authorization", "Bearer k")
				first.Header.Set("Idempotency-Key", "key-1")
				w := httptest.NewRecorder()
				h.ServeHTTP(w, first)
				require.Equal(t, http.StatusOK, w.Code, "%.300s", w.Body.String())
			}
			req := httptest.NewRequest(tc.method, tc.path, bytes.NewReader(tc.body))
			if tc.first != nil {
				req.Header.Set("Idempotency-Key", "key-1")
			}
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			if tc.auth {
				req.Header.Set("Authorization", "Bearer k")
			}
			route, params, err := router.FindRoute(req)
			require.NoError(t, err)
			in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
				Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
			if !tc.skipReq {
				require.NoError(t, openapi3filter.ValidateRequest(context.Background(), in), "request is not valid for the spec")
			}
			req.Body = io.NopCloser(bytes.NewReader(tc.body)) // the validator read it
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			require.Equal(t, tc.status, w.Code, "body: %.400s", w.Body.String())
			require.NoError(t, openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
				RequestValidationInput: in, Status: w.Code, Header: w.Header(), Body: io.NopCloser(bytes.NewReader(w.Body.Bytes())),
				Options: &openapi3filter.Options{IncludeResponseStatus: true},
			}), "answer %d %s is not one the spec documents: %.400s", w.Code, w.Header().Get("Content-Type"), w.Body.String())
		})
	}
}

// TestAPIDocCoversSpec keeps docs/API.md in step with the spec: every path is mentioned.
func TestAPIDocCoversSpec(t *testing.T) {
	doc := loadSpec(t)
	md, err := os.ReadFile(filepath.Join("..", "docs", "API.md"))
	require.NoError(t, err)
	for path := range doc.Paths.Map() {
		require.Contains(t, string(md), "`"+path, "docs/API.md does not mention %s", path)
	}
	// And every field of every request schema.
	for name, ref := range doc.Components.Schemas {
		if !strings.HasSuffix(name, "Request") && !strings.HasSuffix(name, "Upload") {
			continue
		}
		for field := range ref.Value.Properties {
			require.Contains(t, string(md), "`"+field+"`", "docs/API.md does not describe %s.%s", name, field)
		}
	}
}
