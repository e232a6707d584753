package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDeviceBackend(t *testing.T) {
	t.Run("python: nothing simulated, workers in processes", func(t *testing.T) {
		s := load(t, env{"DEVICE_BACKEND": "Python", "DEVICE_IDS": "(0),(1)", "MODEL_RUNNER": "tt-whisper",
			"PYTHON_RUNNER_PATH": "/opt/tt-inference-server/tt-media-server"}, true)
		require.False(t, s.Mock)
		require.Equal(t, BackendPython, s.DeviceBackend)
		require.Equal(t, IsolationProcess, s.WorkerIsolation)
		require.Equal(t, "/usr/bin/python3", s.PythonExecutable)
		require.Equal(t, BackendPython, s.PoolBackend(s.Pools[0]))
		require.True(t, s.PythonPools())
		require.Equal(t, "/opt/tt-inference-server/tt-media-server", s.Redacted()["PYTHON_RUNNER_PATH"])
	})
	t.Run("default: the build's backend", func(t *testing.T) {
		s := load(t, env{}, true)
		require.True(t, s.Mock)
		require.Equal(t, "", s.PoolBackend(s.Pools[0]))
		require.False(t, s.PythonPools())
	})
	t.Run("one pool on python", func(t *testing.T) {
		s := load(t, env{"MODEL_POOLS": "tt-sdxl-trace:(0);tt-whisper@python:(1),(2)"}, true)
		require.True(t, s.Mock, "the other pools stay simulated")
		require.Equal(t, "", s.PoolBackend(s.Pools[0]))
		require.Equal(t, BackendPython, s.PoolBackend(s.Pools[1]))
		require.Equal(t, "tt-sdxl-trace:(0);tt-whisper@python:(1),(2)", s.Redacted()["MODEL_POOLS"])
	})
	for _, tc := range []struct {
		env  env
		key  string
		want string
	}{
		{env{"DEVICE_BACKEND": "cuda"}, "DEVICE_BACKEND", "accepted: sim, metal, python"},
		{env{"DEVICE_BACKEND": "metal"}, "DEVICE_BACKEND", "build with -tags ttnn"},
		{env{"DEVICE_BACKEND": "python", "DEVICE_IDS": "(0)", "WORKER_ISOLATION": "inprocess"}, "WORKER_ISOLATION", "runs every runner in a worker process"},
		{env{"DEVICE_BACKEND": "python", "DEVICE_IDS": "(0)", "PYTHON_RUNNER_CLASS": "NoColon"}, "PYTHON_RUNNER_CLASS", "module:Class"},
		{env{"PYTHON_EXECUTABLE": " "}, "PYTHON_EXECUTABLE", "Python 3 interpreter"},
		{env{"MODEL_POOLS": "tt-whisper@metal:(0)"}, "MODEL_POOLS", `backend "metal"`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			_, err := LoadFrom(tc.env.lookup, "", true)
			require.ErrorIs(t, err, ErrInvalid)
			require.Contains(t, err.Error(), tc.key)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}
