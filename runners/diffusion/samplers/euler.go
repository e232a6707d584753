package samplers

import (
	"fmt"
	"math"
)

// Values of EulerConfig's string fields.
const (
	BetaLinear       = "linear"
	BetaScaledLinear = "scaled_linear"

	SpacingLeading  = "leading"
	SpacingLinspace = "linspace"
	SpacingTrailing = "trailing"

	PredictEpsilon = "epsilon"
	PredictV       = "v_prediction"
	PredictSample  = "sample"

	InterpolationLinear = "linear"

	FinalSigmaZero = "zero"
	FinalSigmaMin  = "sigma_min"
)

// EulerConfig is the part of diffusers' EulerDiscreteScheduler configuration that this
// package implements. Karras/exponential/beta sigmas, log-linear interpolation, continuous
// timesteps and zero-SNR rescaling are not implemented and are refused by NewEuler.
type EulerConfig struct {
	NumTrainTimesteps int     `json:"num_train_timesteps"`
	BetaStart         float64 `json:"beta_start"`
	BetaEnd           float64 `json:"beta_end"`
	BetaSchedule      string  `json:"beta_schedule"`
	PredictionType    string  `json:"prediction_type"`
	InterpolationType string  `json:"interpolation_type"`
	TimestepSpacing   string  `json:"timestep_spacing"`
	StepsOffset       int     `json:"steps_offset"`
	FinalSigmasType   string  `json:"final_sigmas_type"`
	UseKarrasSigmas   bool    `json:"use_karras_sigmas"`
}

// SDXLEulerConfig is SDXL base 1.0's scheduler_config.json as diffusers reads it.
func SDXLEulerConfig() EulerConfig {
	return EulerConfig{
		NumTrainTimesteps: 1000,
		BetaStart:         0.00085,
		BetaEnd:           0.012,
		BetaSchedule:      BetaScaledLinear,
		PredictionType:    PredictEpsilon,
		InterpolationType: InterpolationLinear,
		TimestepSpacing:   SpacingLeading,
		StepsOffset:       1,
		FinalSigmasType:   FinalSigmaZero,
		UseKarrasSigmas:   false,
	}
}

func (c EulerConfig) validate() error {
	switch {
	case c.NumTrainTimesteps < 2 || c.NumTrainTimesteps > 1<<20:
		return fmt.Errorf("%w: num_train_timesteps %d", ErrConfig, c.NumTrainTimesteps)
	case c.BetaSchedule != BetaLinear && c.BetaSchedule != BetaScaledLinear:
		return fmt.Errorf("%w: beta_schedule %q", ErrConfig, c.BetaSchedule)
	case !(c.BetaStart > 0 && c.BetaEnd > 0 && c.BetaStart < 1 && c.BetaEnd < 1):
		return fmt.Errorf("%w: betas %v..%v", ErrConfig, c.BetaStart, c.BetaEnd)
	case c.PredictionType != PredictEpsilon && c.PredictionType != PredictV && c.PredictionType != PredictSample:
		return fmt.Errorf("%w: prediction_type %q", ErrConfig, c.PredictionType)
	case c.InterpolationType != InterpolationLinear:
		return fmt.Errorf("%w: interpolation_type %q", ErrConfig, c.InterpolationType)
	case c.TimestepSpacing != SpacingLeading && c.TimestepSpacing != SpacingLinspace && c.TimestepSpacing != SpacingTrailing:
		return fmt.Errorf("%w: timestep_spacing %q", ErrConfig, c.TimestepSpacing)
	case c.FinalSigmasType != FinalSigmaZero && c.FinalSigmasType != FinalSigmaMin:
		return fmt.Errorf("%w: final_sigmas_type %q", ErrConfig, c.FinalSigmasType)
	case c.UseKarrasSigmas:
		return fmt.Errorf("%w: use_karras_sigmas", ErrConfig)
	case c.StepsOffset < 0:
		return fmt.Errorf("%w: steps_offset %d", ErrConfig, c.StepsOffset)
	}
	return nil
}

// Euler holds EulerDiscreteScheduler's training tables; it makes schedules. It is
// immutable and safe for concurrent use.
type Euler struct {
	cfg           EulerConfig
	alphasCumprod []float32
	trainSigmas   []float32 // sigma[t] for t = 0..T-1, increasing
	logSigmas     []float32
}

// NewEuler builds the training tables: betas (torch float32 linspace, squared for
// scaled_linear), alphas_cumprod (torch.cumprod, which accumulates in double on CPU and
// stores float32) and sigma[t] = sqrt((1-ac)/ac) in float32.
func NewEuler(cfg EulerConfig) (*Euler, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	T := cfg.NumTrainTimesteps
	var betas []float32
	if cfg.BetaSchedule == BetaScaledLinear {
		betas = torchLinspace32(math.Sqrt(cfg.BetaStart), math.Sqrt(cfg.BetaEnd), T)
		for i, b := range betas {
			betas[i] = b * b
		}
	} else {
		betas = torchLinspace32(cfg.BetaStart, cfg.BetaEnd, T)
	}
	e := &Euler{cfg: cfg, alphasCumprod: make([]float32, T), trainSigmas: make([]float32, T), logSigmas: make([]float32, T)}
	acc := 1.0
	for i, b := range betas {
		acc *= float64(1 - b)
		ac := float32(acc)
		e.alphasCumprod[i] = ac
		e.trainSigmas[i] = sqrt32(float32((1 - ac) / ac))
		e.logSigmas[i] = float32(math.Log(float64(e.trainSigmas[i])))
	}
	return e, nil
}

