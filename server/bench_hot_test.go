package server

// Benchmarks of the server's hot paths: every route end to end through the gin engine (with
// a fake scheduler that answers at once, so the figures are the HTTP layer's own cost: auth,
// middleware, parsing, media decode, response encoding), and the pieces on their own.
//
//	go test -run '^$' -bench . -benchmem ./server/

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/color"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/golang-jwt/jwt/v5"

	"github.com/tenstorrent/tt-media-server-go/media/imaging"
	"github.com/tenstorrent/tt-media-server-go/metrics"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/scheduler"
)

// benchRoute sends the same request b.N times and fails on any other status than want.
func benchRoute(b *testing.B, h http.Handler, method, path, ctype string, body []byte, want int) {
	b.Helper()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(method, path, bytes.NewReader(body))
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		req.Header.Set("Authorization", "Bearer k")
		req.Header.Set("X-Request-Id", "bench-1")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != want {
			b.Fatalf("%s %s: status %d, want %d: %s", method, path, w.Code, want, w.Body.String())
		}
	}
}

// formBody builds a multipart form with a file part (when file is not nil) and fields
// given as (name, value) pairs.
func formBody(b testing.TB, file []byte, filename string, fields ...string) (string, []byte) {
	b.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if file != nil {
		fw, err := w.CreateFormFile("file", filename)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := fw.Write(file); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i+1 < len(fields); i += 2 {
		if err := w.WriteField(fields[i], fields[i+1]); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return w.FormDataContentType(), buf.Bytes()
}

// gradient is a w×h picture with some detail, so JPEG sizes are realistic.
func gradient(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetRGBA(x, y, color.RGBA{uint8(x * 255 / w), uint8(y * 255 / h), uint8((x ^ y) & 0xff), 255})
		}
	}
	return img
}

