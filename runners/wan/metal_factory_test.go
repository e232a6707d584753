//go:build cgo

package wan

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
	"github.com/tenstorrent/tt-media-server-go/runners/wan/t2v"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// metalWeights is a MODEL_WEIGHTS_PATH with the UMT5 test model as tokenizer/spiece.model.
func metalWeights(t *testing.T) string {
	t.Helper()
	model, err := os.ReadFile(tokenizerModel(t))
	require.NoError(t, err)
	weights := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(weights, "tokenizer"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(weights, "tokenizer", "spiece.model"), model, 0o644))
	return weights
}

func chips(n int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i
	}
	return ids
}

// TestPipelineFactoryOnMetal: with DEVICE_BACKEND=metal tt-wan2.2 is always the host pipeline
// over MODEL_WEIGHTS_PATH's .ttnn programs, on the device its worker's group and the catalogue
// say (the T3K set on 2x4, the Galaxy's 1280x720 set on 4x8, L1 small 32768, one command queue,
// 1-D fabric, the catalogue's trace region), never the simulated runner; what is missing fails
// the warm-up as a configuration error. (The warm-up itself runs over the fake tt::runtime in
// metal_test.go, -tags ttnn.)
func TestPipelineFactoryOnMetal(t *testing.T) {
	weights := metalWeights(t)
	reg := runners.NewRegistry()
	Register(reg)
	metal := func(w string, iso string) *config.Settings {
		return &config.Settings{DeviceBackend: config.BackendMetal, ModelWeightsPath: w, WorkerIsolation: iso,
			TraceRegionSize: config.DefaultTraceRegionSize}
	}
	t3k, galaxy := config.MeshShape{Rows: 2, Cols: 4}, config.MeshShape{Rows: 4, Cols: 8}
	for _, tc := range []struct {
		name     string
		settings *config.Settings
		mesh     config.MeshShape
		devices  []int
		prefix   string
		ids      []int
		fails    string
		i2v      bool
	}{
		{"T3K in process", metal(weights, config.IsolationInProcess), t3k, chips(8), t2v.Prefix480, chips(8), "", false},
		{"Galaxy in process", metal(weights, config.IsolationInProcess), galaxy, chips(32), t2v.Prefix720, chips(32), "", false},
		{"T3K in a worker process (TT_VISIBLE_DEVICES narrows the chips)", metal(weights, config.IsolationProcess), t3k, chips(8), t2v.Prefix480, nil, "", false},
		{"no MODEL_WEIGHTS_PATH", metal("", config.IsolationInProcess), t3k, chips(8), "", nil,
			"tt-wan2.2 on DEVICE_BACKEND=metal: MODEL_WEIGHTS_PATH is not set", false},
		{"no tokenizer", metal(t.TempDir(), config.IsolationInProcess), t3k, chips(8), "", nil,
			"has no tokenizer/spiece.model or tokenizer/tokenizer.json", false},
		{"tt-wan2.2-i2v (no metal path yet)", metal(weights, config.IsolationInProcess), t3k, chips(8), "", nil,
			"tt-wan2.2-i2v on DEVICE_BACKEND=metal: the Wan2.2 I2V programs have no metal path yet", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := catalogue.RunnerWan22
			if tc.i2v {
				model = catalogue.RunnerWan22I2V
			}
			r, err := reg.New(model, runners.WorkerSpec{WorkerID: "0", Devices: tc.devices, Mesh: tc.mesh, Settings: tc.settings})
			require.NoError(t, err)
			defer func() { require.NoError(t, r.Close()) }()
			if tc.fails != "" {
				_, ok := r.(*simdev.FailedRunner)
				require.True(t, ok, "never the simulated runner: %T", r)
				err := r.Warmup(context.Background())
				require.ErrorIs(t, err, runners.ErrConfig)
				require.ErrorContains(t, err, tc.fails)
				return
			}
			pr, ok := r.(*PipelineRunner)
			require.True(t, ok, "the pipeline, not the simulated runner: %T", r)
			require.Equal(t, config.BackendMetal, pr.backend)
			require.Equal(t, weights, pr.weights)
			require.Equal(t, tc.prefix, pr.prefix)
			m := ttnn.MeshShape{Rows: tc.mesh.Rows, Cols: tc.mesh.Cols}
			require.Equal(t, ttnn.Options{Mesh: m, DeviceIDs: tc.ids, L1SmallSize: 32768, TraceRegionSize: catalogue.DefaultTraceRegionSize,
				CommandQueues: 1, Fabric: ttnn.Fabric1D, ProgramCache: true}, pr.opts)
		})
	}
}
