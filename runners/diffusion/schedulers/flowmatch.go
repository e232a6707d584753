package schedulers

import (
	"fmt"
	"math"
)

// FlowMatchConfig is the part of diffusers' FlowMatchEulerDiscreteScheduler configuration
// that this package implements: a static shift. Dynamic (resolution-dependent) shifting,
// terminal stretching, inverted sigmas, Karras/exponential/beta sigmas and stochastic sampling
// are off, as in SD3.5's configuration.
type FlowMatchConfig struct {
	NumTrainTimesteps int     `json:"num_train_timesteps"`
	Shift             float64 `json:"shift"`
}

// SD35FlowMatchConfig is Stable Diffusion 3.5's scheduler configuration (shift 3.0).
func SD35FlowMatchConfig() FlowMatchConfig {
	return FlowMatchConfig{NumTrainTimesteps: 1000, Shift: 3.0}
}

// FlowMatch makes FlowMatchEulerDiscreteScheduler schedules. It is immutable and safe for
// concurrent use.
type FlowMatch struct {
	cfg      FlowMatchConfig
	sigmaMin float32
	sigmaMax float32
}

// NewFlowMatch computes the shifted training sigma range: s_i = (T-i)/T in float32,
// shifted s' = shift*s/(1+(shift-1)*s) in float32; sigma_max = s'_0, sigma_min = s'_{T-1}.
func NewFlowMatch(cfg FlowMatchConfig) (*FlowMatch, error) {
	if cfg.NumTrainTimesteps < 2 || cfg.NumTrainTimesteps > 1<<20 {
		return nil, fmt.Errorf("%w: num_train_timesteps %d", ErrConfig, cfg.NumTrainTimesteps)
	}
	if !(cfg.Shift > 0) || math.IsInf(cfg.Shift, 0) {
		return nil, fmt.Errorf("%w: shift %v", ErrConfig, cfg.Shift)
	}
	T := float32(cfg.NumTrainTimesteps)
	return &FlowMatch{
		cfg:      cfg,
		sigmaMax: shift32(float32(T/T), cfg.Shift),
		sigmaMin: shift32(float32(1/T), cfg.Shift),
	}, nil
}

// shift32 applies the static shift in float32, as torch/numpy do on float32 arrays.
func shift32(s float32, shift float64) float32 {
	sh := float32(shift)
	return float32(sh*s) / (1 + float32(float32(shift-1)*s))
}

// Config returns the configuration the scheduler was built with.
func (f *FlowMatch) Config() FlowMatchConfig { return f.cfg }

// SigmaRange returns the shifted training sigmas at the two ends (sigma_min, sigma_max).
func (f *FlowMatch) SigmaRange() (sigmaMin, sigmaMax float32) { return f.sigmaMin, f.sigmaMax }

// FlowSchedule is one request's timesteps and sigmas (len(Sigmas) == len(Timesteps)+1, the
// last sigma 0).
type FlowSchedule struct {
	Timesteps []float32
	Sigmas    []float32
}

// Schedule is set_timesteps(n): t = linspace(sigma_max*T, sigma_min*T, n) in float64,
// s = t/T shifted once more in float64, rounded to float32; timesteps = sigmas*T in float32.
// (The shift is applied twice overall, as diffusers does: the last sigma is ~0.0089 for shift 3.)
func (f *FlowMatch) Schedule(n int) (*FlowSchedule, error) {
	if n < 1 || n > 1<<16 {
		return nil, fmt.Errorf("%w: %d inference steps", ErrSteps, n)
	}
	T := float64(f.cfg.NumTrainTimesteps)
	ts := numpyLinspace(float64(f.sigmaMax)*T, float64(f.sigmaMin)*T, n)
	sig := make([]float32, n)
	for i, t := range ts {
		s := t / T
		sig[i] = float32(float64(f.cfg.Shift*s) / (1 + float64((f.cfg.Shift-1)*s)))
	}
	return f.finish(sig), nil
}

