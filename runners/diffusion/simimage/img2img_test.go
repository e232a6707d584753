package simimage

import (
	"context"
	"image"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
)

func solid(w, h int, v uint8) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = v
	}
	return img
}

// TestSimulatedImageInputs: the simulated image-to-image and edit runners keep (1 - strength) of
// the input, repaint only inside the mask, count int(steps*strength) steps, and refuse what the
// real pipeline refuses.
func TestSimulatedImageInputs(t *testing.T) {
	ctx := context.Background()
	img2img := New(catalogue.RunnerSDXLImg2Img, 64, simdev.Latency{})
	var steps int
	out := img2img.Run(ctx, []runners.Task{{Ctx: ctx, Request: &runners.ImageRequest{Prompt: "x", Seed: i64(1), NumInferenceSteps: 20,
		InitImage: solid(16, 16, 200), Strength: 0.25}, Progress: func(_, total int) { steps = total }}})
	require.NoError(t, out[0].Err)
	require.Equal(t, 5, steps)
	low := out[0].Value.(*runners.ImageResult).Images[0].(*image.RGBA)
	high := gen(t, img2img, &runners.ImageRequest{Prompt: "x", Seed: i64(1), NumInferenceSteps: 20, InitImage: solid(16, 16, 200), Strength: 1})
	dev := func(a *image.RGBA) float64 { return meanAbsDiff(a, solid(64, 64, 200)) }
	require.Less(t, dev(low), dev(high), "a lower strength keeps more of the input")

	edit := New(catalogue.RunnerSDXLEdit, 64, simdev.Latency{})
	mask := image.NewGray(image.Rect(0, 0, 16, 16))
	for y := range 16 {
		for x := range 8 {
			mask.Pix[y*16+x] = 255
		}
	}
	res := gen(t, edit, &runners.ImageRequest{Prompt: "x", Seed: i64(1), NumInferenceSteps: 20, InitImage: solid(16, 16, 200), Mask: mask, Strength: 1})
	for y := range 64 {
		o := res.PixOffset(63, y)
		require.Equal(t, []uint8{200, 200, 200}, res.Pix[o:o+3], "outside the mask the input stays")
	}

	for _, c := range []struct {
		r   runners.Runner
		req *runners.ImageRequest
	}{
		{img2img, &runners.ImageRequest{Prompt: "x", NumInferenceSteps: 20}},
		{img2img, &runners.ImageRequest{Prompt: "x", NumInferenceSteps: 20, InitImage: solid(4, 4, 1), Strength: 0.01}},
		{img2img, &runners.ImageRequest{Prompt: "x", NumInferenceSteps: 20, InitImage: solid(4, 4, 1), Strength: 0.5, Mask: image.NewGray(image.Rect(0, 0, 4, 4))}},
		{edit, &runners.ImageRequest{Prompt: "x", NumInferenceSteps: 20, InitImage: solid(4, 4, 1), Strength: 0.5}},
		{edit, &runners.ImageRequest{Prompt: "x", NumInferenceSteps: 20, InitImage: solid(4, 4, 1), Strength: 0.5, Mask: image.NewGray(image.Rect(0, 0, 3, 4))}},
		{New(catalogue.RunnerSDXL, 64, simdev.Latency{}), &runners.ImageRequest{Prompt: "x", NumInferenceSteps: 20, InitImage: solid(4, 4, 1)}},
		{img2img, &runners.ImageRequest{Prompt: "x", NumInferenceSteps: 20, InitImage: solid(4, 4, 1), Strength: 0.5, LoRAPath: "a.safetensors", LoRAScale: 1}},
	} {
		o := c.r.Run(ctx, []runners.Task{{Ctx: ctx, Request: c.req}})
		require.ErrorIs(t, o[0].Err, runners.ErrBadRequest, "%+v", c.req)
	}
}

// TestSimulatedLoRA: the simulated runner checks the adapter with the real parser and its
// picture changes with it.
func TestSimulatedLoRA(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "bad.safetensors"), []byte("nope"), 0o600))
	r := newImage(catalogue.RunnerSDXL, 64, simdev.Latency{})
	r.loraRoot = root
	o := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(), Request: &runners.ImageRequest{Prompt: "x",
		NumInferenceSteps: 12, LoRAPath: "bad.safetensors", LoRAScale: 0.5}}})
	require.ErrorIs(t, o[0].Err, runners.ErrBadRequest)
	require.ErrorContains(t, o[0].Err, "bad.safetensors")
}
