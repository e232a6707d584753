package samplers

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEulerConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		edit func(*EulerConfig)
	}{
		{"train steps", func(c *EulerConfig) { c.NumTrainTimesteps = 1 }},
		{"beta schedule", func(c *EulerConfig) { c.BetaSchedule = "squaredcos_cap_v2" }},
		{"betas", func(c *EulerConfig) { c.BetaEnd = 0 }},
		{"prediction", func(c *EulerConfig) { c.PredictionType = "flow" }},
		{"interpolation", func(c *EulerConfig) { c.InterpolationType = "log_linear" }},
		{"spacing", func(c *EulerConfig) { c.TimestepSpacing = "odd" }},
		{"final sigma", func(c *EulerConfig) { c.FinalSigmasType = "one" }},
		{"karras", func(c *EulerConfig) { c.UseKarrasSigmas = true }},
		{"offset", func(c *EulerConfig) { c.StepsOffset = -1 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := SDXLEulerConfig()
			tc.edit(&c)
			_, err := NewEuler(c)
			require.ErrorIs(t, err, ErrConfig)
		})
	}
	_, err := NewFlowMatch(FlowMatchConfig{NumTrainTimesteps: 1000, Shift: 0})
	require.ErrorIs(t, err, ErrConfig)
	_, err = NewFlowMatch(FlowMatchConfig{NumTrainTimesteps: 0, Shift: 3})
	require.ErrorIs(t, err, ErrConfig)
}

func TestEulerSpacings(t *testing.T) {
	tests := []struct {
		spacing, final string
		n              int
		want           []float32
		initIsMax      bool
	}{
		{SpacingLeading, FinalSigmaZero, 4, []float32{751, 501, 251, 1}, false},
		{SpacingLinspace, FinalSigmaZero, 4, []float32{999, 666, 333, 0}, true},
		{SpacingTrailing, FinalSigmaMin, 10, []float32{999, 899, 799, 699, 599, 499, 399, 299, 199, 99}, true},
		{SpacingTrailing, FinalSigmaZero, 3, []float32{999, 666, 332}, true},
	}
	for _, tc := range tests {
		t.Run(tc.spacing, func(t *testing.T) {
			c := SDXLEulerConfig()
			c.TimestepSpacing, c.FinalSigmasType = tc.spacing, tc.final
			e, err := NewEuler(c)
			require.NoError(t, err)
			s, err := e.Schedule(tc.n)
			require.NoError(t, err)
			require.Equal(t, tc.want, s.Timesteps)
			train := e.TrainSigmas()
			for i, ts := range s.Timesteps {
				require.Equal(t, train[int(ts)], s.Sigmas[i])
			}
			last := float32(0)
			if tc.final == FinalSigmaMin {
				last = train[0]
			}
			require.Equal(t, last, s.Sigmas[len(s.Sigmas)-1])
			if tc.initIsMax {
				require.Equal(t, s.Sigmas[0], s.InitNoiseSigma())
			} else {
				require.Equal(t, sqrt32(s.Sigmas[0]*s.Sigmas[0]+1), s.InitNoiseSigma())
			}
		})
	}
}

func TestEulerCustomFractionalTimesteps(t *testing.T) {
	e, err := NewEuler(SDXLEulerConfig())
	require.NoError(t, err)
	tr := e.TrainSigmas()
	s, err := e.ScheduleFromTimesteps([]float64{999.5, 500.25, -3, 1200})
	require.NoError(t, err)
	require.InEpsilon(t, (float64(tr[999])), float64(s.Sigmas[0]), 1e-6)
	want := float64(tr[500]) + 0.25*(float64(tr[501])-float64(tr[500]))
	require.InEpsilon(t, want, float64(s.Sigmas[1]), 1e-6)
	require.Equal(t, tr[0], s.Sigmas[2])
	require.Equal(t, tr[999], s.Sigmas[3])
	_, err = e.ScheduleFromTimesteps(nil)
	require.ErrorIs(t, err, ErrSteps)
	_, err = e.ScheduleFromTimesteps([]float64{math.NaN()})
	require.ErrorIs(t, err, ErrSteps)
	_, err = e.ScheduleFromSigmas([]float64{1})
	require.ErrorIs(t, err, ErrSteps)
	_, err = e.ScheduleFromSigmas([]float64{1, -1})
	require.ErrorIs(t, err, ErrSteps)
	_, err = e.Schedule(0)
	require.ErrorIs(t, err, ErrSteps)
	_, err = e.Schedule(1001)
	require.ErrorIs(t, err, ErrSteps)

	// Sigmas between training sigmas map to fractional timesteps; out-of-range ones clip.
	mid := math.Sqrt(float64(tr[600]) * float64(tr[601])) // geometric mean: halfway in log space
	s, err = e.ScheduleFromSigmas([]float64{1e6, mid, 1e-9, 0})
	require.NoError(t, err)
	require.Equal(t, float32(999), s.Timesteps[0])
	require.InDelta(t, 600.5, s.Timesteps[1], 1e-3)
	require.Equal(t, float32(0), s.Timesteps[2])
}

