package server

// An inference route's body: read once, here, and passed to the route's handler as a
// parameter with the dialect it is written in. Idempotency-Key hashes the same bytes; the
// dialect check (dialect.go) decodes a JSON body's top-level object once and the handler
// reuses it.

import (
	"bytes"
	"mime"
	"net/http"

	"github.com/gin-gonic/gin"
)

// request is an inference request's body as its handler gets it.
type request struct {
	data []byte
	// json is the decoded top-level object of an application/json body when the dialect check
	// decoded it (nil otherwise: the handler parses data itself).
	json *body
	// contentType is the body's media type; boundary its multipart boundary.
	contentType, boundary string
	dialect               dialect
}

// jsonBody is the body decoded as a JSON object (parseBody), reusing the dialect check's decode
// when there was one.
func (in *request) jsonBody() (*body, error) {
	if in.json != nil {
		return in.json, nil
	}
	return parseBody(in.data)
}

// maxPresize bounds the buffer readRequest allocates before the body arrives.
const maxPresize = 1 << 20

// readRequest reads r's body (capped by limitBody) and its media type, in the Python dialect
// until the dialect check says otherwise.
func readRequest(r *http.Request) (*request, error) {
	// One allocation of the announced size instead of io.ReadAll's doubling and copying (a
	// 100 KB image body was grown eight times), up to maxPresize: past it the buffer grows as
	// the bytes arrive, so a Content-Length alone cannot make the server hold memory.
	var buf bytes.Buffer
	if n := r.ContentLength; n > 0 {
		buf.Grow(int(min(n, maxPresize)) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(r.Body); err != nil {
		return nil, bodyErr(err)
	}
	data := buf.Bytes()
	ct, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return &request{data: data, contentType: ct, boundary: params["boundary"], dialect: dialectPython}, nil
}

// handlerFunc answers one inference request in its dialect.
type handlerFunc func(c *gin.Context, in *request)

// inferenceRoute is how one inference route reads its body.
type inferenceRoute struct {
	// rule tells the route's two dialects apart; nil: the route speaks the Python dialect only
	// and has no OpenAI counterpart (CNN), so nothing is sniffed.
	rule *dialectRule
	// successor, on a legacy (non-/v1) route, is its /v1 successor: the route speaks the
	// Python dialect only and refuses OpenAI's fields with a 400 naming the successor.
	successor string
	// handle is the route's one handler: it reads the body in in.dialect (rule decides it;
	// the Python server's without a rule or with a successor) into the route's request type
	// and answers in that dialect's shape.
	handle handlerFunc
}

// home is the envelope of the errors a route answers before the body's dialect is known: OpenAI's
// on a two-dialect /v1 route (where the OpenAI SDKs read them), the Python server's elsewhere.
func (rt inferenceRoute) home() dialect {
	if rt.rule != nil && rt.successor == "" {
		return dialectOpenAI
	}
	return dialectPython
}

// inference serves one inference route: it reads the body once (already capped by limitBody),
// answers a replayed Idempotency-Key, decides the dialect and calls the route's handler with
// the body and its dialect.
func (s *Server) inference(rt inferenceRoute) gin.HandlerFunc {
	home := rt.home()
	return func(c *gin.Context) {
		in, err := readRequest(c.Request)
		if err != nil {
			s.fail(c, home, err)
			return
		}
		s.idempotent(c, home, in.data, func() {
			if rt.rule != nil {
				d, err := sniffDialect(c, in, rt.rule, rt.successor)
				if err != nil {
					if e, ok := err.(*apiError); ok && e.code == "mixed_dialects" { //nolint:errorlint // our own unwrapped value
						s.fail(c, dialectEither, err)
					} else {
						s.fail(c, home, err)
					}
					return
				}
				in.dialect = d
				c.Header(dialectHeader, d.String())
			}
			rt.handle(c, in)
		})
	}
}
