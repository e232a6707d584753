package tests

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// SDXL image-to-image (MODEL_RUNNER=tt-sdxl-image-to-image) and inpainting (tt-sdxl-edit) on the
// real host pipeline over the simulator's full-size programs, through the binary: the CLIP
// vocabulary of ../shared/testdata/clip is the MODEL_WEIGHTS_PATH, so the runner loads the text
// encoders, the VAE encoder, the (inpainting) UNet traced, the VAE decoder and the LoRA fuse
// program. The runner logs every image's device program runs ("image done": text_encodes,
// vae_encodes, unet_steps, vae_decodes) and the weights checksum after every LoRA change; the
// tests read both from the server's output.

// imageDoneLine is the runner's per-image call-sequence log line.
var imageDoneLine = regexp.MustCompile(`diffusion runner: image done"? runner=(\S+) text_encodes=(\d+) vae_encodes=(\d+) unet_steps=(\d+) vae_decodes=(\d+) lora_fuse_runs=(\d+) weight_restores=(\d+)`)

// weightsLine is the runner's weights-checksum log line.
var weightsLine = regexp.MustCompile(`diffusion runner: (base weights|LoRA fused|LoRA unloaded)"? runner=\S+ lora=(\S*) weights_checksum=([0-9a-f]+)`)

func realSDXLEnv(t *testing.T, runner string, kv ...string) map[string]string {
	t.Helper()
	dir := testdataDir(t, "clip")
	if _, err := os.Stat(filepath.Join(dir, "bpe_simple_vocab_16e6.txt.gz")); err != nil {
		t.Skipf("the CLIP vocabulary is absent from %s (%v); the real SDXL runner cannot serve, skipping", dir, err)
	}
	env := map[string]string{
		"MODEL_RUNNER":                      runner,
		"MODEL_WEIGHTS_PATH":                dir,
		"DEVICE_IDS":                        "(0)",
		"MOCK_STEP_SECONDS":                 "0.001",
		"DEFAULT_INFERENCE_TIMEOUT_SECONDS": "120",
	}
	for i := 0; i+1 < len(kv); i += 2 {
		env[kv[i]] = kv[i+1]
	}
	return env
}

// startReal starts a server whose worker runs the real pipeline (warm-up loads and traces the
// full-size programs: slower than the mock's).
func startReal(t *testing.T, env map[string]string) *server {
	t.Helper()
	s := launch(t, env)
	s.waitReady(t, 90*time.Second)
	t.Cleanup(func() { s.stopAndCheck(t) })
	require.Contains(t, s.stderr.String(), "real pipeline on the device")
	return s
}

// pngOf encodes a test picture: a gradient with a bright square.
func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.NRGBA{uint8(x * 255 / w), uint8(y * 255 / h), 90, 255}
			if x > w/3 && x < w/2 && y > h/3 && y < h/2 {
				c = color.NRGBA{250, 250, 20, 255}
			}
			img.SetNRGBA(x, y, c)
		}
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// imageDone waits for the n-th "image done" line and returns its counts.
func imageDone(t *testing.T, s *server, n int) (vaeEncodes, unetSteps, vaeDecodes int) {
	t.Helper()
	var m [][]string
	require.Eventually(t, func() bool {
		m = imageDoneLine.FindAllStringSubmatch(s.stderr.String(), -1)
		return len(m) >= n
	}, 10*time.Second, 10*time.Millisecond, "no %d-th image done line", n)
	last := m[n-1]
	atoi := func(v string) int { i, err := strconv.Atoi(v); require.NoError(t, err); return i }
	require.Equal(t, 1, atoi(last[2]), "the text encoders run once per image")
	return atoi(last[3]), atoi(last[4]), atoi(last[5])
}

// warmImages is how many images the warm-up made (its own image done line).
func warmImages(t *testing.T, s *server) int {
	t.Helper()
	return len(imageDoneLine.FindAllStringSubmatch(s.stderr.String(), -1))
}

func decodeB64PNGorJPEG(t *testing.T, s string) image.Image {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(s)
	require.NoError(t, err)
	img, _, err := image.Decode(bytes.NewReader(raw))
	require.NoError(t, err)
	return img
}

