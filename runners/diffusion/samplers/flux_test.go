package samplers

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/internal/shareddata"
)

const fluxHint = "make them with scripts/ensure-flux-goldens.sh (Debian python3-torch + ../shared/diffusers-58eb52c)"

type fluxGolden struct {
	Configs map[string]FlowMatchConfig `json:"scheduler_configs"`
	Runs    []struct {
		Model          string    `json:"model"`
		Height         int       `json:"height"`
		Width          int       `json:"width"`
		Steps          int       `json:"num_inference_steps"`
		ImageSeqLen    int       `json:"image_seq_len"`
		Mu             float64   `json:"mu"`
		PipelineSigmas []float64 `json:"pipeline_sigmas"`
		Timesteps      []float64 `json:"timesteps"`
		Sigmas         []float64 `json:"sigmas"`
	} `json:"runs"`
	Step struct {
		Mu          float64     `json:"mu"`
		Sample      []float64   `json:"sample"`
		ModelOutput []float64   `json:"model_output"`
		After       [][]float64 `json:"after_each_step"`
	} `json:"step"`
}

func readFluxGolden(t *testing.T) fluxGolden {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(shareddata.Generated(t, "flux", fluxHint), "schedule.json"))
	require.NoError(t, err)
	var g fluxGolden
	require.NoError(t, json.Unmarshal(b, &g))
	require.NotEmpty(t, g.Runs)
	return g
}

// TestFluxScheduleGolden checks FluxPipeline's schedule bit for bit against diffusers: the
// pipeline's linspace sigmas, calculate_shift's mu from the image sequence length, and the
// scheduler's timesteps and sigmas (FLUX.1-dev's dynamic shift, FLUX.1-schnell's shift 1), over
// resolutions, step counts and custom sigmas.
func TestFluxScheduleGolden(t *testing.T) {
	g := readFluxGolden(t)
	cfgs := map[string]FlowMatchConfig{"dev": FluxDevFlowMatchConfig(), "schnell": FluxSchnellFlowMatchConfig()}
	for name, c := range cfgs {
		require.Equal(t, g.Configs[name], c, "the %s scheduler configuration", name)
	}
	for _, r := range g.Runs {
		f, err := NewFlowMatch(cfgs[r.Model])
		require.NoError(t, err)
		require.Equal(t, r.ImageSeqLen, (r.Height/16)*(r.Width/16))
		require.Equal(t, r.Mu, f.Mu(r.ImageSeqLen), "%s %dx%d: mu", r.Model, r.Height, r.Width)
		sigmas := r.PipelineSigmas
		if r.Steps > 0 {
			sigmas, err = FluxSigmas(r.Steps)
			require.NoError(t, err)
			require.Equal(t, r.PipelineSigmas, sigmas, "%s %d steps: the pipeline's sigmas", r.Model, r.Steps)
		}
		s, err := f.ScheduleFromSigmasMu(sigmas, f.Mu(r.ImageSeqLen))
		require.NoError(t, err)
		require.Equal(t, f32s(r.Timesteps), s.Timesteps, "%s %dx%d %d steps: timesteps", r.Model, r.Height, r.Width, r.Steps)
		require.Equal(t, f32s(r.Sigmas), s.Sigmas, "%s %dx%d %d steps: sigmas", r.Model, r.Height, r.Width, r.Steps)
	}
	// The Euler step on a dev schedule, every index.
	f, err := NewFlowMatch(FluxDevFlowMatchConfig())
	require.NoError(t, err)
	sig, err := FluxSigmas(len(g.Step.After))
	require.NoError(t, err)
	s, err := f.ScheduleFromSigmasMu(sig, g.Step.Mu)
	require.NoError(t, err)
	x, v := f32s(g.Step.Sample), f32s(g.Step.ModelOutput)
	for i, want := range g.Step.After {
		require.NoError(t, s.Step(x, v, x, i))
		require.Equal(t, f32s(want), x, "step %d", i)
	}
}

func TestFluxScheduleErrors(t *testing.T) {
	dev, err := NewFlowMatch(FluxDevFlowMatchConfig())
	require.NoError(t, err)
	_, err = dev.Schedule(4)
	require.ErrorIs(t, err, ErrConfig, "dynamic shifting needs mu")
	_, err = dev.ScheduleFromSigmas([]float64{1, 0.5})
	require.ErrorIs(t, err, ErrConfig)
	_, err = dev.ScheduleFromTimesteps([]float64{1000, 500})
	require.ErrorIs(t, err, ErrConfig)
	for _, bad := range [][]float64{nil, {1, math.NaN()}} {
		_, err = dev.ScheduleFromSigmasMu(bad, 1)
		require.ErrorIs(t, err, ErrSteps)
	}
	_, err = dev.ScheduleFromSigmasMu([]float64{1}, math.NaN())
	require.ErrorIs(t, err, ErrSteps)
	for _, n := range []int{0, -1, 1<<16 + 1} {
		_, err = FluxSigmas(n)
		require.ErrorIs(t, err, ErrSteps)
	}
	bad := FluxDevFlowMatchConfig()
	bad.MaxImageSeqLen = bad.BaseImageSeqLen
	_, err = NewFlowMatch(bad)
	require.ErrorIs(t, err, ErrConfig)
	// Schnell's static shift of 1 leaves the pipeline's sigmas as they are, whatever mu.
	sch, err := NewFlowMatch(FluxSchnellFlowMatchConfig())
	require.NoError(t, err)
	sig, err := FluxSigmas(4)
	require.NoError(t, err)
	s, err := sch.ScheduleFromSigmasMu(sig, 7)
	require.NoError(t, err)
	require.Equal(t, []float32{1000, 750, 500, 250}, s.Timesteps)
	require.Equal(t, []float32{1, 0.75, 0.5, 0.25, 0}, s.Sigmas)
}
