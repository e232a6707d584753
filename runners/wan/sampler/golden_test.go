package sampler

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners/wan/wangolden"
)

type unipcGolden struct {
	Runs []struct {
		FlowShift float64   `json:"flow_shift"`
		Steps     int       `json:"num_inference_steps"`
		Timesteps []int64   `json:"timesteps"`
		Sigmas    []float64 `json:"sigmas"`
		SigmaBits []uint32  `json:"sigma_bits"`
	} `json:"runs"`
	Steps struct {
		Shape      []int    `json:"shape"`
		SampleBits []uint32 `json:"sample_bits"`
		Runs       []struct {
			FlowShift float64 `json:"flow_shift"`
			Steps     int     `json:"num_inference_steps"`
			Config    struct {
				LowerOrderFinal  *bool `json:"lower_order_final"`
				DisableCorrector []int `json:"disable_corrector"`
				SolverOrder      int   `json:"solver_order"`
			} `json:"config"`
			Timesteps []int64    `json:"timesteps"`
			After     [][]uint32 `json:"after_each_step"`
		} `json:"runs"`
	} `json:"steps"`
}

func readUniPC(t *testing.T) unipcGolden { return wangolden.Load[unipcGolden](t, "unipc.json") }

// TestScheduleGolden: set_timesteps' integer timesteps and float32 sigmas, bit for bit, for
// flow shifts 1..12 and 1..100 steps.
func TestScheduleGolden(t *testing.T) {
	g := readUniPC(t)
	for _, r := range g.Runs {
		c := Wan22T2V()
		c.FlowShift = r.FlowShift
		s, err := c.Schedule(r.Steps)
		require.NoError(t, err)
		require.Equal(t, r.Timesteps, s.Timesteps, "shift %v, %d steps", r.FlowShift, r.Steps)
		require.Equal(t, wangolden.Floats(r.SigmaBits), s.Sigmas, "shift %v, %d steps", r.FlowShift, r.Steps)
	}
}

// TestStepGolden: whole multistep runs (predictor and corrector, a new model output at every
// step), the sample after every step compared bit for bit with diffusers' float32 result.
func TestStepGolden(t *testing.T) {
	g := readUniPC(t)
	n := len(g.Steps.SampleBits)
	idx := make([]float32, n)
	for i := range idx {
		idx[i] = float32(i)
	}
	for _, r := range g.Steps.Runs {
		c := Wan22T2V()
		c.FlowShift = r.FlowShift
		if r.Config.LowerOrderFinal != nil {
			c.LowerOrderFinal = *r.Config.LowerOrderFinal
		}
		if r.Config.SolverOrder != 0 {
			c.SolverOrder = r.Config.SolverOrder
		}
		c.DisableCorrector = r.Config.DisableCorrector
		s, err := c.New(r.Steps)
		require.NoError(t, err)
		require.Equal(t, r.Timesteps, s.Schedule().Timesteps)
		x := wangolden.Floats(g.Steps.SampleBits)
		for k, want := range r.After {
			mo := make([]float32, n)
			for i := range mo {
				// (remainder(idx, 37)*0.053 - 0.9 + k*0.17) + x*0.25, each torch op rounded
				// to float32 (the Python scalars too).
				a := float32(float32(math.Mod(float64(idx[i]), 37))*0.053) - 0.9
				a += float32(float64(k) * 0.17)
				mo[i] = a + float32(x[i]*0.25)
			}
			next := make([]float32, n)
			require.NoError(t, s.Step(next, mo, x))
			x = next
			diff := 0
			for i, b := range want {
				if math.Float32bits(x[i]) != b {
					diff++
				}
			}
			require.Zero(t, diff, "%+v: step %d of %d: %d of %d values differ from diffusers (first: got %v want %v)",
				r.Config, k+1, r.Steps, diff, n, x[0], math.Float32frombits(want[0]))
		}
	}
}
