//go:build cgo

package i2v

import (
	"context"
	"image"
	"image/color"
	"io/fs"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/internal/simtest"
	"github.com/tenstorrent/tt-media-server-go/runners/wan/t2v"
	"github.com/tenstorrent/tt-media-server-go/runners/wan/umt5"
	"github.com/tenstorrent/tt-media-server-go/runners/wan/wangolden"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

func TestMain(m *testing.M) {
	simtest.Setup(1, "0.0001")
	os.Exit(m.Run())
}

func openDevice(t *testing.T) *ttnn.Device {
	t.Helper()
	dev, err := ttnn.Open(context.Background(), ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 1}, L1SmallSize: 32768,
		TraceRegionSize: 25_000_000, CommandQueues: 1, ProgramCache: true})
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, dev.Close())
		c, err := ttnn.Counts()
		require.NoError(t, err)
		require.Zero(t, c.Programs+c.Tensors, "every program and tensor is freed")
	})
	return dev
}

func loadSet(t *testing.T, dev *ttnn.Device, set fs.FS, prefix string) *t2v.TTNNDevice {
	t.Helper()
	d, err := t2v.NewTTNNDevice(context.Background(), dev, set, prefix)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	return d
}

func testImage(c color.NRGBA) image.Image {
	img := image.NewNRGBA(image.Rect(0, 0, 40, 30))
	for y := range 30 {
		for x := range 40 {
			img.SetNRGBA(x, y, color.NRGBA{R: c.R + uint8(x), G: c.G + uint8(y), B: c.B, A: 255})
		}
	}
	return img
}

// TestTTNNSimCallSequence is an I2V clip on the ttnn simulator (the declared wan22-i2v programs,
// shrunk): the VAE encoder once, the UMT5 encoder twice (prompt, negative prompt), each step one
// expert twice over 36 channels — wan22-i2v-transformer while the timestep is >= 900, then
// wan22-i2v-transformer-2 — and the VAE decoder once; the clip depends on the images.
func TestTTNNSimCallSequence(t *testing.T) {
	tok, err := umt5.Load(wangolden.Path(t, "umt5_test.model"))
	require.NoError(t, err)
	d := loadSet(t, openDevice(t), os.DirFS("testdata/smalli2v"), Prefix480)
	sh, err := t2v.ShapeFor(17, 64, 48)
	require.NoError(t, err)
	require.Equal(t, t2v.Spec{Shape: sh, TextLen: 512, TextDim: 32}, d.Spec())
	p, err := New(d, tok, Wan22Config())
	require.NoError(t, err)
	cfg := Wan22Config()
	sched, err := cfg.Sampler.Schedule(6)
	require.NoError(t, err)
	var high, low int
	for _, ts := range sched.Timesteps {
		if e, _ := cfg.Guidance.Pick(ts, cfg.Sampler.NumTrainTimesteps); e == t2v.HighNoise {
			high += 2
		} else {
			low += 2
		}
	}
	require.Positive(t, high)
	require.Positive(t, low)
	var clips [][][]byte
	for i, images := range [][]Image{
		{{Image: testImage(color.NRGBA{R: 200, G: 10, B: 10}), FramePos: 0}},
		{{Image: testImage(color.NRGBA{R: 200, G: 10, B: 10}), FramePos: 0}},
		{{Image: testImage(color.NRGBA{R: 10, G: 10, B: 200}), FramePos: 0}, {Image: testImage(color.NRGBA{G: 200}), FramePos: 16}},
	} {
		steps := 0
		frames, err := p.Generate(context.Background(), Request{Prompt: "a boat on a lake", Steps: 6, Seed: 9, Images: images},
			t2v.Hooks{Step: func(done, total int) error { steps = done; return nil }})
		require.NoError(t, err)
		require.Equal(t, 6, steps)
		require.Len(t, frames, 17)
		require.Len(t, frames[0], 3*64*48)
		n := i + 1
		require.Equal(t, t2v.TTNNStats{Encodes: 2 * n, Runs: [3]int{0, high * n, low * n}, VAEs: n, VAEEncodes: n}, d.Stats())
		clips = append(clips, frames)
	}
	require.Equal(t, clips[0], clips[1], "deterministic in images, prompt and seed")
	require.NotEqual(t, clips[0], clips[2], "the images condition the clip")
}

// TestTTNNSimRefusals: a T2V set has no VAE encoder and its experts take 16 channels, so an I2V
// pipeline on it fails at the encoder with a message naming it; frame positions outside the
// clip are refused before any device call.
func TestTTNNSimRefusals(t *testing.T) {
	tok, err := umt5.Load(wangolden.Path(t, "umt5_test.model"))
	require.NoError(t, err)
	dev := openDevice(t)
	d := loadSet(t, dev, os.DirFS("testdata/smalli2v"), Prefix480)
	p, err := New(d, tok, Wan22Config())
	require.NoError(t, err)
	_, err = p.Generate(context.Background(), Request{Prompt: "x", Steps: 2, Images: []Image{{Image: testImage(color.NRGBA{}), FramePos: 17}}}, t2v.Hooks{})
	require.ErrorIs(t, err, ErrRequest)
	require.ErrorContains(t, err, "frame_pos 17 is outside the clip's 17 frames")
	require.Zero(t, d.Stats().VAEEncodes)

	t2vSet := loadSet(t, dev, os.DirFS("../t2v/testdata/smallwan"), t2v.Prefix480)
	q, err := New(t2vSet, tok, Wan22Config())
	require.NoError(t, err)
	_, err = q.Generate(context.Background(), Request{Prompt: "x", Steps: 2, Images: []Image{{Image: testImage(color.NRGBA{}), FramePos: 0}}}, t2v.Hooks{})
	require.ErrorContains(t, err, "no VAE encoder")
}

// TestFullSizeSetsLoad: both full-size I2V sets load on the simulator, fit together and give
// Wan2.2's shapes (81 frames at 832x480 and 1280x720, 36-channel experts).
func TestFullSizeSetsLoad(t *testing.T) {
	dev := openDevice(t)
	for prefix, want := range map[string][3]int{Prefix480: {81, 480, 832}, Prefix720: {81, 720, 1280}} {
		d := loadSet(t, dev, t2v.Programs(), prefix)
		sh, err := t2v.ShapeFor(want[0], want[1], want[2])
		require.NoError(t, err)
		require.Equal(t, t2v.Spec{Shape: sh, TextLen: 512, TextDim: 4096}, d.Spec(), prefix)
	}
}
