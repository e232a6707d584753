package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// dialectReq posts body to path with extra headers (name, value pairs).
func dialectReq(h http.Handler, path, ctype string, body []byte, headers ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("Authorization", "Bearer k")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// shapeOf names the answer's shape: "python" for {"images"} or a Python transcription,
// "openai" for {"data"} or an OpenAI transcription, "python-error" for {"detail"},
// "openai-error" for {"error"}, "both-error" for a mixed-dialect 400.
func shapeOf(t *testing.T, body []byte) string {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m), "%s", body)
	_, detail := m["detail"]
	_, errObj := m["error"]
	switch {
	case detail && errObj:
		return "both-error"
	case detail:
		return "python-error"
	case errObj:
		return "openai-error"
	case m["images"] != nil:
		// HEAD's /generations answer carries generation_time; /image-to-image and /edits
		// answer {"images"} only.
		if _, timed := m["generation_time"]; !timed {
			require.Len(t, m, 1, "an untimed image answer is {\"images\"} only: %s", body)
		}
		return "python"
	case m["data"] != nil:
		return "openai"
	case m["duration"] != nil: // the Python transcription object
		return "python"
	case m["text"] != nil:
		return "openai"
	}
	t.Fatalf("unknown shape: %s", body)
	return ""
}

func TestImageDialects(t *testing.T) {
	tests := []struct {
		name, path, body string
		headers          []string
		status           int
		shape, dialect   string
		mentions         []string // the error message names these fields
	}{
		{name: "python body, only shared fields", path: "/v1/images/generations", body: `{"prompt":"a cat","seed":1,"guidance_scale":6}`,
			status: 200, shape: "python", dialect: "python"},
		{name: "python body, HEAD fields", path: "/v1/images/generations", body: `{"prompt":"a cat","number_of_images":2,"image_return_format":"PNG","image_quality":100}`,
			status: 200, shape: "python", dialect: "python"},
		{name: "openai body", path: "/v1/images/generations", body: `{"prompt":"a cat","model":"dall-e-3","n":2}`,
			status: 200, shape: "openai", dialect: "openai"},
		{name: "shared fields from an OpenAI SDK", path: "/v1/images/generations", body: `{"prompt":"a cat"}`,
			headers: []string{"X-Stainless-Lang", "python"}, status: 200, shape: "openai", dialect: "openai"},
		{name: "explicit dialect header wins for shared fields", path: "/v1/images/generations", body: `{"prompt":"a cat"}`,
			headers: []string{"X-Stainless-Lang", "js", dialectHeader, "python"}, status: 200, shape: "python", dialect: "python"},
		{name: "explicit openai", path: "/v1/images/generations", body: `{"prompt":"a cat"}`,
			headers: []string{dialectHeader, "OpenAI"}, status: 200, shape: "openai", dialect: "openai"},
		{name: "bad dialect header", path: "/v1/images/generations", body: `{"prompt":"a cat"}`,
			headers: []string{dialectHeader, "klingon"}, status: 400, shape: "openai-error", mentions: []string{dialectHeader}},
		{name: "fields decide over the SDK header", path: "/v1/images/generations", body: `{"prompt":"a cat","number_of_images":1}`,
			headers: []string{"X-Stainless-Lang", "js"}, status: 200, shape: "python", dialect: "python"},
		{name: "mixed body", path: "/v1/images/generations", body: `{"prompt":"a cat","n":2,"size":"1024x1024","number_of_images":2,"image_quality":90}`,
			status: 400, shape: "both-error", mentions: []string{"'n'", "'size'", "'number_of_images'", "'image_quality'"}},
		{name: "python dialect error envelope on /v1", path: "/v1/images/generations", body: `{"prompt":"a","number_of_images":9}`,
			status: 422, shape: "python-error", dialect: "python"},
		{name: "openai dialect error envelope on /v1", path: "/v1/images/generations", body: `{"prompt":"a","n":9}`,
			status: 400, shape: "openai-error", dialect: "openai"},
		{name: "legacy path refuses OpenAI fields", path: "/image/generations", body: `{"prompt":"a cat","n":2}`,
			status: 400, shape: "both-error", mentions: []string{"'n'", "/v1/images/generations"}},
		{name: "legacy path python body", path: "/image/generations", body: `{"prompt":"a cat","image_return_format":"PNG"}`,
			status: 200, shape: "python", dialect: "python"},
		{name: "lora refused, not ignored", path: "/v1/images/generations", body: `{"prompt":"a cat","lora_path":"/lora/x.safetensors"}`,
			status: 400, shape: "python-error", dialect: "python", mentions: []string{"lora_path"}},
		{name: "lora_scale alone refused", path: "/image/generations", body: `{"prompt":"a cat","lora_scale":0.5}`,
			status: 400, shape: "python-error", dialect: "python", mentions: []string{"lora_scale"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newOpenAIServer(runners.ServiceImage, "tt-sdxl-trace", imageFake())
			w := dialectReq(h, tc.path, "application/json", []byte(tc.body), tc.headers...)
			require.Equal(t, tc.status, w.Code, w.Body.String())
			require.Equal(t, tc.shape, shapeOf(t, w.Body.Bytes()))
			require.Equal(t, tc.dialect, w.Header().Get(dialectHeader))
			for _, m := range tc.mentions {
				require.Contains(t, w.Body.String(), m)
			}
			if tc.shape == "both-error" {
				var e struct {
					Detail string            `json:"detail"`
					Error  openAIErrorObject `json:"error"`
				}
				require.NoError(t, json.Unmarshal(w.Body.Bytes(), &e))
				require.Equal(t, e.Detail, e.Error.Message)
				require.Equal(t, "mixed_dialects", *e.Error.Code)
				require.NotNil(t, e.Error.Param)
			}
		})
	}
}

