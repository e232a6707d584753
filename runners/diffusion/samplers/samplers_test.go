package samplers

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/internal/shareddata"
)

// testdataDir returns ../shared/testdata/<sub> relative to the repository root, or skips.
func testdataDir(t testing.TB, sub string) string {
	t.Helper()
	return shareddata.Dir(t, sub)
}

func readGolden(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testdataDir(t, "schedulers"), name))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, v))
}

type goldenRun struct {
	N              int       `json:"num_inference_steps"`
	Timesteps      []float64 `json:"timesteps"`
	Sigmas         []float64 `json:"sigmas"`
	SigmaBits      []string  `json:"sigmas_f32_bits"`
	InitNoiseSigma float64   `json:"init_noise_sigma"`
	ScaleFactor    []float64 `json:"scale_model_input_factor"`
}

type goldenStep struct {
	Step       int       `json:"step"`
	Timestep   float64   `json:"timestep"`
	Sigma      float64   `json:"sigma"`
	SigmaNext  float64   `json:"sigma_next"`
	SampleIn   []float64 `json:"sample_in"`
	ScaledIn   []float64 `json:"scale_model_input_out"`
	ModelOut   []float64 `json:"model_output"`
	PrevSample []float64 `json:"prev_sample"`
	PredOrig   []float64 `json:"pred_original_sample"`
}

type goldenFile struct {
	ConfigAfterInit map[string]any `json:"config_after_init"`
	Training        struct {
		AlphasCumprod []float64 `json:"alphas_cumprod_f32"`
		TrainSigmas   []float64 `json:"train_sigmas_f32"`
	} `json:"training_tables"`
	SigmaMax  float64     `json:"sigma_max"`
	SigmaMin  float64     `json:"sigma_min"`
	Runs      []goldenRun `json:"runs"`
	StepCheck struct {
		N     int          `json:"num_inference_steps"`
		Steps []goldenStep `json:"steps"`
	} `json:"step_check"`
}