func TestEulerPredictionTypes(t *testing.T) {
	sample := []float32{1.5, -2, 0.25, 3}
	out := []float32{0.5, 0.1, -1, 2}
	for _, pt := range []string{PredictEpsilon, PredictV, PredictSample} {
		t.Run(pt, func(t *testing.T) {
			c := SDXLEulerConfig()
			c.PredictionType = pt
			e, err := NewEuler(c)
			require.NoError(t, err)
			s, err := e.Schedule(20)
			require.NoError(t, err)
			i := 3
			sg, next := float64(s.Sigmas[i]), float64(s.Sigmas[i+1])
			prev := make([]float32, 4)
			pred := make([]float32, 4)
			require.NoError(t, s.Step(prev, pred, out, sample, i))
			for k := range sample {
				x, m := float64(sample[k]), float64(out[k])
				var p float64
				switch pt {
				case PredictEpsilon:
					p = x - sg*m
				case PredictV:
					p = m*(-sg/math.Sqrt(sg*sg+1)) + x/(sg*sg+1)
				default:
					p = m
				}
				require.InDelta(t, p, float64(pred[k]), 1e-5*math.Max(1, math.Abs(p)))
				want := x + (x-p)/sg*(next-sg)
				require.InDelta(t, want, float64(prev[k]), 1e-5*math.Max(1, math.Abs(want)))
			}
			// prev may alias sample; predOriginal may be nil.
			in := append([]float32(nil), sample...)
			require.NoError(t, s.Step(in, nil, out, in, i))
			require.Equal(t, prev, in)
		})
	}
}

func TestStepErrors(t *testing.T) {
	e, err := NewEuler(SDXLEulerConfig())
	require.NoError(t, err)
	s, err := e.Schedule(5)
	require.NoError(t, err)
	x := make([]float32, 4)
	require.ErrorIs(t, s.Step(x, nil, x, x, 5), ErrStepIndex)
	require.ErrorIs(t, s.Step(x, nil, x[:3], x, 0), ErrShape)
	require.ErrorIs(t, s.Step(x, x[:2], x, x, 0), ErrShape)
	require.ErrorIs(t, s.ScaleModelInput(x[:1], x, 0), ErrShape)
	require.ErrorIs(t, s.ScaleModelInput(x, x, -1), ErrStepIndex)
	_, err = s.InputScale(9)
	require.ErrorIs(t, err, ErrStepIndex)
	_, err = s.IndexForTimestep(2)
	require.ErrorIs(t, err, ErrTimestep)

	f, err := NewFlowMatch(SD35FlowMatchConfig())
	require.NoError(t, err)
	fs, err := f.Schedule(5)
	require.NoError(t, err)
	require.ErrorIs(t, fs.Step(x, x, x, 5), ErrStepIndex)
	require.ErrorIs(t, fs.Step(x, x[:1], x, 0), ErrShape)
	require.ErrorIs(t, fs.ScaleNoise(x, x, x[:1], 0), ErrShape)
	require.ErrorIs(t, fs.ScaleNoise(x, x, x, 7), ErrStepIndex)
	_, err = f.Schedule(0)
	require.ErrorIs(t, err, ErrSteps)
	_, err = f.ScheduleFromSigmas(nil)
	require.ErrorIs(t, err, ErrSteps)
	_, err = f.ScheduleFromTimesteps([]float64{math.Inf(1)})
	require.ErrorIs(t, err, ErrSteps)
}