func TestLegacyPathsCarryDeprecationHeaders(t *testing.T) {
	tests := []struct {
		svc             runners.Service
		path, successor string
		body            string
	}{
		{runners.ServiceImage, "/image/generations", "/v1/images/generations", `{"prompt":"a"}`},
		{runners.ServiceAudio, "/audio/transcriptions", "/v1/audio/transcriptions", `{"file":""}`},
		{runners.ServiceCNN, "/cnn/search-image", "/v1/cnn/search-image", `{}`},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			h := newOpenAIServer(tc.svc, "mock", imageFake())
			for _, auth := range []string{"Bearer k", ""} { // errors before the handler too
				req := httptest.NewRequest(http.MethodPost, tc.path, bytes.NewReader([]byte(tc.body)))
				req.Header.Set("Content-Type", "application/json")
				if auth != "" {
					req.Header.Set("Authorization", auth)
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				require.Equal(t, "true", w.Header().Get("Deprecation"), w.Body.String())
				require.Equal(t, "2026-06-30", w.Header().Get("Sunset"))
				require.Equal(t, "<"+tc.successor+`>; rel="successor-version"`, w.Header().Get("Link"))
			}
			// The /v1 successor carries none.
			w := dialectReq(h, tc.successor, "application/json", []byte(tc.body))
			require.Empty(t, w.Header().Get("Deprecation"))
			require.Empty(t, w.Header().Get("Sunset"))
		})
	}
}

func TestAudioDialects(t *testing.T) {
	wav := testWAV(16000, 16000)
	b64 := base64.StdEncoding.EncodeToString(wav)
	tests := []struct {
		name, path string
		json       string   // JSON body, or
		form       []string // multipart fields besides the file
		headers    []string
		status     int
		shape      string
		dialect    string
		task       string // the runner request's task
	}{
		{name: "python json", path: "/v1/audio/transcriptions", json: `{"file":"` + b64 + `"}`, status: 200, shape: "python", dialect: "python", task: ""},
		{name: "python json on translations", path: "/v1/audio/translations", json: `{"file":"` + b64 + `"}`, status: 200, shape: "python", dialect: "python", task: taskTranslate},
		{name: "python multipart", path: "/v1/audio/transcriptions", form: []string{"stream", "false"}, status: 200, shape: "python", dialect: "python"},
		{name: "openai multipart", path: "/v1/audio/transcriptions", form: []string{"model", "whisper-1"}, status: 200, shape: "openai", dialect: "openai", task: taskTranscribe},
		{name: "openai multipart without model, from the SDK", path: "/v1/audio/transcriptions", headers: []string{"X-Stainless-Lang", "go"},
			status: 400, shape: "openai-error", dialect: "openai"},
		{name: "mixed multipart", path: "/v1/audio/transcriptions", form: []string{"model", "whisper-1", "temperatures", "0.0,0.2"},
			status: 400, shape: "both-error"},
		{name: "openai fields in JSON: OpenAI's 400 (its audio API takes multipart)", path: "/v1/audio/transcriptions", json: `{"file":"` + b64 + `","model":"whisper-1"}`,
			status: 400, shape: "openai-error", dialect: "openai"},
		{name: "python json error in FastAPI's shape", path: "/v1/audio/transcriptions", json: `{}`, status: 422, shape: "python-error", dialect: "python"},
		{name: "legacy refuses OpenAI's fields", path: "/audio/transcriptions", form: []string{"language", "en"}, status: 400, shape: "both-error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := audioFake(&runners.TranscriptionResult{Text: "hello", Task: "transcribe", Language: "english", Duration: 1})
			h := newOpenAIServer(runners.ServiceAudio, "tt-whisper", f)
			var w *httptest.ResponseRecorder
			if tc.json != "" {
				w = dialectReq(h, tc.path, "application/json", []byte(tc.json), tc.headers...)
			} else {
				ct, body := multipartBody(t, wav, tc.form...)
				w = dialectReq(h, tc.path, ct, body, tc.headers...)
			}
			require.Equal(t, tc.status, w.Code, w.Body.String())
			require.Equal(t, tc.shape, shapeOf(t, w.Body.Bytes()))
			require.Equal(t, tc.dialect, w.Header().Get(dialectHeader))
			if tc.status == 200 && tc.task != "" {
				require.Equal(t, tc.task, f.last.(*runners.AudioRequest).Task)
			}
		})
	}
}

