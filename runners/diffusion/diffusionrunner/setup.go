package diffusionrunner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/diffusionpipeline"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/preview"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// Setup is what every runner of this package (Config, FluxConfig) is configured with besides
// its model: the weights, the device it opens, the programs it loads.
type Setup struct {
	// WeightsDir is the model directory in Hugging Face layout: tokenizer/ (CLIP), then
	// tokenizer_3/ (SD3.5's T5) or tokenizer_2/ (Flux's T5, required: Flux has no embeddings
	// without it).
	WeightsDir string
	// Backend is the ttnn backend ("sim" or "metal"; "" = "sim").
	Backend string
	// Device are the device open options (the catalogue's: simdev.Options, DeviceOptions).
	Device ttnn.Options
	// Parent, when not nil, is the server's parent mesh (in process): the runner opens the
	// submesh of Devices. nil opens a device of its own.
	Parent *ttnn.Device
	// Devices are the group's chips: under a parent mesh (Parent, in process) the runner opens
	// the submesh of these chips.
	Devices []int
	// Programs is the device program set; nil means the pipeline's full-size set.
	Programs fs.FS
	// DefaultSteps is used for requests without num_inference_steps (0 = 20).
	DefaultSteps int
	// Logger may be nil.
	Logger *slog.Logger
}

// setupFor is one worker's Setup on the simulator for the catalogue entry: the catalogue's
// device options, with the simulator's time following MOCK_STEP_SECONDS per denoising step, as
// the simulated runner's.
func setupFor(entry runners.Model, spec runners.WorkerSpec) Setup {
	s := spec.Settings
	mesh := ttnn.MeshShape{Rows: spec.Mesh.Rows, Cols: spec.Mesh.Cols}
	c := Setup{WeightsDir: s.ModelWeightsPath, Backend: config.BackendSim, DefaultSteps: s.NumInferenceSteps,
		Device: simdev.Options(entry, s, mesh), Devices: spec.Devices, Parent: spec.Parent, Logger: slog.Default()}
	c.Device.SimLatencyScale = ttnn.SimScale(runners.MockLatency(entry, s).Seconds(), entry.Sim.PipelineUnit())
	return c
}

// withDefaults fills DefaultSteps when not set and returns the logger (a discarding one when
// Logger is nil).
func (s *Setup) withDefaults() *slog.Logger {
	if s.DefaultSteps <= 0 {
		s.DefaultSteps = defaultSteps
	}
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

// openDevice initialises the backend and opens the group's device (the submesh of Devices on
// Parent, or a device of its own); it returns the options it opened with.
func (s *Setup) openDevice(ctx context.Context) (*ttnn.Device, ttnn.Options, error) {
	if err := ttnn.Init(s.Backend); err != nil {
		return nil, ttnn.Options{}, fmt.Errorf("device backend: %w", err)
	}
	opts := s.Device
	if s.Parent != nil && opts.DeviceIDs == nil {
		opts.DeviceIDs = s.Devices
	}
	dev, err := simdev.OpenDevice(ctx, s.Parent, opts)
	if err != nil {
		return dev, opts, fmt.Errorf("open device (mesh %v, l1_small_size %d, trace_region_size %d): %w",
			opts.Mesh, opts.L1SmallSize, opts.TraceRegionSize, simdev.DeviceErr(err))
	}
	return dev, opts, nil
}

// taskContext is the context a task runs under: its own (none is Background), also ended, with
// its cause, when the batch context ctx ends. done releases it.
func taskContext(ctx context.Context, t runners.Task) (_ context.Context, done func()) {
	parent := t.Ctx
	if parent == nil {
		parent = context.Background()
	}
	tctx, cancel := context.WithCancelCause(parent)
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	if ctx.Err() != nil {
		// AfterFunc calls its function in a goroutine of its own, perhaps only after the
		// whole image is made: a batch context that has already ended ends the task now.
		cancel(context.Cause(ctx))
	}
	return tctx, func() {
		stop()
		cancel(nil)
	}
}

// stepHooks reports the task's progress after every step and emits the latent previews its
// request asks for (partialImages), rendered from latents of spec (channels, height, width);
// its errors start with prefix. ctx is the task's context: a preview the stream cannot carry
// fails the image only when ctx has ended, else the image finishes without previews.
func stepHooks(ctx context.Context, t runners.Task, partialImages int, spec [3]int, prefix string) diffusionpipeline.Hooks {
	var at []int // steps after which a preview is due
	sent := 0
	return diffusionpipeline.Hooks{Step: func(step, total int, denoised func() []float32) error {
		if t.Progress != nil {
			t.Progress(step, total)
		}
		if step == 1 && t.Emit != nil {
			at = preview.Steps(total, partialImages)
		}
		if sent >= len(at) || at[sent] != step {
			return nil
		}
		img, err := preview.Render(denoised(), spec[0], spec[1], spec[2], previewScale)
		if err != nil {
			return fmt.Errorf("%spreview: %w", prefix, err)
		}
		if err := t.Emit(&runners.ImagePartial{Index: sent, Step: step, Steps: total, Image: img}); err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return fmt.Errorf("%spartial image %d after step %d: %w", prefix, sent, step, errors.Join(err, cerr))
			}
			at = nil // the stream cannot carry previews: finish the image without them
		}
		sent++
		return nil
	}}
}
