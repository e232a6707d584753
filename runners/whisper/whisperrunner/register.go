package whisperrunner

// Registration: which runner a worker gets (the real pipeline, its metal build, or the
// simulated Whisper) and its configuration from the worker spec.

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper/simaudio"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// Register adds tt-whisper to reg: a worker gets the real pipeline when MODEL_WEIGHTS_PATH
// holds the vocabulary and the device can be opened from this worker; otherwise the simulated
// Whisper (simaudio), which is also what MODEL_RUNNER=mock runs for MODEL_SERVICE=audio. With
// DEVICE_BACKEND=metal (a `ttnn` build) it is always the real pipeline on the compiled
// programs of MODEL_WEIGHTS_PATH, or a start-up error naming what is missing.
func Register(reg *runners.Registry) {
	reg.Register(catalogue.RunnerWhisper, factory(simaudio.Factory), simaudio.Factory)
}

func factory(fallback runners.Factory) runners.Factory {
	return func(spec runners.WorkerSpec) (runners.Runner, error) {
		if s := spec.Settings; s != nil && s.DeviceBackend == config.BackendMetal && !s.Mock {
			// Metal: the compiled programs or an error saying what is missing, never the
			// simulated runner a Tenstorrent user did not ask for.
			return New(metalConfigFor(spec))
		}
		why := runners.SimPipelineBlocker(spec.Settings, spec.Parent != nil)
		if why == "" {
			r, err := New(configFor(spec))
			switch {
			case err == nil:
				return r, nil
			case errors.Is(err, ErrNoVocabulary):
				why = err.Error()
			default:
				return nil, err
			}
		}
		if fallback == nil {
			return nil, fmt.Errorf("%s: %s, and no fallback runner is registered", catalogue.RunnerWhisper, why)
		}
		slog.Debug("whisper runner: using the simulated Whisper runner", "worker", spec.WorkerID, "reason", why)
		return fallback(spec)
	}
}

// metalConfigFor is the runner configuration of one worker on the metal backend: the device
// of its own (the server's in-process parent mesh is the simulator's), the programs and the
// vocabulary from MODEL_WEIGHTS_PATH.
func metalConfigFor(spec runners.WorkerSpec) Config {
	s := spec.Settings
	mesh := ttnn.MeshShape{Rows: spec.Mesh.Rows, Cols: spec.Mesh.Cols}
	c := Config{WeightsDir: s.ModelWeightsPath, Backend: config.BackendMetal, Device: simdev.Options(model, s, mesh),
		Logger: slog.Default(), MaxBatchSize: s.MaxBatchSize}
	if s.WorkerIsolation != config.IsolationProcess && len(spec.Devices) >= c.Device.Mesh.Chips() {
		c.Device.DeviceIDs = append([]int(nil), spec.Devices[:c.Device.Mesh.Chips()]...)
	}
	return c
}

// DeviceInfo describes the open device; ok is false before Warmup or after Close.
func (r *Runner) DeviceInfo() (ttnn.DeviceInfo, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dev == nil {
		return ttnn.DeviceInfo{}, false
	}
	return r.dev.Info(), true
}

// configFor is the runner configuration of one worker.
func configFor(spec runners.WorkerSpec) Config {
	s := spec.Settings
	mesh := ttnn.MeshShape{Rows: spec.Mesh.Rows, Cols: spec.Mesh.Cols}
	c := Config{WeightsDir: s.ModelWeightsPath, Backend: "sim", Device: simdev.Options(model, s, mesh), Logger: slog.Default(), MaxBatchSize: s.MaxBatchSize}
	if spec.Parent != nil {
		c.Device.DeviceIDs, c.Parent = spec.Devices, spec.Parent
	}
	// The simulator's time follows MOCK_AUDIO_SECONDS_PER_SECOND, as the simulated runner's.
	c.Device.SimLatencyScale = ttnn.SimScale(runners.MockLatency(model, s).Seconds(), model.Sim.PipelineUnit())
	return c
}
