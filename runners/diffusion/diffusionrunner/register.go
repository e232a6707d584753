package diffusionrunner

// Registration: which runner a worker gets for tt-sdxl-trace / tt-sd3.5 (the real pipeline on
// the simulator or on metal programs, or the simulated image runner) and its configuration
// from the worker spec.

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/diffusionpipeline"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/simimage"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
)

// Register adds tt-sdxl-trace and tt-sd3.5 to reg: a worker gets the real pipeline when
// MODEL_WEIGHTS_PATH holds the tokenizers and the device can be opened from this worker (a
// worker process, or one device group, or a shared parent mesh); otherwise the simulated
// model (simimage), which is also what MODEL_RUNNER=mock runs for MODEL_SERVICE=image.
func Register(reg *runners.Registry) {
	// Flux.1 dev and schnell get FluxFactory (the real FluxPipeline when MODEL_WEIGHTS_PATH has
	// both tokenizers, else the simulated twin); the catalogue's other image models (HEAD's
	// tt-dit and Z-Image runners) are served by the simulated twin in mock-device mode
	// (DEVICE_BACKEND=python hosts HEAD's class).
	for _, m := range catalogue.Models() {
		if m.Service != catalogue.ServiceImage {
			continue
		}
		simulated := simimage.Factory(m.Name)
		switch m.Name {
		case catalogue.RunnerFlux1Dev:
			reg.Register(m.Name, FluxFactory(m.Name, diffusionpipeline.FluxDev, simulated), simulated)
		case catalogue.RunnerFlux1Schnell:
			reg.Register(m.Name, FluxFactory(m.Name, diffusionpipeline.FluxSchnell, simulated), simulated)
		default:
			reg.Register(m.Name, simulated, simulated)
		}
	}
	for _, m := range []Model{SDXL, SD35, SDXLImg2Img, SDXLEdit} {
		simulated := simimage.Factory(m.String())
		reg.Register(m.String(), factory(m, simulated), simulated)
	}
}

func factory(m Model, fallback runners.Factory) runners.Factory {
	return func(spec runners.WorkerSpec) (runners.Runner, error) {
		s := spec.Settings
		if s != nil && s.DeviceBackend == config.BackendMetal && !s.Mock {
			return newMetal(m, spec), nil
		}
		why := runners.SimPipelineBlocker(s, spec.Parent != nil)
		if why == "" && m != SD35 && s.SDXLResolution == 512 {
			// The SDXL device programs are declared for 1024x1024 (128x128 latents) only.
			why = "SDXL_IMAGE_RESOLUTION=(512, 512): the SDXL device programs exist for 1024x1024 only"
		}
		var r *Runner
		if why == "" {
			var err error
			r, err = New(configFor(m, spec))
			switch {
			case errors.Is(err, ErrNoTokenizer):
				why = err.Error()
			case err != nil:
				return nil, err
			}
		}
		if r != nil {
			slog.Info("diffusion runner: real pipeline on the device", "runner", m.String(), "worker", spec.WorkerID,
				"weights", s.ModelWeightsPath, "t5", r.tok.t5 != nil)
			return r, nil
		}
		if fallback == nil {
			return nil, fmt.Errorf("%s: %s, and no fallback runner is registered", m, why)
		}
		slog.Info("diffusion runner: using the simulated image runner", "runner", m.String(), "worker", spec.WorkerID, "reason", why)
		return fallback(spec)
	}
}

// newMetal is the runner of a worker on the metal backend (DEVICE_BACKEND=metal, a `ttnn`
// build): the real host pipeline over the .ttnn programs of MODEL_WEIGHTS_PATH, never the
// simulated runner. What stops it (no weights directory, no tokenizer, a resolution the programs
// are not declared for) fails the worker's warm-up as a configuration error, not retried.
func newMetal(m Model, spec runners.WorkerSpec) runners.Runner {
	s := spec.Settings
	fail := func(why string) runners.Runner {
		return &simdev.FailedRunner{Err: runners.Permanent(fmt.Errorf("%s on DEVICE_BACKEND=metal: %s", m, why))}
	}
	switch {
	case s.ModelWeightsPath == "":
		return fail("MODEL_WEIGHTS_PATH is not set (it must hold the tokenizers and the .ttnn programs, docs/DEVICE-PROGRAMS.md)")
	case m != SD35 && s.SDXLResolution == 512:
		return fail("SDXL_IMAGE_RESOLUTION=(512, 512): the SDXL device programs are declared for 1024x1024 only")
	}
	c := configFor(m, spec)
	c.Backend, c.Device.SimLatencyScale = config.BackendMetal, 0
	r, err := New(c)
	if err != nil {
		return fail(err.Error())
	}
	slog.Info("diffusion runner: real pipeline on the metal backend", "runner", m.String(), "worker", spec.WorkerID,
		"weights", s.ModelWeightsPath, "t5", r.tok.t5 != nil)
	return r
}

// backend is the ttnn backend the runner drives ("sim" when not set).
func (r *Runner) backend() string {
	if r.cfg.Backend == "" {
		return config.BackendSim
	}
	return r.cfg.Backend
}

// configFor is the runner configuration of one worker.
func configFor(m Model, spec runners.WorkerSpec) Config {
	s := spec.Settings
	return Config{Model: m, Setup: setupFor(m.catalogued(), spec), LoRARoot: s.LoRARoot, LoRAMaxFileBytes: s.LoRAMaxFileBytes}
}
