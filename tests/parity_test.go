package tests

// Today's Python tt-media-server clients (HEAD, reference-python-server.md §7) against the real
// binary in mock-device mode: Python bodies on every /v1 route answer in the Python shape,
// HEAD's fields are honoured, its settings read, and the legacy paths carry its deprecation
// headers. Written from §7's description of HEAD, not from upstream's code. The OpenAI SDKs on
// the same routes are tests/sdk's.

import (
	"bytes"
	"encoding/base64"
	"image/color"
	"image/jpeg"
	"image/png"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pythonImages decodes a Python-dialect image answer: {"images": [...], "generation_time": s}.
func pythonImages(t *testing.T, r reply) [][]byte {
	t.Helper()
	require.Equalf(t, http.StatusOK, r.Status, "%s", r)
	require.Equal(t, "python", r.Header.Get("X-TT-Dialect"))
	m := r.obj(t)
	gt, ok := m["generation_time"].(float64)
	require.Truef(t, ok, "generation_time is a number: %s", r)
	require.GreaterOrEqual(t, gt, 0.0)
	require.Equal(t, gt, float64(int64(gt*100+0.5))/100, "rounded to 2 decimals")
	require.NotContains(t, m, "data")
	list := m["images"].([]any)
	out := make([][]byte, len(list))
	for i, v := range list {
		b, err := base64.StdEncoding.DecodeString(v.(string))
		require.NoError(t, err)
		out[i] = b
	}
	return out
}

func requireDeprecated(t *testing.T, r reply, successor string) {
	t.Helper()
	require.Equal(t, "true", r.Header.Get("Deprecation"))
	require.Equal(t, "2026-06-30", r.Header.Get("Sunset"))
	require.Equal(t, "<"+successor+`>; rel="successor-version"`, r.Header.Get("Link"))
}

func TestHEADImageClients(t *testing.T) {
	t.Parallel()
	s := startServer(t, map[string]string{"MODEL_RUNNER": "tt-sdxl-trace", "SERVED_MODEL_NAME": "sdxl-prod"})

	t.Run("python body on /v1: images, generation_time, PNG", func(t *testing.T) {
		body := `{"prompt":"Volcano on a beach","negative_prompt":"low quality","num_inference_steps":12,"seed":0,"number_of_images":2,"image_return_format":"PNG"}`
		imgs := pythonImages(t, s.postJSON(t, "/v1/images/generations", body))
		require.Len(t, imgs, 2)
		for _, b := range imgs {
			_, err := png.Decode(bytes.NewReader(b))
			require.NoError(t, err)
			requireImage(t, b, 1024)
		}
		require.NotEqual(t, imgs[0], imgs[1], "seed+i per image")
		// The legacy path answers the same images, with HEAD's deprecation headers.
		legacy := s.postJSON(t, "/image/generations", body)
		require.Equal(t, imgs, pythonImages(t, legacy))
		requireDeprecated(t, legacy, "/v1/images/generations")
		require.Empty(t, s.postJSON(t, "/v1/images/generations", body).Header.Get("Deprecation"))
	})
	t.Run("guidance_scale defaults to 5.0", func(t *testing.T) {
		img := func(extra string) []byte {
			return pythonImages(t, s.postJSON(t, "/v1/images/generations", `{"prompt":"a fox","seed":3,"num_inference_steps":12`+extra+`}`))[0]
		}
		def := img("")
		require.Equal(t, def, img(`,"guidance_scale":5.0`))
		require.NotEqual(t, def, img(`,"guidance_scale":9.0`))
	})
	t.Run("image_quality is the JPEG quality", func(t *testing.T) {
		img := func(q string) []byte {
			return pythonImages(t, s.postJSON(t, "/v1/images/generations", `{"prompt":"a fox","seed":3,"num_inference_steps":12,"image_quality":`+q+`}`))[0]
		}
		low, high := img("50"), img("100")
		for _, b := range [][]byte{low, high} {
			_, err := jpeg.Decode(bytes.NewReader(b))
			require.NoError(t, err)
		}
		require.Less(t, len(low), len(high)/2, "quality 50 is much smaller than 100")
		r := s.postJSON(t, "/v1/images/generations", `{"prompt":"a","image_quality":40}`)
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, "%s", r)
		require.Contains(t, string(r.Body), `"image_quality"`)
	})
	t.Run("steps floor by runner", func(t *testing.T) {
		r := s.postJSON(t, "/v1/images/generations", `{"prompt":"a","num_inference_steps":8}`)
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, "%s", r)
		require.Contains(t, string(r.Body), "num_inference_steps must be >= 12 for tt-sdxl-trace")
	})
	t.Run("mixed dialects: 400 naming both sides", func(t *testing.T) {
		r := s.postJSON(t, "/v1/images/generations", `{"prompt":"a","n":2,"number_of_images":2}`)
		require.Equal(t, http.StatusBadRequest, r.Status, "%s", r)
		m := r.obj(t)
		require.Contains(t, m["detail"], "'number_of_images'")
		require.Contains(t, m["detail"], "'n'")
		require.Equal(t, "mixed_dialects", m["error"].(map[string]any)["code"])
	})
	t.Run("OpenAI fields on the legacy path are refused", func(t *testing.T) {
		r := s.postJSON(t, "/image/generations", `{"prompt":"a","size":"1024x1024"}`)
		require.Equal(t, http.StatusBadRequest, r.Status, "%s", r)
		require.Contains(t, r.obj(t)["detail"], "'size'")
	})
	t.Run("a field HEAD's schema lacks is a 422 naming it, not ignored", func(t *testing.T) {
		for _, path := range []string{"/v1/images/generations", "/image/generations"} {
			r := s.postJSON(t, path, `{"prompt":"a","num_inference_steps":12,"width":512}`)
			require.Equalf(t, http.StatusUnprocessableEntity, r.Status, "%s %s", path, r)
			item := r.obj(t)["detail"].([]any)[0].(map[string]any)
			require.Equal(t, "extra_forbidden", item["type"])
			require.Equal(t, []any{"body", "width"}, item["loc"])
		}
	})
	t.Run("/v1/models: SERVED_MODEL_NAME first, image schema", func(t *testing.T) {
		r := do(t, http.MethodGet, s.URL+"/v1/models", nil, "Authorization", bearer)
		require.Equal(t, http.StatusOK, r.Status)
		data := r.obj(t)["data"].([]any)
		first := data[0].(map[string]any)
		require.Equal(t, "sdxl-prod", first["id"])
		schema := first["schema"].(map[string]any)
		props := schema["properties"].(map[string]any)
		require.Contains(t, props, "image_return_format")
		require.Equal(t, false, schema["additionalProperties"], "other fields are refused")
	})
}

