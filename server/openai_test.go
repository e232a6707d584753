package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	xwebp "golang.org/x/image/webp"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/media/webp"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/scheduler"
)

// goldenResult is fixed segment data for the format goldens: a trimmed text with an arrow,
// an hour-long offset and a millisecond rounding that carries into the seconds.
func goldenResult() *runners.TranscriptionResult {
	return &runners.TranscriptionResult{
		Text:     "The beach was a popular spot on a hot summer day. People were swimming --> in the ocean. Late.",
		Task:     "transcribe",
		Language: "english",
		Duration: 3728,
		Segments: []runners.TranscriptionSegment{
			{ID: 0, Speaker: "SPEAKER_00", StartTime: 0, EndTime: 3.32, Text: "The beach was a popular spot on a hot summer day."},
			{ID: 1, Speaker: "SPEAKER_00", StartTime: 3.32, EndTime: 8.47, Text: " People were swimming --> in the ocean. "},
			{ID: 2, Speaker: "SPEAKER_01", StartTime: 3661.5, EndTime: 3727.9996, Text: "Late."},
		},
	}
}

func readGolden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "openai", name))
	require.NoError(t, err)
	return b
}

func TestOpenAIFormatGoldens(t *testing.T) {
	res := goldenResult()
	require.Equal(t, string(readGolden(t, "transcript.srt")), formatSRT(transcriptSpans(res)))
	require.Equal(t, string(readGolden(t, "transcript.vtt")), formatVTT(transcriptSpans(res)))
	require.Equal(t, res.Text+"\n", formatText(res))

	// verbose_json: the golden's keys in OpenAI's order, compared byte for byte once compact
	// (encoded as writeJSON does, without HTML escaping). Its compression ratios are Python's
	// len(text) / len(zlib.compress(text)), which whisper computes (runners/whisper/decoding).
	var got bytes.Buffer
	enc := json.NewEncoder(&got)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(verboseJSON(taskTranscribe, res, true)))
	require.Equal(t, compactGolden(t, "verbose.json"), strings.TrimSpace(got.String()))
}

func compactGolden(t *testing.T, name string) string {
	t.Helper()
	var want bytes.Buffer
	require.NoError(t, json.Compact(&want, readGolden(t, name)))
	return want.String()
}

func TestSubtitleTimestamp(t *testing.T) {
	tests := []struct {
		sec      float64
		srt, vtt string
	}{
		{0, "00:00:00,000", "00:00:00.000"},
		{0.0004, "00:00:00,000", "00:00:00.000"},
		{59.9996, "00:01:00,000", "00:01:00.000"},
		{3599.999, "00:59:59,999", "00:59:59.999"},
		{36000.25, "10:00:00,250", "10:00:00.250"},
		{-1, "00:00:00,000", "00:00:00.000"},
	}
	for _, tc := range tests {
		require.Equal(t, tc.srt, subtitleTimestamp(tc.sec, ','), "%v", tc.sec)
		require.Equal(t, tc.vtt, subtitleTimestamp(tc.sec, '.'), "%v", tc.sec)
	}
}

func TestVerboseWithoutRunnerSegments(t *testing.T) {
	res := &runners.TranscriptionResult{Text: "hello there", Language: "English", Duration: 2.5}
	v := verboseJSON(taskTranscribe, res, true)
	require.Equal(t, "english", v.Language)
	require.Len(t, v.Segments, 1)
	require.Equal(t, " hello there", v.Segments[0].Text)
	require.Equal(t, 2.5, v.Segments[0].End)
	require.Equal(t, &durationUsage{Type: "duration", Seconds: 3}, v.Usage)

	tr := verboseJSON(taskTranslate, res, true)
	require.Nil(t, tr.Usage)
	require.Equal(t, "translate", tr.Task)
}

func openAISettings(runner string) *config.Settings {
	s := testSettings()
	s.ModelRunner = runner
	return s
}

func newOpenAIServer(svc runners.Service, runner string, f *fakeSched) http.Handler {
	return New(Deps{Settings: openAISettings(runner), Service: svc, Sched: f}).Handler()
}

// multipartBody builds a form like the SDKs send; fields are (name, value) pairs.
func multipartBody(t *testing.T, file []byte, fields ...string) (string, []byte) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	if file != nil {
		fw, err := w.CreateFormFile("file", "speech.wav")
		require.NoError(t, err)
		_, err = fw.Write(file)
		require.NoError(t, err)
	}
	for i := 0; i+1 < len(fields); i += 2 {
		require.NoError(t, w.WriteField(fields[i], fields[i+1]))
	}
	require.NoError(t, w.Close())
	return w.FormDataContentType(), b.Bytes()
}

