package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/metrics"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
)

// pythonFieldsServer serves svc with runner on a fake scheduler that answers every request.
func pythonFieldsServer(t *testing.T, svc runners.Service, runner string) (http.Handler, *fakeSched) {
	t.Helper()
	f := &fakeSched{ready: true, submit: func(_ context.Context, req runners.Request, _ func(runners.Chunk) error) (runners.Result, error) {
		switch req.(type) {
		case *runners.AudioRequest:
			return &runners.TranscriptionResult{Text: "hello", Task: "transcribe", Language: "english", Duration: 1}, nil
		case *runners.CNNRequest:
			return &runners.CNNResult{Top: []runners.Classification{{Label: "tabby", Index: 281, Probability: 0.9}}}, nil
		}
		return &runners.ImageResult{Images: []image.Image{image.NewRGBA(image.Rect(0, 0, 8, 8))}}, nil
	}}
	cfg := testSettings()
	cfg.ModelRunner = runner
	s := New(Deps{Settings: cfg, Pools: []Pool{{Service: svc, Runner: runner, Sched: f}}, Sched: f, Metrics: metrics.New()})
	return s.Handler(), f
}

// pyFieldsCase is one request of the Python dialect: a JSON body, or a multipart form with a
// file part (file) and text fields (form, name/value pairs).
type pyFieldsCase struct {
	svc    runners.Service
	runner string
	paths  []string // the /v1 route and its legacy twin: both behave the same
	json   string
	file   []byte
	form   []string
}

func (c pyFieldsCase) do(t *testing.T, h http.Handler, path string) *httptest.ResponseRecorder {
	t.Helper()
	if c.json != "" {
		return dialectReq(h, path, "application/json", []byte(c.json))
	}
	ct, body := multipartBody(t, c.file, c.form...)
	return dialectReq(h, path, ct, body)
}

// eachPath sends the case to each of its paths on a fresh server, in subtests named
// name+path, and hands the server, its scheduler, the path and the answer to check.
func (c pyFieldsCase) eachPath(t *testing.T, name string, check func(t *testing.T, h http.Handler, f *fakeSched, path string, w *httptest.ResponseRecorder)) {
	t.Helper()
	for _, path := range c.paths {
		t.Run(name+" "+path, func(t *testing.T) {
			h, f := pythonFieldsServer(t, c.svc, c.runner)
			check(t, h, f, path, c.do(t, h, path))
		})
	}
}

// detailItems decodes FastAPI's 422 {"detail": [...]}.
func detailItems(t *testing.T, body []byte) []fieldError {
	t.Helper()
	var v struct {
		Detail []fieldError `json:"detail"`
	}
	require.NoError(t, json.Unmarshal(body, &v), "%s", body)
	require.NotEmpty(t, v.Detail, "%s", body)
	return v.Detail
}

// pyFieldsFixtures are the media the cases send.
func pyFieldsFixtures(t *testing.T) (wavB64, pngB64 string, wav, png []byte) {
	t.Helper()
	wav = testWAV(16000, 16000)
	photo := image.NewNRGBA(image.Rect(0, 0, 6, 4))
	for i := range photo.Pix {
		photo.Pix[i] = uint8(40 * (i % 5))
	}
	png = pngBytes(t, photo)
	return base64.StdEncoding.EncodeToString(wav), base64.StdEncoding.EncodeToString(png), wav, png
}