// ScheduleFromSigmas is set_timesteps(sigmas=...): the n given sigmas (without the final 0)
// rounded to float32 and shifted in float32.
func (f *FlowMatch) ScheduleFromSigmas(sigmas []float64) (*FlowSchedule, error) {
	if len(sigmas) == 0 {
		return nil, fmt.Errorf("%w: empty sigmas", ErrSteps)
	}
	sig := make([]float32, len(sigmas))
	for i, v := range sigmas {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%w: sigma %v", ErrSteps, v)
		}
		sig[i] = shift32(float32(v), f.cfg.Shift)
	}
	return f.finish(sig), nil
}

// ScheduleFromTimesteps is set_timesteps(timesteps=...): sigmas = float32(t)/T in float32,
// then shifted in float32; the returned timesteps are the shifted sigmas times T, as in
// diffusers.
func (f *FlowMatch) ScheduleFromTimesteps(timesteps []float64) (*FlowSchedule, error) {
	if len(timesteps) == 0 {
		return nil, fmt.Errorf("%w: empty timesteps", ErrSteps)
	}
	T := float32(f.cfg.NumTrainTimesteps)
	sig := make([]float32, len(timesteps))
	for i, v := range timesteps {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%w: timestep %v", ErrSteps, v)
		}
		sig[i] = shift32(float32(v)/T, f.cfg.Shift)
	}
	return f.finish(sig), nil
}

func (f *FlowMatch) finish(sig []float32) *FlowSchedule {
	T := float32(f.cfg.NumTrainTimesteps)
	s := &FlowSchedule{Timesteps: make([]float32, len(sig)), Sigmas: make([]float32, len(sig)+1)}
	copy(s.Sigmas, sig)
	for i, v := range sig {
		s.Timesteps[i] = v * T
	}
	return s
}

// Len is the number of inference steps.
func (s *FlowSchedule) Len() int { return len(s.Timesteps) }

// Step is step() at index i (deterministic sampling): prev = sample + (sigma_{i+1} -
// sigma_i) * modelOutput in float32. prev may alias sample.
func (s *FlowSchedule) Step(prev, modelOutput, sample []float32, i int) error {
	if i < 0 || i >= len(s.Timesteps) {
		return fmt.Errorf("%w: %d of %d", ErrStepIndex, i, len(s.Timesteps))
	}
	if len(modelOutput) != len(sample) || len(prev) != len(sample) {
		return fmt.Errorf("%w: sample %d, model output %d, prev %d", ErrShape, len(sample), len(modelOutput), len(prev))
	}
	dt := s.Sigmas[i+1] - s.Sigmas[i]
	for k, x := range sample {
		prev[k] = x + float32(dt*modelOutput[k])
	}
	return nil
}

// ScaleNoise is scale_noise at index i, the flow-matching forward process used for
// image-to-image: dst = sigma_i*noise + (1-sigma_i)*sample in float32. dst may alias either.
func (s *FlowSchedule) ScaleNoise(dst, sample, noise []float32, i int) error {
	if i < 0 || i >= len(s.Timesteps) {
		return fmt.Errorf("%w: %d of %d", ErrStepIndex, i, len(s.Timesteps))
	}
	if len(noise) != len(sample) || len(dst) != len(sample) {
		return fmt.Errorf("%w: sample %d, noise %d, dst %d", ErrShape, len(sample), len(noise), len(dst))
	}
	sg := s.Sigmas[i]
	keep := 1 - sg
	for k, x := range sample {
		dst[k] = float32(sg*noise[k]) + float32(keep*x)
	}
	return nil
}

// IndexForTimestep is diffusers' index_for_timestep: the position of t in Timesteps, the
// second one when t occurs more than once.
func (s *FlowSchedule) IndexForTimestep(t float32) (int, error) {
	return indexFor(s.Timesteps, t)
}
