package server

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/tenstorrent/tt-media-server-go/media/audio"
	"github.com/tenstorrent/tt-media-server-go/runners"
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

// audioUpload is a parsed POST /audio/transcriptions request before decoding.
type audioUpload struct {
	file          []byte
	stream        bool
	preprocessing bool
}

// parseAudioUpload reads multipart (file, stream, is_preprocessing_enabled) or JSON
// {"file": base64, "stream", "is_preprocessing_enabled"}, as the Python server does.
// pre, when not nil, is the JSON body already decoded (by the dialect check).
func parseAudioUpload(r *http.Request, pre *body) (*audioUpload, error) {
	ct, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch {
	case ct == "multipart/form-data":
		return parseAudioMultipart(r, params["boundary"])
	case strings.Contains(ct, "application/json"):
		b := pre
		if b == nil {
			data, err := io.ReadAll(r.Body)
			if err != nil {
				return nil, bodyErr(err)
			}
			if b, err = parseBody(data); err != nil {
				return nil, err
			}
		}
		up := &audioUpload{}
		file, ok := b.str("file", true)
		up.stream = b.bool("stream", false)
		up.preprocessing = b.bool("is_preprocessing_enabled", true)
		if err := b.err(); err != nil {
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

func parseAudioMultipart(r *http.Request, boundary string) (*audioUpload, error) {
	if boundary == "" {
		return nil, httpErr(http.StatusBadRequest, "multipart/form-data without a boundary")
	}
	up := &audioUpload{preprocessing: true}
	gotFile := false
	var formErrs []fieldError
	tooMany := func() error {
		return httpErr(http.StatusBadRequest, "too many multipart parts (at most %d)", maxMultipartParts)
	}
	err := readForm(r.Body, boundary, maxMultipartParts, maxFormFieldBytes, tooMany, func(name string, v []byte) error {
		switch name {
		case "file":
			up.file, gotFile = v, true
		case "stream", "is_preprocessing_enabled":
			b, ok := parseLaxBool(string(v))
			if !ok || len(v) > maxFormFieldBytes {
				formErrs = append(formErrs, fieldError{Type: "bool_parsing", Loc: []any{"body", name},
					Msg: "Input should be a valid boolean, unable to interpret input", Input: string(v)})
				return nil
			}
			if name == "stream" {
				up.stream = b
			} else {
				up.preprocessing = b
			}
		}
		// Unknown form fields are ignored, as FastAPI does.
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(formErrs) > 0 {
		return nil, &validationError{items: formErrs}
	}
	if !gotFile {
		return nil, httpErr(http.StatusBadRequest, audioContentTypeMsg)
	}
	return up, nil
}

// decodeBase64 accepts standard base64 with or without padding, with whitespace or a data: URL
// prefix, as clients send it.
func decodeBase64(s string) ([]byte, error) {
	if strings.HasPrefix(s, "data:") {
		if i := strings.Index(s, ","); i >= 0 {
			s = s[i+1:]
		}
	}
	if out, err := base64.StdEncoding.DecodeString(s); err == nil { // the common case: one pass
		return out, nil
	}
	s = strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\n', '\r', '\t':
			return -1
		}
		return r
	}, s)
	if out, err := base64.StdEncoding.DecodeString(s); err == nil {
		return out, nil
	}
	out, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return nil, err
	}
	return out, nil
}

// audioRequest decodes and checks the upload and builds the runner's request.
func (s *Server) audioRequest(ctx context.Context, up *audioUpload) (*runners.AudioRequest, error) {
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
	dec, err := audio.Decode(ctx, up.file, rate, audio.Limits{MaxBytes: s.cfg.MaxAudioSizeBytes, MaxDuration: maxDur})
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

// handlePythonAudio serves the Python dialect of POST /audio/transcriptions and of
// /v1/audio/transcriptions|translations; task is the route's.
func (s *Server) handlePythonAudio(task string) gin.HandlerFunc {
	return func(c *gin.Context) { s.handleAudio(c, task) }
}

func (s *Server) handleAudio(c *gin.Context, task string) {
	var pre *body
	if sb := sniffed(c); sb != nil {
		pre = sb.json
	}
	up, err := parseAudioUpload(c.Request, pre)
	if err != nil {
		s.fail(c, err)
		return
	}
	req, err := s.audioRequest(c.Request.Context(), up)
	if err != nil {
		s.fail(c, err)
		return
	}
	if task != taskTranscribe {
		req.Task = task
	}
	start := time.Now()
	if !req.Stream {
		v, err := s.transcribe(c, req, nil)
		if err != nil {
			s.fail(c, err)
			return
		}
		s.countTranscribed(req, start)
		writeJSON(c, http.StatusOK, v)
		return
	}
	if s.streamTranscription(c, req) {
		s.countTranscribed(req, start)
	}
}

func (s *Server) countTranscribed(req *runners.AudioRequest, start time.Time) {
	if s.metrics != nil {
		s.metrics.Transcribed(s.pool(runners.ServiceAudio).Runner, req.Duration, time.Since(start))
	}
}

// errStreamWrite: writing a chunk to the client failed (it went away).
var errStreamWrite = errors.New("stream write failed")

// submitStreaming submits req and hands every streamed chunk to onChunk on the calling
// (handler) goroutine, in order, then returns the job's outcome. When onChunk returns false
// (the client is gone) it waits for the job to end and returns errStreamWrite. Chunks still
// buffered when the job ends are delivered before it returns.
func (s *Server) submitStreaming(ctx context.Context, svc runners.Service, req any, onChunk func(any) bool) (any, error) {
	chunks := make(chan any, streamBuffer)
	type final struct {
		v   any
		err error
	}
	done := make(chan final, 1)
	go func() {
		v, err := s.pool(svc).Sched.Submit(ctx, req, func(ch any) error {
			select {
			case chunks <- ch:
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		})
		done <- final{v, err}
	}()
	for {
		select {
		case ch := <-chunks:
			if !onChunk(ch) {
				<-done
				return nil, errStreamWrite
			}
		case f := <-done:
			for {
				select {
				case ch := <-chunks:
					onChunk(ch)
					continue
				default:
				}
				return f.v, f.err
			}
		}
	}
}

// streamTranscription answers NDJSON: one {"text", "chunk_id"} line per chunk, then the full
// result. Errors before the first chunk get their proper status; an error after the stream
// has started ends it with a {"detail", "status_code"} line instead of a silent cut.
// It reports whether the transcription completed.
func (s *Server) streamTranscription(c *gin.Context, req *runners.AudioRequest) bool {
	started := false
	start := func() {
		if !started {
			started = true
			c.Header("Content-Type", "application/x-ndjson")
			c.Header("X-Content-Type-Options", "nosniff")
			c.Status(http.StatusOK)
		}
	}
	writeLine := func(v any) bool {
		line, err := pyJSON(v)
		if err != nil {
			s.log.Error("encode stream line", "request_id", requestID(c), "err", err)
			return false
		}
		start()
		if _, err := c.Writer.Write(append(line, '\n')); err != nil {
			return false
		}
		c.Writer.Flush()
		return true
	}
	writeChunk := func(ch any) bool {
		if tc, ok := ch.(runners.TranscriptChunk); ok && tc.Text == "" {
			return true // empty chunks are not sent, as in Python
		}
		return writeLine(ch)
	}
	v, err := s.transcribe(c, req, writeChunk)
	switch {
	case errors.Is(err, errStreamWrite):
		return false
	case err != nil && !started:
		s.fail(c, err)
		return false
	case err != nil:
		status, msg, retry := s.classify(err)
		c.Error(err) //nolint:errcheck // recorded for the access log
		line := map[string]any{"detail": msg, "status_code": status}
		if retry > 0 { // the header is gone with the 200: the line says when to come back
			line["retry_after"] = retryAfterSeconds(retry)
		}
		writeLine(line)
		return false
	}
	return writeLine(v)
}