func TestHEADSettingsImage(t *testing.T) {
	t.Parallel()
	s := startServer(t, map[string]string{"MODEL_RUNNER": "tt-sdxl-trace", "SDXL_IMAGE_RESOLUTION": "(512, 512)", "NO_AUTH": "true"})
	// NO_AUTH: no credentials needed.
	r := do(t, http.MethodPost, s.URL+"/v1/images/generations", []byte(`{"prompt":"a","num_inference_steps":12}`), "Content-Type", "application/json")
	imgs := pythonImages(t, r)
	requireImage(t, imgs[0], 512)
	// OpenAI's size follows SDXL_IMAGE_RESOLUTION.
	r = do(t, http.MethodPost, s.URL+"/v1/images/generations", []byte(`{"prompt":"a","size":"512x512","quality":"low"}`), "Content-Type", "application/json")
	require.Equalf(t, http.StatusOK, r.Status, "%s", r)
	require.Equal(t, "512x512", r.obj(t)["size"])
	r = do(t, http.MethodPost, s.URL+"/v1/images/generations", []byte(`{"prompt":"a","size":"1024x1024"}`), "Content-Type", "application/json")
	require.Equal(t, http.StatusBadRequest, r.Status)
}

func TestHEADAudioClients(t *testing.T) {
	t.Parallel()
	s := startServer(t, map[string]string{"MODEL_RUNNER": "tt-whisper"})
	wav := wavPCM16(16000, concat(tone(16000, 1.0, 440, 0.3), silence(16000, 0.5), tone(16000, 1.0, 660, 0.3)))
	fileJSON := `{"file":"` + base64.StdEncoding.EncodeToString(wav) + `"`

	for _, path := range []string{"/v1/audio/transcriptions", "/v1/audio/translations", "/audio/transcriptions"} {
		t.Run("python JSON on "+path, func(t *testing.T) {
			r := s.postJSON(t, path, fileJSON+`,"is_preprocessing_enabled":false}`)
			require.Equalf(t, http.StatusOK, r.Status, "%s", r)
			require.Equal(t, "python", r.Header.Get("X-TT-Dialect"))
			m := r.obj(t)
			require.Contains(t, m, "text")
			require.InDelta(t, 2.5, jsonNumber(t, m["duration"], "duration"), 0.01)
			require.NotContains(t, m, "usage", "not OpenAI's Transcription")
			if !strings.HasPrefix(path, "/v1") {
				requireDeprecated(t, r, "/v1"+path)
			}
		})
	}
	t.Run("python multipart on /v1 with HEAD's fields", func(t *testing.T) {
		r := s.postMultipart(t, "/v1/audio/transcriptions", file("a.wav", "audio/wav", wav),
			field("response_format", "verbose_json"), field("temperatures", "0.0,0.2"), field("return_timestamps", "true"),
			field("logprob_threshold", "-1.5"), field("prompt", "tones"))
		require.Equalf(t, http.StatusOK, r.Status, "%s", r)
		m := r.obj(t)
		require.Contains(t, m, "start")
		require.Contains(t, m, "end")
	})
	t.Run("response_format text, also streaming", func(t *testing.T) {
		r := s.postJSON(t, "/v1/audio/transcriptions", fileJSON+`,"response_format":"text"}`)
		require.Equalf(t, http.StatusOK, r.Status, "%s", r)
		require.Equal(t, "text/plain; charset=utf-8", r.Header.Get("Content-Type"))
		require.NotEmpty(t, r.Body)
		require.NotContains(t, string(r.Body), "{")
		r = s.postJSON(t, "/v1/audio/transcriptions", fileJSON+`,"response_format":"text","stream":true}`)
		require.Equalf(t, http.StatusOK, r.Status, "%s", r)
		require.Equal(t, "text/plain; charset=utf-8", r.Header.Get("Content-Type"))
		require.True(t, strings.HasSuffix(string(r.Body), "\n"))
		require.NotContains(t, string(r.Body), "{", "text chunks, no JSON result line")
	})
	t.Run("unknown fields are a 422 naming them (JSON and multipart)", func(t *testing.T) {
		r := s.postJSON(t, "/audio/transcriptions", fileJSON+`,"beam_size":5}`)
		require.Equalf(t, http.StatusUnprocessableEntity, r.Status, "%s", r)
		require.Equal(t, []any{"body", "beam_size"}, r.obj(t)["detail"].([]any)[0].(map[string]any)["loc"])
		r = s.postMultipart(t, "/v1/audio/transcriptions", file("a.wav", "audio/wav", wav), field("word_timestamps", "true"))
		require.Equalf(t, http.StatusUnprocessableEntity, r.Status, "%s", r)
		require.Equal(t, []any{"body", "word_timestamps"}, r.obj(t)["detail"].([]any)[0].(map[string]any)["loc"])
	})
	t.Run("perform_diarization is refused, not ignored", func(t *testing.T) {
		r := s.postJSON(t, "/v1/audio/transcriptions", fileJSON+`,"perform_diarization":true}`)
		require.Equal(t, http.StatusBadRequest, r.Status, "%s", r)
		require.Contains(t, r.obj(t)["detail"], "perform_diarization")
	})
	t.Run("OpenAI's form on the same route stays OpenAI's", func(t *testing.T) {
		r := s.postMultipart(t, "/v1/audio/transcriptions", file("a.wav", "audio/wav", wav), field("model", "whisper-1"))
		require.Equalf(t, http.StatusOK, r.Status, "%s", r)
		require.Equal(t, "openai", r.Header.Get("X-TT-Dialect"))
		require.Contains(t, r.obj(t), "usage")
	})
}