// TestImageToImageEndToEnd: HEAD's JSON request on /v1/images/image-to-image and its legacy
// twin; the call sequence is the VAE encoder once, int(steps*strength) UNet steps and the VAE
// decoder once; bad inputs are 400s naming the field.
func TestImageToImageEndToEnd(t *testing.T) {
	s := startReal(t, realSDXLEnv(t, "tt-sdxl-image-to-image"))
	warm := warmImages(t, s)
	img := pngOf(t, 96, 64)
	r := s.postJSON(t, "/v1/images/image-to-image", fmt.Sprintf(
		`{"prompt": "a lighthouse at dusk", "image": %q, "strength": 0.5, "num_inference_steps": 14, "seed": 7, "image_return_format": "PNG"}`, b64(img)))
	require.Equal(t, http.StatusOK, r.Status, r.String())
	require.Equal(t, "python", r.Header.Get("X-TT-Dialect"))
	var body struct {
		Images         []string `json:"images"`
		GenerationTime *float64 `json:"generation_time"`
	}
	r.JSON(t, &body)
	require.Len(t, body.Images, 1)
	require.Nil(t, body.GenerationTime, "HEAD's /image-to-image answers {\"images\"} only")
	out := decodeB64PNGorJPEG(t, body.Images[0])
	require.Equal(t, image.Rect(0, 0, 1024, 1024), out.Bounds())
	enc, steps, dec := imageDone(t, s, warm+1)
	require.Equal(t, [3]int{1, 7, 1}, [3]int{enc, steps, dec}, "VAE encode once, 14*0.5 UNet steps, VAE decode once")

	// Default strength 0.6 of 20 steps: 12 UNet steps; the legacy path answers the same way
	// with the Python server's deprecation headers.
	r = s.postJSON(t, "/image/image-to-image", fmt.Sprintf(`{"prompt": "x", "image": %q, "seed": 1}`, b64(img)))
	require.Equal(t, http.StatusOK, r.Status, r.String())
	require.Equal(t, "true", r.Header.Get("Deprecation"))
	require.Contains(t, r.Header.Get("Link"), "/v1/images/image-to-image")
	enc, steps, dec = imageDone(t, s, warm+2)
	require.Equal(t, [3]int{1, 12, 1}, [3]int{enc, steps, dec})

	for _, c := range []struct {
		name, body string
		status     int
		want       string
	}{
		{"not an image", fmt.Sprintf(`{"prompt": "x", "image": %q}`, b64([]byte("this is text, not a picture"))), 400, "image is not a usable image"},
		{"not base64", `{"prompt": "x", "image": "%%%not base64%%%"}`, 400, "image is not valid base64"},
		{"no image", `{"prompt": "x"}`, 422, "image"},
		{"strength out of range", fmt.Sprintf(`{"prompt": "x", "image": %q, "strength": 1.5}`, b64(img)), 422, "strength"},
		{"strength leaves no step", fmt.Sprintf(`{"prompt": "x", "image": %q, "strength": 0.01}`, b64(img)), 400, "strength"},
		{"mask on image-to-image", fmt.Sprintf(`{"prompt": "x", "image": %q, "mask": %q}`, b64(img), b64(img)), 422, "mask"},
		{"mixed dialects", fmt.Sprintf(`{"prompt": "x", "image": %q, "n": 2, "number_of_images": 2}`, b64(img)), 400, "mixes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := s.postJSON(t, "/v1/images/image-to-image", c.body)
			require.Equal(t, c.status, r.Status, r.String())
			require.Contains(t, string(r.Body), c.want)
		})
	}
	// /v1/images/generations is not served by this runner (HEAD: the route depends on it).
	require.Equal(t, http.StatusNotFound, s.postJSON(t, "/v1/images/generations", `{"prompt": "x"}`).Status)
}

