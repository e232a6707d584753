//go:build cgo

package wan

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/internal/simtest"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/wan/i2v"
	"github.com/tenstorrent/tt-media-server-go/runners/wan/t2v"
	"github.com/tenstorrent/tt-media-server-go/runners/wan/umt5"
	"github.com/tenstorrent/tt-media-server-go/runners/wan/wangolden"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

func TestMain(m *testing.M) {
	simtest.Setup(1, "0.0001")
	os.Exit(m.Run())
}

// tokenizerModel is the UMT5-layout test model the golden script trains.
func tokenizerModel(t *testing.T) string {
	t.Helper()
	return wangolden.Path(t, "umt5_test.model")
}

func smallRunner(t *testing.T) *PipelineRunner {
	t.Helper()
	tok, err := umt5.Load(tokenizerModel(t))
	require.NoError(t, err)
	r := NewPipelineRunner(catalogue.RunnerWan22, 16, tok, ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 1}, L1SmallSize: 32768,
		TraceRegionSize: 25_000_000, CommandQueues: 1, ProgramCache: true}, os.DirFS("t2v/testdata/smallwan"), t2v.Prefix480)
	require.NoError(t, r.Warmup(context.Background()))
	t.Cleanup(func() {
		require.NoError(t, r.Close())
		c, err := ttnn.Counts()
		require.NoError(t, err)
		require.Zero(t, c.Devices+c.Programs+c.Tensors, "the runner frees everything")
	})
	return r
}

func runOne(ctx context.Context, r runners.Runner, req *runners.VideoRequest, progress func(int, int)) (*runners.VideoResult, error) {
	out := r.Run(ctx, []runners.Task{{Ctx: ctx, Request: req, Progress: progress}})
	if out[0].Err != nil {
		return nil, out[0].Err
	}
	return out[0].Value.(*runners.VideoResult), nil
}

// TestPipelineRunner: tt-wan2.2's Go-road runner renders a clip through the host pipeline on
// the simulator (the shrunk programs): progress from 0 to the last step, the warm-up's and the
// clip's program runs, a clip deterministic in prompt and seed, resized to the request's size
// and frame count, cancellation at the next step, I2V images refused.
func TestPipelineRunner(t *testing.T) {
	r := smallRunner(t)
	warm := r.Stats()
	require.Equal(t, t2v.TTNNStats{Encodes: 2, Runs: [3]int{0, 2, 2}, VAEs: 1}, warm, "warm-up: 2 steps, two runs each: t=999 on the high-noise expert, t=923 (flow_shift 12: above the 875 boundary) on the low-noise one by tt-metal's 2-step rule (catalogue.Wan22Sampling)")
	ctx := context.Background()
	req := &runners.VideoRequest{Prompt: "a red fox in snow", Steps: 4, Seed: 7, Width: 48, Height: 64, Frames: 17}
	var seen []int
	a, err := runOne(ctx, r, req, func(done, total int) {
		require.Equal(t, 4, total)
		seen = append(seen, done)
	})
	require.NoError(t, err)
	require.Equal(t, []int{0, 1, 2, 3, 4}, seen)
	require.Equal(t, 16, a.FPS)
	require.Len(t, a.Frames, 17)
	require.Len(t, a.Frames[0], 48*64*3)
	require.NotEqual(t, a.Frames[0], a.Frames[16], "the clip moves")
	st := r.Stats()
	require.Equal(t, warm.Encodes+2, st.Encodes)
	require.Equal(t, warm.VAEs+1, st.VAEs)
	require.Equal(t, 8, st.Runs[1]+st.Runs[2]-warm.Runs[1]-warm.Runs[2], "4 steps of 2 runs")
	b, err := runOne(ctx, r, req, nil)
	require.NoError(t, err)
	require.Equal(t, a.Frames, b.Frames, "deterministic")
	for _, other := range []*runners.VideoRequest{
		{Prompt: "a red fox in snow", Steps: 4, Seed: 8, Width: 48, Height: 64, Frames: 17},
		{Prompt: "a whale in the sky", Steps: 4, Seed: 7, Width: 48, Height: 64, Frames: 17},
	} {
		c, err := runOne(ctx, r, other, nil)
		require.NoError(t, err)
		require.NotEqual(t, a.Frames, c.Frames, "%+v reaches the clip", other)
	}
	small, err := runOne(ctx, r, &runners.VideoRequest{Prompt: "x", Steps: 2, Width: 24, Height: 32, Frames: 9}, nil)
	require.NoError(t, err)
	require.Len(t, small.Frames, 9)
	require.Len(t, small.Frames[0], 24*32*3)

	cctx, cancel := context.WithCancel(ctx)
	_, err = runOne(cctx, r, &runners.VideoRequest{Prompt: "x", Steps: 10, Width: 48, Height: 64, Frames: 17}, func(done, _ int) {
		if done == 2 {
			cancel()
		}
	})
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "before step 3 of 10")

	_, err = runOne(ctx, r, &runners.VideoRequest{Prompt: "x", Steps: 2, Width: 48, Height: 64, Frames: 17,
		Images: []runners.VideoImage{{FramePos: 0}}}, nil)
	require.ErrorIs(t, err, runners.ErrBadRequest)
	require.ErrorContains(t, err, "image_prompts")
}

