package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkParseAudioJSON: the audio route's JSON body with 5 s of 16 kHz audio in base64.
func BenchmarkParseAudioJSON(b *testing.B) {
	wav := testWAV(16000, 5*16000)
	body, _ := json.Marshal(map[string]any{"file": base64.StdEncoding.EncodeToString(wav), "stream": false})
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/audio/transcriptions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if _, err := parseAudioUpload(mustRead(req)); err != nil {
			b.Fatal(err)
		}
	}
}
