package server

// Two dialects on one set of /v1 routes. The Python tt-media-server's clients (HEAD, since
// 2026-02) call /v1/images/generations, /v1/audio/transcriptions|translations and
// /v1/cnn/search-image with the Python JSON schemas (base64 media); the OpenAI SDKs call the
// image and audio routes with OpenAI's. A request is told apart by its content type and the
// names of its top-level fields, never by guessing: each route has a list of fields only the
// Python dialect has and a list only OpenAI's has (dialectRule). A body with fields of both
// lists is refused with a 400 naming them; a body with neither is the route's documented
// default. The rule and its examples are in docs/API.md ("Two dialects on /v1").
//
// A new /v1 route plugs in with s.dialectRoute(rule, pythonHandler, openaiHandler); its legacy
// (non-/v1) twin with deprecated(successor) first and s.pythonOnly(rule, successor) in front of
// the Python handler.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"
)

// dialect is the API dialect a request is written in.
type dialect uint8

const (
	dialectPython dialect = iota + 1 // the Python tt-media-server's schemas (HEAD)
	dialectOpenAI                    // OpenAI's API
)

func (d dialect) String() string {
	if d == dialectOpenAI {
		return "openai"
	}
	return "python"
}

// dialectHeader tells the client which dialect its request was read in.
const dialectHeader = "X-TT-Dialect"

// Deprecation headers of the legacy (non-/v1) paths, as the Python server's
// DeprecatedPathMiddleware sends them (RFC 8594 / RFC 8288).
const legacySunset = "2026-06-30"

// dialectRule is how one route tells the dialects apart.
type dialectRule struct {
	// python and openai are the top-level field names only that dialect has. Fields both
	// dialects share (prompt, seed, response_format, ...) are in neither list.
	python, openai []string
	// openaiPrefixes are name prefixes of OpenAI-only fields sent in bracket notation
	// ("chunking_strategy[type]").
	openaiPrefixes []string
	// fallback is the dialect of a body with no distinctive field (and of a body whose
	// fields cannot be read: its own parser then says what is wrong with it).
	fallback dialect
	// multipart, when set, is the fallback of a multipart/form-data body (a route whose
	// dialects differ by content type: HEAD's JSON against OpenAI's multipart edits).
	multipart dialect
}

// imageGenerationsRule: OpenAI's ImageGenerateParams against HEAD's ImageGenerateRequest.
// A body with only shared fields ({"prompt": ..., "seed": ...}) is the Python dialect: it is
// what the Python server answers on this path, and the OpenAI SDKs name a model, n or size
// whenever the caller does.
var imageGenerationsRule = dialectRule{
	python: []string{"number_of_images", "image_return_format", "image_quality", "prompt_2",
		"negative_prompt_2", "crop_coords_top_left", "guidance_rescale", "timesteps", "sigmas",
		"lora_path", "lora_scale"},
	openai: []string{"model", "n", "size", "response_format", "output_format", "output_compression",
		"quality", "style", "moderation", "background", "partial_images", "user", "stream", "steps"},
	fallback: dialectPython,
}

// audioRule: OpenAI's multipart transcription/translation form against HEAD's
// AudioProcessingRequest (JSON with base64 "file", or multipart). OpenAI's form always names
// a model, so a multipart form with only shared fields (file, prompt, response_format, stream,
// is_preprocessing_enabled) is the Python dialect.
var audioRule = dialectRule{
	python: []string{"perform_diarization", "temperatures", "compression_ratio_threshold",
		"logprob_threshold", "no_speech_threshold", "return_timestamps"},
	openai: []string{"model", "language", "temperature", "timestamp_granularities[]",
		"timestamp_granularities", "include[]", "include", "chunking_strategy"},
	openaiPrefixes: []string{"chunking_strategy["},
	fallback:       dialectPython,
}

// dialectError is a body that mixes the dialects, or carries the other dialect's fields on a
// route that speaks only one.
type dialectError struct {
	python, openai []string
	route          string // "" on a two-dialect route; else the legacy route's successor
}

