//go:build cgo

package diffusionpipeline

import (
	"context"
	"io/fs"
	"iter"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// openSimVariant opens the simulated device (SDXL's n150 options) and variant v's programs from
// set ("" = the full-size Programs()). The simulator allows one open device per process, so
// these tests do not run in parallel.
func openSimVariant(t *testing.T, set string, v Variant) (*Pipeline, *TTNNDevice) {
	t.Helper()
	d := simDevice(t, 34_541_598, set, Programs(), func(ctx context.Context, dev *ttnn.Device, fsys fs.FS) (*TTNNDevice, error) {
		return NewTTNNDeviceFor(ctx, dev, fsys, v)
	})
	p, err := New(d, testTokenizer(t), SDXLConfig())
	require.NoError(t, err)
	return p, d
}

// simDevice opens the simulated 1x1 device with the given trace region and builds a pipeline
// device on it from the programs in dir ("" = full); both are closed at the end of the test,
// which checks that no trace or program is left.
func simDevice[D interface{ Close() error }](t *testing.T, traceRegion uint64, dir string, full fs.FS,
	build func(context.Context, *ttnn.Device, fs.FS) (D, error)) D {
	t.Helper()
	ctx := context.Background()
	dev, err := ttnn.Open(ctx, ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 1}, L1SmallSize: 32768,
		TraceRegionSize: traceRegion, CommandQueues: 1, ProgramCache: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, dev.Close()) })
	set := full
	if dir != "" {
		set = os.DirFS(dir)
	}
	d, err := build(ctx, dev, set)
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, d.Close())
		c, err := ttnn.Counts()
		require.NoError(t, err)
		require.Zero(t, c.Traces)
		require.Zero(t, c.Programs)
	})
	return d
}

// TestSimImg2ImgCallSequence: the VAE encoder once, N*strength UNet replays, the VAE decoder
// once; inpainting encodes the image and the masked image (strength < 1).
func TestSimImg2ImgCallSequence(t *testing.T) {
	for _, c := range []struct {
		name    string
		v       Variant
		mask    bool
		steps   int
		str     float64
		encodes int
		replays int
	}{
		{"img2img", ImageToImage, false, 20, 0.6, 1, 12},
		{"img2img strength 1", ImageToImage, false, 4, 1, 1, 4},
		{"inpaint", Inpaint, true, 10, 0.6, 2, 6},
		{"inpaint strength 1", Inpaint, true, 5, 1, 1, 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, d := openSimVariant(t, "testdata/small", c.v)
			if c.v == Inpaint {
				require.Equal(t, 9, d.Spec().UNetIn())
			}
			in := ImageInput{Image: testImage(smallSpec), Strength: c.str}
			if c.mask {
				in.Mask = testMask(smallSpec)
			}
			steps := 0
			img, err := p.GenerateImage(context.Background(), Request{Prompt: "the man", Steps: c.steps, GuidanceScale: 5, Seed: ptr[int64](5)}, in,
				Hooks{Step: func(i, _ int, _ func() []float32) error { steps = i; return nil }})
			require.NoError(t, err)
			require.Equal(t, 64, img.Rect.Dx())
			require.Equal(t, c.replays, steps)
			require.Equal(t, Stats{Encodes: 1, TraceCaptures: 1, TraceReplays: c.replays, VAEDecodes: 1, VAEEncodes: c.encodes}, d.Stats())
		})
	}
}

func TestSimFullSizeEditPrograms(t *testing.T) {
	_, d := openSimVariant(t, "", Inpaint)
	s := d.Spec()
	require.Equal(t, Spec{LatentChannels: 4, LatentHeight: 128, LatentWidth: 128, SeqLen: 77, HiddenSize: 2048, PooledSize: 1280,
		ImageHeight: 1024, ImageWidth: 1024, UNetChannels: 9}, s)
}

func chunksOf(vals ...[]float32) iter.Seq2[[]float32, error] {
	return func(yield func([]float32, error) bool) {
		for _, v := range vals {
			if !yield(v, nil) {
				return
			}
		}
	}
}

// TestSimLoRAFuse: fusing an adapter changes the device's weights checksum and the image (the
// UNet reads the weights), the same key again is not refused again, another scale is another
// fusion, and unfusing restores the base checksum and image.
func TestSimLoRAFuse(t *testing.T) {
	p, d := openSimVariant(t, "testdata/small", TextToImage)
	ctx := context.Background()
	gen := func() []byte {
		img, err := p.Generate(ctx, Request{Prompt: "the man", Steps: 2, GuidanceScale: 5, Seed: ptr[int64](9)}, nil)
		require.NoError(t, err)
		return img.Pix
	}
	base, err := d.WeightsChecksum(ctx)
	require.NoError(t, err)
	baseImg := gen()
	factors := make([]float32, 150) // 3 chunks of the test program's 64
	for i := range factors {
		factors[i] = float32(i%7) * 0.01
	}
	require.NoError(t, d.FuseLoRA(ctx, "a.safetensors@0.5", 0.5, chunksOf(factors[:100], factors[100:])))
	fused, err := d.WeightsChecksum(ctx)
	require.NoError(t, err)
	require.NotEqual(t, base, fused)
	require.Equal(t, "a.safetensors@0.5", d.LoRAKey())
	require.NotEqual(t, baseImg, gen(), "the fused weights reach the UNet")
	require.NoError(t, d.FuseLoRA(ctx, "a.safetensors@0.5", 0.5, chunksOf(factors)))
	require.Equal(t, 1, d.Stats().LoRAFuses, "the same adapter and scale is fused once")
	require.Equal(t, 3, d.Stats().LoRAChunks, "chunks of 100 and 50 values in runs of 64: 2 + 1")

	require.NoError(t, d.FuseLoRA(ctx, "a.safetensors@1", 1, chunksOf(factors)))
	other, err := d.WeightsChecksum(ctx)
	require.NoError(t, err)
	require.NotEqual(t, fused, other, "another scale fuses other weights")

	require.NoError(t, d.UnfuseLoRA(ctx))
	back, err := d.WeightsChecksum(ctx)
	require.NoError(t, err)
	require.Equal(t, base, back)
	require.Equal(t, baseImg, gen())
	require.Equal(t, 1, d.Stats().WeightRestores)
	require.Error(t, d.FuseLoRA(ctx, "empty@1", 1, chunksOf()))
	back, err = d.WeightsChecksum(ctx)
	require.NoError(t, err)
	require.Equal(t, base, back, "a failed fusion leaves the base weights")
}