func TestHEADCNNClients(t *testing.T) {
	t.Parallel()
	s := startServer(t, map[string]string{"MODEL_RUNNER": "tt-xla-resnet"})
	img := base64.StdEncoding.EncodeToString(encodePNG(t, drawPicture(64, 48, color.RGBA{200, 30, 30, 255})))
	r := s.postJSON(t, "/v1/cnn/search-image", `{"prompt":"`+img+`","top_k":2,"min_confidence":0}`)
	require.Equalf(t, http.StatusOK, r.Status, "%s", r)
	m := r.obj(t)
	require.Equal(t, "success", m["status"])
	item := m["image_data"].([]any)[0].(map[string]any)
	require.Len(t, item["output"].(map[string]any)["labels"], 2, "top_k")
	r = s.postJSON(t, "/v1/cnn/search-image", `{"prompt":"`+img+`","response_format":"verbose_json"}`)
	require.Equalf(t, http.StatusOK, r.Status, "%s", r)
	require.IsType(t, "", r.obj(t)["image_data"].([]any)[0], "verbose_json is a CSV line")
	legacy := s.postJSON(t, "/cnn/search-image", `{"prompt":"`+img+`"}`)
	requireDeprecated(t, legacy, "/v1/cnn/search-image")
	for _, path := range []string{"/v1/cnn/search-image", "/cnn/search-image"} {
		r = s.postJSON(t, path, `{"prompt":"`+img+`","top_n":5}`)
		require.Equalf(t, http.StatusUnprocessableEntity, r.Status, "%s %s", path, r)
		require.Equal(t, []any{"body", "top_n"}, r.obj(t)["detail"].([]any)[0].(map[string]any)["loc"], "unknown fields are named, not ignored")
	}
}

