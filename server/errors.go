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

// apiError is the server's one error model: every refusal or failure it answers, in either
// dialect. The writer (fail) picks the envelope from the request's dialect: the Python
// server's {"detail": ...} (FastAPI) or OpenAI's {"error": {message, type, param, code}}.
type apiError struct {
	status int
	msg    string
	// param names the request field at fault (OpenAI's "param"; null when ""). The Python
	// envelope has no such key: its message names the field.
	param string
	// code is OpenAI's error code ("" = derived from the status, or null); typ its type ("" =
	// derived from the status).
	code, typ  string
	retryAfter time.Duration
	// items, when set, make it a FastAPI-style 422: a list of field errors (the Python
	// envelope's "detail" list; OpenAI's answer is a 400 naming the first one's field).
	items []fieldError
	// detail, when set, is the Python envelope's message where it differs from OpenAI's (HEAD's
	// own wording of a 401 beside OpenAI's).
	detail string
}

func (e *apiError) Error() string {
	if e.items != nil {
		if len(e.items) == 0 {
			return "validation error"
		}
		return e.items[0].Msg
	}
	return e.msg
}

func httpErr(status int, format string, args ...any) *apiError {
	return &apiError{status: status, msg: fmt.Sprintf(format, args...)}
}

// invalidParam is a 400 about one request field (OpenAI's invalid_request_error with param).
func invalidParam(param, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...), param: param}
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

// fail answers err in the envelope of dialect d, with the status s.classify gives it:
//   - dialectPython: the Python server's {"detail": "..."} or, for validation,
//     {"detail": [{type, loc, msg, input}]};
//   - dialectOpenAI: OpenAI's {"error": {message, type, param, code}} (answerOf); 429 and
//     503 carry Retry-After, retry-after-ms and x-should-retry: true, other 5xx answers
//     x-should-retry: false, so the SDKs do not re-run a job that failed deterministically;
//   - dialectEither (the dialect is not known yet: a 401 on a two-dialect route, a body that
//     mixes the dialects): both envelopes in one body, {"detail"} beside {"error"}.
func (s *Server) fail(c *gin.Context, d dialect, err error) {
	if d == dialectPython {
		if ve, ok := errors.AsType[*apiError](err); ok && ve.items != nil {
			items := make([]fieldError, len(ve.items))
			for i, it := range ve.items {
				it.Input = truncateEcho(it.Input, maxEchoDepth)
				items[i] = it
			}
			c.Abort()
			writeJSON(c, http.StatusUnprocessableEntity, validationBody{Detail: items}) // unescaped '<', '>', '&', as FastAPI
			return
		}
	}
	e := s.answerOf(err)
	status := e.status
	if d == dialectPython {
		status = e.pyStatus
	}
	setRetryAfter(c, e.retryAfter)
	if d != dialectPython && status >= 500 && e.retryAfter <= 0 {
		c.Header("x-should-retry", "false")
	}
	if status >= 500 {
		s.log.Error("request failed", "request_id", requestID(c), "status", status, "err", err)
	}
	c.Error(err) //nolint:errcheck // recorded for the access log
	obj := e.object()
	switch d {
	case dialectPython:
		c.AbortWithStatusJSON(status, detailBody{Detail: e.detail})
	case dialectOpenAI:
		c.AbortWithStatusJSON(status, openAIErrorBody{Error: obj})
	default:
		c.AbortWithStatusJSON(status, struct {
			Detail string            `json:"detail"`
			Error  openAIErrorObject `json:"error"`
		}{e.detail, obj})
	}
}

// openAIErrorBody is OpenAI's ErrorResponse: all four keys always present, param and code
// null when unknown.
type openAIErrorBody struct {
	Error openAIErrorObject `json:"error"`
}

type openAIErrorObject struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// openAIType is OpenAI's error type for a status.
func openAIType(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status >= 500:
		return "server_error"
	default:
		return "invalid_request_error"
	}
}

// answer is an error as both envelopes carry it: OpenAI's status and fields, and the Python
// envelope's status and detail.
type answer struct {
	status, pyStatus int
	msg, detail      string
	param, code, typ string
	retryAfter       time.Duration
}

// object is OpenAI's error object of the answer (also the "error" of an SSE error event).
func (a answer) object() openAIErrorObject {
	return openAIErrorObject{Message: a.msg, Type: a.typ, Param: optString(a.param), Code: optString(a.code)}
}

// answerOf maps any error to both envelopes' fields. Statuses and messages come from
// s.classify, the one error-to-HTTP mapper; FastAPI-style validation errors (from the shared
// JSON reader) become 400 with the offending field as param on OpenAI's side.
func (s *Server) answerOf(err error) answer {
	status, msg, retry := s.classify(err)
	a := answer{status: status, pyStatus: status, msg: msg, detail: msg, retryAfter: retry}
	if ae, ok := errors.AsType[*apiError](err); ok {
		a.param, a.code, a.typ = ae.param, ae.code, ae.typ
		if ae.detail != "" {
			a.detail = ae.detail
		}
		if ae.items != nil {
			a.status, a.typ, a.msg = http.StatusBadRequest, "invalid_request_error", ae.Error()
			if len(ae.items) > 0 {
				it := ae.items[0]
				if len(it.Loc) > 1 {
					if name, ok := it.Loc[1].(string); ok {
						a.param = name
						a.msg = fmt.Sprintf("Invalid value for '%s': %s", name, it.Msg)
					}
				}
				if it.Type == "json_invalid" {
					a.msg = "We could not parse the JSON body of your request: " + fmt.Sprint(it.Ctx["error"])
				}
			}
		}
	}
	if a.status == http.StatusUnsupportedMediaType {
		// An upload we cannot read: OpenAI answers 400 (BadRequestError in the SDKs), naming
		// the file; the Python envelope keeps the Python server's 415.
		a.status, a.typ, a.param = http.StatusBadRequest, "invalid_request_error", "file"
	}
	if a.typ == "" {
		a.typ = openAIType(a.status)
	}
	if a.code == "" {
		switch {
		case a.status == http.StatusTooManyRequests:
			a.code = "rate_limit_exceeded"
		case errors.Is(err, scheduler.ErrTimeout):
			a.code = "timeout"
		case a.status == http.StatusServiceUnavailable:
			a.code = "service_unavailable"
		}
	}
	return a
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

// fieldImageErr is a bad input image or mask: 400, or 413 over the pixel budget, naming field
// (OpenAI's param).
func fieldImageErr(field string, err error) error {
	status := http.StatusBadRequest
	if errors.Is(err, imaging.ErrTooLarge) {
		status = http.StatusRequestEntityTooLarge
	}
	return &apiError{param: field, status: status, msg: fmt.Sprintf("%s is not a usable image: %v", field, err)}
}