func TestIndexForTimestepRepeated(t *testing.T) {
	idx, err := indexFor([]float32{5, 3, 3, 1}, 3)
	require.NoError(t, err)
	require.Equal(t, 2, idx) // diffusers takes the second match
	idx, err = indexFor([]float32{5, 3, 1}, 5)
	require.NoError(t, err)
	require.Equal(t, 0, idx)
}

func TestFlowMatchCustomAndScaleNoise(t *testing.T) {
	f, err := NewFlowMatch(SD35FlowMatchConfig())
	require.NoError(t, err)
	for _, n := range []int{1, 4, 28} {
		s, err := f.Schedule(n)
		require.NoError(t, err)
		require.Equal(t, n, s.Len())
		require.Equal(t, float32(1), s.Sigmas[0])
		require.Equal(t, float32(0), s.Sigmas[n])
		// The same unshifted sigmas passed as custom sigmas (shifted in float32) or as custom
		// timesteps agree with the float64 path to float32 rounding.
		lo, hi := f.SigmaRange()
		T := 1000.0
		lin := numpyLinspace(float64(hi)*T, float64(lo)*T, n)
		sig := make([]float64, n)
		for i, v := range lin {
			sig[i] = v / T
		}
		c, err := f.ScheduleFromSigmas(sig)
		require.NoError(t, err)
		ct, err := f.ScheduleFromTimesteps(lin)
		require.NoError(t, err)
		for i := 0; i < n; i++ {
			require.InEpsilon(t, s.Sigmas[i], c.Sigmas[i], 1e-6)
			require.InEpsilon(t, s.Sigmas[i], ct.Sigmas[i], 1e-6)
			require.InEpsilon(t, s.Timesteps[i], c.Timesteps[i], 1e-6)
		}
	}
	s, err := f.Schedule(10)
	require.NoError(t, err)
	sample := []float32{1, 2, 3, 4}
	noise := []float32{-1, 0.5, 0, 2}
	dst := make([]float32, 4)
	require.NoError(t, s.ScaleNoise(dst, sample, noise, 0))
	require.Equal(t, noise, dst) // sigma_0 = 1: pure noise
	require.NoError(t, s.ScaleNoise(dst, sample, noise, 4))
	sg := float64(s.Sigmas[4])
	for k := range dst {
		require.InDelta(t, sg*float64(noise[k])+(1-sg)*float64(sample[k]), float64(dst[k]), 1e-6)
	}
	i, err := s.IndexForTimestep(s.Timesteps[4])
	require.NoError(t, err)
	require.Equal(t, 4, i)
}

func BenchmarkEulerSchedule30(b *testing.B) {
	e, err := NewEuler(SDXLEulerConfig())
	require.NoError(b, err)
	for b.Loop() {
		if _, err := e.Schedule(30); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNewEuler(b *testing.B) {
	for b.Loop() {
		if _, err := NewEuler(SDXLEulerConfig()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEulerStepSDXLLatent is one scale_model_input + step on a 1x4x128x128 latent.
func BenchmarkEulerStepSDXLLatent(b *testing.B) {
	e, err := NewEuler(SDXLEulerConfig())
	require.NoError(b, err)
	s, err := e.Schedule(30)
	require.NoError(b, err)
	n := 4 * 128 * 128
	x, m, tmp := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], m[i] = float32(i%97)/50, float32(i%89)/60
	}
	b.SetBytes(int64(n * 4))
	for b.Loop() {
		_ = s.ScaleModelInput(tmp, x, 3)
		_ = s.Step(tmp, nil, m, x, 3)
	}
}

// BenchmarkFlowStepSD35Latent is one step on a 1x16x128x128 latent.
func BenchmarkFlowStepSD35Latent(b *testing.B) {
	f, err := NewFlowMatch(SD35FlowMatchConfig())
	require.NoError(b, err)
	s, err := f.Schedule(28)
	require.NoError(b, err)
	n := 16 * 128 * 128
	x, m, out := make([]float32, n), make([]float32, n), make([]float32, n)
	b.SetBytes(int64(n * 4))
	for b.Loop() {
		_ = s.Step(out, m, x, 3)
	}
}
