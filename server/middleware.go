package server

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/tenstorrent/tt-media-server-go/scheduler"
)

const (
	requestIDHeader = "X-Request-Id"
	// maxJSONBody caps image-generation request bodies: prompts and schedules are small.
	maxJSONBody = 1 << 20
	// maxImageBody caps classification uploads (base64 JSON or multipart).
	maxImageBody = 32 << 20
	// multipartSlack covers multipart headers and the small form fields next to the file.
	multipartSlack = 1 << 20
)

// validRequestID reports whether a client's X-Request-Id is sane enough to echo and log:
// 1 to 128 of [A-Za-z0-9._:-] (a loop, not a regexp: it runs on every request).
func validRequestID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch ch := id[i]; {
		case 'a' <= ch && ch <= 'z', 'A' <= ch && ch <= 'Z', '0' <= ch && ch <= '9', ch == '.', ch == '_', ch == ':', ch == '-':
		default:
			return false
		}
	}
	return true
}

// requestIDMiddleware takes the client's X-Request-Id when it is sane, or makes one, and
// echoes it on the response.
func (s *Server) requestIDMiddleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		id := c.GetHeader(requestIDHeader)
		if !validRequestID(id) {
			// A request id needs to be unique, not secret: the runtime's per-thread ChaCha8
			// (math/rand/v2) costs no system call, unlike crypto/rand.
			var b [16]byte
			id = string(hex.AppendEncode(b[:0], binary.LittleEndian.AppendUint64(make([]byte, 0, 8), rand.Uint64())))
		}
		// Kept in the response's header map only (no c.Set: a GET then allocates no context map).
		c.Writer.Header()[requestIDHeader] = []string{id}
		c.Next()
	}
}

// requestID is the request's id, as its answer carries it.
func requestID(c *gin.Context) string {
	if v := c.Writer.Header()[requestIDHeader]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// endUserKey holds OpenAI's user field (an end-user id for abuse monitoring) for the access log.
const endUserKey = "end_user"

// setEndUser records the request's end-user id for its access-log line ("" records nothing).
func setEndUser(c *gin.Context, user string) {
	if user != "" {
		c.Set(endUserKey, user)
	}
}

// accessLog writes one line per request. A request that may run jobs (any but GET and HEAD,
// which only read the server's state) has its queue and device time recorded (timingWriter).
func (s *Server) accessLog() gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		var timing *scheduler.Timing
		if m := c.Request.Method; m != http.MethodGet && m != http.MethodHead {
			timing = &scheduler.Timing{}
			c.Request = c.Request.WithContext(scheduler.WithTiming(c.Request.Context(), timing))
			c.Writer = &timingWriter{ResponseWriter: c.Writer, t: timing, c: c, timeout: s.cfg.InferenceTimeout}
		}
		c.Next()
		if !s.log.Enabled(c.Request.Context(), slog.LevelInfo) {
			return
		}
		var wait, device time.Duration
		var jobs int
		if timing != nil {
			wait, device, jobs = timing.Snapshot()
		}
		var buf [12]slog.Attr // typed attributes in a stack array: no []any boxing per request
		attrs := append(buf[:0],
			slog.String("request_id", requestID(c)), slog.String("method", c.Request.Method),
			slog.String("path", c.Request.URL.Path), slog.Int("status", c.Writer.Status()),
			slog.Int64("duration_ms", time.Since(start).Milliseconds()), slog.Int("bytes_out", c.Writer.Size()),
			slog.String("client", c.ClientIP()))
		if jobs > 0 {
			attrs = append(attrs, slog.Int("jobs", jobs), slog.Int64("queue_ms", wait.Milliseconds()),
				slog.Int64("device_ms", device.Milliseconds()))
		}
		if len(c.Errors) > 0 {
			attrs = append(attrs, slog.String("err", c.Errors.Last().Error()))
		}
		if u := c.GetString(endUserKey); u != "" {
			attrs = append(attrs, slog.String("user", u))
		}
		s.log.LogAttrs(c.Request.Context(), slog.LevelInfo, "request", attrs...)
	}
}

// recordMetrics counts every request by its route pattern (not the raw path, so ids and
// scanners cannot blow up the label set).
func (s *Server) recordMetrics() gin.HandlerFunc {
	return func(c *gin.Context) {
		if s.metrics == nil {
			c.Next()
			return
		}
		start := time.Now()
		c.Next()
		route := c.FullPath()
		if route == "" {
			route = "unmatched"
		}
		s.metrics.Request(route, c.Request.Method, c.Writer.Status(), time.Since(start))
		if client := scheduler.ClientOf(c.Request.Context()); client != "" {
			if strings.HasPrefix(client, "jwt") {
				client = "jwt" // token subjects are unbounded; key names are not
			}
			s.metrics.ClientRequest(client, c.Writer.Status())
		}
	}
}

// recovery turns a handler panic into a 500 and a logged stack instead of a dropped connection.
func (s *Server) recovery() gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler { //nolint:errorlint // a panic value, re-panicked as net/http documents
					panic(p)
				}
				s.log.Error("handler panicked", "request_id", requestID(c), "panic", p, "stack", string(debug.Stack()))
				if !c.Writer.Written() {
					c.AbortWithStatusJSON(http.StatusInternalServerError, gin.H{"detail": "Internal server error"})
				}
			}
		}()
		c.Next()
	}
}

// deadlineHeaders are the client's own time budgets, in seconds: ours, and the ones the OpenAI
// SDKs send for their read timeout.
var deadlineHeaders = []string{"X-Request-Timeout", "X-Stainless-Read-Timeout", "X-Stainless-Timeout"}