func (e *dialectError) Error() string {
	if e.route != "" {
		return fmt.Sprintf("%s %s OpenAI's API, which this path does not speak (it is the Python "+
			"server's legacy path); send the Python fields, or send OpenAI's request to %s",
			quoteList(e.openai), isOrAre(e.openai), e.route)
	}
	return fmt.Sprintf("the body mixes the two API dialects: %s %s the Python server's and %s %s OpenAI's; "+
		"send one dialect's fields only (see docs/API.md, \"Two dialects on /v1\")",
		quoteList(e.python), isOrAre(e.python), quoteList(e.openai), isOrAre(e.openai))
}

// param is the first offending field, for OpenAI's error "param".
func (e *dialectError) param() string {
	if len(e.openai) > 0 && (len(e.python) == 0 || e.route != "") {
		return e.openai[0]
	}
	if len(e.python) > 0 {
		return e.python[0]
	}
	return ""
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "'" + n + "'"
	}
	return strings.Join(q, ", ")
}

func isOrAre(names []string) string {
	if len(names) == 1 {
		return "is"
	}
	return "are"
}

// failDialect answers a dialect error with a 400 both dialects' clients can read: the Python
// server's {"detail": message} and OpenAI's {"error": {...}} in one body.
func (s *Server) failDialect(c *gin.Context, e *dialectError) {
	c.Error(e) //nolint:errcheck // recorded for the access log
	msg := e.Error()
	c.AbortWithStatusJSON(http.StatusBadRequest, struct {
		Detail string            `json:"detail"`
		Error  openAIErrorObject `json:"error"`
	}{msg, openAIErrorObject{Message: msg, Type: "invalid_request_error",
		Param: optString(e.param()), Code: optString("mixed_dialects")}})
}

// bodyFieldsKey holds the request body the dialect check read, for the handler to reuse.
const bodyFieldsKey = "tt.dialect_body"

// sniffedBody is what the dialect check learnt of the body.
type sniffedBody struct {
	data []byte
	// json is the decoded top-level object of an application/json body (nil otherwise, or
	// when it is not a JSON object).
	json *body
}

// sniffDialect reads the body (already capped by limitBody), restores it for the handler and
// decides the dialect by rule. force, when set, is the only dialect the route speaks: fields
// of the other are refused.
func sniffDialect(c *gin.Context, rule dialectRule, force dialect) (dialect, error) {
	data, err := io.ReadAll(c.Request.Body)
	if err != nil {
		return 0, bodyErr(err)
	}
	c.Request.Body = io.NopCloser(bytes.NewReader(data))
	sb := &sniffedBody{data: data}
	c.Set(bodyFieldsKey, sb)
	ct, params, _ := mime.ParseMediaType(c.GetHeader("Content-Type"))
	var names []string
	switch {
	case ct == "multipart/form-data":
		names = multipartNames(data, params["boundary"])
	case strings.Contains(ct, "application/json") || ct == "":
		var raw map[string]json.RawMessage
		if json.Unmarshal(data, &raw) == nil && raw != nil {
			sb.json = &body{raw: raw, data: data}
			for k := range raw {
				names = append(names, k)
			}
			slices.Sort(names)
		}
	}
	var py, oa []string
	for _, n := range names {
		switch {
		case slices.Contains(rule.python, n):
			py = append(py, n)
		case slices.Contains(rule.openai, n) || hasAnyPrefix(n, rule.openaiPrefixes):
			if !slices.Contains(oa, n) {
				oa = append(oa, n)
			}
		}
	}
	switch {
	case force == dialectPython && len(oa) > 0:
		return 0, &dialectError{openai: oa, route: "/v1"} // pythonOnly names the successor
	case force != 0:
		return force, nil
	case len(py) > 0 && len(oa) > 0:
		return 0, &dialectError{python: py, openai: oa}
	case len(oa) > 0:
		return dialectOpenAI, nil
	case len(py) > 0:
		return dialectPython, nil
	}
	if ct == "multipart/form-data" && rule.multipart != 0 {
		return headerDialect(c, rule.multipart)
	}
	return headerDialect(c, rule.fallback)
}