func benchJPEG(b testing.TB, w, h int) []byte {
	b.Helper()
	data, err := imaging.EncodeJPEG(gradient(w, h), 85)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// benchTranscript is a 30 s transcription with 8 segments, about what a Whisper window gives.
func benchTranscript() *runners.TranscriptionResult {
	res := &runners.TranscriptionResult{Task: "transcribe", Language: "english", Duration: 30}
	text := ""
	for i := range 8 {
		seg := " The beach was a popular spot on a hot summer day, number " + strconv.Itoa(i) + "."
		text += seg
		res.Segments = append(res.Segments, runners.TranscriptionSegment{
			ID: i, Speaker: "SPEAKER_00", StartTime: float64(i) * 3.75, EndTime: float64(i+1) * 3.75, Text: seg,
			Tokens:     []int{50364, 440, 7534, 390, 257, 3743, 4008, 322, 257, 2368, 4266, 786, 13, 50552},
			AvgLogprob: -0.25, CompressionRatio: 1.2, NoSpeechProb: 0.01,
		})
	}
	res.Text = text
	return res
}

func fixedSched(v runners.Result) *fakeSched {
	return &fakeSched{ready: true, submit: func(context.Context, runners.Request, func(runners.Chunk) error) (runners.Result, error) {
		return v, nil
	}}
}

// benchServer is the server as production runs it: metrics on, the access log at INFO
// (JSON lines to a discarded writer).
func benchServer(svc runners.Service, runner string, f *fakeSched) http.Handler {
	log := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	return New(Deps{Settings: openAISettings(runner), Service: svc, Sched: f, Metrics: metrics.New(), Logger: log}).Handler()
}

// BenchmarkRoute is each route end to end through the engine, the scheduler answering at once,
// with metrics and the access log on.
func BenchmarkRoute(b *testing.B) {
	wav5 := testWAV(16000, 5*16000)
	audioJSON, _ := json.Marshal(map[string]any{"file": base64.StdEncoding.EncodeToString(wav5), "stream": false})
	audioStreamJSON, _ := json.Marshal(map[string]any{"file": base64.StdEncoding.EncodeToString(wav5), "stream": true})
	audioCT, audioForm := formBody(b, wav5, "speech.wav", "stream", "false")
	jpeg224 := benchJPEG(b, 224, 224)
	cnnJSON, _ := json.Marshal(map[string]any{"prompt": base64.StdEncoding.EncodeToString(jpeg224)})
	cnnCT, cnnForm := formBody(b, jpeg224, "cat.jpg", "top_k", "3")
	imageBody := []byte(`{"prompt":"Volcano on a beach","negative_prompt":"low quality","num_inference_steps":20,"seed":0,"guidance_scale":7.0,"number_of_images":1}`)

	small := &runners.ImageResult{Images: []image.Image{gradient(64, 64)}}
	transcript := benchTranscript()
	streamSched := &fakeSched{ready: true, submit: func(_ context.Context, _ runners.Request, emit func(runners.Chunk) error) (runners.Result, error) {
		for i, seg := range transcript.Segments {
			if err := emit(runners.TranscriptChunk{Text: seg.Text, ChunkID: i + 1}); err != nil {
				return nil, err
			}
		}
		return transcript, nil
	}}
	cnnRes := &runners.CNNResult{Top: []runners.Classification{
		{Label: "tabby, tabby cat", Index: 281, Probability: 0.81}, {Label: "tiger cat", Index: 282, Probability: 0.12},
		{Label: "Egyptian cat", Index: 285, Probability: 0.04}}}

	imageH := benchServer(runners.ServiceImage, "tt-sdxl-trace", fixedSched(small))
	audioH := benchServer(runners.ServiceAudio, "tt-whisper", fixedSched(transcript))
	audioStreamH := benchServer(runners.ServiceAudio, "tt-whisper", streamSched)
	cnnH := benchServer(runners.ServiceCNN, "tt-xla-resnet", fixedSched(cnnRes))
	oaImageH, oaAudioH := imageH, audioH

	full := &fakeSched{ready: true, submit: func(context.Context, runners.Request, func(runners.Chunk) error) (runners.Result, error) {
		return nil, &scheduler.Rejection{Err: scheduler.ErrQueueFull, RetryAfter: 1500 * time.Millisecond}
	}}
	fullH := benchServer(runners.ServiceImage, "tt-sdxl-trace", full)

	b.Run("liveness", func(b *testing.B) { benchRoute(b, imageH, "GET", "/tt-liveness", "", nil, 200) })
	b.Run("image_429_queue_full", func(b *testing.B) {
		benchRoute(b, fullH, "POST", "/image/generations", "application/json", imageBody, http.StatusTooManyRequests)
	})
	b.Run("image_401_bad_key", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			req := httptest.NewRequest(http.MethodPost, "/image/generations", bytes.NewReader(imageBody))
			req.Header.Set("Authorization", "Bearer wrong")
			w := httptest.NewRecorder()
			imageH.ServeHTTP(w, req)
			if w.Code != http.StatusUnauthorized {
				b.Fatal(w.Code)
			}
		}
	})
	b.Run("image_json_64px", func(b *testing.B) {
		benchRoute(b, imageH, "POST", "/image/generations", "application/json", imageBody, 200)
	})
	b.Run("audio_json_5s", func(b *testing.B) {
		benchRoute(b, audioH, "POST", "/audio/transcriptions", "application/json", audioJSON, 200)
	})
	b.Run("audio_multipart_5s", func(b *testing.B) {
		benchRoute(b, audioH, "POST", "/audio/transcriptions", audioCT, audioForm, 200)
	})
	b.Run("audio_json_5s_stream", func(b *testing.B) {
		benchRoute(b, audioStreamH, "POST", "/audio/transcriptions", "application/json", audioStreamJSON, 200)
	})
	b.Run("cnn_json_224", func(b *testing.B) {
		benchRoute(b, cnnH, "POST", "/cnn/search-image", "application/json", cnnJSON, 200)
	})
	b.Run("cnn_multipart_224", func(b *testing.B) { benchRoute(b, cnnH, "POST", "/cnn/search-image", cnnCT, cnnForm, 200) })
	b.Run("v1_image_b64_64px", func(b *testing.B) {
		benchRoute(b, oaImageH, "POST", "/v1/images/generations", "application/json",
			[]byte(`{"prompt":"a volcano","model":"dall-e-3","response_format":"b64_json","size":"1024x1024","n":1}`), 200)
	})
	for _, format := range []string{"json", "verbose_json", "text", "srt", "vtt"} {
		ct, form := formBody(b, wav5, "speech.wav", "model", "whisper-1", "response_format", format)
		b.Run("v1_audio_5s_"+format, func(b *testing.B) {
			benchRoute(b, oaAudioH, "POST", "/v1/audio/transcriptions", ct, form, 200)
		})
	}
}

