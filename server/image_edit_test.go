package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/metrics"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
)

func pngBytes(t *testing.T, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

func imageInputServer(t *testing.T, runner string, loraRoot string) (*Server, *fakeSched) {
	t.Helper()
	f := &fakeSched{ready: true, submit: func(_ context.Context, req runners.Request, _ func(runners.Chunk) error) (runners.Result, error) {
		return &runners.ImageResult{Images: []image.Image{image.NewRGBA(image.Rect(0, 0, 8, 8))}}, nil
	}}
	cfg := testSettings()
	cfg.ModelRunner, cfg.LoRARoot = runner, loraRoot
	return New(Deps{Settings: cfg, Pools: []Pool{{Service: runners.ServiceImage, Runner: runner, Sched: f}}, Sched: f, Metrics: metrics.New()}), f
}

func serve(s *Server, method, path, ct string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer k")
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, req)
	return w
}

// TestImageInputRequests: what the image-to-image and edits handlers put in the runner's
// request, in both dialects, and what they refuse before queueing.
func TestImageInputRequests(t *testing.T) {
	photo := image.NewNRGBA(image.Rect(0, 0, 6, 4))
	for i := range photo.Pix {
		photo.Pix[i] = uint8(40 * (i % 5))
	}
	img := pngBytes(t, photo)
	gray := image.NewGray(image.Rect(0, 0, 6, 4))
	gray.Pix[0] = 255
	alpha := image.NewNRGBA(image.Rect(0, 0, 6, 4))
	for i := range alpha.Pix {
		alpha.Pix[i] = 255
	}
	alpha.Pix[3] = 0 // pixel (0,0) transparent: repaint
	colour := image.NewNRGBA(image.Rect(0, 0, 6, 4))
	for i := range colour.Pix {
		colour.Pix[i] = uint8(i)
	}

	s, f := imageInputServer(t, catalogue.RunnerSDXLEdit, "")
	w := serve(s, http.MethodPost, "/v1/images/edits", "application/json", []byte(fmt.Sprintf(
		`{"prompt": "p", "image": "data:image/png;base64,%s", "mask": %q, "strength": 0.3, "seed": 5}`,
		base64.StdEncoding.EncodeToString(img), base64.StdEncoding.EncodeToString(pngBytes(t, gray)))))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	require.Equal(t, "python", w.Header().Get(dialectHeader))
	req := f.last.(*runners.ImageRequest)
	require.Equal(t, 0.3, req.Strength)
	require.Equal(t, photo.Bounds(), req.InitImage.Bounds())
	require.Equal(t, uint8(255), req.Mask.Pix[0])
	require.Equal(t, uint8(0), req.Mask.Pix[1])

	// OpenAI multipart: the alpha convention, and the defaults (strength 0.6).
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for name, data := range map[string][]byte{"image": img, "mask": pngBytes(t, alpha)} {
		p, err := mw.CreateFormFile(name, name+".png")
		require.NoError(t, err)
		_, err = p.Write(data)
		require.NoError(t, err)
	}
	require.NoError(t, mw.WriteField("prompt", "p"))
	require.NoError(t, mw.Close())
	w = serve(s, http.MethodPost, "/v1/images/edits", mw.FormDataContentType(), body.Bytes())
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	require.Equal(t, "openai", w.Header().Get(dialectHeader))
	req = f.last.(*runners.ImageRequest)
	require.Equal(t, defaultStrength, req.Strength)
	require.Equal(t, uint8(255), req.Mask.Pix[0], "transparent = repaint")
	require.Equal(t, uint8(0), req.Mask.Pix[1])

	for _, c := range []struct {
		name, body string
		status     int
		want       string
	}{
		{"colour mask", fmt.Sprintf(`{"prompt": "p", "image": %q, "mask": %q}`, base64.StdEncoding.EncodeToString(img),
			base64.StdEncoding.EncodeToString(pngBytes(t, colour))), 400, "mask: mask is not single-channel"},
		{"no mask", fmt.Sprintf(`{"prompt": "p", "image": %q}`, base64.StdEncoding.EncodeToString(img)), 422, "mask is required for tt-sdxl-edit"},
		{"lora without root", fmt.Sprintf(`{"prompt": "p", "image": %q, "mask": %q, "lora_path": "a.safetensors"}`,
			base64.StdEncoding.EncodeToString(img), base64.StdEncoding.EncodeToString(pngBytes(t, gray))), 400, "LORA_ROOT is not set"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := serve(s, http.MethodPost, "/v1/images/edits", "application/json", []byte(c.body))
			require.Equal(t, c.status, w.Code, w.Body.String())
			require.Contains(t, w.Body.String(), c.want)
		})
	}
	require.Equal(t, http.StatusNotFound, serve(s, http.MethodPost, "/v1/images/generations", "application/json", []byte(`{"prompt": "p"}`)).Code)
}