// requireEnvelope checks OpenAI's error body: all four keys, and the expected type/param/code
// (nil for JSON null).
func requireEnvelope(t *testing.T, body []byte, typ string, param, code any) string {
	t.Helper()
	var env struct {
		Error map[string]any `json:"error"` // a two-dialect route's 401 also has "detail"
	}
	require.NoError(t, json.Unmarshal(body, &env), string(body))
	e := env.Error
	require.NotNil(t, e, string(body))
	require.Len(t, e, 4, string(body))
	for _, k := range []string{"message", "type", "param", "code"} {
		require.Contains(t, e, k)
	}
	require.Equal(t, typ, e["type"], string(body))
	require.Equal(t, param, e["param"], string(body))
	require.Equal(t, code, e["code"], string(body))
	require.NotEmpty(t, e["message"])
	return e["message"].(string)
}

func audioFake(res *runners.TranscriptionResult) *fakeSched {
	return &fakeSched{ready: true, submit: func(context.Context, runners.Request, func(runners.Chunk) error) (runners.Result, error) {
		cp := *res
		return &cp, nil
	}}
}

func TestOpenAITranscriptionFormatsAndGranularities(t *testing.T) {
	h := newOpenAIServer(runners.ServiceAudio, "tt-whisper", audioFake(goldenResult()))
	wav := testWAV(16000, 16000)
	tests := []struct {
		name       string
		fields     []string
		status     int
		ctype      string
		body       string // exact body, when set
		segments   bool
		words      bool
		errParam   any
		translated bool
	}{
		{name: "default json", fields: []string{"model", "whisper-1"}, status: 200, ctype: "application/json",
			body: `{"text":"The beach was a popular spot on a hot summer day. People were swimming --> in the ocean. Late.","usage":{"type":"duration","seconds":3728}}`},
		{name: "text", fields: []string{"model", "whisper-1", "response_format", "text"}, status: 200, ctype: "text/plain; charset=utf-8",
			body: goldenResult().Text + "\n"},
		{name: "srt", fields: []string{"model", "whisper-1", "response_format", "srt"}, status: 200, ctype: "text/plain; charset=utf-8",
			body: string(readGolden(t, "transcript.srt"))},
		{name: "vtt", fields: []string{"model", "whisper-1", "response_format", "vtt"}, status: 200, ctype: "text/vtt; charset=utf-8",
			body: string(readGolden(t, "transcript.vtt"))},
		{name: "verbose default granularity", fields: []string{"model", "whisper-1", "response_format", "verbose_json"}, status: 200, segments: true,
			ctype: "application/json", body: compactGolden(t, "verbose.json")},
		{name: "verbose segment", fields: []string{"model", "whisper-1", "response_format", "verbose_json", "timestamp_granularities[]", "segment"}, status: 200, segments: true},
		{name: "verbose word only", fields: []string{"model", "whisper-1", "response_format", "verbose_json", "timestamp_granularities[]", "word"}, status: 200, words: true},
		{name: "verbose both, repeated key form", fields: []string{"model", "whisper-1", "response_format", "verbose_json", "timestamp_granularities", "word", "timestamp_granularities", "segment"}, status: 200, segments: true, words: true},
		{name: "json with word", fields: []string{"model", "whisper-1", "timestamp_granularities[]", "word"}, status: 400, errParam: "timestamp_granularities"},
		{name: "srt with word", fields: []string{"model", "whisper-1", "response_format", "srt", "timestamp_granularities[]", "word"}, status: 400, errParam: "timestamp_granularities"},
		{name: "json with segment is fine", fields: []string{"model", "whisper-1", "timestamp_granularities[]", "segment"}, status: 200, ctype: "application/json"},
		{name: "bad granularity", fields: []string{"model", "whisper-1", "response_format", "verbose_json", "timestamp_granularities[]", "char"}, status: 400, errParam: "timestamp_granularities"},
		{name: "missing model", fields: []string{"language", "en"}, status: 400, errParam: "model"},
		{name: "bad format", fields: []string{"model", "whisper-1", "response_format", "diarized_json"}, status: 400, errParam: "response_format"},
		{name: "bad temperature", fields: []string{"model", "whisper-1", "temperature", "1.5"}, status: 400, errParam: "temperature"},
		{name: "bad language", fields: []string{"model", "whisper-1", "language", "xx"}, status: 400, errParam: "language"},
		{name: "language code and fields the SDKs send", fields: []string{"model", "whisper-1", "language", "en", "prompt", "beach", "temperature", "0.2", "stream", "false", "chunking_strategy[type]", "server_vad"}, status: 200, ctype: "application/json"},
		{name: "server_vad numbers are refused, not ignored", fields: []string{"model", "whisper-1", "chunking_strategy[type]", "server_vad", "chunking_strategy[threshold]", "0.5"}, status: 400, errParam: "chunking_strategy"},
		{name: "unknown field is refused, not ignored", fields: []string{"model", "whisper-1", "known_speaker_names[]", "ann"}, status: 400, errParam: "known_speaker_names[]"},
		{name: "chunking auto", fields: []string{"model", "whisper-1", "chunking_strategy", "auto"}, status: 200, ctype: "application/json"},
		{name: "bad chunking", fields: []string{"model", "whisper-1", "chunking_strategy", "fixed"}, status: 400, errParam: "chunking_strategy"},
		{name: "logprobs", fields: []string{"model", "whisper-1", "include[]", "logprobs"}, status: 400, errParam: "include"},
		{name: "stream with srt", fields: []string{"model", "whisper-1", "response_format", "srt", "stream", "true"}, status: 400, errParam: "stream"},
		{name: "bad stream", fields: []string{"model", "whisper-1", "stream", "maybe"}, status: 400, errParam: "stream"},
		{name: "canonical model name", fields: []string{"model", "openai-whisper-large-v3"}, status: 200, ctype: "application/json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ct, body := multipartBody(t, wav, tc.fields...)
			w := do(h, "POST", "/v1/audio/transcriptions", ct, "Bearer k", body)
			require.Equal(t, tc.status, w.Code, w.Body.String())
			if tc.status != 200 {
				requireEnvelope(t, w.Body.Bytes(), "invalid_request_error", tc.errParam, nil)
				return
			}
			if tc.ctype != "" {
				require.Equal(t, tc.ctype, w.Header().Get("Content-Type"))
			}
			if tc.body != "" {
				require.Equal(t, tc.body, w.Body.String())
			}
			if tc.segments || tc.words {
				var v map[string]json.RawMessage
				require.NoError(t, json.Unmarshal(w.Body.Bytes(), &v))
				_, hasSeg := v["segments"]
				_, hasWords := v["words"]
				require.Equal(t, tc.segments, hasSeg, w.Body.String())
				for _, k := range []string{"task", "language", "duration", "text", "usage"} {
					require.Contains(t, v, k)
				}
				// Word timestamps are unavailable (no cross-attention from the device):
				// never a words field, and the header says why when words were asked for.
				require.False(t, hasWords, w.Body.String())
				if tc.words {
					require.Equal(t, "unavailable", w.Header().Get("X-Word-Timestamps"))
				} else {
					require.Empty(t, w.Header().Get("X-Word-Timestamps"))
				}
			}
		})
	}

	t.Run("unknown model is 404 model_not_found", func(t *testing.T) {
		ct, body := multipartBody(t, wav, "model", "gpt-4o-transcribe")
		w := do(h, "POST", "/v1/audio/transcriptions", ct, "Bearer k", body)
		require.Equal(t, 404, w.Code)
		requireEnvelope(t, w.Body.Bytes(), "invalid_request_error", "model", "model_not_found")
	})
	// OpenAI answers these 400 (the SDKs raise BadRequestError; a 415 is a generic APIError).
	t.Run("not multipart is 400", func(t *testing.T) {
		w := do(h, "POST", "/v1/audio/transcriptions", "application/json", "Bearer k", []byte(`{"model":"whisper-1"}`))
		require.Equal(t, 400, w.Code)
		requireEnvelope(t, w.Body.Bytes(), "invalid_request_error", nil, nil)
	})
	t.Run("not audio is 400 naming the file", func(t *testing.T) {
		ct, body := multipartBody(t, []byte("this is not audio at all, just text"), "model", "whisper-1")
		w := do(h, "POST", "/v1/audio/transcriptions", ct, "Bearer k", body)
		require.Equal(t, 400, w.Code, w.Body.String())
		requireEnvelope(t, w.Body.Bytes(), "invalid_request_error", "file", nil)
	})
	t.Run("temperature NaN is 400", func(t *testing.T) {
		for _, v := range []string{"NaN", "nan", "-1", "1.5", "Inf"} {
			ct, body := multipartBody(t, wav, "model", "whisper-1", "temperature", v)
			w := do(h, "POST", "/v1/audio/transcriptions", ct, "Bearer k", body)
			require.Equal(t, 400, w.Code, "temperature=%s: %s", v, w.Body.String())
			requireEnvelope(t, w.Body.Bytes(), "invalid_request_error", "temperature", nil)
		}
	})
	t.Run("file too large is 413", func(t *testing.T) {
		ct, body := multipartBody(t, make([]byte, 3<<20), "model", "whisper-1")
		w := do(h, "POST", "/v1/audio/transcriptions", ct, "Bearer k", body)
		require.Equal(t, 413, w.Code, w.Body.String())
		requireEnvelope(t, w.Body.Bytes(), "invalid_request_error", nil, nil)
	})
}