// TestPythonDialectRefusesUnknownFields: on every Python-dialect route (/v1 and its legacy
// twin), a top-level field HEAD's schema does not have is a 422 extra_forbidden naming it
// (every such field, in name order), in FastAPI's {"detail"} shape, and nothing is queued;
// the same body without the field is a 200.
func TestPythonDialectRefusesUnknownFields(t *testing.T) {
	wavB64, pngB64, wav, png := pyFieldsFixtures(t)
	maskB64 := base64.StdEncoding.EncodeToString(pngBytes(t, image.NewGray(image.Rect(0, 0, 6, 4))))
	img, aud, cnn := runners.ServiceImage, runners.ServiceAudio, runners.ServiceCNN
	gen := []string{"/v1/images/generations", "/image/generations"}
	i2i := []string{"/v1/images/image-to-image", "/image/image-to-image"}
	edit := []string{"/v1/images/edits", "/image/edits"}
	tr := []string{"/v1/audio/transcriptions", "/audio/transcriptions", "/v1/audio/translations"}
	search := []string{"/v1/cnn/search-image", "/cnn/search-image"}
	tests := []struct {
		name    string
		ok, bad pyFieldsCase // bad is ok plus the unknown fields
		unknown []string     // named in the 422, in this order
	}{
		{name: "image generations",
			ok:      pyFieldsCase{svc: img, runner: "tt-sdxl-trace", paths: gen, json: `{"prompt":"a","seed":1}`},
			bad:     pyFieldsCase{svc: img, runner: "tt-sdxl-trace", paths: gen, json: `{"prompt":"a","seed":1,"width":512}`},
			unknown: []string{"width"}},
		{name: "image generations, several unknown with a HEAD field",
			ok:      pyFieldsCase{svc: img, runner: "tt-sdxl-trace", paths: gen, json: `{"prompt":"a","number_of_images":2}`},
			bad:     pyFieldsCase{svc: img, runner: "tt-sdxl-trace", paths: gen, json: `{"prompt":"a","number_of_images":2,"height":512,"clip_skip":2,"aesthetic_score":6}`},
			unknown: []string{"aesthetic_score", "clip_skip", "height"}},
		{name: "image generations, unknown null is still named",
			ok:      pyFieldsCase{svc: img, runner: "tt-sdxl-trace", paths: gen, json: `{"prompt":"a"}`},
			bad:     pyFieldsCase{svc: img, runner: "tt-sdxl-trace", paths: gen, json: `{"prompt":"a","scheduler":null}`},
			unknown: []string{"scheduler"}},
		{name: "image-to-image",
			ok:      pyFieldsCase{svc: img, runner: catalogue.RunnerSDXLImg2Img, paths: i2i, json: `{"prompt":"a","image":"` + pngB64 + `","strength":0.5}`},
			bad:     pyFieldsCase{svc: img, runner: catalogue.RunnerSDXLImg2Img, paths: i2i, json: `{"prompt":"a","image":"` + pngB64 + `","strength":0.5,"negative_aesthetic_score":2.5}`},
			unknown: []string{"negative_aesthetic_score"}},
		{name: "edits",
			ok:      pyFieldsCase{svc: img, runner: catalogue.RunnerSDXLEdit, paths: edit, json: `{"prompt":"a","image":"` + pngB64 + `","mask":"` + maskB64 + `"}`},
			bad:     pyFieldsCase{svc: img, runner: catalogue.RunnerSDXLEdit, paths: edit, json: `{"prompt":"a","image":"` + pngB64 + `","mask":"` + maskB64 + `","mask_blur":4}`},
			unknown: []string{"mask_blur"}},
		{name: "audio json",
			ok:      pyFieldsCase{svc: aud, runner: "tt-whisper", paths: tr, json: `{"file":"` + wavB64 + `","stream":false}`},
			bad:     pyFieldsCase{svc: aud, runner: "tt-whisper", paths: tr, json: `{"file":"` + wavB64 + `","stream":false,"beam_size":5}`},
			unknown: []string{"beam_size"}},
		{name: "audio multipart",
			ok:      pyFieldsCase{svc: aud, runner: "tt-whisper", paths: tr, file: wav, form: []string{"return_timestamps", "true"}},
			bad:     pyFieldsCase{svc: aud, runner: "tt-whisper", paths: tr, file: wav, form: []string{"return_timestamps", "true", "word_timestamps", "true", "beam_size", "5"}},
			unknown: []string{"beam_size", "word_timestamps"}},
		{name: "cnn json",
			ok:      pyFieldsCase{svc: cnn, runner: "tt-resnet", paths: search, json: `{"prompt":"` + pngB64 + `","top_k":2}`},
			bad:     pyFieldsCase{svc: cnn, runner: "tt-resnet", paths: search, json: `{"prompt":"` + pngB64 + `","top_k":2,"top_n":5}`},
			unknown: []string{"top_n"}},
		{name: "cnn json, file is the form's name, not the JSON schema's",
			ok:      pyFieldsCase{svc: cnn, runner: "tt-resnet", paths: search, json: `{"prompt":"` + pngB64 + `"}`},
			bad:     pyFieldsCase{svc: cnn, runner: "tt-resnet", paths: search, json: `{"prompt":"` + pngB64 + `","file":"x"}`},
			unknown: []string{"file"}},
		{name: "cnn multipart",
			ok:      pyFieldsCase{svc: cnn, runner: "tt-resnet", paths: search, file: png, form: []string{"min_confidence", "50"}},
			bad:     pyFieldsCase{svc: cnn, runner: "tt-resnet", paths: search, file: png, form: []string{"min_confidence", "50", "prompt", "cat"}},
			unknown: []string{"prompt"}},
	}
	for _, tc := range tests {
		tc.bad.eachPath(t, tc.name, func(t *testing.T, h http.Handler, f *fakeSched, path string, w *httptest.ResponseRecorder) {
			require.Equal(t, http.StatusUnprocessableEntity, w.Code, w.Body.String())
			if tc.bad.svc != runners.ServiceCNN { // CNN routes speak one dialect: no header
				require.Equal(t, "python", w.Header().Get(dialectHeader))
			}
			items := detailItems(t, w.Body.Bytes())
			require.Len(t, items, len(tc.unknown), "%+v", items)
			for i, name := range tc.unknown {
				require.Equal(t, "extra_forbidden", items[i].Type)
				require.Equal(t, []any{"body", name}, items[i].Loc)
				require.Equal(t, "Extra inputs are not permitted", items[i].Msg)
			}
			require.Nil(t, f.last, "a refused request must not be queued")

			// The same body without the unknown fields, on the same path and server.
			w = tc.ok.do(t, h, path)
			require.Equal(t, http.StatusOK, w.Code, w.Body.String())
			require.NotNil(t, f.last)
		})
	}
}

