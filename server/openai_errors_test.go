package server

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

func TestUnmatchedEnvelopeByPath(t *testing.T) {
	h := newOpenAIServer(runners.ServiceImage, "tt-sdxl-trace", imageFake())
	tests := []struct {
		method, path string
		status       int
		code         string // OpenAI code; "" for the Python {"detail"} shape
		detail       string
		allow        string
	}{
		{"GET", "/v1/nope", 404, "not_found", "", ""},
		{"POST", "/v1/chat/completions", 404, "not_found", "", ""},
		{"GET", "/v1", 404, "not_found", "", ""},
		{"POST", "/v1/audio/transcriptions", 404, "not_found", "", ""}, // the other family's route
		{"DELETE", "/v1/models", 405, "method_not_allowed", "", "GET"},
		{"GET", "/v1/images/generations", 405, "method_not_allowed", "", "POST"},
		{"GET", "/nope", 404, "", "Not Found", ""},
		{"GET", "/v1nope", 404, "", "Not Found", ""},
		{"GET", "/image/generations", 405, "", "Method Not Allowed", "POST"},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			w := do(h, tc.method, tc.path, "", "Bearer k", nil)
			require.Equal(t, tc.status, w.Code, w.Body.String())
			if tc.allow != "" {
				require.Equal(t, tc.allow, w.Header().Get("Allow"))
			}
			if tc.code == "" {
				require.JSONEq(t, `{"detail":"`+tc.detail+`"}`, w.Body.String())
				return
			}
			msg := requireEnvelope(t, w.Body.Bytes(), "invalid_request_error", nil, tc.code)
			require.Contains(t, msg, tc.method+" "+tc.path)
		})
	}
	// A huge unknown path is not echoed in full.
	w := do(h, "GET", "/v1/"+strings.Repeat("a", 5000), "", "", nil)
	require.Equal(t, 404, w.Code)
	require.Less(t, len(w.Body.String()), 600)
}

func TestIdempotencyEnvelopeByRoute(t *testing.T) {
	h := newOpenAIServer(runners.ServiceImage, "tt-sdxl-trace", imageFake())
	post := func(path, key, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer k")
		req.Header.Set(idempotencyHeader, key)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	tests := []struct {
		path, first, second string
		openAI              bool
	}{
		{"/v1/images/generations", `{"prompt":"a","model":"dall-e-3"}`, `{"prompt":"b","model":"dall-e-3"}`, true},
		{"/image/generations", `{"prompt":"a","guidance_scale":5}`, `{"prompt":"b","guidance_scale":5}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			w := post(tc.path, "key-1", tc.first)
			require.Equal(t, 200, w.Code, w.Body.String())

			w = post(tc.path, "key-1", tc.second)
			require.Equal(t, 409, w.Code, w.Body.String())
			if tc.openAI {
				msg := requireEnvelope(t, w.Body.Bytes(), "invalid_request_error", nil, nil)
				require.Contains(t, msg, "key-1")
			} else {
				require.Contains(t, w.Body.String(), `"detail":"Idempotency-Key \"key-1\" was already used`)
			}

			w = post(tc.path, strings.Repeat("k", maxIdempotencyKey+1), tc.first)
			require.Equal(t, 400, w.Code, w.Body.String())
			if tc.openAI {
				requireEnvelope(t, w.Body.Bytes(), "invalid_request_error", nil, nil)
			} else {
				require.Contains(t, w.Body.String(), `"detail":"header Idempotency-Key is longer`)
			}
		})
	}

	// A chunked body (no Content-Length) over the limit is cut off while the idempotency
	// middleware reads it: 413 in OpenAI's envelope.
	body := io.MultiReader(strings.NewReader(`{"prompt":"`), bytes.NewReader(bytes.Repeat([]byte("a"), maxJSONBody)), strings.NewReader(`"}`))
	req := httptest.NewRequest(http.MethodPost, "/v1/images/generations", body)
	req.Header.Set("Authorization", "Bearer k")
	req.Header.Set(idempotencyHeader, "big")
	require.EqualValues(t, -1, req.ContentLength)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	require.Equal(t, 413, w.Code, w.Body.String())
	requireEnvelope(t, w.Body.Bytes(), "invalid_request_error", nil, nil)
}

func TestRateLimitEnvelopeByRoute(t *testing.T) {
	tests := []struct {
		svc    runners.Service
		runner string
		path   string
		ctype  string
		body   string
		openAI bool
	}{
		{runners.ServiceImage, "tt-sdxl-trace", "/v1/images/generations", "application/json", `{"prompt":"a"}`, true},
		{runners.ServiceImage, "tt-sdxl-trace", "/image/generations", "application/json", `{"prompt":"a","guidance_scale":5}`, false},
		{runners.ServiceAudio, "tt-whisper", "/v1/audio/transcriptions", "multipart/form-data; boundary=x", "--x--\r\n", true},
		{runners.ServiceAudio, "tt-whisper", "/v1/audio/translations", "multipart/form-data; boundary=x", "--x--\r\n", true},
		// CNN has no OpenAI counterpart: its /v1 route keeps the Python shape.
		{runners.ServiceCNN, "tt-xla-resnet", "/v1/cnn/search-image", "application/json", `{}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			s := openAISettings(tc.runner)
			s.RateLimit, s.RateBurst = 0.001, 1 // one request, then a ~17 min wait
			f := imageFake()
			f.submit = func(context.Context, runners.Request, func(runners.Chunk) error) (runners.Result, error) {
				return nil, runners.ErrBadRequest
			}
			h := New(Deps{Settings: s, Service: tc.svc, Sched: f}).Handler()
			first := do(h, "POST", tc.path, tc.ctype, "Bearer k", []byte(tc.body))
			require.NotEqual(t, 429, first.Code, first.Body.String())
			w := do(h, "POST", tc.path, tc.ctype, "Bearer k", []byte(tc.body))
			require.Equal(t, 429, w.Code, w.Body.String())
			require.NotEmpty(t, w.Header().Get("Retry-After"))
			require.Equal(t, "true", w.Header().Get("x-should-retry"))
			if tc.openAI {
				msg := requireEnvelope(t, w.Body.Bytes(), "rate_limit_error", nil, "rate_limit_exceeded")
				require.Contains(t, msg, "RATE_LIMIT_PER_SECOND")
			} else {
				require.Contains(t, w.Body.String(), `{"detail":"Rate limit exceeded`)
			}
		})
	}
}