// requestDeadline (on both route families; errors in the family's envelope) applies the client's time budget to the request's context; the scheduler
// then uses the earlier of it and DEFAULT_INFERENCE_TIMEOUT_SECONDS.
func (s *Server) requestDeadline(d dialect) gin.HandlerFunc {
	return func(c *gin.Context) {
		var budget time.Duration
		for _, h := range deadlineHeaders {
			v := c.GetHeader(h)
			if v == "" {
				continue
			}
			secs, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || math.IsNaN(secs) || math.IsInf(secs, 0) || secs <= 0 || secs > 86400 {
				s.fail(c, d, httpErr(http.StatusBadRequest, "header %s must be a number of seconds in (0, 86400], got %q", h, v))
				return
			}
			if d := time.Duration(secs * float64(time.Second)); budget == 0 || d < budget {
				budget = d
			}
		}
		if budget > 0 {
			ctx, cancel := context.WithTimeout(c.Request.Context(), budget)
			defer cancel()
			c.Request = c.Request.WithContext(ctx)
			// The body too must arrive within the budget: a slow upload is cut at the deadline
			// (408) instead of holding the handler for the server's 5-minute read timeout.
			_ = http.NewResponseController(c.Writer).SetReadDeadline(time.Now().Add(budget))
		}
		c.Next()
	}
}

// limitBody caps the request body; reading past it yields a 413 (bodyErr). Its refusal is
// answered in envelope d.
func (s *Server) limitBody(limit int64, d dialect) gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.Request.ContentLength > limit {
			s.fail(c, d, httpErr(http.StatusRequestEntityTooLarge,
				"Request body too large: %d bytes. Maximum allowed: %d bytes", c.Request.ContentLength, limit))
			return
		}
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, limit)
		c.Next()
	}
}

// bodyErr turns a body read error into a 413 or 400.
func bodyErr(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return httpErr(http.StatusRequestEntityTooLarge, "Request body too large. Maximum allowed: %d bytes", mbe.Limit)
	}
	if stalled, ok := errors.AsType[*errBodyStalled](err); ok {
		return httpErr(http.StatusRequestTimeout, "the request body made no progress: %v (BODY_STALL_TIMEOUT_SECONDS); the connection is closed", stalled)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return httpErr(http.StatusRequestTimeout, "the request body did not arrive within the request's time budget (X-Request-Timeout)")
	}
	return httpErr(http.StatusBadRequest, "%s", fmt.Sprintf("could not read request body: %v", err))
}

// maxAudioBody is the audio route's body cap: MAX_AUDIO_SIZE_BYTES of audio as base64 JSON
// (4/3 larger) or multipart, plus room for the other fields.
func (s *Server) maxAudioBody() int64 {
	return s.cfg.MaxAudioSizeBytes/3*4 + 4 + multipartSlack
}

// timingWriter adds X-Queue-Time-Ms and X-Device-Time-Ms to a response whose jobs finished
// before its first byte (all but streamed answers), so clients and load tools can split
// latency into queue wait and device time (summed over the request's jobs).
//
// At its first write it also sets the connection's write deadline (writeDeadline), so a client
// that stops reading cannot hold a handler, and the memory of its unsent answer, past the
// request's deadline.
type timingWriter struct {
	gin.ResponseWriter
	t       *scheduler.Timing
	c       *gin.Context
	timeout time.Duration // DEFAULT_INFERENCE_TIMEOUT_SECONDS
	done    bool
}

// writeGrace is how long past the request's deadline its answer may take to be written.
const writeGrace = 5 * time.Second

// writeDeadline bounds every write of the response: the request's own deadline (X-Request-Timeout
// and the SDKs' timeout headers) or, without one, DEFAULT_INFERENCE_TIMEOUT_SECONDS from the first
// write (a stream lasts at most its job's timeout), plus writeGrace. A write that blocks past it
// fails, and the handler ends as for a client that went away.
func (w *timingWriter) writeDeadline() {
	var until time.Time
	if w.timeout > 0 {
		until = time.Now().Add(w.timeout)
	}
	if dl, ok := w.c.Request.Context().Deadline(); ok && (until.IsZero() || dl.Before(until)) {
		until = dl
	}
	if until.IsZero() {
		return
	}
	// Not every ResponseWriter supports it (httptest's does not): then there is no deadline.
	_ = http.NewResponseController(w.ResponseWriter).SetWriteDeadline(until.Add(writeGrace))
}

func (w *timingWriter) inject() {
	if w.done {
		return
	}
	w.done = true
	w.writeDeadline()
	if w.ResponseWriter.Written() {
		return
	}
	if wait, device, jobs := w.t.Snapshot(); jobs > 0 {
		w.Header().Set("X-Queue-Time-Ms", strconv.FormatInt(wait.Milliseconds(), 10))
		w.Header().Set("X-Device-Time-Ms", strconv.FormatInt(device.Milliseconds(), 10))
	}
}

// Unwrap lets http.ResponseController reach the connection (read and write deadlines).
func (w *timingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *timingWriter) Write(b []byte) (int, error) { w.inject(); return w.ResponseWriter.Write(b) }
func (w *timingWriter) WriteString(s string) (int, error) {
	w.inject()
	return w.ResponseWriter.WriteString(s)
}
func (w *timingWriter) WriteHeaderNow() { w.inject(); w.ResponseWriter.WriteHeaderNow() }
func (w *timingWriter) Flush()          { w.inject(); w.ResponseWriter.Flush() }