func TestOpenAITranslation(t *testing.T) {
	english := goldenResult()
	h := newOpenAIServer(runners.ServiceAudio, "tt-whisper", audioFake(english))
	wav := testWAV(16000, 16000)
	// Transcription-only fields are not part of the translation schema: each is a 400 naming it.
	for _, f := range [][2]string{{"timestamp_granularities[]", "word"}, {"stream", "true"}, {"include[]", "logprobs"}, {"chunking_strategy", "auto"}, {"chunking_strategy[type]", "server_vad"}} {
		ct, body := multipartBody(t, wav, "model", "whisper-1", f[0], f[1])
		w := do(h, "POST", "/v1/audio/translations", ct, "Bearer k", body)
		require.Equal(t, 400, w.Code, w.Body.String())
		requireEnvelope(t, w.Body.Bytes(), "invalid_request_error", f[0], nil)
	}
	ct, body := multipartBody(t, wav, "model", "whisper-1", "response_format", "verbose_json")
	w := do(h, "POST", "/v1/audio/translations", ct, "Bearer k", body)
	require.Equal(t, 200, w.Code, w.Body.String())
	var v map[string]any
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &v))
	require.Equal(t, "translate", v["task"])
	require.Equal(t, "english", v["language"])
	require.NotContains(t, v, "words")
	require.NotContains(t, v, "usage")
	require.Len(t, v["segments"], 3)

	ct, body = multipartBody(t, wav, "model", "whisper-1")
	w = do(h, "POST", "/v1/audio/translations", ct, "Bearer k", body)
	require.Equal(t, 200, w.Code)
	require.JSONEq(t, `{"text":"`+english.Text+`"}`, w.Body.String())

	// language is the source language, as Whisper takes it with the translate task.
	f := audioFake(english)
	h = newOpenAIServer(runners.ServiceAudio, "tt-whisper", f)
	for _, tc := range []struct{ language, want string }{{"", ""}, {"de", "de"}, {"German", "de"}} {
		fields := []string{"model", "whisper-1"}
		if tc.language != "" {
			fields = append(fields, "language", tc.language)
		}
		ct, body := multipartBody(t, wav, fields...)
		w := do(h, "POST", "/v1/audio/translations", ct, "Bearer k", body)
		require.Equal(t, 200, w.Code, w.Body.String())
		got := f.last.(*runners.AudioRequest)
		require.Equal(t, tc.want, got.Language, "language %q", tc.language)
		require.Equal(t, "translate", got.Task)
	}
	ct, body = multipartBody(t, wav, "model", "whisper-1", "language", "klingon")
	w = do(h, "POST", "/v1/audio/translations", ct, "Bearer k", body)
	require.Equal(t, 400, w.Code, w.Body.String())
	requireEnvelope(t, w.Body.Bytes(), "invalid_request_error", "language", nil)
	ct, body = multipartBody(t, wav, "model", "whisper-1")

	// Speech the runner says is not English cannot be translated yet: 501, not a mislabelled transcript.
	german := goldenResult()
	german.Language = "german"
	h = newOpenAIServer(runners.ServiceAudio, "tt-whisper", audioFake(german))
	w = do(h, "POST", "/v1/audio/translations", ct, "Bearer k", body)
	require.Equal(t, 501, w.Code)
	require.Equal(t, "false", w.Header().Get("x-should-retry"))
	requireEnvelope(t, w.Body.Bytes(), "server_error", nil, "translation_not_supported")
}

