package sampler

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestConfigRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(c *Config)
		steps int
		msg   string
	}{
		{"zero steps", func(*Config) {}, 0, "num_inference_steps 0"},
		{"negative shift", func(c *Config) { c.FlowShift = -1 }, 4, "flow_shift"},
		{"order 4", func(c *Config) { c.SolverOrder = 4 }, 4, "solver_order 4"},
		{"no train timesteps", func(c *Config) { c.NumTrainTimesteps = 0 }, 4, "num_train_timesteps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Wan22T2V()
			tc.edit(&c)
			_, err := c.New(tc.steps)
			require.ErrorIs(t, err, ErrConfig)
			require.ErrorContains(t, err, tc.msg)
		})
	}
}

// TestStepMisuse: sizes that disagree and a step past the schedule are refused, not computed.
func TestStepMisuse(t *testing.T) {
	s, err := Wan22T2V().New(1)
	require.NoError(t, err)
	require.ErrorContains(t, s.Step(make([]float32, 3), make([]float32, 4), make([]float32, 4)), "3 destination values")
	x := []float32{0.5, -1}
	out := make([]float32, 2)
	require.NoError(t, s.Step(out, []float32{0.25, 0.5}, x))
	// One step from sigma ~1 to 0 is the x0 prediction: sample - sigma*v.
	require.InDelta(t, 0.25, out[0], 1e-5)
	require.InDelta(t, -1.5, out[1], 1e-5)
	_, err = s.Timestep()
	require.ErrorContains(t, err, "all 1 steps are done")
	require.ErrorContains(t, s.Step(out, x, x), "step 2 of a 1-step schedule")
}

// TestWanSchedule pins the Wan2.2 default: 40 steps at flow shift 3 start at 999 and end
// at sigma 0; the expert boundary 875 falls inside.
func TestWanSchedule(t *testing.T) {
	s, err := Wan22T2V().Schedule(40)
	require.NoError(t, err)
	require.Equal(t, 40, s.Len())
	require.Equal(t, int64(999), s.Timesteps[0])
	require.Equal(t, float32(0), s.Sigmas[40])
	require.Greater(t, s.Timesteps[5], int64(875))
	require.Less(t, s.Timesteps[39], int64(875))
}
