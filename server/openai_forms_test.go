package server

import (
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"mime"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
)

// formCase is one OpenAI multipart request and its answer, pinned word for word: status, the
// envelope's param (nil: JSON null) and message ("" with status 200: served). ctype and raw,
// when set, replace the built form (a body that is not a well-formed form).
type formCase struct {
	name   string
	parts  []part
	ctype  string
	raw    []byte
	status int
	param  any
	msg    string
}

// runFormCases posts each case to path and checks its answer.
func runFormCases(t *testing.T, h http.Handler, path string, cases []formCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ct, body := tc.ctype, tc.raw
			if tc.raw == nil {
				var formCT string
				formCT, body = partsBody(t, tc.parts)
				if ct == "" {
					ct = formCT
				}
			}
			w := do(h, http.MethodPost, path, ct, "Bearer k", body)
			require.Equal(t, tc.status, w.Code, w.Body.String())
			if tc.status == http.StatusOK {
				return
			}
			typ := "invalid_request_error"
			var env struct {
				Error struct {
					Type string `json:"type"`
					Code any    `json:"code"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &env), w.Body.String())
			if env.Error.Type != "" {
				typ = env.Error.Type
			}
			msg := requireEnvelope(t, w.Body.Bytes(), typ, tc.param, env.Error.Code)
			require.Equal(t, tc.msg, msg)
		})
	}
}

// withParts is base with more parts after it.
func withParts(base []part, more ...part) []part {
	return append(append([]part(nil), base...), more...)
}

// fieldsOf is the parts of name/value pairs.
func fieldsOf(kv ...string) []part {
	var ps []part
	for i := 0; i+1 < len(kv); i += 2 {
		ps = append(ps, part{kv[i], "", kv[i+1]})
	}
	return ps
}

const (
	transcriptionAccepted = "(accepted: file, model, language, prompt, response_format, temperature, timestamp_granularities[], stream, include[], chunking_strategy, is_preprocessing_enabled)"
	translationOnly       = " is a parameter of /v1/audio/transcriptions only; /v1/audio/translations takes file, model, prompt, response_format, temperature and language"
)

// TestOpenAITranscriptionFormAnswers pins every answer of OpenAI's transcription and
// translation forms: each refusal's status, param and sentence, as the hand-written reader
// answered them (written against it before the form was declared).
func TestOpenAITranscriptionFormAnswers(t *testing.T) {
	h, _ := pythonFieldsServer(t, runners.ServiceAudio, "tt-whisper")
	file := part{"file", "a.wav", string(testWAV(16000, 16000))}
	ok := []part{file, {"model", "", "whisper-1"}}
	long := strings.Repeat("x", maxOpenAIFieldBytes+1)
	many := withParts(ok)
	for range maxOpenAIParts {
		many = append(many, part{"include[]", "", "logprobs"})
	}
	cases := []formCase{
		{name: "served", parts: ok, status: 200},
		{name: "every field", parts: withParts(ok, fieldsOf("language", "en", "prompt", " beach ", "response_format", "verbose_json",
			"temperature", "0.2", "timestamp_granularities[]", "segment", "timestamp_granularities[]", "word", "stream", "false",
			"chunking_strategy[type]", "server_vad", "is_preprocessing_enabled", "true")...), status: 200},
		{name: "granularities repeated without brackets", parts: withParts(ok, fieldsOf("response_format", "verbose_json",
			"timestamp_granularities", "word", "timestamp_granularities", "segment")...), status: 200},
		{name: "granularities both spellings", parts: withParts(ok, fieldsOf("response_format", "verbose_json",
			"timestamp_granularities", "word", "timestamp_granularities[]", "segment")...), status: 200},
		{name: "stream text", parts: withParts(ok, fieldsOf("stream", "true", "response_format", "text")...), status: 200},
		{name: "lax booleans", parts: withParts(ok, fieldsOf("stream", " 0 ", "is_preprocessing_enabled", "off")...), status: 200},
		{name: "language name", parts: withParts(ok, fieldsOf("language", "German")...), status: 200},
		{name: "model trimmed", parts: []part{file, {"model", "", " whisper-1 "}}, status: 200},
		{name: "chunking auto", parts: withParts(ok, fieldsOf("chunking_strategy", "auto")...), status: 200},

		{name: "not multipart", ctype: "application/json", raw: []byte(`{"model":"whisper-1"}`), status: 400, param: nil,
			msg: `Content-Type must be multipart/form-data, got "application/json"`},
		{name: "malformed", ctype: "multipart/form-data; boundary=xyz", raw: []byte("--xyz\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper-1"),
			status: 400, param: nil, msg: "malformed multipart body: unexpected EOF"},
		{name: "file missing", parts: fieldsOf("model", "whisper-1"), status: 400, param: "file",
			msg: `you must provide a file parameter (multipart field "file")`},
		{name: "model missing", parts: []part{file, {"language", "", "en"}}, status: 400, param: "model", msg: "you must provide a model parameter"},
		{name: "model blank", parts: []part{file, {"model", "", "  "}}, status: 400, param: "model", msg: "you must provide a model parameter"},
		{name: "model unknown", parts: []part{file, {"model", "", "gpt-4o-transcribe"}}, status: 404, param: "model",
			msg: "The model `gpt-4o-transcribe` does not exist or is not served here."},
		{name: "response_format", parts: withParts(ok, fieldsOf("response_format", "diarized_json")...), status: 400, param: "response_format",
			msg: `response_format "diarized_json" is not supported; accepted: json, text, srt, verbose_json, vtt`},
		{name: "language", parts: withParts(ok, fieldsOf("language", "xx")...), status: 400, param: "language",
			msg: `language "xx" is not supported; use an ISO-639-1 code such as "en"`},
		{name: "temperature high", parts: withParts(ok, fieldsOf("temperature", "1.5")...), status: 400, param: "temperature",
			msg: `temperature must be a number between 0 and 1, got "1.5"`},
		{name: "temperature negative", parts: withParts(ok, fieldsOf("temperature", "-0.1")...), status: 400, param: "temperature",
			msg: `temperature must be a number between 0 and 1, got "-0.1"`},
		{name: "temperature NaN", parts: withParts(ok, fieldsOf("temperature", "NaN")...), status: 400, param: "temperature",
			msg: `temperature must be a number between 0 and 1, got "NaN"`},
		{name: "temperature not a number", parts: withParts(ok, fieldsOf("temperature", "warm")...), status: 400, param: "temperature",
			msg: `temperature must be a number between 0 and 1, got "warm"`},
		{name: "granularity", parts: withParts(ok, fieldsOf("response_format", "verbose_json", "timestamp_granularities[]", "char")...),
			status: 400, param: "timestamp_granularities", msg: `timestamp_granularities entries must be "word" or "segment", got "char"`},
		{name: "second granularity bad", parts: withParts(ok, fieldsOf("response_format", "verbose_json", "timestamp_granularities", "word", "timestamp_granularities", "line")...),
			status: 400, param: "timestamp_granularities", msg: `timestamp_granularities entries must be "word" or "segment", got "line"`},
		{name: "word without verbose_json", parts: withParts(ok, fieldsOf("timestamp_granularities[]", "word")...), status: 400,
			param: "timestamp_granularities", msg: "timestamp_granularities[]=word requires response_format=verbose_json"},
		{name: "word with srt", parts: withParts(ok, fieldsOf("response_format", "srt", "timestamp_granularities", "word")...), status: 400,
			param: "timestamp_granularities", msg: "timestamp_granularities[]=word requires response_format=verbose_json"},
		{name: "segment with json", parts: withParts(ok, fieldsOf("timestamp_granularities[]", "segment")...), status: 200},
		{name: "include[]", parts: withParts(ok, fieldsOf("include[]", "logprobs")...), status: 400, param: "include",
			msg: `include "logprobs" is not available: this model reports no token log-probabilities`},
		{name: "include", parts: withParts(ok, fieldsOf("include", "logprobs")...), status: 400, param: "include",
			msg: `include "logprobs" is not available: this model reports no token log-probabilities`},
		{name: "chunking numbers", parts: withParts(ok, fieldsOf("chunking_strategy[type]", "server_vad", "chunking_strategy[threshold]", "0.5")...),
			status: 400, param: "chunking_strategy", msg: `chunking_strategy[threshold] is not supported: the server's VAD pre-processing uses its own thresholds; send chunking_strategy "auto" or {"type": "server_vad"} alone`},
		{name: "chunking type", parts: withParts(ok, fieldsOf("chunking_strategy", "fixed")...), status: 400, param: "chunking_strategy",
			msg: `chunking_strategy must be "auto" or {"type": "server_vad"}, got "fixed"`},
		{name: "chunking bracket type", parts: withParts(ok, fieldsOf("chunking_strategy[type]", "fixed")...), status: 400, param: "chunking_strategy",
			msg: `chunking_strategy must be "auto" or {"type": "server_vad"}, got "fixed"`},
		// Changed: both spellings of chunking_strategy's type were accepted, the last one winning.
		{name: "chunking type twice", parts: withParts(ok, fieldsOf("chunking_strategy", "auto", "chunking_strategy[type]", "server_vad")...),
			status: 400, param: "chunking_strategy[type]", msg: `form field "chunking_strategy[type]" was sent more than once; it takes one value (send it once)`},
		{name: "chunking without preprocessing", parts: withParts(ok, fieldsOf("is_preprocessing_enabled", "false", "chunking_strategy", "auto")...),
			status: 400, param: "chunking_strategy", msg: "chunking_strategy needs VAD pre-processing, but is_preprocessing_enabled=false was sent"},
		{name: "stream with srt", parts: withParts(ok, fieldsOf("response_format", "srt", "stream", "true")...), status: 400, param: "stream",
			msg: `stream=true needs response_format json or text, got "srt"`},
		{name: "stream with verbose_json", parts: withParts(ok, fieldsOf("response_format", "verbose_json", "stream", "yes")...), status: 400, param: "stream",
			msg: `stream=true needs response_format json or text, got "verbose_json"`},
		{name: "stream not a boolean", parts: withParts(ok, fieldsOf("stream", "maybe")...), status: 400, param: "stream",
			msg: `stream must be true or false, got "maybe"`},
		{name: "is_preprocessing_enabled not a boolean", parts: withParts(ok, fieldsOf("is_preprocessing_enabled", "2")...), status: 400,
			param: "is_preprocessing_enabled", msg: `is_preprocessing_enabled must be true or false, got "2"`},
		{name: "unknown field", parts: withParts(ok, fieldsOf("known_speaker_names[]", "ann")...), status: 400, param: "known_speaker_names[]",
			msg: `unknown parameter "known_speaker_names[]" ` + transcriptionAccepted},
		{name: "unknown file", parts: withParts(ok, part{"audio", "a.wav", "x"}), status: 400, param: "audio",
			msg: `unknown parameter "audio" ` + transcriptionAccepted},
		{name: "model twice", parts: withParts(ok, fieldsOf("model", "whisper-1")...), status: 400, param: "model",
			msg: `form field "model" was sent more than once; it takes one value (send it once)`},
		{name: "file twice", parts: withParts(ok, file), status: 400, param: "file",
			msg: `form field "file" was sent more than once; it takes one value (send it once)`},
		{name: "field too long", parts: withParts(ok, fieldsOf("prompt", long)...), status: 400, param: "prompt",
			msg: "field prompt is longer than 16384 bytes"},
		{name: "unknown field too long", parts: withParts(ok, fieldsOf("notes", long)...), status: 400, param: "notes",
			msg: "field notes is longer than 16384 bytes"},
		{name: "too many parts", parts: many, status: 400, param: nil, msg: "too many multipart parts (at most 64)"},
		{name: "file over the body limit", parts: []part{{"model", "", "whisper-1"}, {"file", "a.wav", strings.Repeat("\x00", 3<<20)}},
			status: 413, param: nil, msg: "Request body too large: 3146088 bytes. Maximum allowed: 2446680 bytes"},
	}
	runFormCases(t, h, "/v1/audio/transcriptions", cases)

	t.Run("translations", func(t *testing.T) {
		var cases []formCase
		for _, f := range [][2]string{{"timestamp_granularities[]", "segment"}, {"timestamp_granularities", "word"}, {"stream", "false"},
			{"include[]", "logprobs"}, {"include", "x"}, {"chunking_strategy", "auto"}, {"chunking_strategy[type]", "server_vad"},
			{"chunking_strategy[threshold]", "0.5"}} {
			cases = append(cases, formCase{name: f[0], parts: withParts(ok, part{f[0], "", f[1]}), status: 400, param: f[0], msg: f[0] + translationOnly})
		}
		cases = append(cases,
			formCase{name: "served", parts: withParts(ok, fieldsOf("language", "de", "prompt", "p", "response_format", "srt", "temperature", "0",
				"is_preprocessing_enabled", "false")...), status: 200},
			formCase{name: "unknown field", parts: withParts(ok, fieldsOf("voice", "x")...), status: 400, param: "voice",
				msg: `unknown parameter "voice" ` + transcriptionAccepted},
			formCase{name: "file missing", parts: fieldsOf("model", "whisper-1"), status: 400, param: "file",
				msg: `you must provide a file parameter (multipart field "file")`},
			formCase{name: "response_format", parts: withParts(ok, fieldsOf("response_format", "mp3")...), status: 400, param: "response_format",
				msg: `response_format "mp3" is not supported; accepted: json, text, srt, verbose_json, vtt`},
			formCase{name: "temperature", parts: withParts(ok, fieldsOf("temperature", "2")...), status: 400, param: "temperature",
				msg: `temperature must be a number between 0 and 1, got "2"`},
			formCase{name: "language", parts: withParts(ok, fieldsOf("language", "klingon")...), status: 400, param: "language",
				msg: `language "klingon" is not supported; use an ISO-639-1 code such as "en"`},
		)
		runFormCases(t, h, "/v1/audio/translations", cases)
	})
}

// TestOpenAIImageInputFormAnswers pins every answer of OpenAI's images/edits form (and the
// image-to-image route's), as the hand-written reader answered them.
func TestOpenAIImageInputFormAnswers(t *testing.T) {
	photo := image.NewNRGBA(image.Rect(0, 0, 8, 8))
	for i := range photo.Pix {
		photo.Pix[i] = uint8(i * 3)
	}
	img := string(pngBytes(t, photo))
	alpha := image.NewNRGBA(image.Rect(0, 0, 8, 8))
	for i := range 64 {
		alpha.SetNRGBA(i%8, i/8, color.NRGBA{A: uint8(255 * (i % 2))})
	}
	mask := string(pngBytes(t, alpha))
	im, mk, pr := part{"image", "i.png", img}, part{"mask", "m.png", mask}, part{"prompt", "", "p"}
	ok := []part{im, mk, pr}
	long := strings.Repeat("x", maxOpenAIFieldBytes+1)
	big := []part{pr, {"image", "i.png", strings.Repeat("\x00", maxImageBody)}}
	_, bigBody := partsBody(t, big) // its length: every boundary is 60 characters long
	bad := func(name, param, msg string, more ...string) formCase {
		return formCase{name: name, parts: withParts(ok, fieldsOf(more...)...), status: 400, param: param, msg: msg}
	}
	cases := []formCase{
		{name: "served", parts: ok, status: 200},
		{name: "image[]", parts: []part{{"image[]", "i.png", img}, mk, pr}, status: 200},
		{name: "every field", parts: withParts(ok, fieldsOf("model", "tt-sdxl-edit", "n", "2", "size", "auto", "response_format", "b64_json",
			"output_format", "jpeg", "output_compression", "80", "quality", "high", "background", "opaque", "user", "u-1",
			"negative_prompt", "blur", "seed", "7", "strength", "0.5", "steps", "20", "guidance_scale", "6")...), status: 200},
		{name: "size 1024", parts: withParts(ok, fieldsOf("size", "1024x1024")...), status: 200},
		{name: "num_inference_steps", parts: withParts(ok, fieldsOf("num_inference_steps", " 30 ", "quality", "low")...), status: 200},

		{name: "not multipart", ctype: "application/json", raw: []byte(`{"model":"x","prompt":"p"}`), status: 400, param: nil,
			msg: `Content-Type must be multipart/form-data, got "application/json"`},
		{name: "image missing", parts: []part{mk, pr}, status: 400, param: "image", msg: `you must provide an image (multipart field "image")`},
		{name: "image and image[]", parts: withParts(ok, part{"image[]", "j.png", img}), status: 400, param: "image",
			msg: "one image is accepted; this model edits a single image"},
		{name: "image twice", parts: withParts(ok, im), status: 400, param: "image",
			msg: `form field "image" was sent more than once; it takes one value (send it once)`},
		{name: "image[] twice", parts: []part{{"image[]", "i.png", img}, {"image[]", "j.png", img}, mk, pr}, status: 400, param: "image[]",
			msg: `form field "image[]" was sent more than once; it takes one value (send it once)`},
		{name: "prompt missing", parts: []part{im, mk}, status: 400, param: "prompt", msg: "prompt must be a non-empty string"},
		{name: "prompt blank", parts: []part{im, mk, {"prompt", "", " \n "}}, status: 400, param: "prompt", msg: "prompt must be a non-empty string"},
		{name: "mask missing", parts: []part{im, pr}, status: 400, param: "mask",
			msg: "you must provide a mask: this model inpaints (MODEL_RUNNER=tt-sdxl-edit)"},
		{name: "model unknown", parts: withParts(ok, fieldsOf("model", "sd-1")...), status: 404, param: "model",
			msg: "The model `sd-1` does not exist or is not served here."},
		{name: "OpenAI's model names", parts: withParts(ok, fieldsOf("model", "dall-e-2")...), status: 200},
		bad("n high", "n", `n must be an integer between 1 and 4, got "5"`, "n", "5"),
		bad("n zero", "n", `n must be an integer between 1 and 4, got "0"`, "n", "0"),
		bad("n not an integer", "n", `n must be an integer between 1 and 4, got "two"`, "n", "two"),
		bad("size", "size", `size "512x512" is not supported by this model; accepted: auto, 1024x1024`, "size", "512x512"),
		bad("response_format url", "response_format", `response_format "url" is not supported: this server does not store images; use "b64_json"`, "response_format", "url"),
		bad("response_format", "response_format", `response_format must be "b64_json", got "png"`, "response_format", "png"),
		bad("output_format", "output_format", `output_format "gif" is not supported; accepted: png, jpeg, webp`, "output_format", "gif"),
		bad("output_compression high", "output_compression", `output_compression must be an integer between 0 and 100, got "101"`, "output_format", "webp", "output_compression", "101"),
		bad("output_compression not an integer", "output_compression", `output_compression must be an integer between 0 and 100, got "high"`, "output_compression", "high"),
		bad("output_compression with png", "output_compression", "output_compression applies to jpeg and webp only; output_format is png (lossless)", "output_compression", "50"),
		bad("quality", "quality", `quality must be one of auto, low, medium, high, standard, hd; got "ultra"`, "quality", "ultra"),
		bad("background", "background", `background "transparent" is not supported; accepted: auto, opaque`, "background", "transparent"),
		bad("user", "user", "user must be at most 256 bytes (an end-user id), got 257", "user", strings.Repeat("u", 257)),
		bad("seed", "seed", `seed must be an integer, got "1.5"`, "seed", "1.5"),
		bad("strength high", "strength", `strength must be a number between 0 and 1, got "2"`, "strength", "2"),
		bad("strength NaN", "strength", `strength must be a number between 0 and 1, got "NaN"`, "strength", "NaN"),
		bad("steps", "steps", `steps must be an integer between 12 and 50, got "5"`, "steps", "5"),
		bad("num_inference_steps", "num_inference_steps", `num_inference_steps must be an integer between 12 and 50, got "51"`, "num_inference_steps", "51"),
		bad("guidance_scale", "guidance_scale", `guidance_scale must be a number between 1 and 20, got "0.5"`, "guidance_scale", "0.5"),
		bad("unknown field", "style", `field "style" is not supported on this route`, "style", "vivid"),
		bad("stream", "stream", `field "stream" is not supported on this route`, "stream", "true"),
		{name: "unknown file", parts: withParts(ok, part{"reference", "r.png", img}), status: 400, param: "reference",
			msg: `field "reference" is not supported on this route`},
		bad("prompt twice", "prompt", `form field "prompt" was sent more than once; it takes one value (send it once)`, "prompt", "q"),
		bad("field too long", "negative_prompt", "field negative_prompt is longer than 16384 bytes", "negative_prompt", long),
		{name: "over the body limit", parts: big, status: 413, param: nil,
			msg: fmt.Sprintf("Request body too large: %d bytes. Maximum allowed: %d bytes", len(bigBody), maxImageBody)},
	}
	h, _ := pythonFieldsServer(t, runners.ServiceImage, catalogue.RunnerSDXLEdit)
	runFormCases(t, h, "/v1/images/edits", cases)

	t.Run("image-to-image", func(t *testing.T) {
		h, _ := pythonFieldsServer(t, runners.ServiceImage, catalogue.RunnerSDXLImg2Img)
		runFormCases(t, h, "/v1/images/image-to-image", []formCase{
			{name: "served", parts: []part{im, pr, {"strength", "", "0.3"}}, status: 200},
			{name: "mask refused", parts: ok, status: 400, param: "mask",
				msg: "mask is for inpainting (MODEL_RUNNER=tt-sdxl-edit); this route transforms the whole image"},
			{name: "image missing", parts: []part{pr}, status: 400, param: "image", msg: `you must provide an image (multipart field "image")`},
		})
	})
}

// TestOpenAIVideoFormAnswers pins the answers of POST /v1/videos's multipart form (its JSON body
// is TestDecodeOpenAISpeechVideoParams'), as the hand-written reader answered them.
func TestOpenAIVideoFormAnswers(t *testing.T) {
	t2v := newVideoEnv(t, catalogue.RunnerWan22, time.Millisecond, nil)
	i2v := newVideoEnv(t, catalogue.RunnerWan22I2V, time.Millisecond, nil)
	png := string(videoPNG(t))
	ref := part{"input_reference", "a.png", png}
	cases := []formCase{
		{name: "served", parts: fieldsOf("prompt", "x", "model", "tt-wan2.2", "seconds", "5", "size", "104x60"), status: 200},
		{name: "unknown field", parts: fieldsOf("prompt", "x", "quality", "hd"), status: 400, param: "quality",
			msg: `unknown parameter "quality"; POST /v1/videos reads prompt, model, seconds, size, input_reference`},
		{name: "prompt twice", parts: fieldsOf("prompt", "x", "prompt", "y"), status: 400, param: "prompt", msg: "prompt sent twice; send it once"},
		{name: "input_reference twice", parts: []part{{"prompt", "", "x"}, ref, ref}, status: 400, param: "input_reference",
			msg: "input_reference sent twice; send it once"},
		{name: "input_reference too large", parts: []part{{"prompt", "", "x"}, {"input_reference", "a.png", strings.Repeat("\x00", 1<<20+1)}},
			status: 413, param: "input_reference", msg: "input_reference exceeds 1048576 bytes"},
		{name: "not a form", ctype: "text/plain", raw: []byte("x"), status: 400, param: nil,
			msg: `Content-Type must be application/json or multipart/form-data, got "text/plain"`},
		{name: "malformed", ctype: "multipart/form-data; boundary=xyz", raw: []byte("--xyz\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\nx"),
			// Changed: was param "prompt", "unreadable: unexpected EOF" (the body's framing, not the field, is broken).
			status: 400, param: nil, msg: "malformed multipart body: unexpected EOF"},
		// Changed: a text part over MAX_VIDEO_IMAGE_BYTES was cut to its first MAX_VIDEO_IMAGE_BYTES+1 bytes.
		{name: "prompt too long", parts: fieldsOf("prompt", strings.Repeat("x", 1<<20+1)), status: 400, param: "prompt",
			msg: "field prompt is longer than 1048576 bytes"},
		{name: "model not served", parts: fieldsOf("prompt", "x", "model", "sora-2"), status: 404, param: "model",
			msg: `model "sora-2" is not served here; this deployment serves tt-wan2.2`},
		{name: "seconds", parts: fieldsOf("prompt", "x", "seconds", "8"), status: 400, param: "seconds", msg: `seconds: tt-wan2.2 makes 81 frames at 16 fps: seconds must be "5" (or left out)`},
		{name: "size", parts: fieldsOf("prompt", "x", "size", "1280x720"), status: 400, param: "size", msg: `size: tt-wan2.2 serves 104x60 on this deployment: size must be "104x60" (or left out)`},
		{name: "prompt missing", parts: fieldsOf("model", "tt-wan2.2"), status: 400, param: "prompt", msg: "prompt: a prompt is required"},
	}
	runFormCases(t, t2v.h, "/v1/videos", cases)
	t.Run("i2v", func(t *testing.T) {
		runFormCases(t, i2v.h, "/v1/videos", []formCase{
			{name: "served", parts: []part{{"prompt", "", "x"}, ref}, status: 200},
			{name: "reference missing", parts: fieldsOf("prompt", "x"), status: 400, param: "input_reference", msg: "input_reference: this deployment (tt-wan2.2-i2v) requires image conditioning. Use POST /v1/videos/generations/i2v with at least one image_prompts entry, or POST /v1/videos/generations/i2v/upload to send the image as a file"},
			{name: "reference not an image", parts: []part{{"prompt", "", "x"}, {"input_reference", "a.png", "not a png"}}, status: 400, param: "input_reference",
				msg: "input_reference: image could not be decoded (PNG, JPEG or WebP): invalid image: image: unknown format"},
		})
	})
}

// TestOpenAIVideoFormMatchesJSON: the video form takes the JSON body's fields and refuses
// others with the same sentence.
func TestOpenAIVideoFormMatchesJSON(t *testing.T) {
	form := formDeclOf(reflect.TypeFor[openAIVideoForm]())
	require.Equal(t, declaredNames(reflect.TypeFor[openAIVideoParams]()), form.jsonNames)
	require.Equal(t, unknownVideoParam("x").Error(), invalidParam("x", form.unknownMsg, "x").Error())
}

// TestOpenAIFormTagsMatchLimits: the limits spelled in the form tags are the server's.
func TestOpenAIFormTagsMatchLimits(t *testing.T) {
	typ := reflect.TypeFor[openAIImageInputParams]()
	for field, want := range map[string]string{"N": fmt.Sprintf("max=%d", maxOpenAIImages), "User": fmt.Sprintf("maxbytes=%d", maxEndUser)} {
		f, ok := typ.FieldByName(field)
		require.True(t, ok)
		require.Contains(t, f.Tag.Get("validate"), want)
	}
}

// TestOpenAIImageInputStepsOverrideQuality: steps and num_inference_steps override quality
// whatever the order of the parts, num_inference_steps winning over steps (as on
// /v1/images/generations; before the form was declared the last part won).
func TestOpenAIImageInputStepsOverrideQuality(t *testing.T) {
	s, f := imageInputServer(t, catalogue.RunnerSDXLImg2Img, "")
	img := string(pngBytes(t, image.NewNRGBA(image.Rect(0, 0, 8, 8))))
	for _, tc := range []struct {
		name  string
		more  []string
		steps int
	}{
		{"quality alone", []string{"quality", "high"}, stepsHighQuality},
		{"steps then quality", []string{"steps", "30", "quality", "low"}, 30},
		{"quality then steps", []string{"quality", "low", "steps", "30"}, 30},
		{"num_inference_steps then steps", []string{"num_inference_steps", "25", "steps", "30"}, 25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct, body := partsBody(t, withParts([]part{{"image", "i.png", img}, {"prompt", "", "p"}}, fieldsOf(tc.more...)...))
			w := serve(s, http.MethodPost, "/v1/images/image-to-image", ct, body)
			require.Equal(t, http.StatusOK, w.Code, w.Body.String())
			require.Equal(t, tc.steps, f.last.(*runners.ImageRequest).NumInferenceSteps)
		})
	}
}