func TestOpenAITranscriptionStream(t *testing.T) {
	wav := testWAV(16000, 16000)
	f := &fakeSched{ready: true}
	f.submit = func(_ context.Context, req runners.Request, emit func(runners.Chunk) error) (runners.Result, error) {
		require.NotNil(t, emit)
		for i, w := range []string{"[SPEAKER_00] Héllo", "", "world.", "[SPEAKER_01] Bye"} {
			require.NoError(t, emit(runners.TranscriptChunk{Text: w, ChunkID: i + 1}))
		}
		return &runners.TranscriptionResult{Text: "Héllo world. Bye", Language: "english", Duration: 1.2}, nil
	}
	h := newOpenAIServer(runners.ServiceAudio, "tt-whisper", f)
	ct, body := multipartBody(t, wav, "model", "whisper-1", "stream", "true")
	w := do(h, "POST", "/v1/audio/transcriptions", ct, "Bearer k", body)
	require.Equal(t, 200, w.Code, w.Body.String())
	require.Equal(t, "text/event-stream; charset=utf-8", w.Header().Get("Content-Type"))
	require.Equal(t, `data: {"type":"transcript.text.delta","delta":"Héllo"}`+"\n\n"+
		`data: {"type":"transcript.text.delta","delta":" world."}`+"\n\n"+
		`data: {"type":"transcript.text.delta","delta":" Bye"}`+"\n\n"+
		`data: {"type":"transcript.text.done","text":"Héllo world. Bye","usage":{"type":"duration","seconds":2}}`+"\n\n",
		w.Body.String())

	// A runner that streams nothing still sends a delta first.
	f.submit = func(context.Context, runners.Request, func(runners.Chunk) error) (runners.Result, error) {
		return &runners.TranscriptionResult{Text: "all at once", Duration: 1}, nil
	}
	w = do(h, "POST", "/v1/audio/transcriptions", ct, "Bearer k", body)
	require.Equal(t, `data: {"type":"transcript.text.delta","delta":"all at once"}`+"\n\n"+
		`data: {"type":"transcript.text.done","text":"all at once","usage":{"type":"duration","seconds":1}}`+"\n\n", w.Body.String())

	// Mid-stream failure: a data event with an "error" key, then the end.
	f.submit = func(_ context.Context, _ runners.Request, emit func(runners.Chunk) error) (runners.Result, error) {
		require.NoError(t, emit(runners.TranscriptChunk{Text: "partial", ChunkID: 1}))
		return nil, scheduler.ErrTimeout
	}
	w = do(h, "POST", "/v1/audio/transcriptions", ct, "Bearer k", body)
	require.Equal(t, 200, w.Code)
	events := strings.Split(strings.TrimSuffix(w.Body.String(), "\n\n"), "\n\n")
	require.Len(t, events, 2, w.Body.String())
	var ev struct {
		Type  string            `json:"type"`
		Error openAIErrorObject `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(events[1], "data: ")), &ev))
	require.Equal(t, "error", ev.Type)
	require.Equal(t, "server_error", ev.Error.Type)
	require.Equal(t, "timeout", *ev.Error.Code)

	// Failure before the first event: a real status and the envelope.
	f.submit = func(context.Context, runners.Request, func(runners.Chunk) error) (runners.Result, error) {
		return nil, scheduler.ErrQueueFull
	}
	w = do(h, "POST", "/v1/audio/transcriptions", ct, "Bearer k", body)
	require.Equal(t, 429, w.Code)
	requireEnvelope(t, w.Body.Bytes(), "rate_limit_error", nil, "rate_limit_exceeded")
}

func imageFake() *fakeSched {
	return &fakeSched{ready: true, submit: func(_ context.Context, req runners.Request, _ func(runners.Chunk) error) (runners.Result, error) {
		return &runners.ImageResult{Images: []image.Image{image.NewRGBA(image.Rect(0, 0, 8, 8))}}, nil
	}}
}

// TestOpenAIImageEndUser: OpenAI's user (an end-user id) is written to the request's
// access-log line, and only there.
func TestOpenAIImageEndUser(t *testing.T) {
	var logged bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logged, &slog.HandlerOptions{Level: slog.LevelInfo}))
	h := New(Deps{Settings: openAISettings("tt-sdxl-trace"), Service: runners.ServiceImage, Sched: imageFake(), Logger: log}).Handler()
	for _, tc := range []struct{ body, user string }{
		{`{"prompt":"a","n":1,"user":"user-1234"}`, "user-1234"},
		{`{"prompt":"a","n":1}`, ""},
	} {
		logged.Reset()
		w := do(h, "POST", "/v1/images/generations", "application/json", "Bearer k", []byte(tc.body))
		require.Equal(t, 200, w.Code, w.Body.String())
		require.NotContains(t, w.Body.String(), "user-1234", "the id is not echoed")
		var line map[string]any
		for _, l := range strings.Split(strings.TrimSpace(logged.String()), "\n") {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(l), &m))
			if m["msg"] == "request" {
				line = m
			}
		}
		require.NotNil(t, line, "no access-log line in %s", logged.String())
		if tc.user == "" {
			require.NotContains(t, line, "user")
		} else {
			require.Equal(t, tc.user, line["user"])
		}
	}
}

func TestOpenAIImageGeneration(t *testing.T) {
	f := imageFake()
	h := newOpenAIServer(runners.ServiceImage, "tt-sdxl-trace", f)
	decode := func(t *testing.T, body []byte) (map[string]any, [][]byte) {
		var v struct {
			Created int64 `json:"created"`
			Data    []struct {
				B64 string `json:"b64_json"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal(body, &v), string(body))
		require.InDelta(t, time.Now().Unix(), v.Created, 5)
		var imgs [][]byte
		for _, d := range v.Data {
			b, err := base64.StdEncoding.DecodeString(d.B64)
			require.NoError(t, err)
			imgs = append(imgs, b)
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal(body, &m))
		return m, imgs
	}

	t.Run("defaults: one png, b64_json", func(t *testing.T) {
		w := do(h, "POST", "/v1/images/generations", "application/json", "Bearer k", []byte(`{"prompt":"a volcano","model":"dall-e-3","response_format":"b64_json","size":"1024x1024","n":1,"quality":"hd","moderation":"low","user":"u1"}`))
		require.Equal(t, 200, w.Code, w.Body.String())
		m, imgs := decode(t, w.Body.Bytes())
		require.Len(t, imgs, 1)
		_, err := png.Decode(bytes.NewReader(imgs[0]))
		require.NoError(t, err)
		require.Equal(t, "png", m["output_format"])
		require.Equal(t, "1024x1024", m["size"])
		last := f.last.(*runners.ImageRequest)
		require.Equal(t, stepsHighQuality, last.NumInferenceSteps)
	})
	t.Run("webp with output_compression", func(t *testing.T) {
		sizes := map[int]int{}
		for _, q := range []int{10, 95} {
			w := do(h, "POST", "/v1/images/generations", "application/json", "Bearer k", []byte(fmt.Sprintf(`{"prompt":"a","output_format":"webp","output_compression":%d}`, q)))
			require.Equal(t, 200, w.Code, w.Body.String())
			m, imgs := decode(t, w.Body.Bytes())
			require.Len(t, imgs, 1)
			require.Equal(t, "webp", m["output_format"])
			require.Equal(t, "RIFF", string(imgs[0][:4]))
			require.Equal(t, "WEBP", string(imgs[0][8:12]))
			img, err := xwebp.Decode(bytes.NewReader(imgs[0]))
			require.NoError(t, err)
			require.False(t, img.Bounds().Empty())
			sizes[q] = len(imgs[0])
		}
		if webp.Native() {
			require.Less(t, sizes[10], sizes[95], "output_compression is libwebp's quality")
		}
	})
	t.Run("n, jpeg and extensions", func(t *testing.T) {
		w := do(h, "POST", "/v1/images/generations", "application/json", "Bearer k", []byte(`{"prompt":"a","n":3,"output_format":"jpeg","output_compression":50,"seed":7,"negative_prompt":"blur","steps":25,"guidance_scale":6.5,"size":"auto"}`))
		require.Equal(t, 200, w.Code, w.Body.String())
		_, imgs := decode(t, w.Body.Bytes())
		require.Len(t, imgs, 3)
		for _, b := range imgs {
			_, err := jpeg.Decode(bytes.NewReader(b))
			require.NoError(t, err)
		}
		last := f.last.(*runners.ImageRequest)
		require.Equal(t, 25, last.NumInferenceSteps)
		require.Equal(t, 6.5, last.GuidanceScale)
		require.Equal(t, "blur", last.NegativePrompt)
		require.GreaterOrEqual(t, *last.Seed, int64(7))
	})
	bad := []struct {
		body  string
		param any
	}{
		{`{"prompt":"a","size":"512x512"}`, "size"},
		{`{"prompt":"a","response_format":"url"}`, "response_format"},
		{`{"prompt":"a","n":5}`, "n"},
		{`{"prompt":"a","n":0}`, "n"},
		{`{"prompt":"a","output_format":"gif"}`, "output_format"},
		{`{"prompt":"a","output_format":"webp","output_compression":-1}`, "output_compression"},
		{`{"prompt":"a","output_compression":101}`, "output_compression"},
		{`{"prompt":"a","output_compression":80}`, "output_compression"},
		{`{"prompt":"a","output_format":"png","output_compression":80}`, "output_compression"},
		{`{"prompt":"a","quality":"ultra"}`, "quality"},
		{`{"prompt":"a","style":"cartoon"}`, "style"},
		{`{"prompt":"a","style":"vivid"}`, "style"},
		{`{"prompt":"a","style":"natural"}`, "style"},
		{`{"prompt":"a","moderation":"high"}`, "moderation"},
		{`{"prompt":"a","moderation":""}`, "moderation"},
		{`{"prompt":"a","moderation":"strict"}`, "moderation"},
		{`{"prompt":"a","user":"` + strings.Repeat("u", maxEndUser+1) + `"}`, "user"},
		{`{"prompt":"a","background":"transparent"}`, "background"},
		{`{"prompt":"a","steps":5}`, "steps"},
		{`{"prompt":"a","guidance_scale":25}`, "guidance_scale"},
		{`{"prompt":""}`, "prompt"},
		{`{}`, "prompt"},
		{`{"prompt":"a","n":"many"}`, "n"},
		{`{"prompt":`, nil},
	}
	for _, tc := range bad {
		// Bodies without an OpenAI-only field are OpenAI's when an OpenAI SDK sends them.
		req := httptest.NewRequest(http.MethodPost, "/v1/images/generations", strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer k")
		req.Header.Set("X-Stainless-Lang", "js")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		require.Equal(t, 400, w.Code, "%s: %s", tc.body, w.Body.String())
		msg := requireEnvelope(t, w.Body.Bytes(), "invalid_request_error", tc.param, nil)
		if tc.param == "size" {
			require.Contains(t, msg, "1024x1024", "the error lists the accepted sizes")
		}
	}
	w := do(h, "POST", "/v1/images/generations", "application/json", "Bearer k", []byte(`{"prompt":"a","model":"whisper-1"}`))
	require.Equal(t, 404, w.Code)
	requireEnvelope(t, w.Body.Bytes(), "invalid_request_error", "model", "model_not_found")
}