// Config returns the configuration the scheduler was built with.
func (e *Euler) Config() EulerConfig { return e.cfg }

// AlphasCumprod returns a copy of the float32 alphas_cumprod table.
func (e *Euler) AlphasCumprod() []float32 { return append([]float32(nil), e.alphasCumprod...) }

// TrainSigmas returns a copy of the float32 training sigmas, index t = 0..T-1.
func (e *Euler) TrainSigmas() []float32 { return append([]float32(nil), e.trainSigmas...) }

// EulerSchedule is one request's timesteps and sigmas (len(Sigmas) == len(Timesteps)+1).
type EulerSchedule struct {
	// Timesteps are the model's timestep inputs, float32 as diffusers' scheduler.timesteps.
	Timesteps []float32
	// Sigmas are the noise levels, one more than Timesteps (the last is the final sigma).
	Sigmas []float32

	prediction string
	spacing    string
	// initSigma, when not 0, is the full schedule's InitNoiseSigma (a From slice keeps it).
	initSigma float32
}

// Schedule is set_timesteps(n): the timesteps of the configured spacing and the training
// sigmas interpolated at them (numpy.interp, float64), then rounded to float32.
func (e *Euler) Schedule(n int) (*EulerSchedule, error) {
	T := e.cfg.NumTrainTimesteps
	if n < 1 || n > T {
		return nil, fmt.Errorf("%w: %d inference steps for %d training steps", ErrSteps, n, T)
	}
	ts := make([]float64, n)
	switch e.cfg.TimestepSpacing {
	case SpacingLeading:
		ratio := T / n
		for i := range ts {
			ts[i] = float64(float32((n-1-i)*ratio) + float32(e.cfg.StepsOffset))
		}
	case SpacingLinspace:
		lin := numpyLinspace(0, float64(T-1), n)
		for i := range ts {
			ts[i] = float64(float32(lin[n-1-i]))
		}
	case SpacingTrailing:
		// np.arange(T, 0, -T/n).round() - 1; arange has ceil(T/(T/n)) values start + i*step,
		// rounded half to even.
		ratio := float64(T) / float64(n)
		ts = make([]float64, int(math.Ceil(float64(T)/ratio)))
		for i := range ts {
			ts[i] = float64(float32(math.RoundToEven(float64(T)+float64(i)*-ratio)) - 1)
		}
	}
	return e.fromTimesteps(ts)
}

// ScheduleFromTimesteps is set_timesteps(timesteps=...): custom timesteps (rounded to
// float32), sigmas interpolated at them.
func (e *Euler) ScheduleFromTimesteps(timesteps []float64) (*EulerSchedule, error) {
	if len(timesteps) == 0 {
		return nil, fmt.Errorf("%w: empty timesteps", ErrSteps)
	}
	ts := make([]float64, len(timesteps))
	for i, t := range timesteps {
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return nil, fmt.Errorf("%w: timestep %v", ErrSteps, t)
		}
		ts[i] = float64(float32(t))
	}
	return e.fromTimesteps(ts)
}

func (e *Euler) fromTimesteps(ts []float64) (*EulerSchedule, error) {
	s := &EulerSchedule{
		Timesteps:  make([]float32, len(ts)),
		Sigmas:     make([]float32, len(ts)+1),
		prediction: e.cfg.PredictionType,
		spacing:    e.cfg.TimestepSpacing,
	}
	for i, t := range ts {
		s.Timesteps[i] = float32(t)
		s.Sigmas[i] = float32(numpyInterp(t, e.trainSigmas))
	}
	if e.cfg.FinalSigmasType == FinalSigmaMin {
		s.Sigmas[len(ts)] = e.trainSigmas[0]
	}
	return s, nil
}

// ScheduleFromSigmas is set_timesteps(sigmas=...): the n+1 given sigmas (the last is the
// final sigma, usually 0), rounded to float32, and the timesteps found by log-sigma
// interpolation in the training table (diffusers' _sigma_to_t, in float32 as numpy does it
// there).
func (e *Euler) ScheduleFromSigmas(sigmas []float64) (*EulerSchedule, error) {
	if len(sigmas) < 2 {
		return nil, fmt.Errorf("%w: need at least 2 sigmas, got %d", ErrSteps, len(sigmas))
	}
	s := &EulerSchedule{
		Timesteps:  make([]float32, len(sigmas)-1),
		Sigmas:     make([]float32, len(sigmas)),
		prediction: e.cfg.PredictionType,
		spacing:    e.cfg.TimestepSpacing,
	}
	for i, v := range sigmas {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return nil, fmt.Errorf("%w: sigma %v", ErrSteps, v)
		}
		s.Sigmas[i] = float32(v)
	}
	for i := range s.Timesteps {
		s.Timesteps[i] = float32(e.sigmaToT(s.Sigmas[i]))
	}
	return s, nil
}

