package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/tenstorrent/tt-media-server-go/media/audio"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper"
)

const (
	// maxMultipartParts bounds the parts of one upload (file + a few form fields).
	maxMultipartParts = 16
	// maxFormFieldBytes bounds a non-file form field.
	maxFormFieldBytes = 1 << 10
	// streamBuffer is how many chunks may wait for a slow client before the runner waits.
	streamBuffer = 256
)

const audioContentTypeMsg = "Use either multipart/form-data with file upload or application/json with AudioTranscriptionRequest"

// transcription is the one request type of the audio routes (/v1/audio/transcriptions,
// /v1/audio/translations and the legacy path), whichever dialect wrote it: HEAD's
// AudioProcessingRequest (parseAudioUpload) or OpenAI's multipart form (parseOpenAIAudio).
// handleAudio serves it and writes the answer in its dialect's shape.
type transcription struct {
	dialect dialect
	task    string // the route's: taskTranscribe or taskTranslate
	file    []byte
	stream  bool
	// preprocessing: VAD pre-processing asked for (both dialects' is_preprocessing_enabled;
	// OpenAI's chunking_strategy).
	preprocessing bool
	// askedPreprocessing names the field that explicitly asked for pre-processing
	// (is_preprocessing_enabled: true sent, or OpenAI's chunking_strategy); "" when it is only
	// the default. An explicit ask is refused when ALLOW_AUDIO_PREPROCESSING is off.
	askedPreprocessing string
	prompt             string
	// responseFormat: HEAD's json, verbose_json (its default) or text; OpenAI's json (its
	// default), text, srt, verbose_json or vtt.
	responseFormat string
	// HEAD's decoding fields.
	temperatures     []float64
	compression      float64
	logprob          float64
	noSpeech         float64
	returnTimestamps bool
	// OpenAI's fields: the model name, the language (ISO-639-1 code, "" = detect), the one
	// temperature, and what verbose_json carries (segments, words).
	model       string
	language    string
	temperature float64
	segments    bool
	words       bool
}

// HEAD's AudioProcessingRequest defaults.
const (
	defaultCompressionRatioThreshold = 2.4
	defaultLogprobThreshold          = -2.0 // HEAD's; whisper's transcribe() has -1.0
	defaultNoSpeechThreshold         = 0.6
	// maxTemperatures bounds the temperatures list (whisper's own schedule has 6).
	maxTemperatures = 20
)

// pythonAudioFields are the fields of HEAD's AudioProcessingRequest
// (domain/audio_processing_request.py; its multipart form in open_ai_api/audio.py has the same
// names), every one read by parseAudioUpload. A Python-dialect transcription may hold these
// and no other: an unknown JSON key or form field is a 422 naming it (pydantic and FastAPI's
// forms would ignore it).
var pythonAudioFields = []string{"file", "stream", "response_format", "is_preprocessing_enabled",
	"perform_diarization", "temperatures", "compression_ratio_threshold", "logprob_threshold",
	"no_speech_threshold", "return_timestamps", "prompt"}

// pythonAudioFormats are HEAD's audio response formats.
var pythonAudioFormats = []string{"json", "verbose_json", "text"}

// parseAudioUpload reads HEAD's AudioProcessingRequest: multipart (a file part and the fields
// as form values) or JSON with the file base64-encoded in "file".
func parseAudioUpload(in *request) (*transcription, error) {
	switch {
	case in.contentType == "multipart/form-data":
		return parseAudioMultipart(in)
	case strings.Contains(in.contentType, "application/json"):
		b, err := in.jsonBody()
		if err != nil {
			return nil, err
		}
		up := &transcription{dialect: dialectPython}
		file, ok := b.str("file", true)
		if err := readAudioFields(b, up); err != nil {
			return nil, err
		}
		if ok {
			var err error
			if up.file, err = decodeBase64(file); err != nil {
				return nil, httpErr(http.StatusBadRequest, "Field 'file' is not valid base64: %v", err)
			}
		}
		return up, nil
	default:
		return nil, httpErr(http.StatusBadRequest, audioContentTypeMsg)
	}
}

