package runners

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
)

func TestSimPipelineBlocker(t *testing.T) {
	ok := func(mod func(*config.Settings)) *config.Settings {
		s := &config.Settings{ModelWeightsPath: "/models/x", Mock: true, WorkerIsolation: config.IsolationInProcess,
			DeviceGroups: []config.DeviceGroup{{ID: "0"}}}
		if mod != nil {
			mod(s)
		}
		return s
	}
	twoGroups := func(s *config.Settings) { s.DeviceGroups = []config.DeviceGroup{{ID: "0"}, {ID: "1"}} }
	tests := []struct {
		name         string
		settings     *config.Settings
		sharedParent bool
		want         string
	}{
		{"one in-process group in mock mode with model files", ok(nil), false, ""},
		{"no settings", nil, false, "no settings"},
		{"no model files", ok(func(s *config.Settings) { s.ModelWeightsPath = "" }), false, "MODEL_WEIGHTS_PATH is not set"},
		{"hardware build", ok(func(s *config.Settings) { s.Mock = false }), true, "the pipeline's device programs exist for the simulator only"},
		{"several in-process groups without a parent mesh", ok(twoGroups), false, "several in-process device groups cannot each open the simulator"},
		{"several in-process groups on submeshes", ok(twoGroups), true, ""},
		{"several groups in worker processes", ok(func(s *config.Settings) { twoGroups(s); s.WorkerIsolation = config.IsolationProcess }), false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, SimPipelineBlocker(tc.settings, tc.sharedParent))
		})
	}
}
