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
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
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
		s.fail(c, dialectPython, err)
		return
	}
	c.Header("Cache-Control", "no-cache")
	c.Header("Access-Control-Allow-Origin", "*") // a public description; lets other viewers load it
	c.Data(http.StatusOK, "application/json", spec)
}

// imageRequestSchemas caches imageRequestSchemaFor by runner.
var imageRequestSchemas sync.Map

// imageRequestSchemaFor is imageRequestSchema for a runner: HEAD's ImageToImageRequest for
// tt-sdxl-image-to-image and ImageEditRequest for tt-sdxl-edit, each flattened into one
// self-contained object schema (the spec composes them with allOf and $ref).
func imageRequestSchemaFor(runner string) (json.RawMessage, error) {
	if v, ok := imageRequestSchemas.Load(runner); ok {
		return v.(json.RawMessage), nil
	}
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
	title := "ImageGenerateRequest"
	m, _ := catalogue.Lookup(runner)
	extensions := map[catalogue.ImageInput][]string{
		catalogue.InputTransform: {"ImageToImageRequest"},
		catalogue.InputInpaint:   {"ImageToImageRequest", "ImageEditRequest"},
	}[m.Image.Input]
	for _, name := range extensions {
		ext, ok := doc.Components.Schemas[name]
		if !ok {
			return nil, fmt.Errorf("the spec has no %s schema", name)
		}
		title = name
		schema["description"] = ext["description"]
		parts, _ := ext["allOf"].([]any)
		for _, p := range parts {
			part, _ := p.(map[string]any)
			props, _ := part["properties"].(map[string]any)
			all, _ := schema["properties"].(map[string]any)
			for k, v := range props {
				all[k] = v
			}
			req, _ := part["required"].([]any)
			have, _ := schema["required"].([]any)
			schema["required"] = append(have, req...)
		}
	}
	schema["title"] = title
	// Flattened into one object, it can say what the handlers do: a field it does not list is
	// refused (422 extra_forbidden), not ignored. (The spec's own schemas compose with allOf,
	// where additionalProperties would refuse the extension's fields, so they say it in words.)
	schema["additionalProperties"] = false
	out, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	imageRequestSchemas.Store(runner, json.RawMessage(out))
	return out, nil
}