func f32s(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// requireBits checks float32 equality bit for bit (JSON holds the shortest float64 text of
// each float32, so float32(parsed) is exact).
func requireBits(t *testing.T, want []float64, got []float32, what string) {
	t.Helper()
	require.Len(t, got, len(want), what)
	for i := range want {
		require.Equal(t, math.Float32bits(float32(want[i])), math.Float32bits(got[i]),
			"%s[%d]: want %v got %v", what, i, float32(want[i]), got[i])
	}
}

func TestEulerConfigMatchesGolden(t *testing.T) {
	var g goldenFile
	readGolden(t, "euler_discrete_sdxl.json", &g)
	c := SDXLEulerConfig()
	want := map[string]any{
		"num_train_timesteps": float64(c.NumTrainTimesteps), "beta_start": c.BetaStart, "beta_end": c.BetaEnd,
		"beta_schedule": c.BetaSchedule, "prediction_type": c.PredictionType, "interpolation_type": c.InterpolationType,
		"timestep_spacing": c.TimestepSpacing, "steps_offset": float64(c.StepsOffset), "final_sigmas_type": c.FinalSigmasType,
		"use_karras_sigmas": c.UseKarrasSigmas, "use_exponential_sigmas": false, "use_beta_sigmas": false,
		"rescale_betas_zero_snr": false, "timestep_type": "discrete", "trained_betas": nil, "sigma_min": nil, "sigma_max": nil,
	}
	for k, v := range want {
		require.Equal(t, v, g.ConfigAfterInit[k], k)
	}
}

func TestEulerTrainingTables(t *testing.T) {
	var g goldenFile
	readGolden(t, "euler_discrete_sdxl.json", &g)
	e, err := NewEuler(SDXLEulerConfig())
	require.NoError(t, err)
	requireBits(t, g.Training.AlphasCumprod, e.AlphasCumprod(), "alphas_cumprod")
	requireBits(t, g.Training.TrainSigmas, e.TrainSigmas(), "train_sigmas")
}

func TestEulerGoldenRuns(t *testing.T) {
	var g goldenFile
	readGolden(t, "euler_discrete_sdxl.json", &g)
	require.Len(t, g.Runs, 4)
	e, err := NewEuler(SDXLEulerConfig())
	require.NoError(t, err)
	for _, run := range g.Runs {
		t.Run(strconv.Itoa(run.N), func(t *testing.T) {
			s, err := e.Schedule(run.N)
			require.NoError(t, err)
			require.Equal(t, run.N, s.Len())
			requireBits(t, run.Timesteps, s.Timesteps, "timesteps")
			requireBits(t, run.Sigmas, s.Sigmas, "sigmas")
			for i, h := range run.SigmaBits {
				b, err := strconv.ParseUint(h, 16, 32)
				require.NoError(t, err)
				require.Equal(t, uint32(b), math.Float32bits(s.Sigmas[i]))
			}
			require.Equal(t, float32(run.InitNoiseSigma), s.InitNoiseSigma())
			factors := make([]float32, s.Len())
			for i := range factors {
				one := []float32{1}
				require.NoError(t, s.ScaleModelInput(one, one, i))
				factors[i] = one[0]
			}
			requireBits(t, run.ScaleFactor, factors, "scale_model_input_factor")

			// Custom timesteps equal to the schedule's give the same sigmas.
			ts := make([]float64, s.Len())
			for i, v := range s.Timesteps {
				ts[i] = float64(v)
			}
			c, err := e.ScheduleFromTimesteps(ts)
			require.NoError(t, err)
			require.Equal(t, s.Sigmas, c.Sigmas)
			require.Equal(t, s.Timesteps, c.Timesteps)

			// Custom sigmas equal to the schedule's give back the timesteps: log-sigma
			// interpolation of a training sigma lands on its integer timestep.
			sg := make([]float64, len(s.Sigmas))
			for i, v := range s.Sigmas {
				sg[i] = float64(v)
			}
			c, err = e.ScheduleFromSigmas(sg)
			require.NoError(t, err)
			require.Equal(t, s.Sigmas, c.Sigmas)
			for i := range s.Timesteps {
				require.InDelta(t, s.Timesteps[i], c.Timesteps[i], 1e-3, "timestep %d", i)
			}
		})
	}
}

func TestEulerGoldenStep(t *testing.T) {
	var g goldenFile
	readGolden(t, "euler_discrete_sdxl.json", &g)
	e, err := NewEuler(SDXLEulerConfig())
	require.NoError(t, err)
	s, err := e.Schedule(g.StepCheck.N)
	require.NoError(t, err)
	require.Len(t, g.StepCheck.Steps, 2)
	x := f32s(g.StepCheck.Steps[0].SampleIn)
	for k, st := range g.StepCheck.Steps {
		require.Equal(t, k, st.Step)
		i, err := s.IndexForTimestep(float32(st.Timestep))
		require.NoError(t, err)
		require.Equal(t, k, i)
		require.Equal(t, float32(st.Sigma), s.Sigmas[i])
		require.Equal(t, float32(st.SigmaNext), s.Sigmas[i+1])
		requireBits(t, st.SampleIn, x, "sample_in") // chained from the previous step
		scaled := make([]float32, len(x))
		require.NoError(t, s.ScaleModelInput(scaled, x, i))
		requireBits(t, st.ScaledIn, scaled, "scale_model_input_out")
		prev := make([]float32, len(x))
		pred := make([]float32, len(x))
		require.NoError(t, s.Step(prev, pred, f32s(st.ModelOut), x, i))
		requireBits(t, st.PrevSample, prev, "prev_sample")
		requireBits(t, st.PredOrig, pred, "pred_original_sample")
		x = prev
	}
}

func TestFlowMatchGolden(t *testing.T) {
	var g goldenFile
	readGolden(t, "flow_match_euler_sd35.json", &g)
	require.Equal(t, 3.0, g.ConfigAfterInit["shift"])
	require.Equal(t, float64(1000), g.ConfigAfterInit["num_train_timesteps"])
	require.Equal(t, false, g.ConfigAfterInit["use_dynamic_shifting"])
	require.Equal(t, false, g.ConfigAfterInit["stochastic_sampling"])
	require.Equal(t, false, g.ConfigAfterInit["invert_sigmas"])
	require.Nil(t, g.ConfigAfterInit["shift_terminal"])
	f, err := NewFlowMatch(SD35FlowMatchConfig())
	require.NoError(t, err)
	lo, hi := f.SigmaRange()
	require.Equal(t, float32(g.SigmaMin), lo)
	require.Equal(t, float32(g.SigmaMax), hi)
	require.Len(t, g.Runs, 2)
	for _, run := range g.Runs {
		t.Run(strconv.Itoa(run.N), func(t *testing.T) {
			s, err := f.Schedule(run.N)
			require.NoError(t, err)
			requireBits(t, run.Timesteps, s.Timesteps, "timesteps")
			requireBits(t, run.Sigmas, s.Sigmas, "sigmas")
			for i, h := range run.SigmaBits {
				b, err := strconv.ParseUint(h, 16, 32)
				require.NoError(t, err)
				require.Equal(t, uint32(b), math.Float32bits(s.Sigmas[i]))
			}
		})
	}
	s, err := f.Schedule(g.StepCheck.N)
	require.NoError(t, err)
	x := f32s(g.StepCheck.Steps[0].SampleIn)
	for k, st := range g.StepCheck.Steps {
		i, err := s.IndexForTimestep(float32(st.Timestep))
		require.NoError(t, err)
		require.Equal(t, k, i)
		require.Equal(t, float32(st.Sigma), s.Sigmas[i])
		require.Equal(t, float32(st.SigmaNext), s.Sigmas[i+1])
		requireBits(t, st.SampleIn, x, "sample_in")
		prev := make([]float32, len(x))
		require.NoError(t, s.Step(prev, f32s(st.ModelOut), x, i))
		requireBits(t, st.PrevSample, prev, "prev_sample")
		x = prev
	}
}
