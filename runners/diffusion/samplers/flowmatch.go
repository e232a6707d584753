package samplers

import (
	"fmt"
	"math"
)

// FlowMatchConfig is the part of diffusers' FlowMatchEulerDiscreteScheduler configuration
// that this package implements: a static shift (SD3.5, Flux.1-schnell), or Flux.1-dev's
// dynamic (resolution-dependent, exponential) shifting, whose mu the pipeline computes from the
// image sequence length (Mu). Terminal stretching, inverted sigmas, Karras/exponential/beta
// sigmas, linear time shift and stochastic sampling are off, as in those configurations.
type FlowMatchConfig struct {
	NumTrainTimesteps int     `json:"num_train_timesteps"`
	Shift             float64 `json:"shift"`
	// UseDynamicShifting: sigmas are shifted by exp(mu)/(exp(mu)+(1/s-1)) with the
	// request's mu instead of by Shift (diffusers' use_dynamic_shifting, time_shift_type
	// "exponential").
	UseDynamicShifting bool `json:"use_dynamic_shifting"`
	// BaseShift, MaxShift, BaseImageSeqLen and MaxImageSeqLen are the line mu follows over
	// the image sequence length (the Flux pipeline's calculate_shift; 0.5, 1.15, 256, 4096).
	BaseShift       float64 `json:"base_shift"`
	MaxShift        float64 `json:"max_shift"`
	BaseImageSeqLen int     `json:"base_image_seq_len"`
	MaxImageSeqLen  int     `json:"max_image_seq_len"`
}

// fluxShiftLine is the calculate_shift line of both Flux.1 scheduler configurations.
func fluxShiftLine(c FlowMatchConfig) FlowMatchConfig {
	c.BaseShift, c.MaxShift, c.BaseImageSeqLen, c.MaxImageSeqLen = 0.5, 1.15, 256, 4096
	return c
}

// FluxDevFlowMatchConfig is black-forest-labs/FLUX.1-dev's scheduler configuration: dynamic
// shifting (shift 3.0 is in the file but unused with it).
func FluxDevFlowMatchConfig() FlowMatchConfig {
	return fluxShiftLine(FlowMatchConfig{NumTrainTimesteps: 1000, Shift: 3.0, UseDynamicShifting: true})
}

// FluxSchnellFlowMatchConfig is black-forest-labs/FLUX.1-schnell's scheduler configuration:
// a static shift of 1.0 (the sigmas are used as the pipeline makes them; mu is ignored).
func FluxSchnellFlowMatchConfig() FlowMatchConfig {
	return fluxShiftLine(FlowMatchConfig{NumTrainTimesteps: 1000, Shift: 1.0})
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
	if cfg.UseDynamicShifting && (cfg.MaxImageSeqLen == cfg.BaseImageSeqLen ||
		math.IsNaN(cfg.BaseShift) || math.IsInf(cfg.BaseShift, 0) || math.IsNaN(cfg.MaxShift) || math.IsInf(cfg.MaxShift, 0)) {
		return nil, fmt.Errorf("%w: dynamic shifting line %v..%v over sequence lengths %d..%d", ErrConfig,
			cfg.BaseShift, cfg.MaxShift, cfg.BaseImageSeqLen, cfg.MaxImageSeqLen)
	}
	T := float32(cfg.NumTrainTimesteps)
	if cfg.UseDynamicShifting { // the training sigmas are not shifted
		return &FlowMatch{cfg: cfg, sigmaMax: T / T, sigmaMin: 1 / T}, nil
	}
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
	if f.cfg.UseDynamicShifting {
		return nil, errNeedMu
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
	if f.cfg.UseDynamicShifting {
		return nil, errNeedMu
	}
	return f.ScheduleFromSigmasMu(sigmas, 0)
}

// errNeedMu is diffusers' ValueError for a dynamically shifting scheduler called without mu.
var errNeedMu = fmt.Errorf("%w: mu must be passed when use_dynamic_shifting is set", ErrConfig)

// Mu is the Flux pipeline's calculate_shift(image_seq_len, base_image_seq_len,
// max_image_seq_len, base_shift, max_shift) in float64: the dynamic shift of an image whose
// packed latents are imageSeqLen tokens long.
func (f *FlowMatch) Mu(imageSeqLen int) float64 {
	c := f.cfg
	m := (c.MaxShift - c.BaseShift) / float64(c.MaxImageSeqLen-c.BaseImageSeqLen)
	b := c.BaseShift - float64(m*float64(c.BaseImageSeqLen))
	return float64(float64(imageSeqLen)*m) + b
}

// FluxSigmas are the sigmas the Flux pipeline passes to set_timesteps for n steps:
// numpy.linspace(1.0, 1/n, n) in float64.
func FluxSigmas(n int) ([]float64, error) {
	if n < 1 || n > 1<<16 {
		return nil, fmt.Errorf("%w: %d inference steps", ErrSteps, n)
	}
	return numpyLinspace(1, 1/float64(n), n), nil
}

// ScheduleFromSigmasMu is set_timesteps(sigmas=..., mu=mu): the n given sigmas (without the
// final 0) rounded to float32, then shifted in float32 — with dynamic shifting by
// exp(mu)/(exp(mu)+(1/s-1)), numpy's float32 arithmetic with exp(mu) rounded to float32,
// otherwise by the static shift (mu is then ignored, as diffusers ignores it).
func (f *FlowMatch) ScheduleFromSigmasMu(sigmas []float64, mu float64) (*FlowSchedule, error) {
	if len(sigmas) == 0 {
		return nil, fmt.Errorf("%w: empty sigmas", ErrSteps)
	}
	if math.IsNaN(mu) || math.IsInf(mu, 0) {
		return nil, fmt.Errorf("%w: mu %v", ErrSteps, mu)
	}
	em := float32(math.Exp(mu))
	sig := make([]float32, len(sigmas))
	for i, v := range sigmas {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%w: sigma %v", ErrSteps, v)
		}
		if f.cfg.UseDynamicShifting {
			s := float32(v)
			sig[i] = em / (em + (float32(1/s) - 1))
			continue
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
	if f.cfg.UseDynamicShifting {
		return nil, errNeedMu
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