// TestPipelineFactory: tt-wan2.2 (and tt-wan2.2-i2v, with the I2V sets) gets the pipeline runner when MODEL_WEIGHTS_PATH has the UMT5
// tokenizer in mock-device mode, the simulated runner otherwise; Register wires it so.
func TestPipelineFactory(t *testing.T) {
	model, err := os.ReadFile(tokenizerModel(t))
	require.NoError(t, err)
	weights := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(weights, "tokenizer"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(weights, "tokenizer", "spiece.model"), model, 0o644))
	require.Equal(t, filepath.Join(weights, "tokenizer", "spiece.model"), TokenizerPath(weights))
	require.Empty(t, TokenizerPath(t.TempDir()))
	reg := runners.NewRegistry()
	Register(reg)
	one := []config.DeviceGroup{{ID: "0", Devices: []int{0}}}
	galaxy := []config.DeviceGroup{{ID: "0", Devices: make([]int, 32)}}
	for _, tc := range []struct {
		name     string
		settings config.Settings
		mesh     config.MeshShape
		pipeline bool
		prefix   string
		unit     float64
		i2v      bool
	}{
		{"weights with the tokenizer", config.Settings{Mock: true, ModelWeightsPath: weights, DeviceGroups: one, MockStepLatency: 500 * time.Millisecond},
			config.MeshShape{Rows: 1, Cols: 1}, true, t2v.Prefix480, catalogue.Wan22GuidedStep, false},
		{"a Galaxy mesh", config.Settings{Mock: true, ModelWeightsPath: weights, DeviceGroups: galaxy, MockStepLatency: 500 * time.Millisecond},
			config.MeshShape{Rows: 4, Cols: 8}, true, t2v.Prefix720, catalogue.Wan22GuidedStepGalaxy, false},
		{"weights without it", config.Settings{Mock: true, ModelWeightsPath: t.TempDir(), DeviceGroups: one}, config.MeshShape{Rows: 1, Cols: 1}, false, "", 0, false},
		{"no weights path", config.Settings{Mock: true, DeviceGroups: one}, config.MeshShape{Rows: 1, Cols: 1}, false, "", 0, false},
		// tt-wan2.2-i2v: the I2V sets, on the same conditions.
		{"I2V, weights with the tokenizer", config.Settings{Mock: true, ModelWeightsPath: weights, DeviceGroups: one, MockStepLatency: 500 * time.Millisecond},
			config.MeshShape{Rows: 1, Cols: 1}, true, i2v.Prefix480, catalogue.Wan22GuidedStep, true},
		{"I2V, a Galaxy mesh", config.Settings{Mock: true, ModelWeightsPath: weights, DeviceGroups: galaxy, MockStepLatency: 500 * time.Millisecond},
			config.MeshShape{Rows: 4, Cols: 8}, true, i2v.Prefix720, catalogue.Wan22GuidedStepGalaxy, true},
		{"I2V, weights without it", config.Settings{Mock: true, ModelWeightsPath: t.TempDir(), DeviceGroups: one}, config.MeshShape{Rows: 1, Cols: 1}, false, "", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := catalogue.RunnerWan22
			if tc.i2v {
				model = catalogue.RunnerWan22I2V
			}
			r, err := reg.New(model, runners.WorkerSpec{WorkerID: "0", Devices: tc.settings.DeviceGroups[0].Devices, Mesh: tc.mesh, Settings: &tc.settings})
			require.NoError(t, err)
			pr, isPipe := r.(*PipelineRunner)
			require.Equal(t, tc.pipeline, isPipe)
			if isPipe {
				// 1280x720 programs on a Galaxy-class mesh; MOCK_STEP_SECONDS (0.5 s here) over the
				// catalogue's guided step of that set.
				require.Equal(t, tc.prefix, pr.prefix)
				require.Equal(t, tc.i2v, pr.i2v)
				require.InDelta(t, 0.5/tc.unit, pr.opts.SimLatencyScale, 1e-12)
			}
			require.NoError(t, r.Close())
		})
	}
}