// sigmaToT is diffusers' _sigma_to_t for one sigma: find the last training log-sigma not
// above log(sigma) (capped at T-2), interpolate linearly in log space, clip to [0, 1].
func (e *Euler) sigmaToT(sigma float32) float64 {
	ls := float32(math.Log(math.Max(float64(sigma), 1e-10)))
	T := len(e.logSigmas)
	low := 0
	for i, l := range e.logSigmas {
		if ls-l >= 0 {
			low = i
		}
	}
	low = min(low, T-2)
	lo, hi := e.logSigmas[low], e.logSigmas[low+1]
	w := float32(float32(lo-ls) / float32(lo-hi))
	w = min(max(w, 0), 1)
	return float64(float64(1-w)*float64(low)) + float64(float64(w)*float64(low+1))
}

// Len is the number of inference steps.
func (s *EulerSchedule) Len() int { return len(s.Timesteps) }

// InitNoiseSigma is the factor the initial unit-variance latents are multiplied by:
// max sigma for linspace/trailing spacing, sqrt(max sigma^2 + 1) for leading (float32).
func (s *EulerSchedule) InitNoiseSigma() float32 {
	if s.initSigma != 0 {
		return s.initSigma
	}
	m := float32(0)
	for _, v := range s.Sigmas {
		m = max(m, v)
	}
	if s.spacing != SpacingLeading {
		return m
	}
	return sqrt32(float32(m*m) + 1)
}

// InputScale is the factor scale_model_input applies at step i: 1/sqrt(sigma_i^2+1).
func (s *EulerSchedule) InputScale(i int) (float32, error) {
	if i < 0 || i >= len(s.Timesteps) {
		return 0, fmt.Errorf("%w: %d of %d", ErrStepIndex, i, len(s.Timesteps))
	}
	return 1 / s.denominator(i), nil
}

func (s *EulerSchedule) denominator(i int) float32 {
	sg := s.Sigmas[i]
	return sqrt32(float32(sg*sg) + 1)
}

// ScaleModelInput is scale_model_input at step i: dst = sample / sqrt(sigma_i^2+1), each
// element divided in float32 as torch does. dst may be sample.
func (s *EulerSchedule) ScaleModelInput(dst, sample []float32, i int) error {
	if i < 0 || i >= len(s.Timesteps) {
		return fmt.Errorf("%w: %d of %d", ErrStepIndex, i, len(s.Timesteps))
	}
	if len(dst) != len(sample) {
		return fmt.Errorf("%w: dst %d, sample %d", ErrShape, len(dst), len(sample))
	}
	d := s.denominator(i)
	for k, x := range sample {
		dst[k] = x / d
	}
	return nil
}

// Step is step() at index i without churn (s_churn 0, the pipelines' default): from the
// model output and the current sample it writes the sample at sigma_{i+1} into prev and the
// predicted clean sample into predOriginal (which may be nil). prev may alias sample;
// predOriginal must not alias either input. All maths is float32 element by element.
func (s *EulerSchedule) Step(prev, predOriginal, modelOutput, sample []float32, i int) error {
	if i < 0 || i >= len(s.Timesteps) {
		return fmt.Errorf("%w: %d of %d", ErrStepIndex, i, len(s.Timesteps))
	}
	n := len(sample)
	if len(modelOutput) != n || len(prev) != n || (predOriginal != nil && len(predOriginal) != n) {
		return fmt.Errorf("%w: sample %d, model output %d, prev %d", ErrShape, n, len(modelOutput), len(prev))
	}
	sigma := s.Sigmas[i]
	dt := s.Sigmas[i+1] - sigma
	// v-prediction coefficients, as diffusers computes them on 0-d float32 tensors.
	den := s.denominator(i)
	cOut := -sigma / den
	cSkipDen := float32(sigma*sigma) + 1
	for k, x := range sample {
		m := modelOutput[k]
		var pred float32
		switch s.prediction {
		case PredictEpsilon:
			pred = x - float32(sigma*m)
		case PredictV:
			pred = float32(m*cOut) + x/cSkipDen
		default:
			pred = m
		}
		deriv := float32(x-pred) / sigma
		if predOriginal != nil {
			predOriginal[k] = pred
		}
		prev[k] = x + float32(deriv*dt)
	}
	return nil
}

// IndexForTimestep is diffusers' index_for_timestep: the position of t in Timesteps, the
// second one when t occurs more than once.
func (s *EulerSchedule) IndexForTimestep(t float32) (int, error) {
	return indexFor(s.Timesteps, t)
}

func indexFor(ts []float32, t float32) (int, error) {
	first := -1
	for i, v := range ts {
		if v == t {
			if first >= 0 {
				return i, nil
			}
			first = i
		}
	}
	if first < 0 {
		return 0, fmt.Errorf("%w: %v", ErrTimestep, t)
	}
	return first, nil
}