func TestOpenAIErrorStatuses(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		status  int
		typ     string
		code    any
		retry   string // Retry-After, "" for none
		noRetry bool   // x-should-retry: false
	}{
		{"queue full", scheduler.ErrQueueFull, 429, "rate_limit_error", "rate_limit_exceeded", "7", false},
		{"client share", &scheduler.Rejection{Err: scheduler.ErrClientQueueFull, RetryAfter: 1500 * time.Millisecond}, 429, "rate_limit_error", "rate_limit_exceeded", "2", false},
		{"not ready", scheduler.ErrNotReady, 503, "server_error", "service_unavailable", "5", false},
		{"timeout", scheduler.ErrTimeout, 504, "server_error", "timeout", "", true},
		{"internal", errors.New("boom"), 500, "server_error", nil, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeSched{ready: true, submit: func(context.Context, runners.Request, func(runners.Chunk) error) (runners.Result, error) {
				return nil, tc.err
			}}
			h := newOpenAIServer(runners.ServiceImage, "tt-sdxl-trace", f)
			w := do(h, "POST", "/v1/images/generations", "application/json", "Bearer k", []byte(`{"prompt":"a","n":1}`))
			require.Equal(t, tc.status, w.Code, w.Body.String())
			requireEnvelope(t, w.Body.Bytes(), tc.typ, nil, tc.code)
			require.Equal(t, tc.retry, w.Header().Get("Retry-After"))
			if tc.retry != "" {
				require.NotEmpty(t, w.Header().Get("retry-after-ms"))
				require.Equal(t, "true", w.Header().Get("x-should-retry"))
			}
			if tc.noRetry {
				require.Equal(t, "false", w.Header().Get("x-should-retry"))
			}
		})
	}

	h := newOpenAIServer(runners.ServiceImage, "tt-sdxl-trace", imageFake())
	w := do(h, "POST", "/v1/images/generations", "application/json", "", []byte(`{"prompt":"a"}`))
	require.Equal(t, 401, w.Code)
	requireEnvelope(t, w.Body.Bytes(), "invalid_request_error", nil, "invalid_api_key")
	w = do(h, "GET", "/v1/models", "", "Bearer wrong", nil)
	require.Equal(t, 401, w.Code)
	requireEnvelope(t, w.Body.Bytes(), "invalid_request_error", nil, "invalid_api_key")

	req := httptest.NewRequest(http.MethodPost, "/v1/images/generations", strings.NewReader(`{"prompt":"`+strings.Repeat("a", maxJSONBody)+`"}`))
	req.Header.Set("Authorization", "Bearer k")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, 413, rec.Code)
	requireEnvelope(t, rec.Body.Bytes(), "invalid_request_error", nil, nil)

	req = httptest.NewRequest(http.MethodPost, "/v1/images/generations", strings.NewReader(`{"prompt":"a"}`))
	req.Header.Set("Authorization", "Bearer k")
	req.Header.Set("X-Stainless-Read-Timeout", "soon")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, 400, rec.Code)
	requireEnvelope(t, rec.Body.Bytes(), "invalid_request_error", nil, nil)
}

