package config

import "strings"

// DEVICE_BACKEND values.
const (
	BackendSim    = "sim"
	BackendMetal  = "metal"
	BackendPython = "python"
)

// checkBackend validates DEVICE_BACKEND and the Python worker settings.
func checkBackend(s *Settings) error {
	switch s.DeviceBackend {
	case "", BackendSim:
	case BackendMetal:
		if s.Mock {
			return invalid("DEVICE_BACKEND", s.DeviceBackend, "this build has only the simulator: build with -tags ttnn for metal, or use %s (Tenstorrent's Python runners)", BackendPython)
		}
	case BackendPython:
		if s.WorkerIsolation != IsolationProcess {
			return invalid("WORKER_ISOLATION", s.WorkerIsolation, "DEVICE_BACKEND=python runs every runner in a worker process; leave it unset or %s", IsolationProcess)
		}
	default:
		return invalid("DEVICE_BACKEND", s.DeviceBackend, "accepted: %s, %s, %s", BackendSim, BackendMetal, BackendPython)
	}
	if s.PythonExecutable == "" {
		return invalid("PYTHON_EXECUTABLE", s.PythonExecutable, "must name a Python 3 interpreter")
	}
	if c := s.PythonRunnerClass; c != "" {
		if mod, cls, ok := strings.Cut(c, ":"); !ok || strings.TrimSpace(mod) == "" || strings.TrimSpace(cls) == "" {
			return invalid("PYTHON_RUNNER_CLASS", c, "must be module:Class (e.g. tt_model_runners.whisper_runner:TTWhisperRunner)")
		}
	}
	return nil
}

// PoolBackend is the backend the pool's runners use: "python" when DEVICE_BACKEND=python or
// the MODEL_POOLS entry says runner@python; otherwise the build's device backend ("").
func (s *Settings) PoolBackend(p Pool) string {
	if p.Backend != "" {
		return p.Backend
	}
	if s.DeviceBackend == BackendPython {
		return BackendPython
	}
	return ""
}

// PythonPools reports whether any pool runs Python workers.
func (s *Settings) PythonPools() bool {
	for _, p := range s.Pools {
		if s.PoolBackend(p) == BackendPython {
			return true
		}
	}
	return false
}
