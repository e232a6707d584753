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
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/scheduler"
)

// errModelNotFound is OpenAI's answer for a model that is not served here.
func errModelNotFound(model string) *apiError {
	return &apiError{status: http.StatusNotFound, param: "model", code: "model_not_found",
		msg: fmt.Sprintf("The model `%s` does not exist or is not served here.", model)}
}

// openaiRoutes mounts the OpenAI-compatible routes of the service on g (the /v1 group).
func (s *Server) openaiRoutes(g *gin.RouterGroup) {
	// Shared middleware (rate limit, deadline, body limit) answers these routes in OpenAI's
	// envelope.
	auth, limited, deadline := s.openaiAuth(), s.rateLimit(dialectOpenAI), s.requestDeadline(dialectOpenAI)
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
			if route, ok := imageInputRouteFor(p.Runner); ok {
				g.POST(strings.TrimPrefix(route.v1, "/v1"), auth, limited, deadline, s.limitBody(maxImageBody, dialectOpenAI),
					s.inference(inferenceRoute{rule: &imageInputRule, handle: s.handleImages(&route, models)}))
				continue
			}
			g.POST("/images/generations", auth, limited, deadline, s.limitBody(maxJSONBody, dialectOpenAI),
				s.inference(inferenceRoute{rule: &imageGenerationsRule, handle: s.handleImages(nil, models)}))
		case runners.ServiceAudio:
			limit := s.limitBody(s.maxAudioBody(), dialectOpenAI)
			for _, task := range []string{taskTranscribe, taskTranslate} {
				path := map[string]string{taskTranscribe: "/audio/transcriptions", taskTranslate: "/audio/translations"}[task]
				g.POST(path, auth, limited, deadline, limit,
					s.inference(inferenceRoute{rule: &audioRule, handle: s.handleAudio(task, models)}))
			}
		case runners.ServiceTextToSpeech:
			s.speechOpenAIRoutes(g, models, auth, limited, deadline) // speech.go
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
			d := dialectOpenAI
			if strings.HasPrefix(c.Request.URL.Path, "/v1/images/") || strings.HasPrefix(c.Request.URL.Path, "/v1/audio/") {
				// A two-dialect route: the dialect is not known before the body is read, so the
				// answer carries both envelopes, HEAD's {"detail"} beside OpenAI's {"error"}.
				d = dialectEither
			}
			s.fail(c, d, &apiError{status: http.StatusUnauthorized, msg: msg, code: "invalid_api_key", detail: "Invalid or missing API Key"})
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

// openAIAliases are the OpenAI model names accepted for each service.
var openAIAliases = map[runners.Service][]string{
	runners.ServiceImage: {"dall-e-2", "dall-e-3", "gpt-image-1"},
	runners.ServiceAudio: {"whisper-1"},
	// OpenAI's speech models: all run SpeechT5 here.
	runners.ServiceTextToSpeech: {"tts-1", "tts-1-hd", "gpt-4o-mini-tts"},
}

func newModelTable(cfg *config.Settings, runner string, svc runners.Service, loaded time.Time) *modelTable {
	weights, canon := "", ""
	if runner == cfg.ModelRunner { // MODEL and MODEL_WEIGHTS_PATH describe the main model
		weights, canon = cfg.ModelWeightsPath, cfg.Model
	}
	m, _ := catalogue.Resolve(runner, svc) // MODEL_RUNNER=mock: the service's default model
	if canon == "" {
		canon = m.Canonical // the catalogue's model id
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
	switch {
	case svc != runners.ServiceImage:
	case m.Image.Size > 0 && m.Image.Size != 1024:
		t.size = fmt.Sprintf("%dx%d", m.Image.Size, m.Image.Size) // a model of one other size (Z-Image-Turbo's 512)
	case cfg.SDXLResolution == 512 && m.Image.Size == 0:
		t.size = "512x512" // SDXL_IMAGE_RESOLUTION (models of a fixed size, e.g. SD3.5, ignore it)
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
			s.fail(c, dialectOpenAI, errModelNotFound(id))
			return
		}
		writeJSON(c, http.StatusOK, t.model(id))
	}
}
