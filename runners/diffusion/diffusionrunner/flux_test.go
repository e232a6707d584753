//go:build cgo

package diffusionrunner

import (
	"context"
	"errors"
	"image"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/diffusionpipeline"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// fluxWeights is a tiny weights directory of Flux's layout: tokenizer/ (CLIP) and
// tokenizer_2/ (T5).
func fluxWeights(t *testing.T) string {
	t.Helper()
	w := writeTinyWeights(t)
	writeTinyT5(t, w)
	require.NoError(t, os.Rename(filepath.Join(w, "tokenizer_3"), filepath.Join(w, "tokenizer_2")))
	return w
}

func warmFlux(t *testing.T, v diffusionpipeline.FluxVariant) *FluxRunner {
	t.Helper()
	r, err := NewFlux(FluxConfig{Variant: v, Setup: Setup{WeightsDir: fluxWeights(t), Backend: "sim", Programs: os.DirFS("../diffusionpipeline/testdata/smallflux"),
		Device: ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 1}, L1SmallSize: 32768, TraceRegionSize: 25_000_000, CommandQueues: 1, ProgramCache: true}}})
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, r.Close())
		c, err := ttnn.Counts()
		require.NoError(t, err)
		require.Equal(t, ttnn.LiveCounts{}, c, "Close releases the device and everything on it")
	})
	require.NoError(t, r.Warmup(context.Background()))
	return r
}

// TestFluxRunner: a Flux image through the runner on the simulator — the warm-up image (2
// steps), then per request the encoders once, the transformer replayed once per step with
// progress and previews, the VAE once; what Flux does not take is a 400 naming the field,
// before any device time.
func TestFluxRunner(t *testing.T) {
	for _, v := range []diffusionpipeline.FluxVariant{diffusionpipeline.FluxDev, diffusionpipeline.FluxSchnell} {
		t.Run(v.Prefix(), func(t *testing.T) {
			r := warmFlux(t, v)
			require.Equal(t, diffusionpipeline.Stats{Encodes: 1, TraceCaptures: 1, TraceReplays: 2, VAEDecodes: 1}, r.Stats(), "warm-up: one 2-step image")
			ctx := context.Background()
			var rec recorder
			req := &runners.ImageRequest{Prompt: "the man", Prompt2: "the red ant", NumInferenceSteps: 4, Seed: seed(5), PartialImages: 2}
			out := r.Run(ctx, []runners.Task{rec.task(ctx, req, true)})
			img := image0(t, out[0])
			require.Equal(t, image.Rect(0, 0, 64, 64), img.Bounds())
			require.Equal(t, [][2]int{{1, 4}, {2, 4}, {3, 4}, {4, 4}}, rec.progress)
			require.Len(t, rec.partials, 2)
			require.Equal(t, diffusionpipeline.Stats{Encodes: 2, TraceCaptures: 1, TraceReplays: 6, VAEDecodes: 2}, r.Stats())

			// Deterministic, and the seed, prompt_2 and (dev) the guidance reach the image.
			again := pix(t, image0(t, r.Run(ctx, []runners.Task{{Ctx: ctx, Request: req}})[0]))
			require.Equal(t, pix(t, img), again)
			other := *req
			other.Seed = seed(6)
			require.NotEqual(t, again, pix(t, image0(t, r.Run(ctx, []runners.Task{{Ctx: ctx, Request: &other}})[0])))
			noSeed := *req
			noSeed.Seed = nil
			zero := *req
			zero.Seed = seed(0)
			require.Equal(t, pix(t, image0(t, r.Run(ctx, []runners.Task{{Ctx: ctx, Request: &zero}})[0])),
				pix(t, image0(t, r.Run(ctx, []runners.Task{{Ctx: ctx, Request: &noSeed}})[0])), "no seed is seed 0, as HEAD's Flux runner")

			before := r.Stats()
			bad := []*runners.ImageRequest{
				{Prompt: "x", NegativePrompt: "y"},
				{Prompt: "x", GuidanceRescale: 0.5},
				{Prompt: "x", Timesteps: []float64{900, 500}},
				{Prompt: "x", CropCoordsTopLeft: [2]float64{0, 8}},
				{Prompt: "x", InitImage: image.NewRGBA(image.Rect(0, 0, 2, 2)), Strength: 0.5},
				{Prompt: "x", LoRAPath: "/l.safetensors", LoRAScale: 1},
			}
			if v == diffusionpipeline.FluxSchnell {
				bad = append(bad, &runners.ImageRequest{Prompt: "x", GuidanceScale: 3.5})
			}
			for _, b := range bad {
				o := r.Run(ctx, []runners.Task{{Ctx: ctx, Request: b}})
				require.ErrorIs(t, o[0].Err, runners.ErrBadRequest, "%+v", b)
			}
			require.Equal(t, before, r.Stats(), "refused before the device")
		})
	}
}