func TestNoAuth(t *testing.T) {
	cfg := testSettings()
	cfg.NoAuth = true
	h := New(Deps{Settings: cfg, Service: runners.ServiceImage, Sched: imageFake()}).Handler()
	for _, path := range []string{"/image/generations", "/v1/images/generations"} {
		for _, auth := range []string{"", "Bearer wrong"} {
			req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader([]byte(`{"prompt":"a"}`)))
			req.Header.Set("Content-Type", "application/json")
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			require.Equal(t, 200, w.Code, "%s %q: %s", path, auth, w.Body.String())
		}
	}
	req := httptest.NewRequest(http.MethodGet, "/v1/models", nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	require.Equal(t, 200, w.Code)
	// Without NO_AUTH the same requests are refused.
	h = newOpenAIServer(runners.ServiceImage, "tt-sdxl-trace", imageFake())
	req = httptest.NewRequest(http.MethodPost, "/v1/images/generations", bytes.NewReader([]byte(`{"prompt":"a"}`)))
	w = httptest.NewRecorder()
	h.ServeHTTP(w, req)
	require.Equal(t, 401, w.Code)
}

func TestModelsServedNameAndSchema(t *testing.T) {
	cfg := testSettings()
	cfg.ServedModelName = "my-sdxl"
	h := New(Deps{Settings: cfg, Service: runners.ServiceImage, Sched: imageFake()}).Handler()
	req := httptest.NewRequest(http.MethodGet, "/v1/models", nil)
	req.Header.Set("Authorization", "Bearer k")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	require.Equal(t, 200, w.Code)
	var list struct {
		Data []struct {
			ID     string         `json:"id"`
			Schema map[string]any `json:"schema"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &list))
	require.Equal(t, "my-sdxl", list.Data[0].ID, "SERVED_MODEL_NAME is listed first")
	ids := []string{}
	for _, m := range list.Data {
		ids = append(ids, m.ID)
		require.Equal(t, "ImageGenerateRequest", m.Schema["title"], m.ID)
		props := m.Schema["properties"].(map[string]any)
		for _, f := range []string{"prompt", "guidance_scale", "image_return_format", "image_quality", "number_of_images"} {
			require.Contains(t, props, f)
		}
		require.Equal(t, []any{"prompt"}, m.Schema["required"])
	}
	require.Contains(t, ids, "tt-sdxl-trace", "the runner name stays listed, as HEAD's id")
	// The served name is a model name OpenAI requests may use.
	w = dialectReq(h, "/v1/images/generations", "application/json", []byte(`{"prompt":"a","model":"my-sdxl"}`))
	require.Equal(t, 200, w.Code, w.Body.String())
	// Audio models carry no schema.
	h = newOpenAIServer(runners.ServiceAudio, "tt-whisper", audioFake(&runners.TranscriptionResult{}))
	req = httptest.NewRequest(http.MethodGet, "/v1/models", nil)
	req.Header.Set("Authorization", "Bearer k")
	w = httptest.NewRecorder()
	h.ServeHTTP(w, req)
	require.NotContains(t, w.Body.String(), `"schema"`)
}

// TestDialectRoutes401BothEnvelopes: before the body is read the dialect is unknown, so a 401
// on a two-dialect route carries HEAD's detail and OpenAI's error.
func TestDialectRoutes401BothEnvelopes(t *testing.T) {
	h := newOpenAIServer(runners.ServiceImage, "tt-sdxl-trace", imageFake())
	req := httptest.NewRequest(http.MethodPost, "/v1/images/generations", bytes.NewReader([]byte(`{"prompt":"a"}`)))
	req.Header.Set("Authorization", "Bearer wrong")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	require.Equal(t, 401, w.Code)
	require.Equal(t, "both-error", shapeOf(t, w.Body.Bytes()))
	require.Contains(t, w.Body.String(), `"detail":"Invalid or missing API Key"`)
	require.Contains(t, w.Body.String(), `"code":"invalid_api_key"`)
	// /v1/models stays OpenAI's.
	req = httptest.NewRequest(http.MethodGet, "/v1/models", nil)
	w = httptest.NewRecorder()
	h.ServeHTTP(w, req)
	require.Equal(t, 401, w.Code)
	require.Equal(t, "openai-error", shapeOf(t, w.Body.Bytes()))
}
