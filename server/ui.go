package server

// The browser pages, served from files embedded in the binary (web/): the web demo at /ui/
// (plain HTML, JS and CSS, no build step) and /docs, which renders /openapi.json with the
// vendored Redoc bundle (web/vendor, produced by scripts/build-docs-ui.sh from npm). Nothing is
// loaded from other origins; the Content-Security-Policy says so to the browser.

import (
	"bytes"
	"embed"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

//go:embed web/index.html web/app.js web/style.css web/docs.html web/docs.js web/vendor
var webFiles embed.FS

// webFS is webFiles rooted at web/.
var webFS = func() fs.FS {
	sub, err := fs.Sub(webFiles, "web")
	if err != nil { // cannot happen: "web" is a valid path embedded above
		return webFiles
	}
	return sub
}()

// pageCSP allows only this origin: no CDN, no inline scripts. Redoc needs inline styles
// (styled-components) and a blob: worker for its search index; the demo shows generated
// images as data: URLs and plays recordings from blob: URLs.
const pageCSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data: blob:; media-src 'self' blob:; worker-src 'self' blob:; connect-src 'self'; " +
	"font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// servicesPlaceholder in index.html is replaced by the mounted API families.
const servicesPlaceholder = "{{TT_SERVICES}}"

// serviceRoutes are the legacy routes whose presence tells that a family is mounted.
var serviceRoutes = []struct {
	svc   runners.Service
	route string
}{
	{runners.ServiceImage, "/image/generations"},
	{runners.ServiceAudio, "/audio/transcriptions"},
	{runners.ServiceCNN, "/cnn/search-image"},
	{runners.ServiceTextToSpeech, "/audio/speech"},
	{runners.ServiceVideo, "/video/generations"},
}

// mountedServices lists the API families this server mounts, read from its own router.
func (s *Server) mountedServices() []string {
	var out []string
	routes := s.engine.Routes()
	for _, sr := range serviceRoutes {
		for _, r := range routes {
			if r.Method == http.MethodPost && r.Path == sr.route {
				out = append(out, string(sr.svc))
				break
			}
		}
	}
	return out
}

// uiIndexPage is index.html with the mounted families filled in. It is built per request
// (a few kB): the router is complete by then, and the Server needs no extra state.
func (s *Server) uiIndexPage() ([]byte, error) {
	raw, err := fs.ReadFile(webFS, "index.html")
	if err != nil {
		return nil, err
	}
	return bytes.ReplaceAll(raw, []byte(servicesPlaceholder), []byte(strings.Join(s.mountedServices(), ","))), nil
}

func setPageHeaders(c *gin.Context) {
	c.Header("Content-Security-Policy", pageCSP)
	c.Header("X-Content-Type-Options", "nosniff")
	c.Header("Referrer-Policy", "no-referrer")
}

// handleDocs serves GET /docs: Redoc rendering /openapi.json.
func (s *Server) handleDocs(c *gin.Context) {
	page, err := fs.ReadFile(webFS, "docs.html")
	if err != nil {
		s.fail(c, dialectPython, err)
		return
	}
	setPageHeaders(c)
	c.Header("Cache-Control", "no-cache")
	c.Data(http.StatusOK, "text/html; charset=utf-8", page)
}

// handleUIFile serves GET /ui/*file: the demo page for "/", else an embedded file.
func (s *Server) handleUIFile(c *gin.Context) {
	name := strings.TrimPrefix(path.Clean(c.Param("file")), "/")
	if name == "" || name == "." || name == "index.html" {
		page, err := s.uiIndexPage()
		if err != nil {
			s.fail(c, dialectPython, err)
			return
		}
		setPageHeaders(c)
		c.Header("Cache-Control", "no-cache")
		c.Data(http.StatusOK, "text/html; charset=utf-8", page)
		return
	}
	data, err := fs.ReadFile(webFS, name)
	if err != nil || strings.HasSuffix(name, ".html") { // pages have their own routes
		c.JSON(http.StatusNotFound, gin.H{"detail": "Not Found"})
		return
	}
	ctype := mime.TypeByExtension(path.Ext(name))
	switch {
	case path.Ext(name) == ".js":
		ctype = "text/javascript; charset=utf-8"
	case ctype == "":
		ctype = "text/plain; charset=utf-8"
	}
	setPageHeaders(c)
	if strings.HasPrefix(name, "vendor/") {
		c.Header("Cache-Control", "public, max-age=86400")
	} else {
		c.Header("Cache-Control", "no-cache")
	}
	c.Data(http.StatusOK, ctype, data)
}