// TestImageInputModelSchema: /v1/models shows HEAD's request schema of the runner.
func TestImageInputModelSchema(t *testing.T) {
	for runner, want := range map[string][]string{
		catalogue.RunnerSDXLImg2Img: {"ImageToImageRequest", "image", "strength"},
		catalogue.RunnerSDXLEdit:    {"ImageEditRequest", "image", "strength", "mask"},
		catalogue.RunnerSDXL:        {"ImageGenerateRequest"},
	} {
		s, _ := imageInputServer(t, runner, t.TempDir())
		w := serve(s, http.MethodGet, "/v1/models/"+runner, "", nil)
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		var m struct {
			Schema struct {
				Title      string         `json:"title"`
				Required   []string       `json:"required"`
				Properties map[string]any `json:"properties"`
			} `json:"schema"`
		}
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &m))
		require.Equal(t, want[0], m.Schema.Title)
		require.Contains(t, m.Schema.Properties, "prompt")
		for _, f := range want[1:] {
			require.Contains(t, m.Schema.Properties, f)
			if f != "strength" {
				require.Contains(t, m.Schema.Required, f)
			}
		}
	}
}

// TestResolveLoRAServer: the server refuses a path outside LORA_ROOT before queueing.
func TestResolveLoRAServer(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(root), "x.safetensors"), []byte("x"), 0o600))
	s, f := imageInputServer(t, catalogue.RunnerSDXL, root)
	f.last = nil
	w := serve(s, http.MethodPost, "/v1/images/generations", "application/json", []byte(`{"prompt": "p", "lora_path": "../x.safetensors"}`))
	require.Equal(t, http.StatusBadRequest, w.Code, w.Body.String())
	require.Contains(t, w.Body.String(), "outside LORA_ROOT")
	require.Nil(t, f.last, "nothing was queued")
}

// TestResolveLoRAMetal: on DEVICE_BACKEND=metal the SDXL programs have no LoRA weight update,
// so lora_path is a 400 naming it before queueing, even with a valid LORA_ROOT; on the
// simulator the same request reaches the LORA_ROOT checks.
func TestResolveLoRAMetal(t *testing.T) {
	for _, tc := range []struct {
		backend string
		mock    bool
		want    string
	}{
		{config.BackendMetal, false, "lora_path is not supported on DEVICE_BACKEND=metal"},
		{config.BackendSim, true, "no such file under LORA_ROOT"},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			s, f := imageInputServer(t, catalogue.RunnerSDXL, t.TempDir())
			s.cfg.DeviceBackend, s.cfg.Mock = tc.backend, tc.mock
			f.last = nil
			w := serve(s, http.MethodPost, "/v1/images/generations", "application/json", []byte(`{"prompt": "p", "lora_path": "style.safetensors"}`))
			require.Equal(t, http.StatusBadRequest, w.Code, w.Body.String())
			require.Contains(t, w.Body.String(), tc.want)
			require.Nil(t, f.last, "nothing was queued")
		})
	}
}

// TestResolveLoRALimits: a LoRA file over LORA_MAX_FILE_BYTES, or whose check needs more than
// IMAGE_MEMORY_BUDGET_BYTES (here a 300 KB header, checked before it is read), is 413 naming
// the setting; a file of zeros is 400; nothing is queued.
func TestResolveLoRALimits(t *testing.T) {
	root := t.TempDir()
	bigHeader := binary.LittleEndian.AppendUint64(nil, 300<<10)
	require.NoError(t, os.WriteFile(filepath.Join(root, "big-header.safetensors"), append(bigHeader, make([]byte, 300<<10)...), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(root, "zeros.safetensors"), make([]byte, 1<<20), 0o600))
	for _, tc := range []struct {
		file   string
		status int
		want   string
	}{
		{"big-header.safetensors", http.StatusRequestEntityTooLarge, "IMAGE_MEMORY_BUDGET_BYTES"},
		{"zeros.safetensors", http.StatusBadRequest, "header length 0"},
	} {
		s, f := imageInputServer(t, catalogue.RunnerSDXL, root)
		s.imageMem.total = 1 << 20
		w := serve(s, http.MethodPost, "/v1/images/generations", "application/json", []byte(`{"prompt": "p", "lora_path": "`+tc.file+`"}`))
		require.Equal(t, tc.status, w.Code, w.Body.String())
		require.Contains(t, w.Body.String(), tc.want)
		require.Nil(t, f.last, "nothing was queued")
	}
	f := &fakeSched{ready: true}
	cfg := testSettings()
	cfg.ModelRunner, cfg.LoRARoot, cfg.LoRAMaxFileBytes = catalogue.RunnerSDXL, root, 1000
	s := New(Deps{Settings: cfg, Pools: []Pool{{Service: runners.ServiceImage, Runner: catalogue.RunnerSDXL, Sched: f}}, Sched: f})
	w := serve(s, http.MethodPost, "/v1/images/generations", "application/json", []byte(`{"prompt": "p", "lora_path": "zeros.safetensors"}`))
	require.Equal(t, http.StatusRequestEntityTooLarge, w.Code, w.Body.String())
	require.Contains(t, w.Body.String(), "LORA_MAX_FILE_BYTES")
	require.Nil(t, f.last, "nothing was queued")
}