// TestPythonSchemaFieldsAreRead: every field of HEAD's schemas that the Python dialect
// accepts is read by its parser — an invalid value (an object) is a 422 naming that field
// with a type error, never extra_forbidden and never a 200 — so none is accepted and dropped.
func TestPythonSchemaFieldsAreRead(t *testing.T) {
	wavB64, pngB64, _, _ := pyFieldsFixtures(t)
	maskB64 := base64.StdEncoding.EncodeToString(pngBytes(t, image.NewGray(image.Rect(0, 0, 6, 4))))
	base := map[string]map[string]any{ // the required fields of each schema
		"image": {"prompt": "a"},
		"i2i":   {"prompt": "a", "image": pngB64},
		"edit":  {"prompt": "a", "image": pngB64, "mask": maskB64},
		"audio": {"file": wavB64},
		"cnn":   {"prompt": pngB64},
	}
	suites := []struct {
		kind   string
		svc    runners.Service
		runner string
		path   string
		fields []string
	}{
		{"image", runners.ServiceImage, "tt-sdxl-trace", "/v1/images/generations", imageGenerateFields},
		{"i2i", runners.ServiceImage, catalogue.RunnerSDXLImg2Img, "/v1/images/image-to-image", append(append([]string{}, imageGenerateFields...), "image", "strength")},
		{"edit", runners.ServiceImage, catalogue.RunnerSDXLEdit, "/v1/images/edits", append(append([]string{}, imageGenerateFields...), imageInputFields...)},
		{"audio", runners.ServiceAudio, "tt-whisper", "/v1/audio/transcriptions", pythonAudioFields},
		{"cnn", runners.ServiceCNN, "tt-resnet", "/v1/cnn/search-image", cnnFields},
	}
	for _, s := range suites {
		for _, field := range s.fields {
			t.Run(s.kind+" "+field, func(t *testing.T) {
				h, f := pythonFieldsServer(t, s.svc, s.runner)
				body := map[string]any{}
				for k, v := range base[s.kind] {
					body[k] = v
				}
				body[field] = map[string]any{"x": 1} // an object is a valid value of none of them
				data, err := json.Marshal(body)
				require.NoError(t, err)
				w := dialectReq(h, s.path, "application/json", data)
				require.Equal(t, http.StatusUnprocessableEntity, w.Code, w.Body.String())
				items := detailItems(t, w.Body.Bytes())
				require.Equal(t, []any{"body", field}, items[0].Loc, "%+v", items)
				require.NotEqual(t, "extra_forbidden", items[0].Type)
				require.Nil(t, f.last)
			})
		}
	}
}