func TestFluxRunnerNeedsT5(t *testing.T) {
	_, err := NewFlux(FluxConfig{Variant: diffusionpipeline.FluxDev, Setup: Setup{WeightsDir: writeTinyWeights(t)}})
	require.ErrorContains(t, err, "tokenizer_2")
}

// TestFluxFactory: per worker, the FluxRunner when MODEL_WEIGHTS_PATH has both tokenizers and
// the simulator is the worker's; the fallback otherwise; on metal the FluxRunner or a start-up
// error, never the fallback.
func TestFluxFactory(t *testing.T) {
	weights := fluxWeights(t)
	noT5 := writeTinyWeights(t)
	one := []config.DeviceGroup{{ID: "0", Devices: []int{0}}}
	fellBack := 0
	fallback := func(runners.WorkerSpec) (runners.Runner, error) {
		fellBack++
		return &simdev.FailedRunner{Err: errors.New("the fallback")}, nil
	}
	f := FluxFactory(catalogue.RunnerFlux1Schnell, diffusionpipeline.FluxSchnell, fallback)
	for _, tc := range []struct {
		name     string
		settings config.Settings
		real     bool
	}{
		{"weights with both tokenizers", config.Settings{Mock: true, ModelWeightsPath: weights, DeviceGroups: one}, true},
		{"no tokenizer_2", config.Settings{Mock: true, ModelWeightsPath: noT5, DeviceGroups: one}, false},
		{"no weights path", config.Settings{Mock: true, DeviceGroups: one}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := fellBack
			r, err := f(runners.WorkerSpec{WorkerID: "0", Devices: []int{0}, Mesh: config.MeshShape{Rows: 1, Cols: 1}, Settings: &tc.settings})
			require.NoError(t, err)
			_, isReal := r.(*FluxRunner)
			require.Equal(t, tc.real, isReal)
			require.Equal(t, !tc.real, fellBack == before+1)
			require.NoError(t, r.Close())
		})
	}
	r, err := f(runners.WorkerSpec{Settings: &config.Settings{DeviceBackend: config.BackendMetal}})
	require.NoError(t, err)
	err = r.Warmup(context.Background())
	require.ErrorIs(t, err, runners.ErrConfig)
	require.ErrorContains(t, err, "MODEL_WEIGHTS_PATH is not set")
	_, err = FluxFactory("tt-no-such-runner", diffusionpipeline.FluxDev, fallback)(runners.WorkerSpec{Settings: &config.Settings{Mock: true}})
	require.ErrorContains(t, err, "not in the catalogue")
}

// TestFluxNamesGetTheFluxRunner: Register wires both tt-flux.1-* names to FluxFactory, so a
// worker whose MODEL_WEIGHTS_PATH has both tokenizers runs the real FluxRunner of its variant,
// and one without them the simulated twin.
func TestFluxNamesGetTheFluxRunner(t *testing.T) {
	weights := fluxWeights(t)
	reg := runners.NewRegistry()
	Register(reg)
	one := []config.DeviceGroup{{ID: "0", Devices: []int{0}}}
	for _, name := range []string{catalogue.RunnerFlux1Dev, catalogue.RunnerFlux1Schnell} {
		for _, tc := range []struct {
			weights string
			real    bool
		}{{weights, true}, {"", false}} {
			s := config.Settings{Mock: true, ModelWeightsPath: tc.weights, DeviceGroups: one}
			r, err := reg.New(name, runners.WorkerSpec{WorkerID: "0", Devices: []int{0}, Mesh: config.MeshShape{Rows: 1, Cols: 1}, Settings: &s})
			require.NoError(t, err, name)
			_, isReal := r.(*FluxRunner)
			require.Equal(t, tc.real, isReal, "%s with MODEL_WEIGHTS_PATH=%q", name, tc.weights)
			require.NoError(t, r.Close())
		}
	}
}