// testForm exercises decodeOpenAIForm's own rules: the default answers of a form without msg
// tags, lax booleans, base-10 integers, a bracketed map, a field under two names.
type testForm struct {
	Doc   []byte            `json:"doc" form:"doc doc[],file" validate:"required"`
	Count *int64            `json:"count" form:",trim" validate:"omitnil,max=3"`
	On    bool              `json:"on"`
	Tags  []string          `json:"tags" form:"tags[] tags"`
	Opts  map[string]string `json:"opts[*]"`
	Note  string            `json:"note"`
}

func TestDecodeOpenAIForm(t *testing.T) {
	doc := part{"doc", "d.txt", "hi"}
	for _, tc := range []struct {
		name       string
		parts      []part
		param, msg string // "" = accepted
		check      func(t *testing.T, f *testForm)
	}{
		{"accepted", []part{doc, {"count", "", " 3 "}, {"on", "", "yes"}, {"tags[]", "", "a"}, {"tags", "", "b"}, {"opts[x]", "", "1"}, {"note", "", " n "}}, "", "",
			func(t *testing.T, f *testForm) {
				require.Equal(t, "hi", string(f.Doc))
				require.Equal(t, int64(3), *f.Count)
				require.True(t, f.On)
				require.Equal(t, []string{"a", "b"}, f.Tags)
				require.Equal(t, map[string]string{"x": "1"}, f.Opts)
				require.Equal(t, " n ", f.Note, "a field without trim is read as sent")
			}},
		{"empty file is sent", []part{{"doc", "d.txt", ""}}, "", "", func(t *testing.T, f *testForm) { require.NotNil(t, f.Doc) }},
		{"file missing", []part{{"note", "", "n"}}, "doc", "doc is required", nil},
		{"file under both names", []part{doc, {"doc[]", "e.txt", "x"}}, "doc", `form field "doc" was sent more than once; it takes one value (send it once)`, nil},
		{"not an integer", []part{doc, {"count", "", "2.0"}}, "count", `count must be an integer, got "2.0"`, nil},
		{"not a boolean", []part{doc, {"on", "", "maybe"}}, "on", `on must be a boolean, got "maybe"`, nil},
		{"rule without a msg", []part{doc, {"count", "", "4"}}, "count", "count does not satisfy max=3, got 4", nil},
		{"unknown", []part{doc, {"other", "", "x"}}, "other", `unknown parameter "other"`, nil},
		{"long value quoted short", []part{doc, {"count", "", strings.Repeat("9", 100)}}, "count", `count must be an integer, got "` + strings.Repeat("9", 64) + `..."`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct, body := partsBody(t, tc.parts)
			mt, params, err := mime.ParseMediaType(ct)
			require.NoError(t, err)
			var f testForm
			err = decodeOpenAIForm(&request{data: body, contentType: mt, boundary: params["boundary"]}, ct, openAIFormLimits, &f)
			if tc.msg == "" {
				require.NoError(t, err)
				tc.check(t, &f)
				return
			}
			ae, ok := err.(*apiError) //nolint:errorlint // decodeOpenAIForm returns it unwrapped
			require.True(t, ok, "%T %v", err, err)
			require.Equal(t, http.StatusBadRequest, ae.status)
			require.Equal(t, tc.param, ae.param)
			require.Equal(t, tc.msg, ae.msg)
		})
	}
}