// TestHEADClientBodies: the bodies HEAD's own clients send (tt-inference-server @11ac526e:
// test_module load/param/benchmark/eval tests, tt-media-server's performance_tests, its
// static demos and README), written here from their field lists, are all HEAD schema fields
// and answer 200 on /v1 and on the legacy twin. (lora_path is covered by the LoRA tests,
// which need LORA_ROOT; upstream's tests/api_test.py sends output_format, an OpenAI field, and
// asserts keys HEAD never answers, so it fails against HEAD too.)
func TestHEADClientBodies(t *testing.T) {
	wavB64, pngB64, wav, png := pyFieldsFixtures(t)
	maskB64 := base64.StdEncoding.EncodeToString(pngBytes(t, image.NewGray(image.Rect(0, 0, 6, 4))))
	img, aud, cnn := runners.ServiceImage, runners.ServiceAudio, runners.ServiceCNN
	gen := []string{"/v1/images/generations", "/image/generations"}
	tests := []struct {
		name string
		c    pyFieldsCase
	}{
		{"image param/load/performance tests", pyFieldsCase{svc: img, runner: "tt-sdxl-trace", paths: gen,
			json: `{"prompt":"A beautiful sunset","negative_prompt":"blurry, low quality, distorted","num_inference_steps":20,"seed":42,"guidance_scale":7.5,"number_of_images":1}`}},
		{"image eval tests", pyFieldsCase{svc: img, runner: "tt-sdxl-trace", paths: gen,
			json: `{"prompt":"a","negative_prompt":"n","num_inference_steps":20,"seed":0,"guidance_scale":5.0,"image_return_format":"PNG","image_quality":100,"number_of_images":1}`}},
		{"image benchmark", pyFieldsCase{svc: img, runner: "tt-sdxl-trace", paths: gen,
			json: `{"prompt":"Rabbit","seed":0,"guidance_scale":3.0,"number_of_images":1,"num_inference_steps":20}`}},
		{"sdxl demo page", pyFieldsCase{svc: img, runner: "tt-sdxl-trace", paths: gen,
			json: `{"prompt":"a","num_inference_steps":20,"guidance_scale":5,"negative_prompt":"b","seed":7}`}},
		{"img2img param test", pyFieldsCase{svc: img, runner: catalogue.RunnerSDXLImg2Img, paths: []string{"/v1/images/image-to-image", "/image/image-to-image"},
			json: `{"prompt":"a","image":"` + pngB64 + `","num_inference_steps":20,"seed":0,"guidance_scale":7.5,"number_of_images":1,"strength":0.6}`}},
		{"inpainting param test", pyFieldsCase{svc: img, runner: catalogue.RunnerSDXLEdit, paths: []string{"/v1/images/edits", "/image/edits"},
			json: `{"prompt":"a","image":"` + pngB64 + `","mask":"` + maskB64 + `","num_inference_steps":20,"seed":0,"guidance_scale":7.5,"number_of_images":1,"strength":0.9}`}},
		{"audio performance test (static/data/audio_test.json)", pyFieldsCase{svc: aud, runner: "tt-whisper", paths: []string{"/v1/audio/transcriptions", "/audio/transcriptions"},
			json: `{"stream":false,"is_preprocessing_enabled":true,"perform_diarization":false,"response_format":"verbose_json","temperatures":[0.0,0.2,0.4,0.6,0.8,1.0],"compression_ratio_threshold":2.4,"logprob_threshold":-1.0,"no_speech_threshold":0.6,"return_timestamps":false,"prompt":"","file":"` + wavB64 + `"}`}},
		{"audio param test, nulls", pyFieldsCase{svc: aud, runner: "tt-whisper", paths: []string{"/v1/audio/transcriptions", "/audio/transcriptions"},
			json: `{"file":"` + wavB64 + `","stream":false,"response_format":"verbose_json","is_preprocessing_enabled":true,"perform_diarization":false,"temperatures":null,"compression_ratio_threshold":null,"logprob_threshold":null,"no_speech_threshold":null,"return_timestamps":false,"prompt":null}`}},
		{"audio load test", pyFieldsCase{svc: aud, runner: "tt-whisper", paths: []string{"/v1/audio/transcriptions", "/v1/audio/translations"},
			json: `{"file":"` + wavB64 + `","stream":false,"is_preprocessing_enabled":true,"prompt":""}`}},
		{"audio README multipart", pyFieldsCase{svc: aud, runner: "tt-whisper", paths: []string{"/v1/audio/transcriptions", "/audio/transcriptions"}, file: wav,
			form: []string{"stream", "false", "is_preprocessing_enabled", "true", "perform_diarization", "false", "temperatures", "0.0,0.2,0.4,0.6,0.8,1.0",
				"compression_ratio_threshold", "2.4", "logprob_threshold", "-1.0", "no_speech_threshold", "0.6", "return_timestamps", "true", "prompt", "test"}}},
		{"cnn benchmark and demo page", pyFieldsCase{svc: cnn, runner: "tt-resnet", paths: []string{"/v1/cnn/search-image", "/cnn/search-image"},
			json: `{"prompt":"` + pngB64 + `"}`}},
		{"cnn eval (data: URL)", pyFieldsCase{svc: cnn, runner: "tt-resnet", paths: []string{"/v1/cnn/search-image", "/cnn/search-image"},
			json: `{"prompt":"data:image/png;base64,` + pngB64 + `","top_k":5,"min_confidence":0,"response_format":"json"}`}},
		{"cnn param test multipart", pyFieldsCase{svc: cnn, runner: "tt-resnet", paths: []string{"/v1/cnn/search-image", "/cnn/search-image"}, file: png,
			form: []string{"response_format", "verbose_json", "top_k", "3", "min_confidence", "70.0"}}},
	}
	for _, tc := range tests {
		tc.c.eachPath(t, tc.name, func(t *testing.T, _ http.Handler, f *fakeSched, _ string, w *httptest.ResponseRecorder) {
			require.Equal(t, http.StatusOK, w.Code, w.Body.String())
			require.NotNil(t, f.last)
		})
	}
}