// BenchmarkAccessLog is the liveness route with the access log on (JSON lines to a discarded
// writer, as LOG_LEVEL=INFO writes them) against the log level that skips it.
func BenchmarkAccessLog(b *testing.B) {
	for _, tc := range []struct {
		name  string
		level slog.Level
	}{{"info", slog.LevelInfo}, {"warning", slog.LevelWarn}} {
		b.Run(tc.name, func(b *testing.B) {
			log := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: tc.level}))
			h := New(Deps{Settings: testSettings(), Service: runners.ServiceImage, Sched: fixedSched(nil), Logger: log}).Handler()
			benchRoute(b, h, "GET", "/tt-liveness", "", nil, 200)
		})
	}
}

// ginContext is a gin context over a recorder, for the writers alone.
func ginContext() (*gin.Context, *httptest.ResponseRecorder) {
	w := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(w)
	c.Request = httptest.NewRequest(http.MethodPost, "/", nil)
	return c, w
}

// BenchmarkParse is each request parser on its own (no routing, no media decode).
func BenchmarkParse(b *testing.B) {
	imageBody := []byte(`{"prompt":"Volcano on a beach","negative_prompt":"low quality","num_inference_steps":20,"seed":0,"guidance_scale":7.0,"number_of_images":1}`)
	b.Run("image_json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := parseImageRequest(imageBody, imageDefaults{steps: 20}); err != nil {
				b.Fatal(err)
			}
		}
	})
	wav5 := testWAV(16000, 5*16000)
	ct, form := formBody(b, wav5, "speech.wav", "stream", "false", "is_preprocessing_enabled", "true")
	b.Run("audio_multipart_5s", func(b *testing.B) {
		b.SetBytes(int64(len(form)))
		b.ReportAllocs()
		for b.Loop() {
			req := httptest.NewRequest(http.MethodPost, "/audio/transcriptions", bytes.NewReader(form))
			req.Header.Set("Content-Type", ct)
			if _, err := parseAudioUpload(mustRead(req)); err != nil {
				b.Fatal(err)
			}
		}
	})
	jpeg224 := benchJPEG(b, 224, 224)
	cnnJSON, _ := json.Marshal(map[string]any{"prompt": base64.StdEncoding.EncodeToString(jpeg224), "top_k": 5})
	cnnCT, cnnForm := formBody(b, jpeg224, "cat.jpg", "top_k", "5")
	for _, tc := range []struct {
		name, ct string
		body     []byte
	}{{"cnn_json_224", "application/json", cnnJSON}, {"cnn_multipart_224", cnnCT, cnnForm}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.body)))
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/cnn/search-image", bytes.NewReader(tc.body))
				req.Header.Set("Content-Type", tc.ct)
				up, err := parseCNNUpload(mustRead(req))
				if err != nil || up.topK != 5 {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEncode is each response writer on its own (verbose_json through the route only:
// BenchmarkRoute/v1_audio_5s_verbose_json).
func BenchmarkEncode(b *testing.B) {
	jpeg1024 := benchJPEG(b, 1024, 1024)
	b.Run("image_json_b64_jpeg_1024", func(b *testing.B) {
		// What handleImage does once the JPEG exists: base64 and the {"images": [...]} body.
		b.SetBytes(int64(len(jpeg1024)))
		b.ReportAllocs()
		for b.Loop() {
			c, w := ginContext()
			c.JSON(http.StatusOK, gin.H{"images": []string{base64.StdEncoding.EncodeToString(jpeg1024)}})
			if w.Body.Len() < len(jpeg1024) {
				b.Fatal("short body")
			}
		}
	})
	res := benchTranscript()
	b.Run("transcription_json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c, w := ginContext()
			writeJSON(c, http.StatusOK, res)
			if w.Code != 200 {
				b.Fatal(w.Code)
			}
		}
	})
	b.Run("transcription_ndjson_line", func(b *testing.B) {
		chunk := runners.TranscriptChunk{Text: " héllo wörld, a streamed chunk of text", ChunkID: 7}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := pyJSON(chunk); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("transcription_ndjson_final", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := pyJSON(res); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("v1_srt", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if formatSRT(transcriptSpans(res)) == "" {
				b.Fatal("empty")
			}
		}
	})
	b.Run("v1_vtt", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if formatVTT(transcriptSpans(res)) == "" {
				b.Fatal("empty")
			}
		}
	})
}