// TestEditsEndToEnd: OpenAI's multipart images/edits and HEAD's JSON edits on tt-sdxl-edit (the
// 9-channel inpainting UNet): the image and the masked image encoded, int(steps*strength) UNet
// steps, one decode; mask problems are 400s naming the mask.
func TestEditsEndToEnd(t *testing.T) {
	s := startReal(t, realSDXLEnv(t, "tt-sdxl-edit"))
	warm := warmImages(t, s)
	img := pngOf(t, 64, 64)
	// OpenAI's mask: transparent pixels mark the area to repaint.
	alpha := image.NewNRGBA(image.Rect(0, 0, 64, 64))
	for i := range alpha.Pix {
		alpha.Pix[i] = 255
	}
	for y := 16; y < 48; y++ {
		for x := 16; x < 48; x++ {
			alpha.Pix[alpha.PixOffset(x, y)+3] = 0
		}
	}
	maskPNG := encodePNG(t, alpha)
	r := s.postMultipart(t, "/v1/images/edits",
		formPart{name: "image", filename: "in.png", contentType: "image/png", data: img},
		formPart{name: "mask", filename: "mask.png", contentType: "image/png", data: maskPNG},
		field("prompt", "a red door"), field("n", "1"), field("size", "1024x1024"), field("response_format", "b64_json"),
		field("strength", "0.75"), field("num_inference_steps", "16"), field("seed", "3"))
	require.Equal(t, http.StatusOK, r.Status, r.String())
	require.Equal(t, "openai", r.Header.Get("X-TT-Dialect"))
	var oa struct {
		Created int64 `json:"created"`
		Data    []struct {
			B64JSON string `json:"b64_json"`
		} `json:"data"`
	}
	r.JSON(t, &oa)
	require.Len(t, oa.Data, 1)
	require.Equal(t, image.Rect(0, 0, 1024, 1024), decodeB64PNGorJPEG(t, oa.Data[0].B64JSON).Bounds())
	enc, steps, dec := imageDone(t, s, warm+1)
	require.Equal(t, [3]int{2, 12, 1}, [3]int{enc, steps, dec}, "image and masked image encoded, 16*0.75 UNet steps, one decode")

	// HEAD's JSON body: a grayscale mask, white = repaint.
	gray := image.NewGray(image.Rect(0, 0, 64, 64))
	for i := range 64 * 32 {
		gray.Pix[i] = 255
	}
	r = s.postJSON(t, "/v1/images/edits", fmt.Sprintf(`{"prompt": "a cat", "image": %q, "mask": %q, "seed": 2, "num_inference_steps": 12, "strength": 1.0}`,
		b64(img), b64(encodePNG(t, gray))))
	require.Equal(t, http.StatusOK, r.Status, r.String())
	require.Equal(t, "python", r.Header.Get("X-TT-Dialect"))
	enc, steps, dec = imageDone(t, s, warm+2)
	require.Equal(t, [3]int{1, 12, 1}, [3]int{enc, steps, dec}, "strength 1: pure noise, only the masked image is encoded")

	colour := image.NewNRGBA(image.Rect(0, 0, 64, 64))
	for i := range colour.Pix {
		colour.Pix[i] = uint8(i * 7)
		if i%4 == 3 {
			colour.Pix[i] = 255
		}
	}
	for _, c := range []struct {
		name string
		mask []byte
		want string
	}{
		{"mask of another size", encodePNG(t, image.NewGray(image.Rect(0, 0, 32, 64))), "mask is 32x64 but image is 64x64"},
		{"colour mask", encodePNG(t, colour), "mask: mask is not single-channel"},
		{"mask not an image", []byte("plain text, not a picture"), "mask is not a usable image"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := s.postMultipart(t, "/v1/images/edits",
				formPart{name: "image", filename: "in.png", contentType: "image/png", data: img},
				formPart{name: "mask", filename: "m.png", contentType: "image/png", data: c.mask},
				field("prompt", "x"))
			require.Equal(t, http.StatusBadRequest, r.Status, r.String())
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Param   *string `json:"param"`
				} `json:"error"`
			}
			r.JSON(t, &e)
			require.Contains(t, e.Error.Message, c.want)
			require.NotNil(t, e.Error.Param)
			require.Equal(t, "mask", *e.Error.Param)
		})
	}
	r = s.postMultipart(t, "/v1/images/edits", formPart{name: "image", filename: "in.png", contentType: "image/png", data: img}, field("prompt", "x"))
	require.Equal(t, http.StatusBadRequest, r.Status, r.String())
	require.Contains(t, string(r.Body), "mask")
	r = s.postJSON(t, "/v1/images/edits", fmt.Sprintf(`{"prompt": "x", "image": %q}`, b64(img)))
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, r.String())
	require.Contains(t, string(r.Body), "mask is required for tt-sdxl-edit")
}