// TestPreprocessingAskedWhenTurnedOff: with ALLOW_AUDIO_PREPROCESSING=false, a request that
// explicitly asks for pre-processing is a 400 naming the field and the setting (it could only
// be honoured by overriding the operator); asking for none, or leaving the field out (the
// server's default: none here), is answered without segments.
func TestPreprocessingAskedWhenTurnedOff(t *testing.T) {
	wavB64, _, wav, _ := pyFieldsFixtures(t)
	for _, tc := range []struct {
		name   string
		json   string   // Python JSON body, or
		form   []string // multipart fields besides the file (OpenAI's when they name a model)
		status int
		field  string // named in the 400
	}{
		{name: "python json true", json: `{"file":"` + wavB64 + `","is_preprocessing_enabled":true}`, status: 400, field: "is_preprocessing_enabled"},
		{name: "python json \"yes\"", json: `{"file":"` + wavB64 + `","is_preprocessing_enabled":"yes"}`, status: 400, field: "is_preprocessing_enabled"},
		{name: "python multipart true", form: []string{"is_preprocessing_enabled", "true"}, status: 400, field: "is_preprocessing_enabled"},
		{name: "python json false", json: `{"file":"` + wavB64 + `","is_preprocessing_enabled":false}`, status: 200},
		{name: "python json null (default)", json: `{"file":"` + wavB64 + `","is_preprocessing_enabled":null}`, status: 200},
		{name: "python json absent (default)", json: `{"file":"` + wavB64 + `"}`, status: 200},
		{name: "openai is_preprocessing_enabled", form: []string{"model", "whisper-1", "is_preprocessing_enabled", "true"}, status: 400, field: "is_preprocessing_enabled"},
		{name: "openai chunking_strategy", form: []string{"model", "whisper-1", "chunking_strategy", "auto"}, status: 400, field: "chunking_strategy"},
		{name: "openai absent (default)", form: []string{"model", "whisper-1"}, status: 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := audioFake(&runners.TranscriptionResult{Text: "hello", Task: "transcribe", Language: "english", Duration: 1})
			cfg := openAISettings("tt-whisper")
			cfg.AllowAudioPreprocessing = false
			h := New(Deps{Settings: cfg, Service: runners.ServiceAudio, Sched: f}).Handler()
			var w *httptest.ResponseRecorder
			if tc.json != "" {
				w = dialectReq(h, "/v1/audio/transcriptions", "application/json", []byte(tc.json))
			} else {
				ct, body := multipartBody(t, wav, tc.form...)
				w = dialectReq(h, "/v1/audio/transcriptions", ct, body)
			}
			require.Equal(t, tc.status, w.Code, w.Body.String())
			if tc.status != 200 {
				require.Contains(t, w.Body.String(), tc.field+": pre-processing")
				require.Contains(t, w.Body.String(), "ALLOW_AUDIO_PREPROCESSING=false")
				if w.Header().Get(dialectHeader) == "openai" {
					requireEnvelope(t, w.Body.Bytes(), "invalid_request_error", tc.field, nil)
				}
				require.Nil(t, f.last, "refused before queueing")
				return
			}
			require.Empty(t, f.last.(*runners.AudioRequest).Segments, "no pre-processing ran")
		})
	}
}

