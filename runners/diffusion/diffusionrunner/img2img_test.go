//go:build cgo

package diffusionrunner

import (
	"context"
	"image"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/diffusionpipeline"
)

func solidRGB(w, h int, v uint8) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = v + uint8(i%7)
	}
	return img
}

// TestImg2ImgAndEditRunners: the image-to-image and inpainting runners run the VAE encoder,
// N*strength UNet replays and the VAE decoder; bad inputs are the client's errors.
func TestImg2ImgAndEditRunners(t *testing.T) {
	weights := writeTinyWeights(t)
	for _, c := range []struct {
		m       Model
		mask    bool
		encodes int
	}{{SDXLImg2Img, false, 1}, {SDXLEdit, true, 2}} {
		t.Run(c.m.String(), func(t *testing.T) {
			r := warmRunner(t, testConfig(t, c.m, weights))
			d := r.closers[0].(*diffusionpipeline.TTNNDevice)
			before := d.Stats()
			req := &runners.ImageRequest{Prompt: "the man", NumInferenceSteps: 10, GuidanceScale: 5, Seed: seed(3),
				InitImage: solidRGB(40, 30, 20), Strength: 0.6}
			if c.mask {
				m := image.NewGray(image.Rect(0, 0, 40, 30))
				for i := range 300 {
					m.Pix[i] = 255
				}
				req.Mask = m
			}
			out := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(), Request: req}})
			require.Equal(t, 64, image0(t, out[0]).Bounds().Dx())
			after := d.Stats()
			require.Equal(t, c.encodes, after.VAEEncodes-before.VAEEncodes)
			require.Equal(t, 6, after.TraceReplays-before.TraceReplays)
			require.Equal(t, 1, after.VAEDecodes-before.VAEDecodes)

			for _, bad := range []*runners.ImageRequest{
				{Prompt: "x", NumInferenceSteps: 10, GuidanceScale: 5},                                                                                           // no image
				{Prompt: "x", NumInferenceSteps: 10, GuidanceScale: 5, InitImage: solidRGB(8, 8, 1), Strength: 0.05, Mask: req.Mask},                             // no step left
				{Prompt: "x", NumInferenceSteps: 10, GuidanceScale: 5, InitImage: solidRGB(8, 9, 1), Strength: 0.5, Mask: image.NewGray(image.Rect(0, 0, 3, 3))}, // size / stray mask
			} {
				o := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(), Request: bad}})
				require.ErrorIs(t, o[0].Err, runners.ErrBadRequest)
			}
		})
	}
}

// TestRunnerLoRA: a request with an adapter fuses it (the weights checksum changes, and the
// image), the same adapter and scale again does not fuse again, a request without one restores
// the base; a path outside LORA_ROOT and a corrupt file are the client's errors.
func TestRunnerLoRA(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 is missing")
		}
		t.Skip("python3 is not installed (scripts/gen-lora-fixture.py); skipping")
	}
	root := t.TempDir()
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "..", "scripts", "gen-lora-fixture.py")
	b, err := exec.Command(py, script, filepath.Join(root, "style.safetensors")).CombinedOutput()
	require.NoError(t, err, string(b))
	require.NoError(t, os.WriteFile(filepath.Join(root, "corrupt.safetensors"), []byte("\x10\x00\x00\x00\x00\x00\x00\x00{not json"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(root), "x.safetensors"), b, 0o600))

	cfg := testConfig(t, SDXL, writeTinyWeights(t))
	cfg.LoRARoot = root
	r := warmRunner(t, cfg)
	d := r.closers[0].(*diffusionpipeline.TTNNDevice)
	ctx := context.Background()
	gen := func(path string, scale float64) (runners.Outcome, string) {
		out := r.Run(ctx, []runners.Task{{Ctx: ctx, Request: &runners.ImageRequest{Prompt: "the man", NumInferenceSteps: 2,
			GuidanceScale: 5, Seed: seed(1), LoRAPath: path, LoRAScale: scale}}})
		sum, err := d.WeightsChecksum(ctx)
		require.NoError(t, err)
		return out[0], sum
	}
	o, base := gen("", 0)
	baseImg := pix(t, image0(t, o))
	o, fused := gen("style.safetensors", 0.5)
	require.NotEqual(t, base, fused)
	require.NotEqual(t, baseImg, pix(t, image0(t, o)))
	_, again := gen("style.safetensors", 0.5)
	require.Equal(t, fused, again)
	require.Equal(t, 1, d.Stats().LoRAFuses)
	_, other := gen("style.safetensors", 1.5)
	require.NotEqual(t, fused, other)
	o, back := gen("", 0)
	require.Equal(t, base, back)
	require.Equal(t, baseImg, pix(t, image0(t, o)))

	for _, c := range []struct{ path, msg string }{
		{"../x.safetensors", "outside LORA_ROOT"},
		{"corrupt.safetensors", "corrupt.safetensors"},
		{"stabilityai/some-lora", "only local"},
	} {
		o, _ := gen(c.path, 0.5)
		require.ErrorIs(t, o.Err, runners.ErrBadRequest, c.path)
		require.ErrorContains(t, o.Err, c.msg)
	}
}