// readAudioFields reads every field but the file, with the lax rules of body (form values
// are strings, which the same readers parse), and checks them. perform_diarization=true is
// refused: no diarization model runs here.
func readAudioFields(b *body, up *transcription) error {
	up.stream = b.bool("stream", false)
	up.preprocessing = b.bool("is_preprocessing_enabled", true)
	if v, ok := b.value("is_preprocessing_enabled"); ok && v != nil && up.preprocessing {
		up.askedPreprocessing = "is_preprocessing_enabled"
	}
	up.responseFormat = "verbose_json"
	if v, ok := b.str("response_format", false); ok && v != "" {
		f := strings.ToLower(strings.TrimSpace(v))
		if slices.Contains(pythonAudioFormats, f) {
			up.responseFormat = f
		} else {
			b.add("enum", []any{"response_format"}, "Input should be 'json', 'verbose_json' or 'text'", v,
				map[string]any{"expected": "'json', 'verbose_json' or 'text'"})
		}
	}
	diarize := b.bool("perform_diarization", false)
	up.temperatures = readTemperatures(b)
	up.compression = optFloat(b, "compression_ratio_threshold", defaultCompressionRatioThreshold)
	up.logprob = optFloat(b, "logprob_threshold", defaultLogprobThreshold)
	up.noSpeech = optFloat(b, "no_speech_threshold", defaultNoSpeechThreshold)
	up.returnTimestamps = b.bool("return_timestamps", false)
	up.prompt, _ = b.strMax("prompt", false, maxPromptChars)
	b.forbidExtra(pythonAudioFields)
	if err := b.err(); err != nil {
		return err
	}
	if diarize {
		return httpErr(http.StatusBadRequest, "perform_diarization: speaker diarization is not available on this "+
			"server (no diarization model is loaded); send perform_diarization=false (pre-processing still splits the "+
			"audio at pauses, labelling every segment SPEAKER_00)")
	}
	return nil
}

func optFloat(b *body, name string, def float64) float64 {
	if v := b.float(name, false); v != nil {
		return *v
	}
	return def
}

// readTemperatures reads HEAD's temperatures: a number, a list of numbers, or a string of
// comma-separated numbers (the multipart form's spelling); absent, null or "" is HEAD's
// default 0.0 (one greedy pass, no fallback). Each must be in [0, 1].
func readTemperatures(b *body) []float64 {
	const name = "temperatures"
	v, ok := b.value(name)
	if !ok || v == nil || v == "" {
		return []float64{0}
	}
	bad := func() []float64 {
		b.add("value_error", []any{name}, "Value error, Invalid temperatures format. Use comma-separated floats.", v, map[string]any{"error": map[string]any{}})
		return nil
	}
	var items []any
	switch x := v.(type) {
	case []any:
		items = x
	case string:
		for _, f := range strings.Split(x, ",") {
			items = append(items, strings.TrimSpace(f))
		}
	default:
		items = []any{x}
	}
	if len(items) == 0 || len(items) > maxTemperatures {
		return bad()
	}
	out := make([]float64, 0, len(items))
	for _, it := range items {
		if _, isBool := it.(bool); isBool {
			return bad()
		}
		n := len(b.errs)
		f, ok := b.toFloat([]any{name}, it)
		if !ok {
			b.errs = b.errs[:n]
			return bad()
		}
		if f < 0 || f > 1 {
			b.add("value_error", []any{name}, fmt.Sprintf("Value error, temperatures must be between 0 and 1, got %g", f), v, map[string]any{"error": map[string]any{}})
			return nil
		}
		out = append(out, f)
	}
	return out
}

