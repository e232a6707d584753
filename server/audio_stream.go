package server

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/tenstorrent/tt-media-server-go/runners"
)

// The NDJSON answer of a streamed transcription (HEAD's stream=true on the audio routes).

// streamTranscription answers NDJSON: one {"text", "chunk_id"} line per chunk, then the full
// result. Errors before the first chunk get their proper status; an error after the stream
// has started ends it with a {"detail", "status_code"} line instead of a silent cut.
// It reports whether the transcription completed.
func (s *Server) streamTranscription(c *gin.Context, req *runners.AudioRequest, up *transcription) bool {
	started := false
	text := up != nil && up.responseFormat == "text"
	ctype := "application/x-ndjson"
	if text {
		ctype = "text/plain; charset=utf-8"
	}
	start := func() {
		if !started {
			started = true
			c.Header("Content-Type", ctype)
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
	writeChunk := func(ch runners.Chunk) bool {
		tc, isChunk := runners.ChunkAs[runners.TranscriptChunk](ch)
		if isChunk && tc.Text == "" {
			return true // empty chunks are not sent, as in Python
		}
		if text && isChunk { // HEAD's text stream: each chunk's text and a newline
			start()
			if _, err := c.Writer.WriteString(tc.Text + "\n"); err != nil {
				return false
			}
			c.Writer.Flush()
			return true
		}
		return writeLine(ch)
	}
	v, err := s.transcribe(c, req, writeChunk)
	switch {
	case errors.Is(err, errStreamWrite):
		return false
	case err != nil && !started:
		s.fail(c, dialectPython, err)
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
	res, ok := runners.ResultAs[*runners.TranscriptionResult](v)
	switch {
	case !ok || res == nil:
		return writeLine(v)
	case text: // HEAD's text stream ends with the last chunk: no result object
		start()
		return true
	}
	return writeLine(pythonTranscript(res, up != nil && up.returnTimestamps))
}
