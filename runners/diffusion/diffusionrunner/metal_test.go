//go:build cgo && ttnn

package diffusionrunner

import (
	"context"
	"image"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/internal/childtest"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/diffusionpipeline"
	"github.com/tenstorrent/tt-media-server-go/runners/programs"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
	"github.com/tenstorrent/tt-media-server-go/ttnn/ttnnfile"
)

// TestMetalDiffusion runs TestChildMetalDiffusion in a child process: the metal backend must
// be the first and only backend its process selects.
func TestMetalDiffusion(t *testing.T) {
	if _, ok := ttnn.FakeRuntime(); !ok {
		t.Skip("metal is linked against a real tt::runtime: this test runs over the fake (scripts/check-metal.sh)")
	}
	childtest.Run(t, "TestChildMetalDiffusion")
}

// metalPrograms are the programs m loads on metal: the catalogue's, without the simulator's own.
func metalPrograms(m Model) []string {
	var names []string
	for _, p := range m.catalogued().Programs {
		if !p.SimOnly {
			names = append(names, p.Name)
		}
	}
	return names
}

// writeMetalPrograms writes <dir>/<name>.ttnn from each program's declaration (mod may change
// one), the denoiser traced as tt-mlir's trace pass makes it.
func writeMetalPrograms(t *testing.T, dir string, names []string, mod func(name string, spec *ttnn.ProgramSpec)) {
	t.Helper()
	require.NoError(t, ttnnfile.WriteDeclared(context.Background(), ttnnfile.SDKDir(), dir, names, programs.Lookup,
		ttnnfile.Fixture{Traced: denoiser, Mod: mod}))
}

// denoiser says which programs are the traced denoiser steps.
func denoiser(name string) bool {
	return name == diffusionpipeline.ProgUNet || name == diffusionpipeline.ProgInpaintUNet || name == diffusionpipeline.ProgSD3Transformer
}