// TestLoRAEndToEnd: a synthetic LoRA made by scripts/gen-lora-fixture.py changes the simulated
// device's weights checksum (and the image); the same adapter again is not fused again; a
// request without it unloads it (the base checksum and the base image come back); a path
// outside LORA_ROOT, a Hub id and a corrupt file are 400s naming the problem.
func TestLoRAEndToEnd(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 is missing (scripts/gen-lora-fixture.py)")
		}
		t.Skip("python3 is not installed; skipping")
	}
	base := t.TempDir()
	root := filepath.Join(base, "loras")
	require.NoError(t, os.Mkdir(root, 0o755))
	out, err := exec.Command(py, filepath.Join(repoRoot, "scripts", "gen-lora-fixture.py"), filepath.Join(root, "style.safetensors")).CombinedOutput()
	require.NoError(t, err, string(out))
	require.NoError(t, os.WriteFile(filepath.Join(base, "x.safetensors"), out, 0o600))
	good, err := os.ReadFile(filepath.Join(root, "style.safetensors"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, "corrupt.safetensors"), good[:len(good)/2], 0o600))

	s := startReal(t, realSDXLEnv(t, "tt-sdxl-image-to-image", "LORA_ROOT", root))
	img := b64(pngOf(t, 64, 64))
	gen := func(extra string) reply {
		return s.postJSON(t, "/v1/images/image-to-image", fmt.Sprintf(
			`{"prompt": "a harbour", "image": %q, "strength": 0.5, "num_inference_steps": 12, "seed": 11, "image_return_format": "PNG"%s}`, img, extra))
	}
	images := func(r reply) string {
		require.Equal(t, http.StatusOK, r.Status, r.String())
		var b struct{ Images []string }
		r.JSON(t, &b)
		return b.Images[0]
	}
	checksums := func() [][]string { return weightsLine.FindAllStringSubmatch(s.stderr.String(), -1) }
	require.NotEmpty(t, checksums())
	baseSum := checksums()[0][3]
	require.Equal(t, "base weights", checksums()[0][1])

	done := func() []string {
		m := imageDoneLine.FindAllStringSubmatch(s.stderr.String(), -1)
		require.NotEmpty(t, m)
		return m[len(m)-1]
	}
	plain := images(gen(""))
	styled := images(gen(`, "lora_path": "style.safetensors", "lora_scale": 0.8`))
	// The fixture's 12 factor tensors (down and up of 6 modules, 83,456 values) each fit one
	// 65,536-value chunk of sdxl-lora-fuse: one fuse run per tensor.
	require.Equal(t, "12", done()[6], "the adapter is fused before the image, in its call sequence")
	require.NotEqual(t, plain, styled, "the fused adapter changes the image")
	sums := checksums()
	last := sums[len(sums)-1]
	require.Equal(t, "LoRA fused", last[1])
	require.Contains(t, last[2], "style.safetensors@0.8")
	require.NotEqual(t, baseSum, last[3], "the fused adapter changes the device's weights checksum")
	fused := len(sums)
	require.Equal(t, styled, images(gen(`, "lora_path": "style.safetensors", "lora_scale": 0.8`)))
	require.Len(t, checksums(), fused, "the same adapter and scale stays fused (cached)")
	require.Equal(t, "0", done()[6], "no fuse run for the cached adapter")
	images(gen(`, "lora_path": "style.safetensors"`)) // default scale 0.5: another fusion
	sums = checksums()
	require.Len(t, sums, fused+1)
	require.NotEqual(t, last[3], sums[len(sums)-1][3])
	require.Equal(t, plain, images(gen("")), "a request without LoRA gets the base weights back")
	require.Equal(t, [2]string{"0", "1"}, [2]string{done()[6], done()[7]}, "unloading is one restore, no fuse run")
	sums = checksums()
	require.Equal(t, "LoRA unloaded", sums[len(sums)-1][1])
	require.Equal(t, baseSum, sums[len(sums)-1][3])

	for _, c := range []struct{ extra, want string }{
		{`, "lora_path": "../x.safetensors"`, "outside LORA_ROOT"},
		{`, "lora_path": "` + filepath.Join(base, "x.safetensors") + `"`, "outside LORA_ROOT"},
		{`, "lora_path": "corrupt.safetensors"`, "corrupt.safetensors"},
		{`, "lora_path": "latent-consistency/lcm-lora-sdxl"`, "only local .safetensors files"},
		{`, "lora_path": "missing.safetensors"`, "no such file"},
		{`, "lora_scale": 1.0`, "lora_scale needs a lora_path"},
	} {
		r := gen(c.extra)
		require.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", c.extra, r.String())
		var d struct{ Detail string }
		require.NoError(t, json.Unmarshal(r.Body, &d), r.String())
		require.Contains(t, d.Detail, c.want, c.extra)
	}
	r := gen(`, "lora_path": "style.safetensors", "lora_scale": 2.5`)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, r.String())
	require.True(t, strings.Contains(string(r.Body), "lora_scale"))
}