func TestOpenAIModels(t *testing.T) {
	tests := []struct {
		svc    runners.Service
		runner string
		model  string
		ids    []string
	}{
		{runners.ServiceImage, "tt-sdxl-trace", "", []string{"stable-diffusion-xl-base-1.0", "tt-sdxl-trace", "dall-e-2", "dall-e-3", "gpt-image-1"}},
		{runners.ServiceImage, "tt-sd3.5", "", []string{"stable-diffusion-3.5-large", "tt-sd3.5", "dall-e-2", "dall-e-3", "gpt-image-1"}},
		{runners.ServiceAudio, "tt-whisper", "distil-whisper/distil-large-v3", []string{"distil-whisper/distil-large-v3", "tt-whisper", "whisper-1"}},
		{runners.ServiceAudio, "mock", "", []string{"openai-whisper-large-v3", "mock", "whisper-1"}},
		{runners.ServiceCNN, "tt-xla-resnet", "", []string{"microsoft/resnet-50", "tt-xla-resnet"}},
	}
	for _, tc := range tests {
		s := openAISettings(tc.runner)
		s.Model = tc.model
		h := New(Deps{Settings: s, Service: tc.svc, Sched: &fakeSched{ready: true}}).Handler()
		w := do(h, "GET", "/v1/models", "", "Bearer k", nil)
		require.Equal(t, 200, w.Code)
		var list struct {
			Object string        `json:"object"`
			Data   []openAIModel `json:"data"`
		}
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &list))
		require.Equal(t, "list", list.Object)
		var ids []string
		for _, m := range list.Data {
			ids = append(ids, m.ID)
			require.Equal(t, "model", m.Object)
			require.Equal(t, "tenstorrent", m.OwnedBy)
			require.InDelta(t, time.Now().Unix(), m.Created, 5)
		}
		require.Equal(t, tc.ids, ids)
		for _, id := range tc.ids {
			w := do(h, "GET", "/v1/models/"+id, "", "Bearer k", nil)
			require.Equal(t, 200, w.Code, id)
			var m openAIModel
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &m))
			require.Equal(t, id, m.ID)
		}
		w = do(h, "GET", "/v1/models/gpt-5", "", "Bearer k", nil)
		require.Equal(t, 404, w.Code)
		requireEnvelope(t, w.Body.Bytes(), "invalid_request_error", "model", "model_not_found")
	}
}

