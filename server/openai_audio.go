package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper"
)

const (
	// maxOpenAIParts bounds the parts of one upload: the file and OpenAI's fields, some of
	// them repeated (timestamp_granularities[], include[], chunking_strategy[...]).
	maxOpenAIParts = 64
	// maxOpenAIFieldBytes bounds a non-file field (a prompt is at most a few hundred tokens).
	maxOpenAIFieldBytes = 16 << 10
)

var openAIAudioFormats = []string{"json", "text", "srt", "verbose_json", "vtt"}

// parseOpenAIAudio reads the multipart form the OpenAI SDKs send: file, model, language,
// prompt, response_format, temperature, timestamp_granularities[] (also repeated
// timestamp_granularities), stream ("true"/"false"), include[] and chunking_strategy ("auto",
// or chunking_strategy[type]=server_vad with its numbers). Translations take only file,
// model, prompt, response_format, temperature and language; a transcription-only field sent
// there is a 400 naming it (never accepted and ignored). language is not in OpenAI's translation
// schema: it is honoured as Whisper does, the source language's token before the translate task
// (none: detected). An unknown field is a 400 naming it too; is_preprocessing_enabled is our
// extension.
//
// language, prompt, temperature and the task go to the runner in runners.AudioRequest (the
// mock runner ignores them; the Whisper runner decodes with them). chunking_strategy turns
// VAD pre-processing (and with it fan-out, see audio_fanout.go) on, like
// is_preprocessing_enabled=true, which is already the default; its server_vad numbers
// (prefix_padding_ms, silence_duration_ms, threshold) are a 400, as the VAD has its own, and
// sending it with is_preprocessing_enabled=false is a 400.
// Refused: include[]=logprobs (no token log-probabilities from the runner) and diarized_json.
func parseOpenAIAudio(in *request, ctHeader, task string, models *modelTable) (*transcription, error) {
	if in.contentType != "multipart/form-data" {
		// 400 as OpenAI answers it (the SDKs raise BadRequestError; a 415 is a bare APIError).
		return nil, &apiError{status: http.StatusBadRequest,
			msg: fmt.Sprintf("Content-Type must be multipart/form-data, got %q", ctHeader)}
	}
	if in.boundary == "" {
		return nil, invalidParam("", "multipart/form-data without a boundary")
	}
	req := &transcription{dialect: dialectOpenAI, task: task, responseFormat: "json", preprocessing: true}
	var (
		gotFile, gotModel, gotGranularities bool
		gotPreprocessing                    bool
		granularities, include              []string
		chunking                            = map[string]string{}
	)
	form := openAIFormSpec([]string{"file"}, []string{"timestamp_granularities[]", "timestamp_granularities", "include[]", "include"})
	err := readForm(bytes.NewReader(in.data), in.boundary, form, func(name string, raw []byte) error {
		if name == "file" {
			req.file, gotFile = raw, true
			return nil
		}
		if len(raw) > maxOpenAIFieldBytes {
			return invalidParam(name, "field %s is longer than %d bytes", name, maxOpenAIFieldBytes)
		}
		v := string(raw)
		if task == taskTranslate && transcriptionOnly(name) {
			return invalidParam(name, "%s is a parameter of /v1/audio/transcriptions only; /v1/audio/translations takes file, model, prompt, response_format, temperature and language", name)
		}
		switch {
		case name == "model":
			req.model, gotModel = strings.TrimSpace(v), true
		case name == "language":
			req.language = strings.TrimSpace(v)
		case name == "prompt":
			req.prompt = v
		case name == "response_format":
			req.responseFormat = strings.TrimSpace(v)
		case name == "temperature":
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || math.IsNaN(f) || f < 0 || f > 1 {
				return invalidParam("temperature", "temperature must be a number between 0 and 1, got %q", v)
			}
			req.temperature = f
		case name == "timestamp_granularities[]" || name == "timestamp_granularities":
			gotGranularities = true
			granularities = append(granularities, strings.TrimSpace(v))
		case name == "include[]" || name == "include":
			include = append(include, strings.TrimSpace(v))
		case name == "stream" || name == "is_preprocessing_enabled":
			b, ok := parseLaxBool(v)
			if !ok {
				return invalidParam(name, "%s must be true or false, got %q", name, v)
			}
			if name == "stream" {
				req.stream = b
			} else {
				req.preprocessing, gotPreprocessing = b, true
			}
		case name == "chunking_strategy":
			chunking["type"] = strings.TrimSpace(v)
		case strings.HasPrefix(name, "chunking_strategy[") && strings.HasSuffix(name, "]"):
			chunking[name[len("chunking_strategy["):len(name)-1]] = strings.TrimSpace(v)
		default:
			return invalidParam(name, "unknown parameter %q (accepted: file, model, language, prompt, response_format, temperature, timestamp_granularities[], stream, include[], chunking_strategy, is_preprocessing_enabled)", name)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !gotFile {
		return nil, invalidParam("file", "you must provide a file parameter (multipart field \"file\")")
	}
	if !gotModel || req.model == "" {
		return nil, invalidParam("model", "you must provide a model parameter")
	}
	if err := models.resolve(req.model); err != nil {
		return nil, err
	}
	if !slices.Contains(openAIAudioFormats, req.responseFormat) {
		return nil, invalidParam("response_format", "response_format %q is not supported; accepted: %s",
			req.responseFormat, strings.Join(openAIAudioFormats, ", "))
	}
	if req.language != "" {
		code, err := whisper.NormalizeLanguage(req.language)
		if err != nil {
			return nil, invalidParam("language", "language %q is not supported; use an ISO-639-1 code such as \"en\"", req.language)
		}
		req.language = code
	}
	for _, g := range granularities {
		if g != "word" && g != "segment" {
			return nil, invalidParam("timestamp_granularities", "timestamp_granularities entries must be \"word\" or \"segment\", got %q", g)
		}
	}
	req.words = slices.Contains(granularities, "word")
	req.segments = !gotGranularities || len(granularities) == 0 || slices.Contains(granularities, "segment")
	if req.words && req.responseFormat != "verbose_json" {
		return nil, invalidParam("timestamp_granularities", "timestamp_granularities[]=word requires response_format=verbose_json")
	}
	if len(include) > 0 {
		return nil, invalidParam("include", "include %q is not available: this model reports no token log-probabilities", include[0])
	}
	for k := range chunking {
		if k != "type" {
			return nil, invalidParam("chunking_strategy", "chunking_strategy[%s] is not supported: the server's VAD pre-processing uses its own thresholds; send chunking_strategy \"auto\" or {\"type\": \"server_vad\"} alone", k)
		}
	}
	if t, ok := chunking["type"]; ok {
		if t != "auto" && t != "server_vad" {
			return nil, invalidParam("chunking_strategy", "chunking_strategy must be \"auto\" or {\"type\": \"server_vad\"}, got %q", t)
		}
		if gotPreprocessing && !req.preprocessing {
			return nil, invalidParam("chunking_strategy", "chunking_strategy needs VAD pre-processing, but is_preprocessing_enabled=false was sent")
		}
		req.preprocessing, req.askedPreprocessing = true, "chunking_strategy"
	} else if gotPreprocessing && req.preprocessing {
		req.askedPreprocessing = "is_preprocessing_enabled"
	}
	if req.stream && req.responseFormat != "json" && req.responseFormat != "text" {
		return nil, invalidParam("stream", "stream=true needs response_format json or text, got %q", req.responseFormat)
	}
	return req, nil
}

// checkTranslation refuses a translation the runner did not do: a runner that translated
// says so in the result's task; from one that only transcribes (the mock), speech that is
// already English (where Whisper's translation is the transcription) is answered, anything
// else is a 501 instead of a mislabelled transcript.
func checkTranslation(task string, res *runners.TranscriptionResult) error {
	if task != taskTranslate || res.Task == taskTranslate {
		return nil
	}
	lang := strings.ToLower(res.Language)
	if lang == "" || lang == "english" || lang == "en" {
		return nil
	}
	return &apiError{status: http.StatusNotImplemented, code: "translation_not_supported",
		msg: fmt.Sprintf("the audio is in %s; translation to English is not supported by this runner yet", res.Language)}
}

// speakerMarker is the "[SPEAKER_00] " prefix the runners put on the first streamed chunk
// of each diarized segment (the Python server's NDJSON protocol); it is not transcript text.
var speakerMarker = regexp.MustCompile(`^\[SPEAKER_\d+\] ?`)

// sseDelta, sseDone and sseError are the stream events as OpenAI sends them.
type sseDelta struct {
	Type  string `json:"type"`
	Delta string `json:"delta"`
}

type sseDone struct {
	Type  string         `json:"type"`
	Text  string         `json:"text"`
	Usage *durationUsage `json:"usage"`
}

type sseError struct {
	Type  string            `json:"type"`
	Error openAIErrorObject `json:"error"`
}

// streamOpenAI answers stream=true as OpenAI does: "data: {json}\n\n" events without event:
// lines or [DONE]: transcript.text.delta for each chunk (words joined by single spaces, the
// first event always a delta), then transcript.text.done with the runner's final text and
// the duration usage. An error before the first event gets its status and envelope; after
// it, a data event with an "error" key (which the SDKs raise) ends the stream. It reports
// whether the transcription completed.
func (s *Server) streamOpenAI(c *gin.Context, req *runners.AudioRequest) bool {
	started, deltas := false, 0
	event := func(v any) bool {
		data, err := json.Marshal(v)
		if err != nil {
			s.log.Error("encode stream event", "request_id", requestID(c), "err", err)
			return false
		}
		if !started {
			started = true
			c.Header("Content-Type", "text/event-stream; charset=utf-8")
			c.Header("Cache-Control", "no-cache")
			c.Header("X-Accel-Buffering", "no")
			c.Status(http.StatusOK)
		}
		if _, err := fmt.Fprintf(c.Writer, "data: %s\n\n", data); err != nil {
			return false
		}
		c.Writer.Flush()
		return true
	}
	delta := func(ch runners.Chunk) bool {
		tc, ok := runners.ChunkAs[runners.TranscriptChunk](ch)
		if !ok {
			return true
		}
		text := strings.TrimSpace(speakerMarker.ReplaceAllString(tc.Text, ""))
		if text == "" {
			return true
		}
		if deltas > 0 {
			text = " " + text
		}
		deltas++
		return event(sseDelta{Type: "transcript.text.delta", Delta: text})
	}
	v, err := s.transcribe(c, req, delta)
	if errors.Is(err, errStreamWrite) {
		return false
	}
	res, ok := runners.ResultAs[*runners.TranscriptionResult](v)
	if err == nil && (!ok || res == nil) {
		err = fmt.Errorf("runner returned %T instead of a transcription", v)
	}
	if err != nil {
		if !started {
			s.fail(c, dialectOpenAI, err)
			return false
		}
		e := s.answerOf(err)
		c.Error(err) //nolint:errcheck // recorded for the access log
		event(sseError{Type: "error", Error: e.object()})
		return false
	}
	if deltas == 0 && !event(sseDelta{Type: "transcript.text.delta", Delta: res.Text}) {
		return false
	}
	return event(sseDone{Type: "transcript.text.done", Text: res.Text, Usage: usageOf(res.Duration)})
}

// transcriptionOnly says whether a multipart field belongs to OpenAI's transcription schema but
// not to its translation schema.
func transcriptionOnly(name string) bool {
	switch name {
	case "timestamp_granularities[]", "timestamp_granularities", "include[]", "include", "stream", "chunking_strategy":
		return true
	}
	return strings.HasPrefix(name, "chunking_strategy[")
}
