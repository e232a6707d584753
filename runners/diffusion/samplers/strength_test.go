package samplers

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/internal/shareddata"
)

const img2imgHint = "make them with scripts/gen-img2img-goldens.sh DIFFUSERS_SRC (Debian python3-torch + a huggingface/diffusers checkout)"

type strengthGolden struct {
	GetTimesteps []struct {
		N          int       `json:"num_inference_steps"`
		Strength   float64   `json:"strength"`
		Steps      int       `json:"steps"`
		BeginIndex int       `json:"begin_index"`
		Timesteps  []float64 `json:"timesteps"`
		Sigmas     []float64 `json:"sigmas_from_begin"`
	} `json:"get_timesteps"`
	AddNoise struct {
		Original    []float64 `json:"original"`
		Noise       []float64 `json:"noise"`
		ModelOutput []float64 `json:"model_output"`
		Runs        []struct {
			N              int       `json:"num_inference_steps"`
			Strength       float64   `json:"strength"`
			Start          []float64 `json:"start"`
			InitNoiseSigma float64   `json:"init_noise_sigma"`
			Scaled         []float64 `json:"scaled_input"`
			Prev           []float64 `json:"step0_prev"`
			NoisedNext     []float64 `json:"blend_noised_next"`
		} `json:"runs"`
	} `json:"add_noise"`
}

func loadStrengthGolden(t *testing.T) strengthGolden {
	t.Helper()
	dir := shareddata.Generated(t, "img2img", img2imgHint)
	b, err := os.ReadFile(filepath.Join(dir, "schedule.json"))
	require.NoError(t, err)
	var g strengthGolden
	require.NoError(t, json.Unmarshal(b, &g))
	require.NotEmpty(t, g.GetTimesteps)
	return g
}

// TestStrengthGolden checks get_timesteps (strength -> begin index, kept steps, timesteps and
// sigmas) against diffusers on the SDXL schedule, exactly.
func TestStrengthGolden(t *testing.T) {
	g := loadStrengthGolden(t)
	e, err := NewEuler(SDXLEulerConfig())
	require.NoError(t, err)
	for _, c := range g.GetTimesteps {
		start, kept, err := StrengthStart(c.N, c.Strength)
		require.NoError(t, err)
		require.Equal(t, c.BeginIndex, start, "n=%d strength=%v", c.N, c.Strength)
		require.Equal(t, c.Steps, kept, "n=%d strength=%v", c.N, c.Strength)
		full, err := e.Schedule(c.N)
		require.NoError(t, err)
		sub, err := full.From(start)
		require.NoError(t, err)
		require.Equal(t, f32s(c.Timesteps), sub.Timesteps, "n=%d strength=%v", c.N, c.Strength)
		require.Equal(t, f32s(c.Sigmas), sub.Sigmas, "n=%d strength=%v", c.N, c.Strength)
	}
}

// TestAddNoiseGolden checks add_noise at the start timestep, the first scale_model_input and
// step from there, and the inpainting blend's add_noise at the next timestep.
func TestAddNoiseGolden(t *testing.T) {
	g := loadStrengthGolden(t)
	e, err := NewEuler(SDXLEulerConfig())
	require.NoError(t, err)
	orig, noise, out := f32s(g.AddNoise.Original), f32s(g.AddNoise.Noise), f32s(g.AddNoise.ModelOutput)
	require.NotEmpty(t, g.AddNoise.Runs)
	for _, r := range g.AddNoise.Runs {
		full, err := e.Schedule(r.N)
		require.NoError(t, err)
		start, _, err := StrengthStart(r.N, r.Strength)
		require.NoError(t, err)
		s, err := full.From(start)
		require.NoError(t, err)
		got := make([]float32, len(orig))
		require.NoError(t, s.AddNoise(got, orig, noise, 0))
		require.Equal(t, f32s(r.Start), got, "start n=%d strength=%v", r.N, r.Strength)
		require.Equal(t, float32(r.InitNoiseSigma), s.InitNoiseSigma())
		lat := got
		if r.Strength == 1 {
			lat = make([]float32, len(noise))
			for i, v := range noise {
				lat[i] = v * s.InitNoiseSigma()
			}
		}
		scaled := make([]float32, len(lat))
		require.NoError(t, s.ScaleModelInput(scaled, lat, 0))
		require.InDeltaSlice(t, r.Scaled, f64s(scaled), 1e-6)
		prev := make([]float32, len(lat))
		require.NoError(t, s.Step(prev, nil, out, lat, 0))
		require.InDeltaSlice(t, r.Prev, f64s(prev), 2e-6)
		next := append([]float32(nil), orig...)
		if s.Len() > 1 {
			require.NoError(t, s.AddNoise(next, orig, noise, 1))
		}
		require.Equal(t, f32s(r.NoisedNext), next)
	}
}

func f64s(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func TestStrengthStartErrors(t *testing.T) {
	for _, c := range []struct {
		n int
		s float64
	}{{0, 0.5}, {10, -0.1}, {10, 1.01}} {
		_, _, err := StrengthStart(c.n, c.s)
		require.ErrorIs(t, err, ErrSteps, "%+v", c)
	}
	e, err := NewEuler(SDXLEulerConfig())
	require.NoError(t, err)
	s, err := e.Schedule(4)
	require.NoError(t, err)
	_, err = s.From(5)
	require.ErrorIs(t, err, ErrStepIndex)
	require.ErrorIs(t, s.AddNoise(make([]float32, 2), make([]float32, 2), make([]float32, 2), 5), ErrStepIndex)
	require.ErrorIs(t, s.AddNoise(make([]float32, 2), make([]float32, 3), make([]float32, 2), 0), ErrShape)
}
