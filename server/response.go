package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
)

// jsonBuffers recycles writeJSON's buffers (small answers: liveness, errors, classifications);
// a buffer grown past maxPooledJSON (an image answer) is left to the collector.
var jsonBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledJSON = 64 << 10

// encodeJSON is v as compact JSON without HTML escaping (writeJSON's bytes), in a new slice.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode response: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// writeJSON answers v as compact JSON without HTML escaping, as FastAPI's JSONResponse does.
func writeJSON(c *gin.Context, status int, v any) {
	buf := jsonBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= maxPooledJSON {
			jsonBuffers.Put(buf)
		}
	}()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		c.AbortWithStatusJSON(http.StatusInternalServerError, gin.H{"detail": fmt.Sprintf("encode response: %v", err)})
		return
	}
	c.Data(status, "application/json", bytes.TrimRight(buf.Bytes(), "\n"))
}

// pyJSON encodes v the way Python's json.dumps does with its defaults, which is what the
// Python server's NDJSON stream lines look like: ", " and ": " separators and non-ASCII
// characters escaped as \uXXXX (ensure_ascii).
func pyJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	src := bytes.TrimRight(buf.Bytes(), "\n")
	out := make([]byte, 0, len(src)+len(src)/8)
	inStr, esc := false, false
	for i := 0; i < len(src); {
		ch := src[i]
		if inStr {
			switch {
			case esc:
				esc = false
			case ch == '\\':
				esc = true
			case ch == '"':
				inStr = false
			case ch >= utf8.RuneSelf:
				r, size := utf8.DecodeRune(src[i:])
				if r > 0xFFFF {
					r -= 0x10000
					out = fmt.Appendf(out, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
				} else {
					out = fmt.Appendf(out, `\u%04x`, r)
				}
				i += size
				continue
			}
			out = append(out, ch)
			i++
			continue
		}
		out = append(out, ch)
		switch ch {
		case '"':
			inStr = true
		case ',', ':':
			out = append(out, ' ')
		}
		i++
	}
	return out, nil
}
