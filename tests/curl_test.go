package tests

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The Python README's curl commands, verbatim; only the port and the file paths are replaced.
const (
	readmeCurlImage = `curl -X 'POST' \
  'http://127.0.0.1:8000/image/generations' \
  -H 'accept: application/json' \
  -H 'Authorization: Bearer your-secret-key' \
  -H 'Content-Type: application/json' \
  -d '{
  "prompt": "Volcano on a beach",
  "negative_prompt": "low quality",
  "num_inference_steps": 20,
  "seed": 0,
  "guidance_scale": 7.0,
  "number_of_images": 1
}'`
	readmeCurlAudioJSON = `curl -X 'POST' \
  'http://127.0.0.1:8000/audio/transcriptions' \
  -H 'accept: application/json' \
  -H 'Authorization: Bearer your-secret-key' \
  -H 'Content-Type: application/json' \
  --data-binary @server/tests/test_data.json \
  --no-buffer`
	readmeCurlAudioUpload = `curl -X POST "http://localhost:8000/audio/transcriptions" \
  -H "Authorization: Bearer your-secret-key" \
  -F "file=@/path/to/audio.wav" \
  -F "stream=true" \
  -F "is_preprocessing_enabled=true" \
  --no-buffer`
)

// runShell runs a README command line with sh in dir and returns its stdout.
func runShell(t *testing.T, dir, script string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", script)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoErrorf(t, cmd.Run(), "%s\nstderr:\n%s", script, stderr.String())
	return stdout.Bytes()
}

func onPort(script string, port int) string {
	p := ":" + strconv.Itoa(port) + "/"
	script = strings.ReplaceAll(script, "127.0.0.1:8000/", "127.0.0.1"+p)
	return strings.ReplaceAll(script, "localhost:8000/", "localhost"+p)
}

func TestREADMECurl(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not on PATH; skipping the README's curl commands")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("sh is not on PATH; skipping the README's curl commands")
	}

	t.Run("image", func(t *testing.T) {
		t.Parallel()
		s := startServer(t, map[string]string{"MODEL_RUNNER": "tt-sdxl-trace", "MOCK_DEVICES_COUNT": "1"})
		out := runShell(t, t.TempDir(), onPort(readmeCurlImage, s.Port))
		var ans struct {
			Images []string `json:"images"`
		}
		require.NoErrorf(t, json.Unmarshal(out, &ans), "curl output is not JSON: %.300s", out)
		require.Len(t, ans.Images, 1)
		img, err := base64.StdEncoding.DecodeString(ans.Images[0])
		require.NoError(t, err)
		requireJPEG(t, img, 1024)
		viaGo := generate(t, s, "/image/generations", readmeImageBody)
		require.True(t, bytes.Equal(viaGo[0], img), "curl and net/http got different images for the README request")
	})

	t.Run("audio", func(t *testing.T) {
		t.Parallel()
		s := startServer(t, map[string]string{"MODEL_RUNNER": "tt-whisper", "MOCK_DEVICES_COUNT": "1"})
		dir := t.TempDir()
		wav := toneGapTone()
		wavPath := filepath.Join(dir, "audio.wav")
		require.NoError(t, os.WriteFile(wavPath, wav, 0o644))
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "server", "tests"), 0o755))
		payload := fmt.Sprintf("{\n    \"stream\": false,\n    \"file\": \"%s\"\n}\n", base64.StdEncoding.EncodeToString(wav))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "server", "tests", "test_data.json"), []byte(payload), 0o644))

		t.Run("JSON body from test_data.json", func(t *testing.T) {
			out := runShell(t, dir, onPort(readmeCurlAudioJSON, s.Port))
			var tr transcription
			require.NoErrorf(t, json.Unmarshal(out, &tr), "curl output is not JSON: %.300s", out)
			requireTranscription(t, tr, 3.0, 1e-3)
		})

		t.Run("multipart upload streamed", func(t *testing.T) {
			script := strings.ReplaceAll(onPort(readmeCurlAudioUpload, s.Port), "/path/to/audio.wav", wavPath)
			out := runShell(t, dir, script+` -s -D headers.txt`)
			headers, err := os.ReadFile(filepath.Join(dir, "headers.txt"))
			require.NoError(t, err)
			hdr := strings.ToLower(string(headers))
			require.Contains(t, hdr, "content-type: application/x-ndjson")
			require.True(t, strings.HasPrefix(hdr, "http/1.1 200"), "status line: %.40s", hdr)
			tr := parseStream(t, reply{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/x-ndjson"}}, Body: out})
			requireTranscription(t, tr, 3.0, 1e-3)
			requireSegments(t, tr)
			require.Len(t, tr.Segments, 2)
		})
	})
}