// TestUnguidedFieldsRefused: guidance_scale 1 runs the prompt alone (no classifier-free
// guidance), so negative_prompt, negative_prompt_2 and guidance_rescale would be ignored:
// each is a 400 naming it, in both dialects and on the image-input routes; with guidance on
// (or the model's default) they are used.
func TestUnguidedFieldsRefused(t *testing.T) {
	_, pngB64, _, _ := pyFieldsFixtures(t)
	for _, tc := range []struct {
		name, runner, path, body string
		status                   int
		field                    string
	}{
		{"python negative_prompt", "tt-sdxl-trace", "/v1/images/generations", `{"prompt":"a","guidance_scale":1,"negative_prompt":"blur"}`, 400, "negative_prompt"},
		{"python negative_prompt_2", "tt-sdxl-trace", "/image/generations", `{"prompt":"a","guidance_scale":1,"negative_prompt_2":"blur"}`, 400, "negative_prompt_2"},
		{"python guidance_rescale", "tt-sdxl-trace", "/v1/images/generations", `{"prompt":"a","guidance_scale":1.0,"guidance_rescale":0.7}`, 400, "guidance_rescale"},
		{"python sd3.5 negative_prompt", catalogue.RunnerSD35, "/v1/images/generations", `{"prompt":"a","guidance_scale":1,"negative_prompt":"blur"}`, 400, "negative_prompt"},
		{"python image-to-image", catalogue.RunnerSDXLImg2Img, "/v1/images/image-to-image", `{"prompt":"a","image":"` + pngB64 + `","guidance_scale":1,"negative_prompt":"blur"}`, 400, "negative_prompt"},
		{"openai negative_prompt", "tt-sdxl-trace", "/v1/images/generations", `{"prompt":"a","n":1,"guidance_scale":1,"negative_prompt":"blur"}`, 400, "negative_prompt"},
		{"guided: used", "tt-sdxl-trace", "/v1/images/generations", `{"prompt":"a","guidance_scale":1.5,"negative_prompt":"blur","guidance_rescale":0.7}`, 200, ""},
		{"default guidance: used", "tt-sdxl-trace", "/v1/images/generations", `{"prompt":"a","negative_prompt":"blur"}`, 200, ""},
		{"openai default guidance: used", "tt-sdxl-trace", "/v1/images/generations", `{"prompt":"a","n":1,"negative_prompt":"blur"}`, 200, ""},
		{"unguided, empty negative prompt: nothing to ignore", "tt-sdxl-trace", "/v1/images/generations", `{"prompt":"a","guidance_scale":1,"negative_prompt":"","guidance_rescale":0}`, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, f := pythonFieldsServer(t, runners.ServiceImage, tc.runner)
			w := dialectReq(h, tc.path, "application/json", []byte(tc.body))
			require.Equal(t, tc.status, w.Code, w.Body.String())
			if tc.status == 200 {
				require.NotNil(t, f.last)
				return
			}
			require.Nil(t, f.last, "refused before queueing")
			require.Contains(t, w.Body.String(), tc.field+": guidance_scale 1 turns classifier-free guidance off")
			if w.Header().Get(dialectHeader) == "openai" {
				requireEnvelope(t, w.Body.Bytes(), "invalid_request_error", tc.field, nil)
			}
		})
	}
}

