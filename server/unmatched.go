package server

// The engine's answers for unmatched requests (404, 405): OpenAI's {"error": {...}} under /v1,
// the OpenAI-compatible prefix, and the Python server's {"detail": ...} everywhere else.

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

// isOpenAIPath reports whether an unmatched path is under /v1, the OpenAI-compatible prefix.
func isOpenAIPath(p string) bool { return p == "/v1" || strings.HasPrefix(p, "/v1/") }

// noRoute answers an unknown path: 404 {"detail": "Not Found"} as FastAPI does, or under /v1
// OpenAI's "Invalid URL (METHOD /path)" with code not_found.
func (s *Server) noRoute(c *gin.Context) {
	if !isOpenAIPath(c.Request.URL.Path) {
		s.fail(c, dialectPython, httpErr(http.StatusNotFound, "Not Found"))
		return
	}
	s.fail(c, dialectOpenAI, &apiError{status: http.StatusNotFound, code: "not_found",
		msg: fmt.Sprintf("Invalid URL (%s %s)", c.Request.Method, echoedPath(c))})
}

// noMethod answers a known path with a method it does not serve (gin has set Allow): 405
// {"detail": "Method Not Allowed"}, or under /v1 OpenAI's envelope with code
// method_not_allowed.
func (s *Server) noMethod(c *gin.Context) {
	if !isOpenAIPath(c.Request.URL.Path) {
		s.fail(c, dialectPython, httpErr(http.StatusMethodNotAllowed, "Method Not Allowed"))
		return
	}
	msg := fmt.Sprintf("Invalid method for URL (%s %s)", c.Request.Method, echoedPath(c))
	if allow := c.Writer.Header().Get("Allow"); allow != "" {
		msg += "; allowed: " + allow
	}
	s.fail(c, dialectOpenAI, &apiError{status: http.StatusMethodNotAllowed, code: "method_not_allowed", msg: msg})
}
