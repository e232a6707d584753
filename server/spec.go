package server

// The API description: openapi.yaml (OpenAPI 3.1, hand-written, embedded) served as JSON at
// /openapi.json, and the routes of the docs UI and web demo (ui.go).

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/gin-gonic/gin"
	"github.com/goccy/go-yaml"
)

//go:embed openapi.yaml
var openAPIYAML []byte

// openAPIJSON is the embedded spec converted to JSON once, keys in document order.
var openAPIJSON = sync.OnceValues(func() ([]byte, error) {
	out, err := yaml.YAMLToJSON(openAPIYAML)
	if err != nil {
		return nil, fmt.Errorf("convert openapi.yaml to JSON: %w", err)
	}
	return out, nil
})

// OpenAPISpec returns the server's OpenAPI 3.1 document as JSON (what /openapi.json serves).
func OpenAPISpec() ([]byte, error) { return openAPIJSON() }

// docsRoutes mounts the API description and the browser pages: GET /openapi.json, /docs
// (Redoc rendering the spec), /ui and /ui/* (the web demo and its files). None needs
// credentials: the pages ask for the API key and send it with their own API calls.
func (s *Server) docsRoutes(r *gin.Engine) {
	r.GET("/openapi.json", s.handleOpenAPI)
	r.GET("/docs", s.handleDocs)
	r.GET("/ui", func(c *gin.Context) {
		// Relative (http.Redirect would make it absolute), so the page and its relative links
		// work behind a path prefix.
		c.Header("Location", "ui/")
		c.Status(http.StatusMovedPermanently)
	})
	r.GET("/ui/*file", s.handleUIFile)
}

func (s *Server) handleOpenAPI(c *gin.Context) {
	spec, err := openAPIJSON()
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Header("Cache-Control", "no-cache")
	c.Header("Access-Control-Allow-Origin", "*") // a public description; lets other viewers load it
	c.Data(http.StatusOK, "application/json", spec)
}

// imageRequestSchema is the JSON Schema of the Python dialect's image request
// (components.schemas.ImageGenerateRequest of the spec, titled), which /v1/models shows as the
// image models' "schema", as HEAD does with its pydantic model's model_json_schema().
var imageRequestSchema = sync.OnceValues(func() (json.RawMessage, error) {
	spec, err := openAPIJSON()
	if err != nil {
		return nil, err
	}
	var doc struct {
		Components struct {
			Schemas map[string]map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(spec, &doc); err != nil {
		return nil, fmt.Errorf("read the spec's schemas: %w", err)
	}
	schema, ok := doc.Components.Schemas["ImageGenerateRequest"]
	if !ok {
		return nil, errors.New("the spec has no ImageGenerateRequest schema")
	}
	schema["title"] = "ImageGenerateRequest"
	return json.Marshal(schema)
})
