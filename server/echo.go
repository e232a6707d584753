package server

// Echoing client input back in error messages, bounded: a 422's "input", a value quoted in a
// message, an unknown path.

import (
	"unicode/utf8"

	"github.com/gin-gonic/gin"
)

// shorten is a client's string as an error message quotes it: at most 64 bytes, then "...".
func shorten(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// maxEchoDepth and maxEchoString bound the request input a 422 echoes back: a deeply nested
// body (5,000 levels) would otherwise come back as JSON that Python's json module (recursion
// limit ~1,000) cannot parse, and a huge string would be sent back whole.
const (
	maxEchoDepth  = 20
	maxEchoString = 1000
	maxEchoItems  = 100
)

// truncateEcho copies v (decoded JSON) with nesting below depth levels replaced by "...",
// strings cut to maxEchoString bytes (with "..." appended) and arrays and objects cut to
// maxEchoItems entries.
func truncateEcho(v any, depth int) any {
	switch x := v.(type) {
	case string:
		if len(x) > maxEchoString {
			cut := maxEchoString
			for cut > 0 && !utf8.RuneStart(x[cut]) {
				cut--
			}
			return x[:cut] + "..."
		}
		return x
	case []any:
		if depth <= 0 {
			return "..."
		}
		out := make([]any, 0, min(len(x), maxEchoItems+1))
		for i, e := range x {
			if i == maxEchoItems {
				out = append(out, "...")
				break
			}
			out = append(out, truncateEcho(e, depth-1))
		}
		return out
	case map[string]any:
		if depth <= 0 {
			return "..."
		}
		out := make(map[string]any, min(len(x), maxEchoItems))
		n := 0
		for k, e := range x {
			if n == maxEchoItems {
				break
			}
			out[k] = truncateEcho(e, depth-1)
			n++
		}
		return out
	default:
		return v
	}
}

func echoedPath(c *gin.Context) string {
	p := c.Request.URL.Path
	if len(p) > maxEchoedPath {
		p = p[:maxEchoedPath] + "…"
	}
	return p
}

// maxEchoedPath bounds how much of an unknown path an error message repeats.
const maxEchoedPath = 256
