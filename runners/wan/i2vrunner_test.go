//go:build cgo

package wan

import (
	"context"
	"image"
	"image/color"
	"io/fs"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/wan/i2v"
	"github.com/tenstorrent/tt-media-server-go/runners/wan/t2v"
	"github.com/tenstorrent/tt-media-server-go/runners/wan/umt5"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

func gradient(c color.NRGBA) image.Image {
	img := image.NewNRGBA(image.Rect(0, 0, 50, 30))
	for y := range 30 {
		for x := range 50 {
			img.SetNRGBA(x, y, color.NRGBA{R: c.R + uint8(2*x), G: c.G + uint8(3*y), B: c.B, A: 255})
		}
	}
	return img
}

// TestI2VPipelineRunner: tt-wan2.2-i2v's Go-road runner renders a clip through the Wan2.2 I2V
// host pipeline on the simulator (the shrunk wan22-i2v programs): HEAD's I2V warm-up (VAE
// encoder once, 2 steps), progress, the request's size and frame count, a clip that depends
// on the images and their frame positions, bad frame positions and a missing image refused
// with a 4xx naming image_prompts.
func TestI2VPipelineRunner(t *testing.T) {
	tok, err := umt5.Load(tokenizerModel(t))
	require.NoError(t, err)
	r := NewPipelineRunner(catalogue.RunnerWan22I2V, 16, tok, ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 1}, L1SmallSize: 32768,
		TraceRegionSize: 25_000_000, CommandQueues: 1, ProgramCache: true}, os.DirFS("i2v/testdata/smalli2v"), i2v.Prefix480)
	r.i2v = true
	ctx := context.Background()
	require.NoError(t, r.Warmup(ctx))
	t.Cleanup(func() {
		require.NoError(t, r.Close())
		c, err := ttnn.Counts()
		require.NoError(t, err)
		require.Zero(t, c.Devices+c.Programs+c.Tensors, "the runner frees everything")
	})
	require.Equal(t, t2v.TTNNStats{Encodes: 2, Runs: [3]int{0, 2, 2}, VAEs: 1, VAEEncodes: 1}, r.Stats(), "warm-up: the image encoded, 2 steps")
	red := []runners.VideoImage{{Image: gradient(color.NRGBA{R: 200}), FramePos: 0}}
	req := &runners.VideoRequest{Prompt: "a kite over a beach", Steps: 3, Seed: 4, Width: 48, Height: 64, Frames: 81, Images: red}
	var seen []int
	a, err := runOne(ctx, r, req, func(done, total int) { seen = append(seen, done) })
	require.NoError(t, err)
	require.Equal(t, []int{0, 1, 2, 3}, seen)
	require.Len(t, a.Frames, 81)
	require.Len(t, a.Frames[0], 48*64*3)
	require.Equal(t, 2, r.Stats().VAEEncodes)
	b, err := runOne(ctx, r, req, nil)
	require.NoError(t, err)
	require.Equal(t, a.Frames, b.Frames, "deterministic")
	for _, other := range [][]runners.VideoImage{
		{{Image: gradient(color.NRGBA{B: 200}), FramePos: 0}},
		{{Image: gradient(color.NRGBA{R: 200}), FramePos: 40}},
		{{Image: gradient(color.NRGBA{R: 200}), FramePos: 0}, {Image: gradient(color.NRGBA{G: 90}), FramePos: 80}},
	} {
		c, err := runOne(ctx, r, &runners.VideoRequest{Prompt: req.Prompt, Steps: 3, Seed: 4, Width: 48, Height: 64, Frames: 81, Images: other}, nil)
		require.NoError(t, err)
		require.NotEqual(t, a.Frames, c.Frames, "%v reaches the clip", other)
	}
	for _, bad := range [][]runners.VideoImage{nil, {{Image: gradient(color.NRGBA{}), FramePos: 81}}} {
		_, err = runOne(ctx, r, &runners.VideoRequest{Prompt: "x", Steps: 2, Width: 48, Height: 64, Frames: 81, Images: bad}, nil)
		require.ErrorIs(t, err, runners.ErrBadRequest)
		require.ErrorContains(t, err, "image_prompts")
	}
}

// TestScaledPrograms: MOCK_VIDEO_SCALE shrinks the clip-sized tensors of a set's manifests
// (latents to even sizes, videos to 8x those), and the shrunk set loads and fits together.
func TestScaledPrograms(t *testing.T) {
	set, err := scaledPrograms(t2v.Programs(), i2v.Prefix480, 8)
	require.NoError(t, err)
	src, err := fs.ReadFile(set, i2v.Prefix480+"-transformer.ttbsim")
	require.NoError(t, err)
	require.Contains(t, string(src), "input hidden_states bf16 1 36 21 8 14\n")
	require.Contains(t, string(src), "input encoder_hidden_states bf16 1 512 4096\n")
	src, err = fs.ReadFile(set, i2v.Prefix480+"-vae-encoder.ttbsim")
	require.NoError(t, err)
	require.Contains(t, string(src), "input video bf16 1 3 81 64 112\n")
	_, err = fs.ReadFile(set, t2v.Prefix480+"-vae.ttbsim")
	require.Error(t, err, "only the prefix's manifests")
	dev, err := ttnn.Open(context.Background(), ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 1}})
	require.NoError(t, err)
	defer func() { require.NoError(t, dev.Close()) }()
	d, err := t2v.NewTTNNDevice(context.Background(), dev, set, i2v.Prefix480)
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	sh, err := t2v.ShapeFor(81, 64, 112)
	require.NoError(t, err)
	require.Equal(t, sh, d.Spec().Shape)
}