func TestV1RoutesSpeakBothDialects(t *testing.T) {
	h := newOpenAIServer(runners.ServiceImage, "tt-sdxl-trace", imageFake())
	// The legacy route answers the Python shape; /v1 answers each dialect in its own.
	w := do(h, "POST", "/image/generations", "application/json", "Bearer k", []byte(`{"prompt":"a","guidance_scale":5}`))
	require.Equal(t, 200, w.Code, w.Body.String())
	require.Contains(t, w.Body.String(), `"images"`)
	w = do(h, "POST", "/v1/images/generations", "application/json", "Bearer k", []byte(`{"prompt":"a","size":"1024x1024"}`))
	require.Equal(t, 200, w.Code, w.Body.String())
	require.Contains(t, w.Body.String(), `"data"`)
	require.Equal(t, "openai", w.Header().Get(dialectHeader))
	w = do(h, "POST", "/v1/images/generations", "application/json", "Bearer k", []byte(`{"prompt":"a","number_of_images":2}`))
	require.Equal(t, 200, w.Code, w.Body.String())
	require.Contains(t, w.Body.String(), `"images"`)
	require.Equal(t, "python", w.Header().Get(dialectHeader))
	// The CNN route stays Python-shaped under /v1.
	h = newOpenAIServer(runners.ServiceCNN, "tt-xla-resnet", &fakeSched{ready: true})
	w = do(h, "POST", "/v1/cnn/search-image", "application/json", "", []byte(`{}`))
	require.Equal(t, 401, w.Code)
	require.JSONEq(t, `{"detail":"Not authenticated"}`, w.Body.String())
}

// TestOpenAIImageModeration: OpenAI's two moderation values are accepted (no moderation runs
// here at any level, so both mean the default, none); any other value is a 400 naming it.
func TestOpenAIImageModeration(t *testing.T) {
	h := newOpenAIServer(runners.ServiceImage, "tt-sdxl-trace", imageFake())
	for _, tc := range []struct {
		value  string
		status int
	}{
		{`"auto"`, 200}, {`"low"`, 200}, {`null`, 200},
		{`"high"`, 400}, {`"AUTO"`, 400}, {`""`, 400}, {`1`, 400},
	} {
		t.Run(tc.value, func(t *testing.T) {
			w := dialectReq(h, "/v1/images/generations", "application/json", []byte(`{"prompt":"a","n":1,"moderation":`+tc.value+`}`))
			require.Equal(t, tc.status, w.Code, w.Body.String())
			require.Equal(t, "openai", w.Header().Get(dialectHeader))
			if tc.status != 200 {
				requireEnvelope(t, w.Body.Bytes(), "invalid_request_error", "moderation", nil)
			}
		})
	}
}