func parseAudioMultipart(in *request) (*transcription, error) {
	if in.boundary == "" {
		return nil, httpErr(http.StatusBadRequest, "multipart/form-data without a boundary")
	}
	up := &transcription{dialect: dialectPython}
	gotFile := false
	// The form values, as JSON strings, so that readAudioFields reads them as it reads JSON.
	b := &body{raw: map[string]json.RawMessage{}, input: map[string]any{}}
	err := readForm(bytes.NewReader(in.data), in.boundary, pythonFormSpec(maxOpenAIFieldBytes), func(name string, v []byte) error {
		if name == "file" {
			up.file, gotFile = v, true
			return nil
		}
		if len(v) > maxOpenAIFieldBytes {
			return httpErr(http.StatusBadRequest, "form field %s is longer than %d bytes", name, maxOpenAIFieldBytes)
		}
		// Unknown form fields are refused by readAudioFields (FastAPI would ignore them;
		// OpenAI's were refused by the dialect check).
		raw, _ := json.Marshal(string(v))
		b.raw[name] = raw
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := readAudioFields(b, up); err != nil {
		return nil, err
	}
	if !gotFile {
		return nil, httpErr(http.StatusBadRequest, audioContentTypeMsg)
	}
	return up, nil
}

// errPreprocessingOff refuses a request that explicitly asks for pre-processing (field) on a
// server whose operator turned it off: the field cannot be honoured without overriding the
// setting, so it is refused by name rather than ignored.
func errPreprocessingOff(field string) string {
	return field + ": pre-processing (speech segmentation) is turned off on this server " +
		"(ALLOW_AUDIO_PREPROCESSING=false); send is_preprocessing_enabled=false or leave the field out"
}

// decodeAudio decodes and checks the upload, reserving its memory with reserve.
func (s *Server) decodeAudio(ctx context.Context, up *transcription, reserve func(int64) error) (*runners.AudioRequest, error) {
	if up.askedPreprocessing != "" && !s.cfg.AllowAudioPreprocessing {
		return nil, &apiError{param: up.askedPreprocessing, status: http.StatusBadRequest, msg: errPreprocessingOff(up.askedPreprocessing)}
	}
	preprocess := s.cfg.AllowAudioPreprocessing && up.preprocessing
	maxDur := s.cfg.MaxAudioDuration
	if preprocess && s.cfg.MaxAudioDurationWithPreprocessing > 0 {
		maxDur = s.cfg.MaxAudioDurationWithPreprocessing
	}
	if len(up.file) == 0 {
		return nil, fmt.Errorf("%w: empty audio file", audio.ErrInvalidAudio)
	}
	rate := s.cfg.DefaultSampleRate
	if rate <= 0 {
		rate = 16000
	}
	dec, err := audio.Decode(ctx, up.file, rate, audio.Limits{MaxBytes: s.cfg.MaxAudioSizeBytes, MaxDuration: maxDur, Reserve: reserve})
	if err != nil {
		return nil, err
	}
	req := &runners.AudioRequest{Samples: dec.Samples, SampleRate: dec.SampleRate, Duration: dec.Duration, Stream: up.stream}
	if preprocess {
		for _, seg := range audio.SpeechSegments(dec.Samples, dec.SampleRate) {
			req.Segments = append(req.Segments, runners.Span{Start: seg.Start, End: seg.End})
		}
		if len(req.Segments) == 0 { // no speech found: one segment over the whole audio, as Python
			req.Segments = []runners.Span{{Start: 0, End: dec.Duration}}
		}
	}
	return req, nil
}

// handleAudio serves an audio route, task its task (the legacy path's is AUDIO_TASK), in
// either dialect; models answers OpenAI's model names (nil on the legacy path, which speaks
// HEAD's dialect only).
func (s *Server) handleAudio(task string, models *modelTable) handlerFunc {
	return func(c *gin.Context, in *request) {
		var up *transcription
		var err error
		if in.dialect == dialectOpenAI {
			up, err = parseOpenAIAudio(in, c.GetHeader("Content-Type"), task, models)
		} else {
			up, err = parseAudioUpload(in)
		}
		if err != nil {
			s.fail(c, in.dialect, err)
			return
		}
		up.task = task
		req, release, err := s.audioRequest(c.Request.Context(), up)
		defer release()
		if err != nil {
			s.fail(c, up.dialect, err)
			return
		}
		s.decodingOptions(req, up)
		start := time.Now()
		if req.Stream {
			if s.streamTranscript(c, req, up) {
				s.countTranscribed(req, start)
			}
			return
		}
		v, err := s.transcribe(c, req, nil)
		if err != nil {
			s.fail(c, up.dialect, err)
			return
		}
		res, ok := runners.ResultAs[*runners.TranscriptionResult](v)
		if !ok || res == nil {
			s.fail(c, up.dialect, fmt.Errorf("runner returned %T instead of a transcription", v))
			return
		}
		if up.dialect == dialectOpenAI { // HEAD answers what its runner returns
			if err := checkTranslation(task, res); err != nil {
				s.fail(c, up.dialect, err)
				return
			}
		}
		s.countTranscribed(req, start)
		writeTranscript(c, up, res)
	}
}

// decodingOptions hands the request's decoding fields to the runner. HEAD: the language is
// AUDIO_LANGUAGE, the task the route's, the prompt and the fallback fields (temperatures,
// thresholds) the request's. OpenAI: the language, prompt and one temperature of the request.
func (s *Server) decodingOptions(req *runners.AudioRequest, up *transcription) {
	req.Prompt = up.prompt
	if up.dialect == dialectOpenAI {
		req.Language, req.Task, req.Temperature = up.language, up.task, up.temperature
		return
	}
	req.Language = s.audioLanguage
	if up.task != taskTranscribe {
		req.Task = up.task
	}
	compression, logprob, noSpeech := up.compression, up.logprob, up.noSpeech
	req.Decode = runners.DecodeOptions{Temperatures: up.temperatures, CompressionRatioThreshold: &compression,
		LogprobThreshold: &logprob, NoSpeechThreshold: &noSpeech}
}

// streamTranscript streams the transcription in the dialect's shape: HEAD's NDJSON (or text
// lines), OpenAI's Server-Sent Events. It reports whether the transcription completed.
func (s *Server) streamTranscript(c *gin.Context, req *runners.AudioRequest, up *transcription) bool {
	if up.dialect == dialectOpenAI {
		return s.streamOpenAI(c, req)
	}
	return s.streamTranscription(c, req, up)
}

// writeTranscript answers the transcript in the request's dialect and response_format.
func writeTranscript(c *gin.Context, up *transcription, res *runners.TranscriptionResult) {
	const plain = "text/plain; charset=utf-8"
	if up.dialect != dialectOpenAI {
		if up.responseFormat == "text" {
			c.Data(http.StatusOK, plain, []byte(res.Text))
			return
		}
		writeJSON(c, http.StatusOK, pythonTranscript(res, up.returnTimestamps))
		return
	}
	switch up.responseFormat {
	case "text":
		c.Data(http.StatusOK, plain, []byte(formatText(res)))
	case "srt":
		c.Data(http.StatusOK, plain, []byte(formatSRT(transcriptSpans(res))))
	case "vtt":
		c.Data(http.StatusOK, "text/vtt; charset=utf-8", []byte(formatVTT(transcriptSpans(res))))
	case "verbose_json":
		if up.words {
			c.Header("X-Word-Timestamps", "unavailable")
		}
		writeJSON(c, http.StatusOK, verboseJSON(up.task, res, up.segments))
	default:
		out := simpleTranscript{Text: res.Text}
		if up.task == taskTranscribe {
			out.Usage = usageOf(res.Duration)
		}
		writeJSON(c, http.StatusOK, out)
	}
}

// pythonTranscriptBody is the Python dialect's transcription: the seed's TranscriptionResponse
// (text, task, language, duration, and segments, speaker_count, speakers with
// pre-processing), plus HEAD's start and end (seconds of the first and last segment) when
// return_timestamps is true. HEAD dropped task and language; they stay, as the seed's
// clients read them and HEAD's ignore them.
type pythonTranscriptBody struct {
	*runners.TranscriptionResult
	Start *float64 `json:"start,omitempty"`
	End   *float64 `json:"end,omitempty"`
}

func pythonTranscript(res *runners.TranscriptionResult, timestamps bool) pythonTranscriptBody {
	if name, ok := whisper.LanguageName(res.Language); ok { // "en" → "english", as the seed answered
		cp := *res
		cp.Language = name
		res = &cp
	}
	out := pythonTranscriptBody{TranscriptionResult: res}
	if timestamps {
		start, end := 0.0, res.Duration
		if n := len(res.Segments); n > 0 {
			start, end = res.Segments[0].StartTime, res.Segments[n-1].EndTime
		}
		out.Start, out.End = &start, &end
	}
	return out
}

func (s *Server) countTranscribed(req *runners.AudioRequest, start time.Time) {
	if s.metrics != nil {
		s.metrics.Transcribed(s.pool(runners.ServiceAudio).Runner, req.Duration, time.Since(start))
	}
}
