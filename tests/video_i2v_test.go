package tests

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners/wan/wangolden"
)

func pngBytes(t *testing.T, w, h int, c color.NRGBA) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetNRGBA(x, y, color.NRGBA{R: c.R + uint8(x), G: c.G + uint8(y), B: c.B, A: 255})
		}
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

// TestVideoI2VGoRoad: tt-wan2.2-i2v on the Go road (MODEL_WEIGHTS_PATH with the UMT5 tokenizer:
// the Wan2.2 I2V host pipeline over the wan22-i2v programs on the simulator, not the twin):
// HEAD's /v1/videos/generations/i2v with image_prompts at frames 0 and 80, and OpenAI's
// /v1/videos with an input_reference file, each to completed and an MP4 ffprobe reads as 81
// frames of H.264 at 16 fps; a frame_pos outside the clip is a 422 naming it.
func TestVideoI2VGoRoad(t *testing.T) {
	needFFmpeg(t)
	weights := t.TempDir()
	model, err := os.ReadFile(wangolden.Path(t, "umt5_test.model"))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(weights, "tokenizer"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(weights, "tokenizer", "spiece.model"), model, 0o644))
	dir := t.TempDir()
	s := startServerWithin(t, videoServerEnv(dir, map[string]string{"MODEL_RUNNER": "tt-wan2.2-i2v", "MODEL_WEIGHTS_PATH": weights,
		"MOCK_STEP_SECONDS": "0.01"}), 120*time.Second)
	require.Contains(t, s.stderr.String(), "Wan2.2 pipeline on the simulator", "the Go road's host pipeline, not the twin")

	first := base64.StdEncoding.EncodeToString(pngBytes(t, 120, 90, color.NRGBA{R: 180, B: 40}))
	last := base64.StdEncoding.EncodeToString(pngBytes(t, 64, 64, color.NRGBA{G: 120, B: 200}))
	id := s.submitI2V(t, fmt.Sprintf(`{"prompt":"a paper boat drifts","num_inference_steps":4,"seed":5,
		"image_prompts":[{"image":%q,"frame_pos":0},{"image":%q,"frame_pos":80}]}`, first, last))
	job := s.waitJob(t, id, "completed", status("completed"))
	require.EqualValues(t, 100, job["progress"])
	info := probeDownload(t, s, id)
	require.Equal(t, []any{"h264", "yuv420p", 81, 16.0, true}, []any{info.Codec, info.PixFmt, info.Frames, info.FPS, info.MoovFirst()})

	r := s.postMultipart(t, "/v1/videos", field("prompt", "a paper boat drifts"), field("model", "tt-wan2.2-i2v"),
		formPart{name: "input_reference", filename: "boat.png", contentType: "image/png", data: pngBytes(t, 80, 48, color.NRGBA{R: 30, G: 200})})
	require.Equal(t, http.StatusOK, r.Status, r.String())
	oid := r.obj(t)["id"].(string)
	s.waitJob(t, oid, "completed", status("completed"))
	content := s.get(t, "/v1/videos/"+oid+"/content", "Authorization", bearer)
	require.Equal(t, http.StatusOK, content.Status, content.String())
	require.True(t, bytes.Contains(content.Body[:64], []byte("ftyp")), "an MP4")

	bad := s.postJSON(t, "/v1/videos/generations/i2v", fmt.Sprintf(`{"prompt":"x","image_prompts":[{"image":%q,"frame_pos":81}]}`, first))
	require.Equal(t, http.StatusUnprocessableEntity, bad.Status, bad.String())
	require.True(t, strings.Contains(bad.String(), "frame_pos"), bad.String())
}

func (s *server) submitI2V(t *testing.T, body string) string {
	t.Helper()
	r := s.postJSON(t, "/v1/videos/generations/i2v", body)
	require.Equal(t, http.StatusAccepted, r.Status, r.String())
	return r.obj(t)["id"].(string)
}