// headerDialect decides a body with no distinctive field: the client's explicit
// X-TT-Dialect request header, else OpenAI when the request comes from an official OpenAI SDK
// (every one of them, Python, Node and Go, is generated by Stainless and sends
// X-Stainless-Lang on every request), else the route's fallback.
func headerDialect(c *gin.Context, fallback dialect) (dialect, error) {
	switch v := strings.ToLower(strings.TrimSpace(c.GetHeader(dialectHeader))); v {
	case "python":
		return dialectPython, nil
	case "openai":
		return dialectOpenAI, nil
	case "":
	default:
		return 0, httpErr(http.StatusBadRequest, "header %s must be \"python\" or \"openai\", got %q", dialectHeader, shorten(v))
	}
	if c.GetHeader("X-Stainless-Lang") != "" {
		return dialectOpenAI, nil
	}
	return fallback, nil
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// multipartNames lists the form names of a multipart body (nil when it cannot be read; the
// handler's parser then reports the problem).
func multipartNames(data []byte, boundary string) []string {
	if boundary == "" {
		return nil
	}
	mr := multipart.NewReader(bytes.NewReader(data), boundary)
	var names []string
	for range maxOpenAIParts + 1 {
		p, err := mr.NextPart()
		if err != nil {
			break
		}
		if n := p.FormName(); n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// sniffed returns the body the dialect check read, if it ran.
func sniffed(c *gin.Context) *sniffedBody {
	v, ok := c.Get(bodyFieldsKey)
	if !ok {
		return nil
	}
	sb, _ := v.(*sniffedBody)
	return sb
}

// readBody is the request body: the bytes the dialect check already read, or the body itself.
func readBody(c *gin.Context) ([]byte, error) {
	if sb := sniffed(c); sb != nil {
		return sb.data, nil
	}
	data, err := io.ReadAll(c.Request.Body)
	if err != nil {
		return nil, bodyErr(err)
	}
	return data, nil
}

// dialectRoute serves one /v1 route in both dialects: the body is read once, its dialect
// decided by rule, and the dialect's handler answers in its own shapes and error envelope.
func (s *Server) dialectRoute(rule dialectRule, python, openai gin.HandlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		d, err := sniffDialect(c, rule, 0)
		if err != nil {
			s.answerSniffErr(c, err)
			return
		}
		c.Header(dialectHeader, d.String())
		if d == dialectPython {
			c.Set(openAIRouteKey, false) // errors in the Python server's {"detail"} envelope
			python(c)
			return
		}
		openai(c)
	}
}

// deprecated marks a legacy (non-/v1) path with the Python server's deprecation headers,
// pointing at its /v1 successor; they are on every answer, errors included.
func deprecated(successor string) gin.HandlerFunc {
	link := "<" + successor + `>; rel="successor-version"`
	return func(c *gin.Context) {
		h := c.Writer.Header()
		h.Set("Deprecation", "true")
		h.Set("Sunset", legacySunset)
		h.Set("Link", link)
		c.Next()
	}
}

// pythonOnly fronts a legacy path's handler: the path speaks the Python dialect only, so
// OpenAI-only fields are refused with a 400 naming them (and the successor route that takes
// them) instead of being ignored.
func (s *Server) pythonOnly(rule dialectRule, successor string) gin.HandlerFunc {
	return func(c *gin.Context) {
		if _, err := sniffDialect(c, rule, dialectPython); err != nil {
			var de *dialectError
			if errors.As(err, &de) {
				de.route = successor
			}
			s.answerSniffErr(c, err)
			return
		}
		c.Header(dialectHeader, dialectPython.String())
		c.Next()
	}
}

func (s *Server) answerSniffErr(c *gin.Context, err error) {
	var de *dialectError
	if errors.As(err, &de) {
		s.failDialect(c, de)
		return
	}
	s.failFor(c, err)
}

// jsonBody is readBody decoded as a JSON object (parseBody), reusing the dialect check's
// decode when there was one.
func jsonBody(c *gin.Context) (*body, error) {
	if sb := sniffed(c); sb != nil && sb.json != nil {
		return sb.json, nil
	}
	data, err := readBody(c)
	if err != nil {
		return nil, err
	}
	return parseBody(data)
}
