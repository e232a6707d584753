package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/go-playground/validator/v10"

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

// openAITranslationParams is OpenAI's translation form (file, model, prompt, response_format,
// temperature, and language, which is not in OpenAI's translation schema: it is honoured as
// Whisper does, the source language's token before the translate task; none: detected) and
// our extension is_preprocessing_enabled, declared (decodeOpenAIForm). A transcription-only
// field sent here is a 400 naming it (refusePart), never accepted and ignored.
type openAITranslationParams struct {
	_        struct{} `msg.unknown:"unknown parameter %q (accepted: file, model, language, prompt, response_format, temperature, timestamp_granularities[], stream, include[], chunking_strategy, is_preprocessing_enabled)"`
	File     []byte   `json:"file" form:",file" validate:"required" msg:"you must provide a file parameter (multipart field \"file\")"`
	Model    *string  `json:"model" form:",trim" validate:"required,nonblank" msg:"you must provide a model parameter"`
	Language string   `json:"language" form:",trim" validate:"omitempty,whisperlanguage" msg:"language %q is not supported; use an ISO-639-1 code such as \"en\""`
	Prompt   string   `json:"prompt"`
	// ResponseFormat holds the default (json) until the form says otherwise.
	ResponseFormat         string   `json:"response_format" form:",trim" validate:"oneof=json text srt verbose_json vtt" msg:"response_format %q is not supported; accepted: json, text, srt, verbose_json, vtt"`
	Temperature            *float64 `json:"temperature" validate:"omitnil,min=0,max=1" msg:"temperature must be a number between 0 and 1, got %q"`
	IsPreprocessingEnabled *bool    `json:"is_preprocessing_enabled" msg.type:"is_preprocessing_enabled must be true or false, got %q"`
}

// refusePart names the transcription-only fields sent to /v1/audio/translations.
func (openAITranslationParams) refusePart(name string) error {
	if declares(reflect.TypeFor[openAITranscriptionParams](), name) {
		return invalidParam(name, "%s is a parameter of /v1/audio/transcriptions only; /v1/audio/translations takes file, model, prompt, response_format, temperature and language", name)
	}
	return nil
}

// openAITranscriptionParams is OpenAI's transcription form, declared: the translation's fields
// and timestamp_granularities[] (also repeated timestamp_granularities; "word" needs
// verbose_json: transcriptionRules), stream (json or text only), include[] (refused: no token
// log-probabilities from the runner), chunking_strategy ("auto", or
// chunking_strategy[type]=server_vad; its server_vad numbers are refused, as the VAD has its
// own, and it needs is_preprocessing_enabled left true).
type openAITranscriptionParams struct {
	openAITranslationParams
	TimestampGranularities []string          `json:"timestamp_granularities" form:"timestamp_granularities[] timestamp_granularities,trim" validate:"dive,oneof=word segment" msg:"timestamp_granularities entries must be \"word\" or \"segment\", got %q" msg.wordsverbose:"timestamp_granularities[]=word requires response_format=verbose_json"`
	Include                []string          `json:"include" form:"include[] include,trim" validate:"max=0" msg:"include %q is not available: this model reports no token log-probabilities"`
	ChunkingStrategy       *string           `json:"chunking_strategy" form:"chunking_strategy chunking_strategy[type],trim" validate:"omitnil,oneof=auto server_vad,excluded_if=IsPreprocessingEnabled false" msg:"chunking_strategy must be \"auto\" or {\"type\": \"server_vad\"}, got %q" msg.excluded_if:"chunking_strategy needs VAD pre-processing, but is_preprocessing_enabled=false was sent"`
	ChunkingOptions        map[string]string `json:"chunking_strategy[*]" form:",trim" validate:"isdefault" msg:"chunking_strategy[%s] is not supported: the server's VAD pre-processing uses its own thresholds; send chunking_strategy \"auto\" or {\"type\": \"server_vad\"} alone"`
	Stream                 bool              `json:"stream" validate:"excluded_if=ResponseFormat srt,excluded_if=ResponseFormat verbose_json,excluded_if=ResponseFormat vtt" msg.type:"stream must be true or false, got %q" msg.excluded_if:"stream=true needs response_format json or text, got %q"`
}

// transcriptionRules are the transcription form's rules across fields that validator's own
// tags cannot state: word timestamps need response_format=verbose_json.
func transcriptionRules(sl validator.StructLevel) {
	p, ok := sl.Current().Interface().(openAITranscriptionParams)
	if ok && slices.Contains(p.TimestampGranularities, "word") && p.ResponseFormat != "verbose_json" {
		sl.ReportError(p.TimestampGranularities, "timestamp_granularities", "TimestampGranularities", "wordsverbose", "")
	}
}

// parseOpenAIAudio reads the multipart form the OpenAI SDKs send (openAITranscriptionParams,
// or openAITranslationParams for task translate) into the route's transcription.
//
// language, prompt, temperature and the task go to the runner in runners.AudioRequest (the
// mock runner ignores them; the Whisper runner decodes with them). chunking_strategy turns
// VAD pre-processing (and with it fan-out, see audio_fanout.go) on, like
// is_preprocessing_enabled=true, which is already the default.
func parseOpenAIAudio(in *request, ctHeader, task string, models *modelTable) (*transcription, error) {
	var p openAITranscriptionParams
	p.ResponseFormat = "json"
	dst := any(&p)
	if task == taskTranslate {
		dst = &p.openAITranslationParams
	}
	if err := decodeOpenAIForm(in, ctHeader, openAIFormLimits, dst); err != nil {
		return nil, err
	}
	if err := models.resolve(*p.Model); err != nil {
		return nil, err
	}
	req := &transcription{dialect: dialectOpenAI, task: task, file: p.File, model: *p.Model, prompt: p.Prompt,
		responseFormat: p.ResponseFormat, stream: p.Stream, preprocessing: true}
	if p.Language != "" {
		req.language, _ = whisper.NormalizeLanguage(p.Language) // validated: whisperlanguage
	}
	if p.Temperature != nil {
		req.temperature = *p.Temperature
	}
	req.words = slices.Contains(p.TimestampGranularities, "word")
	req.segments = len(p.TimestampGranularities) == 0 || slices.Contains(p.TimestampGranularities, "segment")
	if p.IsPreprocessingEnabled != nil {
		req.preprocessing = *p.IsPreprocessingEnabled
	}
	switch {
	case p.ChunkingStrategy != nil:
		req.preprocessing, req.askedPreprocessing = true, "chunking_strategy"
	case p.IsPreprocessingEnabled != nil && req.preprocessing:
		req.askedPreprocessing = "is_preprocessing_enabled"
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
