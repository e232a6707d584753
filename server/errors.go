package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/tenstorrent/tt-media-server-go/media/audio"
	"github.com/tenstorrent/tt-media-server-go/media/imaging"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/scheduler"
)

// apiError is an error with the HTTP status it should be answered with.
type apiError struct {
	status     int
	msg        string
	retryAfter time.Duration
}

func (e *apiError) Error() string { return e.msg }

func httpErr(status int, format string, args ...any) *apiError {
	return &apiError{status: status, msg: fmt.Sprintf(format, args...)}
}

// validationError is a FastAPI-style 422: a list of field errors.
type validationError struct {
	items []fieldError
}

func (e *validationError) Error() string {
	if len(e.items) == 0 {
		return "validation error"
	}
	return e.items[0].Msg
}

// fieldError is one entry of FastAPI's 422 "detail" list.
type fieldError struct {
	Type  string         `json:"type"`
	Loc   []any          `json:"loc"`
	Msg   string         `json:"msg"`
	Input any            `json:"input"`
	Ctx   map[string]any `json:"ctx,omitempty"`
}

// classify maps any error from the layers below to a status code and a client message.
// It is the one place where errors become HTTP.
func (s *Server) classify(err error) (status int, msg string, retryAfter time.Duration) {
	// errors.AsType rather than errors.As: no target variable escapes to the heap.
	if rej, ok := errors.AsType[*scheduler.Rejection](err); ok {
		retryAfter = rej.RetryAfter
	}
	if ae, ok := errors.AsType[*apiError](err); ok {
		return ae.status, ae.msg, ae.retryAfter
	}
	switch {
	case errors.Is(err, scheduler.ErrQueueFull):
		return http.StatusTooManyRequests, "Task queue is full. Please try again later.", orDefault(retryAfter, s.retryFallback())
	case errors.Is(err, scheduler.ErrClientQueueFull), errors.Is(err, scheduler.ErrDeadlineUnreachable):
		return http.StatusTooManyRequests, err.Error(), orDefault(retryAfter, s.retryFallback())
	case errors.Is(err, scheduler.ErrTooManyJobs):
		// It can never be admitted: no Retry-After, no x-should-retry.
		return http.StatusBadRequest, err.Error(), 0
	case errors.Is(err, scheduler.ErrNotReady):
		return http.StatusServiceUnavailable, "Model is not ready", 5 * time.Second
	case errors.Is(err, scheduler.ErrStopping):
		return http.StatusServiceUnavailable, "Server is shutting down", 5 * time.Second
	case errors.Is(err, scheduler.ErrWorkerFailed):
		return http.StatusServiceUnavailable, err.Error(), 5 * time.Second
	case errors.Is(err, scheduler.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout, "Inference timed out: " + err.Error(), 0
	case errors.Is(err, context.Canceled):
		// The client went away; nobody reads this answer, but the access log shows 499.
		return 499, "Client closed the request", 0
	case errors.Is(err, scheduler.ErrUnknownWorker):
		return http.StatusNotFound, err.Error(), 0
	case errors.Is(err, runners.ErrBadRequest):
		return http.StatusBadRequest, trimSentinel(err, runners.ErrBadRequest), 0
	case errors.Is(err, audio.ErrTooLarge), errors.Is(err, imaging.ErrTooLarge):
		return http.StatusRequestEntityTooLarge, err.Error(), 0
	case errors.Is(err, audio.ErrUnsupportedFormat):
		return http.StatusUnsupportedMediaType, err.Error(), 0
	case errors.Is(err, audio.ErrInvalidAudio), errors.Is(err, audio.ErrTooLong), errors.Is(err, imaging.ErrInvalidImage):
		return http.StatusBadRequest, err.Error(), 0
	default:
		return http.StatusInternalServerError, "Internal error: " + err.Error(), 0
	}
}

// trimSentinel drops the sentinel's own prefix ("bad request: ") from a wrapped message.
func trimSentinel(err, sentinel error) string {
	msg := err.Error()
	p := sentinel.Error() + ": "
	if len(msg) > len(p) && msg[:len(p)] == p {
		return msg[len(p):]
	}
	return msg
}

// fail answers err in the Python server's envelope: {"detail": "..."} or, for validation,
// {"detail": [{type, loc, msg, input}]}.
func (s *Server) fail(c *gin.Context, err error) {
	if ve, ok := errors.AsType[*validationError](err); ok {
		items := make([]fieldError, len(ve.items))
		for i, it := range ve.items {
			it.Input = truncateEcho(it.Input, maxEchoDepth)
			items[i] = it
		}
		c.Abort()
		writeJSON(c, http.StatusUnprocessableEntity, validationBody{Detail: items}) // unescaped '<', '>', '&', as FastAPI
		return
	}
	status, msg, retry := s.classify(err)
	setRetryAfter(c, retry)
	if status >= 500 {
		s.log.Error("request failed", "request_id", requestID(c), "status", status, "err", err)
	}
	c.Error(err) //nolint:errcheck // recorded for the access log
	c.AbortWithStatusJSON(status, detailBody{Detail: msg})
}

// detailBody and validationBody are the Python server's error envelopes, {"detail": ...}, as
// structs: encoding a struct skips the map allocation and key sort of a gin.H.
type detailBody struct {
	Detail string `json:"detail"`
}

type validationBody struct {
	Detail []fieldError `json:"detail"`
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// setRetryAfter tells the client when to come back: Retry-After in whole seconds (at least 1),
// retry-after-ms and x-should-retry as the OpenAI SDKs read them. The header map is written
// with the names already in canonical form (header names are case-insensitive on the wire), which
// spares the per-request canonicalisation of the lower-case spellings.
func setRetryAfter(c *gin.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	h := c.Writer.Header()
	h["Retry-After"] = []string{strconv.Itoa(retryAfterSeconds(d))}
	h["Retry-After-Ms"] = []string{strconv.FormatInt(max(1, int64(math.Ceil(float64(d)/float64(time.Millisecond)))), 10)}
	h["X-Should-Retry"] = []string{"true"}
}

// retryAfterSeconds is d as Retry-After's whole seconds (at least 1).
func retryAfterSeconds(d time.Duration) int { return max(1, int(math.Ceil(d.Seconds()))) }

// retryFallback is the Retry-After of a refusal that carries none (a fake scheduler in tests,
// or a wrapped error): the scheduler's own estimate when there is one model, else 1 s.
func (s *Server) retryFallback() time.Duration {
	if len(s.pools) == 1 {
		return s.pools[0].Sched.RetryAfter()
	}
	return time.Second
}

// inputError is a bad input image or mask: its status (400, or 413 over the pixel budget) and
// a message naming the field; both error envelopes carry the field.
type inputError struct {
	field, msg string
	status     int
}

func fieldImageErr(field string, err error) error {
	status := http.StatusBadRequest
	if errors.Is(err, imaging.ErrTooLarge) {
		status = http.StatusRequestEntityTooLarge
	}
	return &inputError{field: field, status: status, msg: fmt.Sprintf("%s is not a usable image: %v", field, err)}
}

// failField answers err in the Python (openAI false) or OpenAI envelope; an inputError's field
// becomes OpenAI's param.
func (s *Server) failField(c *gin.Context, err error, openAI bool) {
	var fe *inputError
	if errors.As(err, &fe) {
		if openAI {
			s.failOpenAI(c, &openAIError{status: fe.status, msg: fe.msg, param: fe.field})
		} else {
			s.fail(c, httpErr(fe.status, "%s", fe.msg))
		}
		return
	}
	if openAI {
		s.failOpenAI(c, err)
	} else {
		s.fail(c, err)
	}
}
