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
// A new /v1 route plugs in with s.inference(inferenceRoute{rule, handle}) (request.go): one
// handler that reads in.dialect's body into the route's one request type and answers in that
// dialect's shape; its legacy (non-/v1) twin with deprecated(successor) first and the same
// s.inference with the successor set (the dialect is then always the Python server's).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"
)

// dialect is the API dialect a request is written in.
type dialect uint8

const (
	// dialectEither: not known (yet); an error is answered in both envelopes at once.
	dialectEither dialect = iota
	dialectPython         // the Python tt-media-server's schemas (HEAD)
	dialectOpenAI         // OpenAI's API
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

// errMixedDialects is a body that mixes the dialects (successor ""), or carries OpenAI's fields
// on a legacy route that speaks only the Python dialect (successor: the /v1 route that takes
// them): a 400 naming the fields, in both envelopes (the dialect is what is in doubt).
func errMixedDialects(python, openai []string, successor string) *apiError {
	e := &apiError{status: http.StatusBadRequest, code: "mixed_dialects"}
	if successor != "" {
		e.msg = fmt.Sprintf("%s %s OpenAI's API, which this path does not speak (it is the Python "+
			"server's legacy path); send the Python fields, or send OpenAI's request to %s",
			quoteList(openai), isOrAre(openai), successor)
		e.param = openai[0]
		return e
	}
	e.msg = fmt.Sprintf("the body mixes the two API dialects: %s %s the Python server's and %s %s OpenAI's; "+
		"send one dialect's fields only (see docs/API.md, \"Two dialects on /v1\")",
		quoteList(python), isOrAre(python), quoteList(openai), isOrAre(openai))
	e.param = python[0]
	return e
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

// sniffDialect decides the dialect of in by rule, and decodes a JSON body's top-level object
// into in.json on the way. successor, when set, makes the route speak the Python dialect only:
// OpenAI's fields are refused, naming the successor route that takes them.
func sniffDialect(c *gin.Context, in *request, rule *dialectRule, successor string) (dialect, error) {
	var names []string
	switch {
	case in.contentType == "multipart/form-data":
		names = multipartNames(in.data, in.boundary)
	case strings.Contains(in.contentType, "application/json") || in.contentType == "":
		var raw map[string]json.RawMessage
		if json.Unmarshal(in.data, &raw) == nil && raw != nil {
			in.json = &body{raw: raw, data: in.data}
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
	case successor != "" && len(oa) > 0:
		return 0, errMixedDialects(nil, oa, successor)
	case successor != "":
		return dialectPython, nil
	case len(py) > 0 && len(oa) > 0:
		return 0, errMixedDialects(py, oa, "")
	case len(oa) > 0:
		return dialectOpenAI, nil
	case len(py) > 0:
		return dialectPython, nil
	}
	if in.contentType == "multipart/form-data" && rule.multipart != 0 {
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
