package server

// The OpenAI-compatible API under /v1: images/generations, audio/transcriptions,
// audio/translations and models, answered in OpenAI's shapes and error envelope. The image and
// audio routes also speak the Python server's dialect (dialect.go). The handlers
// share the request decoding, scheduling and encoding of the Python-shaped routes; only the
// wire format differs. What we accept, ignore or refuse of OpenAI's fields is documented at
// each parser.

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/scheduler"
)

// openAIError is an error answered in OpenAI's envelope. Empty typ is derived from status;
// empty param and code are sent as null.
type openAIError struct {
	status     int
	msg        string
	typ        string
	param      string
	code       string
	retryAfter time.Duration
}

func (e *openAIError) Error() string { return e.msg }

// invalidParam is a 400 invalid_request_error about one request field.
func invalidParam(param, format string, args ...any) *openAIError {
	return &openAIError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...), param: param}
}

// errModelNotFound is OpenAI's answer for a model that is not served here.
func errModelNotFound(model string) *openAIError {
	return &openAIError{status: http.StatusNotFound, param: "model", code: "model_not_found",
		msg: fmt.Sprintf("The model `%s` does not exist or is not served here.", model)}
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

// toOpenAIError maps any error to OpenAI's envelope fields. Statuses and messages come from
// s.classify, the one error-to-HTTP mapper; FastAPI-style validation errors (from the shared
// JSON reader) become 400 with the offending field as param.
func (s *Server) toOpenAIError(err error) *openAIError {
	var oe *openAIError
	if errors.As(err, &oe) {
		e := *oe
		if e.typ == "" {
			e.typ = openAIType(e.status)
		}
		return &e
	}
	var ve *validationError
	if errors.As(err, &ve) {
		e := &openAIError{status: http.StatusBadRequest, typ: "invalid_request_error", msg: ve.Error()}
		if len(ve.items) > 0 {
			it := ve.items[0]
			if len(it.Loc) > 1 {
				if name, ok := it.Loc[1].(string); ok {
					e.param = name
					e.msg = fmt.Sprintf("Invalid value for '%s': %s", name, it.Msg)
				}
			}
			if it.Type == "json_invalid" {
				e.msg = "We could not parse the JSON body of your request: " + fmt.Sprint(it.Ctx["error"])
			}
		}
		return e
	}
	status, msg, retry := s.classify(err)
	e := &openAIError{status: status, msg: msg, typ: openAIType(status), retryAfter: retry}
	if status == http.StatusUnsupportedMediaType {
		// An upload we cannot read: OpenAI answers 400 (BadRequestError in the SDKs), naming
		// the file; the reference routes keep the Python server's 415.
		e.status, e.typ, e.param = http.StatusBadRequest, "invalid_request_error", "file"
	}
	switch {
	case status == http.StatusTooManyRequests:
		e.code = "rate_limit_exceeded"
	case errors.Is(err, scheduler.ErrTimeout):
		e.code = "timeout"
	case status == http.StatusServiceUnavailable:
		e.code = "service_unavailable"
	}
	return e
}

// failOpenAI answers err in OpenAI's envelope with the status s.classify gives it. 429 and
// 503 carry Retry-After, retry-after-ms and x-should-retry: true; other 5xx answers carry
// x-should-retry: false, so the SDKs do not re-run a job that failed deterministically.
func (s *Server) failOpenAI(c *gin.Context, err error) {
	e := s.toOpenAIError(err)
	setRetryAfter(c, e.retryAfter)
	if e.status >= 500 && e.retryAfter <= 0 {
		c.Header("x-should-retry", "false")
	}
	if e.status >= 500 {
		s.log.Error("request failed", "request_id", requestID(c), "status", e.status, "err", err)
	}
	c.Error(err) //nolint:errcheck // recorded for the access log
	c.AbortWithStatusJSON(e.status, openAIErrorBody{Error: openAIErrorObject{
		Message: e.msg, Type: e.typ, Param: optString(e.param), Code: optString(e.code),
	}})
}

// openaiRoutes mounts the OpenAI-compatible routes of the service on g (the /v1 group).
func (s *Server) openaiRoutes(g *gin.RouterGroup) {
	// Shared middleware (rate limit, idempotency) answers these routes in OpenAI's envelope.
	g.Use(markOpenAI)
	auth, limited, deadline := s.openaiAuth(), s.rateLimit(), s.requestDeadline()
	all := &modelTable{created: time.Now().Unix()}
	for _, p := range s.pools {
		models := newModelTable(s.cfg, p.Runner, p.Service, time.Now())
		all.ids = append(all.ids, models.ids...)
		for id, schema := range models.schemas {
			if all.schemas == nil {
				all.schemas = map[string]json.RawMessage{}
			}
			all.schemas[id] = schema
		}
		switch p.Service {
		case runners.ServiceImage:
			if route, ok := imageInputRoutes[p.Runner]; ok {
				g.POST(strings.TrimPrefix(route.v1, "/v1"), auth, limited, deadline, s.limitBody(maxImageBody), s.idempotency(),
					s.dialectRoute(imageInputRule, s.handleImageInput(route), s.handleOpenAIImageInput(route, models)))
				continue
			}
			g.POST("/images/generations", auth, limited, deadline, s.limitBody(maxJSONBody), s.idempotency(),
				s.dialectRoute(imageGenerationsRule, s.handleImage, s.handleOpenAIImage(models)))
		case runners.ServiceAudio:
			limit := s.limitBody(s.maxAudioBody())
			for _, task := range []string{taskTranscribe, taskTranslate} {
				path := map[string]string{taskTranscribe: "/audio/transcriptions", taskTranslate: "/audio/translations"}[task]
				g.POST(path, auth, limited, deadline, limit, s.idempotency(),
					s.dialectRoute(audioRule, s.handlePythonAudio(task), s.handleOpenAIAudio(models, task)))
			}
		}
	}
	models := all
	g.GET("/models", auth, s.handleListModels(models))
	// Model ids may hold a slash ("distil-whisper/distil-large-v3"), hence the catch-all.
	g.GET("/models/*model", auth, s.handleGetModel(models))
}

// openaiAuth is requireAuth with OpenAI's 401 envelope (code invalid_api_key); it tags the
// request with its client the same way.
func (s *Server) openaiAuth() gin.HandlerFunc {
	return func(c *gin.Context) {
		client, err := s.identify(c)
		if err != nil {
			c.Header("WWW-Authenticate", `Bearer realm="tt-media-server"`)
			msg := "Incorrect API key provided. Send it as Authorization: Bearer <key>."
			if errors.Is(err, errNoCredentials) {
				msg = "You didn't provide an API key. Send it as Authorization: Bearer <key>."
			}
			if strings.HasPrefix(c.Request.URL.Path, "/v1/images/") || strings.HasPrefix(c.Request.URL.Path, "/v1/audio/") {
				// A two-dialect route: the dialect is not known before the body is read, so the
				// answer carries both envelopes, HEAD's {"detail"} beside OpenAI's {"error"}.
				c.Error(err) //nolint:errcheck // recorded for the access log
				c.AbortWithStatusJSON(http.StatusUnauthorized, struct {
					Detail string            `json:"detail"`
					Error  openAIErrorObject `json:"error"`
				}{"Invalid or missing API Key", openAIErrorObject{Message: msg, Type: "invalid_request_error",
					Code: optString("invalid_api_key")}})
				return
			}
			s.failOpenAI(c, &openAIError{status: http.StatusUnauthorized, msg: msg, code: "invalid_api_key"})
			return
		}
		c.Set(clientKey, client)
		c.Request = c.Request.WithContext(scheduler.WithClient(c.Request.Context(), client))
		c.Next()
	}
}

// openAIModel is OpenAI's Model object, plus HEAD's "schema" on image models: the JSON Schema
// of the Python dialect's request.
type openAIModel struct {
	ID      string          `json:"id"`
	Object  string          `json:"object"`
	Created int64           `json:"created"`
	OwnedBy string          `json:"owned_by"`
	Schema  json.RawMessage `json:"schema,omitempty"`
}

// modelTable is the loaded model's names: the canonical id first (MODEL, or the Python
// ModelNames entry of MODEL_RUNNER), then the aliases requests may use for it (the runner
// name, MODEL_WEIGHTS_PATH, and the OpenAI model names of the same family, so that stock
// clients work unchanged).
type modelTable struct {
	ids     []string
	created int64
	// schemas are the request schemas of image models, by id.
	schemas map[string]json.RawMessage
	// size is the image models' output size ("" = openAIImageSizes[0]).
	size string
}

// imageSizes are the OpenAI sizes the image model makes.
func (t *modelTable) imageSizes() []string {
	if t == nil || t.size == "" {
		return openAIImageSizes
	}
	return []string{t.size}
}

// canonicalModel is the Python ModelNames entry per MODEL_RUNNER.
var canonicalModel = map[string]string{
	"tt-sdxl-trace":      "stable-diffusion-xl-base-1.0",
	"tt-sd3.5":           "stable-diffusion-3.5-large",
	"tt-whisper":         "openai-whisper-large-v3",
	"tt-xla-resnet":      "microsoft/resnet-50",
	"tt-xla-vovnet":      "vovnet",
	"tt-xla-mobilenetv2": "mobilenetv2",
	"tt-yolov4":          "yolov4",
}

// openAIAliases are the OpenAI model names accepted for each service.
var openAIAliases = map[runners.Service][]string{
	runners.ServiceImage: {"dall-e-2", "dall-e-3", "gpt-image-1"},
	runners.ServiceAudio: {"whisper-1"},
}

func newModelTable(cfg *config.Settings, runner string, svc runners.Service, loaded time.Time) *modelTable {
	weights, canon := "", ""
	if runner == cfg.ModelRunner { // MODEL and MODEL_WEIGHTS_PATH describe the main model
		weights, canon = cfg.ModelWeightsPath, cfg.Model
	}
	if canon == "" {
		canon = canonicalModel[runner]
	}
	if canon == "" { // MODEL_RUNNER=mock: the family's default model
		canon = map[runners.Service]string{
			runners.ServiceImage: canonicalModel["tt-sdxl-trace"],
			runners.ServiceAudio: canonicalModel["tt-whisper"],
			runners.ServiceCNN:   canonicalModel["tt-xla-resnet"],
		}[svc]
	}
	served := ""
	if runner == cfg.ModelRunner {
		served = cfg.ServedModelName // SERVED_MODEL_NAME: listed first, accepted as a model name
	}
	t := &modelTable{created: loaded.Unix()}
	for _, id := range append([]string{served, canon, runner, weights}, openAIAliases[svc]...) {
		if id != "" && !slices.Contains(t.ids, id) {
			t.ids = append(t.ids, id)
		}
	}
	if svc == runners.ServiceImage && cfg.SDXLResolution == 512 && runner != "tt-sd3.5" {
		t.size = "512x512" // SDXL_IMAGE_RESOLUTION (SD3.5 always makes 1024x1024)
	}
	if svc == runners.ServiceImage {
		if schema, err := imageRequestSchemaFor(runner); err == nil {
			t.schemas = map[string]json.RawMessage{}
			for _, id := range t.ids {
				t.schemas[id] = schema
			}
		}
	}
	return t
}

// resolve checks a requested model name; "" means the loaded model.
func (t *modelTable) resolve(name string) error {
	if name == "" || slices.Contains(t.ids, name) {
		return nil
	}
	return errModelNotFound(name)
}

func (t *modelTable) model(id string) openAIModel {
	return openAIModel{ID: id, Object: "model", Created: t.created, OwnedBy: "tenstorrent", Schema: t.schemas[id]}
}

// handleListModels serves GET /v1/models: the loaded model under each name it answers to.
func (s *Server) handleListModels(t *modelTable) gin.HandlerFunc {
	return func(c *gin.Context) {
		data := make([]openAIModel, 0, len(t.ids))
		for _, id := range t.ids {
			data = append(data, t.model(id))
		}
		writeJSON(c, http.StatusOK, map[string]any{"object": "list", "data": data})
	}
}

// handleGetModel serves GET /v1/models/{model}.
func (s *Server) handleGetModel(t *modelTable) gin.HandlerFunc {
	return func(c *gin.Context) {
		id := strings.TrimPrefix(c.Param("model"), "/")
		if id == "" || !slices.Contains(t.ids, id) {
			s.failOpenAI(c, errModelNotFound(id))
			return
		}
		writeJSON(c, http.StatusOK, t.model(id))
	}
}
