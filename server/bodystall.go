package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/gin-gonic/gin"
)

// bodyReadTimeout bounds the arrival of a whole request body when the request has no deadline
// of its own (X-Request-Timeout and the SDKs' headers): the http.Server's ReadTimeout.
const bodyReadTimeout = 5 * time.Minute

// errBodyStalled is the read error of a request body that made no progress for
// BODY_STALL_TIMEOUT_SECONDS; it is also os.ErrDeadlineExceeded (the connection's read deadline
// passed).
type errBodyStalled struct{ after time.Duration }

func (e *errBodyStalled) Error() string {
	return fmt.Sprintf("no byte of the request body arrived for %s", e.after)
}
func (e *errBodyStalled) Unwrap() error { return os.ErrDeadlineExceeded }

// bodyStall (every route) arms, before each read of the request body, the connection's read
// deadline at BODY_STALL_TIMEOUT_SECONDS from now (or the body's own deadline, if earlier): an
// upload that stops sending fails its read with errBodyStalled, which bodyErr answers 408, and
// the connection is closed (Connection: close), so it stops holding a MAX_CONNECTIONS slot
// until the request's deadline. Once the body is read no deadline is armed: a request that
// waits for its answer longer than the stall time is not cut (TestBodyStallKeepsProgressingUploads).
func (s *Server) bodyStall() gin.HandlerFunc {
	return func(c *gin.Context) {
		if s.cfg.BodyStallTimeout > 0 && c.Request.Body != nil && c.Request.Body != http.NoBody {
			c.Request.Body = &stallReader{ReadCloser: c.Request.Body, c: c, stall: s.cfg.BodyStallTimeout,
				start: time.Now()}
		}
		c.Next()
	}
}

// stallReader is a request body whose every read must make progress within stall.
type stallReader struct {
	io.ReadCloser
	c       *gin.Context
	stall   time.Duration
	start   time.Time
	done    bool
	stalled bool
}

func (r *stallReader) Read(p []byte) (int, error) {
	if r.done || r.stalled {
		return r.ReadCloser.Read(p)
	}
	rc := http.NewResponseController(r.c.Writer)
	hard := r.start.Add(bodyReadTimeout)
	if dl, ok := r.c.Request.Context().Deadline(); ok && dl.Before(hard) {
		hard = dl
	}
	until, byStall := time.Now().Add(r.stall), true
	if hard.Before(until) {
		until, byStall = hard, false
	}
	if rc.SetReadDeadline(until) != nil {
		r.done = true // no deadline support (a test's ResponseWriter): read as is
		return r.ReadCloser.Read(p)
	}
	n, err := r.ReadCloser.Read(p)
	switch {
	case errors.Is(err, io.EOF):
		// net/http clears the read deadline itself when the body ends (its background read,
		// which notices a client that goes away, runs without one).
		r.done = true
	case err != nil && byStall && errors.Is(err, os.ErrDeadlineExceeded):
		r.stalled = true
		r.c.Header("Connection", "close")
		return n, &errBodyStalled{after: r.stall}
	}
	return n, err
}
