package server

// Base64 media in JSON bodies (HEAD's schemas carry images and audio as base64 strings).

import (
	"encoding/base64"
	"strings"
)

// decodeBase64 accepts standard base64 with or without padding, with whitespace or a data: URL
// prefix, as clients send it.
func decodeBase64(s string) ([]byte, error) {
	if strings.HasPrefix(s, "data:") {
		if i := strings.Index(s, ","); i >= 0 {
			s = s[i+1:]
		}
	}
	if out, err := base64.StdEncoding.DecodeString(s); err == nil { // the common case: one pass
		return out, nil
	}
	s = strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\n', '\r', '\t':
			return -1
		}
		return r
	}, s)
	if out, err := base64.StdEncoding.DecodeString(s); err == nil {
		return out, nil
	}
	out, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return nil, err
	}
	return out, nil
}
