package server

// Choosing the error envelope per route family: shared middleware (rate limit, idempotency)
// and the engine's 404/405 answers speak OpenAI's {"error": {...}} on the OpenAI-compatible
// API and the Python server's {"detail": ...} everywhere else.

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

// openAIRouteKey marks a request routed to the OpenAI-compatible API (set by markOpenAI on
// every route openaiRoutes mounts).
const openAIRouteKey = "openai_route"

// markOpenAI tags the request as served by an OpenAI-compatible route.
func markOpenAI(c *gin.Context) {
	c.Set(openAIRouteKey, true)
	c.Next()
}

// isOpenAIPath reports whether an unmatched path is under /v1, the OpenAI-compatible prefix.
func isOpenAIPath(p string) bool { return p == "/v1" || strings.HasPrefix(p, "/v1/") }

// speaksOpenAI reports whether err answers for this request use OpenAI's envelope: requests
// on the OpenAI-compatible routes, and unmatched requests under /v1. The Python-shaped routes,
// /v1/cnn/search-image among them (CNN has no OpenAI counterpart), keep {"detail"}.
func speaksOpenAI(c *gin.Context) bool {
	if c.GetBool(openAIRouteKey) {
		return true
	}
	return c.FullPath() == "" && isOpenAIPath(c.Request.URL.Path)
}

// failFor answers err in the envelope of the request's route family (see speaksOpenAI), with
// the status s.classify gives it.
func (s *Server) failFor(c *gin.Context, err error) {
	if speaksOpenAI(c) {
		s.failOpenAI(c, err)
		return
	}
	s.fail(c, err)
}

// noRoute answers an unknown path: 404 {"detail": "Not Found"} as FastAPI does, or under /v1
// OpenAI's "Invalid URL (METHOD /path)" with code not_found.
func (s *Server) noRoute(c *gin.Context) {
	if !isOpenAIPath(c.Request.URL.Path) {
		c.JSON(http.StatusNotFound, gin.H{"detail": "Not Found"})
		return
	}
	s.failOpenAI(c, &openAIError{status: http.StatusNotFound, code: "not_found",
		msg: fmt.Sprintf("Invalid URL (%s %s)", c.Request.Method, echoedPath(c))})
}

// noMethod answers a known path with a method it does not serve (gin has set Allow): 405
// {"detail": "Method Not Allowed"}, or under /v1 OpenAI's envelope with code
// method_not_allowed.
func (s *Server) noMethod(c *gin.Context) {
	if !isOpenAIPath(c.Request.URL.Path) {
		c.JSON(http.StatusMethodNotAllowed, gin.H{"detail": "Method Not Allowed"})
		return
	}
	msg := fmt.Sprintf("Invalid method for URL (%s %s)", c.Request.Method, echoedPath(c))
	if allow := c.Writer.Header().Get("Allow"); allow != "" {
		msg += "; allowed: " + allow
	}
	s.failOpenAI(c, &openAIError{status: http.StatusMethodNotAllowed, code: "method_not_allowed", msg: msg})
}