// TestCanaryMonitor runs HEAD's canary monitor on the real binary: idle probes are real
// inferences through the scheduler, in process and in a worker process; a device that hangs
// (the simulator's TTB_SIM_HANG_AFTER run sleeps TTB_SIM_HANG_SECONDS) turns it suspect then
// dead, which with CANARY_GATE_READINESS makes /health and /tt-liveness 503; when the device
// answers again, probes pass and it is healthy. /metrics carries tt_canary_*.
func TestCanaryMonitor(t *testing.T) {
	t.Parallel()
	for _, isolation := range []string{"inprocess", "process"} {
		t.Run(isolation, func(t *testing.T) {
			t.Parallel()
			// Dead after 3 missed 0.3 s probes (~1.3 s into the hang) until the hang ends: 3 s
			// (was 1.6) leaves a window a loaded machine's late probes and polls still hit.
			s := startServer(t, map[string]string{"MODEL_RUNNER": "tt-xla-resnet", "MOCK_DEVICES_COUNT": "1", "DEVICE_IDS": "(0)",
				"WORKER_ISOLATION": isolation, "CANARY_STARTUP_GRACE_SECONDS": "0", "CANARY_WAIT_SECONDS": "0.1",
				"CANARY_TICK_SECONDS": "0.05", "CANARY_PROBE_TIMEOUT_SECONDS": "0.3", "CANARY_GATE_READINESS": "true",
				"CANARY_INTERVAL_SECONDS": "0", "TTB_SIM_HANG_AFTER": "120", "TTB_SIM_HANG_SECONDS": "3"})
			state := func() (int, string, bool) {
				code, m := s.liveness(t)
				st, _ := m["canary_state"].(string)
				alive, _ := m["canary_alive"].(bool)
				return code, st, alive
			}
			waitState := func(want string, timeout time.Duration) {
				t.Helper()
				deadline := time.Now().Add(timeout)
				var seen []string
				for {
					_, st, _ := state()
					if st == want {
						return
					}
					if len(seen) == 0 || !strings.HasSuffix(seen[len(seen)-1], " "+st) {
						seen = append(seen, time.Now().Format("05.000")+" "+st)
					}
					if time.Now().After(deadline) {
						t.Fatalf("canary_state %q, want %q after %v; seen %v", st, want, timeout, seen)
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			waitState("healthy", 10*time.Second)
			code, _, alive := state()
			require.Equal(t, http.StatusOK, code)
			require.True(t, alive)

			waitState("dead", 30*time.Second)
			code, _, alive = state()
			require.Equal(t, http.StatusServiceUnavailable, code, "CANARY_GATE_READINESS")
			require.False(t, alive)
			h := s.get(t, "/health")
			require.Equal(t, http.StatusServiceUnavailable, h.Status)
			require.Equal(t, "Canary monitor: model not serving", h.obj(t)["detail"])

			waitState("healthy", 20*time.Second)
			require.Equal(t, http.StatusOK, s.get(t, "/health").Status)
			metrics := string(s.get(t, "/metrics").Body)
			require.Contains(t, metrics, `tt_canary_state{model_type="tt-xla-resnet",state="healthy"} 1`)
			require.Contains(t, metrics, `tt_canary_state{model_type="tt-xla-resnet",state="dead"} 0`)
			require.Regexp(t, `tt_canary_failures_total\{depth="shallow",model_type="tt-xla-resnet"\} ([3-9]|[1-9][0-9])\n`, metrics) // 3 or more misses
			require.Contains(t, metrics, `tt_canary_probe_latency_seconds_count{depth="shallow",model_type="tt-xla-resnet"}`)
			require.Contains(t, metrics, `tt_canary_last_success_timestamp{model_type="tt-xla-resnet"}`)
		})
	}
}
