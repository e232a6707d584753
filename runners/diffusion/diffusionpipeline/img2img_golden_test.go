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

// TestSampleLatentDistGolden checks the VAE latent sample (DiagonalGaussianDistribution.sample
// with a seeded generator, times the SDXL scaling factor) and the noise drawn next from the
// same generator against diffusers + torch.
func TestSampleLatentDistGolden(t *testing.T) {
	dir := shareddata.Generated(t, "img2img", "make them with scripts/gen-img2img-goldens.sh DIFFUSERS_SRC (Debian python3-torch + a huggingface/diffusers checkout)")
	b, err := os.ReadFile(filepath.Join(dir, "vae_sample.json"))
	require.NoError(t, err)
	var g struct {
		Moments []float64 `json:"moments"`
		Scaling float64   `json:"scaling_factor"`
		Runs    []struct {
			Seed    uint64    `json:"seed"`
			Latents []float64 `json:"latents"`
			Noise   []float64 `json:"noise"`
		} `json:"runs"`
	}
	require.NoError(t, json.Unmarshal(b, &g))
	require.NotEmpty(t, g.Runs)
	moments := make([]float32, len(g.Moments))
	for i, v := range g.Moments {
		moments[i] = float32(v)
	}
	for _, r := range g.Runs {
		gen, err := latents.NewGenerator(r.Seed, latents.KernelAVX2)
		require.NoError(t, err)
		lat := make([]float32, len(moments)/2)
		require.NoError(t, SampleLatentDist(context.Background(), lat, moments, gen, float32(g.Scaling)))
		for i, v := range lat {
			require.InEpsilon(t, r.Latents[i], float64(v), 1e-6, "seed %d latent %d", r.Seed, i)
		}
		noise := make([]float32, len(lat))
		require.NoError(t, gen.FillNormal(context.Background(), noise))
		for i, v := range noise {
			require.Equal(t, float32(r.Noise[i]), v, "seed %d noise %d", r.Seed, i)
		}
	}
	require.Error(t, SampleLatentDist(context.Background(), make([]float32, 3), moments, nil, 1))
}