func TestChildMetalDiffusion(t *testing.T) {
	if os.Getenv(childtest.Env) != t.Name() {
		t.Skip("runs only as a child process (of TestMetalDiffusion)")
	}
	if err := ttnnfile.Available(ttnnfile.SDKDir()); err != nil {
		t.Fatalf("the .ttnn fixtures need flatc and the SDK: %v", err)
	}
	t.Setenv("MOCK_DEVICES_COUNT", "8") // the fake's visible chips: a T3K for SD3.5's 2x4 mesh
	ctx := context.Background()
	reg := runners.NewRegistry()
	Register(reg)
	worker := func(m Model, weights string, mesh config.MeshShape) runners.Runner {
		s := &config.Settings{DeviceBackend: config.BackendMetal, ModelWeightsPath: weights, WorkerIsolation: config.IsolationProcess,
			DeviceMeshShape: mesh}
		r, err := reg.New(m.String(), runners.WorkerSpec{Mesh: mesh, Settings: s})
		require.NoError(t, err)
		return r
	}
	m11, m24 := config.MeshShape{Rows: 1, Cols: 1}, config.MeshShape{Rows: 2, Cols: 4}
	fails := func(t *testing.T, r runners.Runner, want ...string) {
		t.Helper()
		err := r.Warmup(ctx)
		require.ErrorIs(t, err, runners.ErrConfig, "the worker fails at once instead of retrying")
		require.NotContains(t, err.Error(), "\n")
		for _, w := range want {
			require.Contains(t, err.Error(), w)
		}
		t.Logf("%v", err)
		require.NoError(t, r.Close())
		st, _ := ttnn.FakeRuntime()
		require.Zero(t, st.MeshesOpen, "a failed start-up closes the device")
		require.Zero(t, st.DeviceBuffers)
	}

	t.Run("no tokenizer: a configuration error, not the simulated runner", func(t *testing.T) {
		r := worker(SDXL, t.TempDir(), m11)
		_, simulated := r.(*Runner)
		require.False(t, simulated)
		fails(t, r, "tt-sdxl-trace on DEVICE_BACKEND=metal", "no CLIP tokenizer")
	})
	t.Run("a missing program file", func(t *testing.T) {
		weights := writeTinyWeights(t)
		writeMetalPrograms(t, weights, metalPrograms(SDXL)[:3], nil)
		fails(t, worker(SDXL, weights, m11), "MODEL_WEIGHTS_PATH has no sdxl-vae.ttnn")
	})
	t.Run("a program that differs from its declaration", func(t *testing.T) {
		weights := writeTinyWeights(t)
		writeMetalPrograms(t, weights, metalPrograms(SDXL), func(name string, s *ttnn.ProgramSpec) {
			if name == "sdxl-unet" {
				s.Functions[0].Inputs[2].Shape[2] = 1024
			}
		})
		fails(t, worker(SDXL, weights, m11), "program does not match its declaration: program sdxl-unet (",
			"function forward: input 2 (encoder_hidden_states): shape [2,77,1024] in the file, [2,77,2048] declared")
	})
	t.Run("SD3.5 on a mesh its programs are not declared for", func(t *testing.T) {
		weights := writeTinyWeights(t)
		writeMetalPrograms(t, weights, metalPrograms(SD35), nil)
		fails(t, worker(SD35, weights, m11), "program sd35-text-encoder is declared for a 2x4 mesh; this worker's device is 1x1")
	})

	for _, m := range []Model{SDXL, SDXLImg2Img, SDXLEdit, SD35} {
		t.Run(m.String()+" warms up and serves", func(t *testing.T) {
			weights := writeTinyWeights(t)
			writeMetalPrograms(t, weights, metalPrograms(m), nil)
			mesh := m11
			if m == SD35 {
				mesh = m24
			}
			before, _ := ttnn.FakeRuntime()
			r := worker(m, weights, mesh)
			rr, ok := r.(*Runner)
			require.True(t, ok, "the real pipeline, not the simulated runner: %T", r)
			t.Cleanup(func() { _ = r.Close() })
			require.NoError(t, r.Warmup(ctx))
			warm, _ := ttnn.FakeRuntime()
			require.Equal(t, before.TracesCaptured+1, warm.TracesCaptured, "the denoiser's compile run captured its trace")
			require.Equal(t, ttnn.MeshShape{Rows: mesh.Rows, Cols: mesh.Cols}, warm.LastMesh, "the device opened on the declared mesh")

			req := &runners.ImageRequest{Prompt: "the red ant", NumInferenceSteps: 3, GuidanceScale: 5, Seed: seed(3)}
			if m == SDXLImg2Img || m == SDXLEdit {
				req.InitImage, req.Strength = image.NewNRGBA(image.Rect(0, 0, 48, 32)), 1
				if m == SDXLEdit {
					req.Mask = image.NewGray(image.Rect(0, 0, 48, 32))
				}
			}
			st0 := rr.deviceStats()
			out := r.Run(ctx, []runners.Task{{Ctx: ctx, Request: req}})
			img := image0(t, out[0])
			require.Equal(t, image.Rect(0, 0, 1024, 1024), img.Bounds())
			st := rr.deviceStats()
			require.Equal(t, 3, st.TraceReplays-st0.TraceReplays, "three denoiser runs")
			require.Equal(t, 1, st.VAEDecodes-st0.VAEDecodes)
			served, _ := ttnn.FakeRuntime()
			require.Equal(t, warm.TracesReplayed+3, served.TracesReplayed, "each step replays the compiled-in trace")
			require.Equal(t, warm.TracesCaptured, served.TracesCaptured)
			// The same request, the same image (the fake's outputs are a hash of the inputs).
			again := r.Run(ctx, []runners.Task{{Ctx: ctx, Request: req}})
			require.Equal(t, pix(t, img), pix(t, image0(t, again[0])))

			if m != SD35 {
				lora := r.Run(ctx, []runners.Task{{Ctx: ctx, Request: &runners.ImageRequest{Prompt: "x", NumInferenceSteps: 2,
					Seed: seed(1), LoRAPath: "style.safetensors", LoRAScale: 0.5, InitImage: req.InitImage, Mask: req.Mask, Strength: req.Strength}}})
				require.ErrorIs(t, lora[0].Err, runners.ErrBadRequest)
				require.ErrorContains(t, lora[0].Err, "lora_path is not supported on DEVICE_BACKEND=metal")
			}
			require.NoError(t, r.Close())
			after, _ := ttnn.FakeRuntime()
			require.Zero(t, after.DeviceBuffers, "no device buffer left")
			require.Zero(t, after.Traces, "the trace was released")
			require.Zero(t, after.MeshesOpen)
			require.Equal(t, before.BuffersLeakedAtClose, after.BuffersLeakedAtClose)
			require.Equal(t, before.TracesLeakedAtClose, after.TracesLeakedAtClose)
		})
	}
}
