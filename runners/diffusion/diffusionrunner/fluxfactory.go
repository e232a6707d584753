package diffusionrunner

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/diffusionpipeline"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
)

// FluxFactory is the registry factory of the Flux.1 runner catalogued as name (tt-flux.1-dev
// or tt-flux.1-schnell) for variant v, chosen per worker as factory() chooses SDXL's and
// SD3.5's: on DEVICE_BACKEND=metal the FluxRunner over MODEL_WEIGHTS_PATH's .ttnn programs
// (never a fallback); on the simulator the FluxRunner over the simulator's Flux programs when
// MODEL_WEIGHTS_PATH holds both tokenizers and the device can be opened from this worker, else
// fallback (the simulated image runner). The device options and the simulator's time per step
// come from name's catalogue entry (Device, Sim.PipelineUnit: the flux1-*-transformer
// manifest's 470 ms, scaled to MOCK_STEP_SECONDS).
func FluxFactory(name string, v diffusionpipeline.FluxVariant, fallback runners.Factory) runners.Factory {
	return func(spec runners.WorkerSpec) (runners.Runner, error) {
		s := spec.Settings
		entry, ok := runners.Lookup(name, s)
		if !ok {
			return nil, fmt.Errorf("%s: not in the catalogue", name)
		}
		if s != nil && s.DeviceBackend == config.BackendMetal && !s.Mock {
			if s.ModelWeightsPath == "" {
				return &simdev.FailedRunner{Err: runners.Permanent(fmt.Errorf("%s on DEVICE_BACKEND=metal: MODEL_WEIGHTS_PATH is not set (it must hold the tokenizers and the .ttnn programs, docs/DEVICE-PROGRAMS.md)", name))}, nil
			}
			c := fluxConfigFor(entry, v, spec)
			c.Backend, c.Device.SimLatencyScale = config.BackendMetal, 0
			r, err := NewFlux(c)
			if err != nil {
				return &simdev.FailedRunner{Err: runners.Permanent(fmt.Errorf("%s on DEVICE_BACKEND=metal: %w", name, err))}, nil
			}
			slog.Info("diffusion runner: Flux pipeline on the metal backend", "runner", name, "worker", spec.WorkerID, "weights", s.ModelWeightsPath)
			return r, nil
		}
		why := runners.SimPipelineBlocker(s, spec.Parent != nil)
		if why == "" {
			r, err := NewFlux(fluxConfigFor(entry, v, spec))
			switch {
			case err == nil:
				slog.Info("diffusion runner: Flux pipeline on the device", "runner", name, "worker", spec.WorkerID, "weights", s.ModelWeightsPath)
				return r, nil
			case errors.Is(err, ErrNoTokenizer) || errors.Is(err, errNoT5):
				why = err.Error()
			default:
				return nil, err
			}
		}
		if fallback == nil {
			return nil, fmt.Errorf("%s: %s, and no fallback runner is registered", name, why)
		}
		slog.Info("diffusion runner: using the simulated image runner", "runner", name, "worker", spec.WorkerID, "reason", why)
		return fallback(spec)
	}
}

// fluxConfigFor is the FluxRunner configuration of one worker on the simulator.
func fluxConfigFor(entry runners.Model, v diffusionpipeline.FluxVariant, spec runners.WorkerSpec) FluxConfig {
	return FluxConfig{Variant: v, Setup: setupFor(entry, spec)}
}