// TestUnguidedOpenAIEdits: OpenAI's multipart edits take the same refusal (param named).
func TestUnguidedOpenAIEdits(t *testing.T) {
	_, _, _, png := pyFieldsFixtures(t)
	mask := pngBytes(t, image.NewGray(image.Rect(0, 0, 6, 4)))
	for _, tc := range []struct {
		guidance string
		status   int
	}{{"1", 400}, {"2", 200}} {
		t.Run("guidance "+tc.guidance, func(t *testing.T) {
			h, f := pythonFieldsServer(t, runners.ServiceImage, catalogue.RunnerSDXLEdit)
			var body bytes.Buffer
			mw := multipart.NewWriter(&body)
			for name, data := range map[string][]byte{"image": png, "mask": mask} {
				p, err := mw.CreateFormFile(name, name+".png")
				require.NoError(t, err)
				_, err = p.Write(data)
				require.NoError(t, err)
			}
			for _, kv := range [][2]string{{"prompt", "p"}, {"negative_prompt", "blur"}, {"guidance_scale", tc.guidance}} {
				require.NoError(t, mw.WriteField(kv[0], kv[1]))
			}
			require.NoError(t, mw.Close())
			w := dialectReq(h, "/v1/images/edits", mw.FormDataContentType(), body.Bytes())
			require.Equal(t, tc.status, w.Code, w.Body.String())
			require.Equal(t, "openai", w.Header().Get(dialectHeader))
			if tc.status == 400 {
				requireEnvelope(t, w.Body.Bytes(), "invalid_request_error", "negative_prompt", nil)
				require.Nil(t, f.last)
			}
		})
	}
}
