package diffusionpipeline

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/internal/shareddata"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/latents"
)

// TestFluxLatentsGolden checks FluxPipeline.prepare_latents bit for bit against diffusers +
// torch: the seeded latents' shape at each image size, their packing into 2x2-patch tokens,
// the latent image ids, and that unpacking gives the seeded latents back.
func TestFluxLatentsGolden(t *testing.T) {
	dir := shareddata.Generated(t, "flux", "make them with scripts/ensure-flux-goldens.sh (Debian python3-torch + ../shared/diffusers-58eb52c)")
	b, err := os.ReadFile(filepath.Join(dir, "latents.json"))
	require.NoError(t, err)
	var g struct {
		Channels int `json:"num_channels_latents"`
		Runs     []struct {
			Height, Width int
			Seed          uint64
			LatentShape   []int     `json:"latent_shape"`
			PackedShape   []int     `json:"packed_shape"`
			Packed        []float64 `json:"packed"`
			IDsShape      []int     `json:"ids_shape"`
			IDs           []float64 `json:"ids"`
			UnpackedShape []int     `json:"unpacked_shape"`
		} `json:"runs"`
	}
	require.NoError(t, json.Unmarshal(b, &g))
	require.NotEmpty(t, g.Runs)
	for _, r := range g.Runs {
		c, h, w := g.Channels, FluxLatentSize(r.Height), FluxLatentSize(r.Width)
		require.Equal(t, r.LatentShape, []int{1, c, h, w}, "%dx%d", r.Height, r.Width)
		require.Equal(t, r.UnpackedShape, r.LatentShape)
		require.Equal(t, r.PackedShape, []int{1, FluxImageSeqLen(r.Height, r.Width), c * 4})
		require.Equal(t, r.IDsShape, []int{FluxImageSeqLen(r.Height, r.Width), 3})
		raw, err := latents.Randn(context.Background(), r.Seed, latents.KernelAVX2, 1, c, h, w)
		require.NoError(t, err)
		packed := make([]float32, len(raw))
		require.NoError(t, PackLatents(packed, raw, c, h, w))
		require.Equal(t, f32s(r.Packed), packed, "%dx%d seed %d: packed latents", r.Height, r.Width, r.Seed)
		require.Equal(t, f32s(r.IDs), LatentImageIDs(h, w))
		back := make([]float32, len(raw))
		require.NoError(t, UnpackLatents(back, packed, c, h, w))
		require.Equal(t, raw, back)
	}
}

func f32s(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func TestPackLatents(t *testing.T) {
	// [2, 2, 4]: channel c, row y, column x holds 100c + 10y + x.
	src := make([]float32, 16)
	for c := range 2 {
		for y := range 2 {
			for x := range 4 {
				src[(c*2+y)*4+x] = float32(100*c + 10*y + x)
			}
		}
	}
	dst := make([]float32, 16)
	require.NoError(t, PackLatents(dst, src, 2, 2, 4))
	require.Equal(t, []float32{0, 1, 10, 11, 100, 101, 110, 111, 2, 3, 12, 13, 102, 103, 112, 113}, dst)
	back := make([]float32, 16)
	require.NoError(t, UnpackLatents(back, dst, 2, 2, 4))
	require.Equal(t, src, back)
	require.Equal(t, []float32{0, 0, 0, 0, 0, 1}, LatentImageIDs(2, 4))
	for _, bad := range []struct{ c, h, w, n int }{{2, 3, 4, 24}, {2, 2, 4, 15}, {0, 2, 2, 0}, {1, 0, 2, 0}} {
		require.Error(t, PackLatents(make([]float32, bad.n), make([]float32, bad.n), bad.c, bad.h, bad.w))
		require.Error(t, UnpackLatents(make([]float32, bad.n), make([]float32, bad.n), bad.c, bad.h, bad.w))
	}
	require.Equal(t, 128, FluxLatentSize(1024))
	require.Equal(t, 12, FluxLatentSize(100))
	require.Equal(t, 4096, FluxImageSeqLen(1024, 1024))
}