// BenchmarkAuth is the Authorization check per request: API keys (three configured), a
// wrong key, and JWTs (HS256 with JWT_SECRET, RS256 with a 2048-bit public key).
func BenchmarkAuth(b *testing.B) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	a, err := newAuthenticator(AuthConfig{
		Keys:      map[string]string{"api_key": "your-secret-key", "team-a": "key-a-0123456789", "team-b": "key-b-0123456789"},
		JWTSecret: "my-secret-string", JWTPublicKey: &rsaKey.PublicKey, JWTRequireExp: true,
	})
	if err != nil {
		b.Fatal(err)
	}
	claims := jwt.MapClaims{"sub": "alice", "exp": time.Now().Add(time.Hour).Unix()}
	hs, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte("my-secret-string"))
	if err != nil {
		b.Fatal(err)
	}
	rs, err := jwt.NewWithClaims(jwt.SigningMethodRS256, claims).SignedString(rsaKey)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name, header, client string
	}{
		{"api_key", "Bearer key-b-0123456789", "team-b"},
		{"wrong_key", "Bearer not-a-key", ""},
		{"jwt_hs256", "Bearer " + hs, "jwt:alice"},
		{"jwt_rs256", "Bearer " + rs, "jwt:alice"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				client, err := a.identify(tc.header)
				if client != tc.client || (err == nil) != (tc.client != "") {
					b.Fatalf("identify = %q, %v", client, err)
				}
			}
		})
	}
}

// BenchmarkRateLimiter is one token-bucket decision: one client, many clients in turn, and
// one client from all procs at once (the mutex under contention).
func BenchmarkRateLimiter(b *testing.B) {
	b.Run("one_client", func(b *testing.B) {
		l := newRateLimiter(1e9, 1e6)
		b.ReportAllocs()
		for b.Loop() {
			if ok, _ := l.allow("api_key"); !ok {
				b.Fatal("refused")
			}
		}
	})
	b.Run("1000_clients", func(b *testing.B) {
		l := newRateLimiter(1e9, 1e6)
		names := make([]string, 1000)
		for i := range names {
			names[i] = "jwt:user-" + strconv.Itoa(i)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if ok, _ := l.allow(names[i%len(names)]); !ok {
				b.Fatal("refused")
			}
			i++
		}
	})
	b.Run("refused", func(b *testing.B) {
		l := newRateLimiter(1, 1)
		l.allow("api_key")
		b.ReportAllocs()
		for b.Loop() {
			if ok, _ := l.allow("api_key"); ok {
				b.Fatal("allowed")
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		l := newRateLimiter(1e12, 1e9)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				l.allow("api_key")
			}
		})
	})
}

// BenchmarkFail is an error answer: a full queue's 429 with its Retry-After headers.
func BenchmarkFail(b *testing.B) {
	s := New(Deps{Settings: testSettings(), Service: runners.ServiceImage, Sched: fixedSched(nil)})
	err := &scheduler.Rejection{Err: scheduler.ErrQueueFull, RetryAfter: 1500 * time.Millisecond}
	b.ReportAllocs()
	for b.Loop() {
		c, w := ginContext()
		s.fail(c, dialectPython, err)
		if w.Code != http.StatusTooManyRequests {
			b.Fatal(w.Code)
		}
	}
}
