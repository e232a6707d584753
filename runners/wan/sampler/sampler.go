// Package sampler is Wan2.2's sampling schedule: diffusers' UniPCMultistepScheduler as the Wan
// pipelines configure it (prediction_type flow_prediction, use_flow_sigmas with a static
// flow_shift, predict_x0, solver_type bh2, final sigma zero) — its sigmas, integer timesteps and
// the multistep predictor-corrector update — computed in float32 operation by operation as
// torch does on the CPU, checked against goldens made from diffusers (scripts/gen-wan-goldens.sh).
package sampler

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// ErrConfig means a configuration or call the sampler does not support.
var ErrConfig = errors.New("wan sampler")

// Config is the part of UniPCMultistepScheduler's configuration that Wan's pipelines vary; the
// rest is fixed to what they use (flow_prediction, use_flow_sigmas, predict_x0, bh2, final
// sigma zero, no thresholding, no dynamic shifting, no solver_p).
type Config struct {
	// NumTrainTimesteps is num_train_timesteps (1000).
	NumTrainTimesteps int
	// FlowShift is flow_shift: sigma -> shift*sigma / (1 + (shift-1)*sigma).
	FlowShift float64
	// SolverOrder is solver_order (2 for Wan; 1..3 supported).
	SolverOrder int
	// LowerOrderFinal is lower_order_final (true): the last steps drop to lower orders.
	LowerOrderFinal bool
	// DisableCorrector lists the step indices after which the corrector is skipped.
	DisableCorrector []int
}

// Wan22T2V is the scheduler of Wan-AI/Wan2.2-T2V-A14B-Diffusers (scheduler_config.json:
// UniPCMultistepScheduler, flow_prediction, use_flow_sigmas, flow_shift 3.0, solver_order 2,
// bh2, lower_order_final). The flow_shift value is the published configuration's as we
// recorded it (that file is not in ../shared); Wan's own t2v-A14B config uses sample_shift 12,
// which a deployment can choose through Config.
func Wan22T2V() Config {
	return Config{NumTrainTimesteps: 1000, FlowShift: 3.0, SolverOrder: 2, LowerOrderFinal: true}
}

func (c Config) validate() error {
	switch {
	case c.NumTrainTimesteps < 1:
		return fmt.Errorf("%w: num_train_timesteps %d", ErrConfig, c.NumTrainTimesteps)
	case !(c.FlowShift > 0) || math.IsInf(c.FlowShift, 0):
		return fmt.Errorf("%w: flow_shift %v must be a positive number", ErrConfig, c.FlowShift)
	case c.SolverOrder < 1 || c.SolverOrder > 3:
		return fmt.Errorf("%w: solver_order %d (1 to 3 supported)", ErrConfig, c.SolverOrder)
	}
	return nil
}

// Schedule is set_timesteps' result for one step count.
type Schedule struct {
	// Timesteps are the transformer's timestep inputs, one per step (int64 as diffusers keeps
	// them: sigma*1000 truncated).
	Timesteps []int64
	// Sigmas are the noise levels, one per step plus the final 0, in float32.
	Sigmas []float32
}

// Len is the number of denoising steps.
func (s *Schedule) Len() int { return len(s.Timesteps) }

// Schedule is set_timesteps(n) of the flow-sigma branch: sigmas = linspace(1, 1/T, n+1)[:-1] in
// float64, shifted, the first nudged below 1 by 1e-6, timesteps = int64(sigmas*T), and the
// sigmas with a final 0 rounded to float32.
func (c Config) Schedule(n int) (*Schedule, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("%w: num_inference_steps %d must be at least 1", ErrConfig, n)
	}
	T := float64(c.NumTrainTimesteps)
	lin := numpyLinspace(1, 1/T, n+1)[:n]
	sig := make([]float64, n)
	for i, s := range lin {
		sig[i] = (c.FlowShift * s) / (1 + (c.FlowShift-1)*s)
	}
	if math.Abs(sig[0]-1) < 1e-6 {
		sig[0] -= 1e-6
	}
	out := &Schedule{Timesteps: make([]int64, n), Sigmas: make([]float32, n+1)}
	for i, s := range sig {
		out.Timesteps[i] = int64(s * T)
		out.Sigmas[i] = float32(s)
	}
	return out, nil
}

// numpyLinspace is numpy.linspace(start, stop, num) in float64: i*step + start, the last value
// set to stop.
func numpyLinspace(start, stop float64, num int) []float64 {
	out := make([]float64, num)
	if num == 1 {
		out[0] = start
		return out
	}
	step := (stop - start) / float64(num-1)
	for i := range out {
		out[i] = float64(float64(i)*step) + start
	}
	out[num-1] = stop
	return out
}

// Sampler is one generation's UniPC state: the schedule, the step index and the last model
// outputs (converted to x0 predictions). Not safe for concurrent use.
type Sampler struct {
	cfg            Config
	sched          *Schedule
	step           int
	outputs        [][]float32 // the last SolverOrder converted outputs, oldest first (nil: none yet)
	lowerOrderNums int
	thisOrder      int
	lastSample     []float32
}

// New returns a sampler over Schedule(n), at its first step.
func (c Config) New(n int) (*Sampler, error) {
	sched, err := c.Schedule(n)
	if err != nil {
		return nil, err
	}
	c.DisableCorrector = slices.Clone(c.DisableCorrector)
	return &Sampler{cfg: c, sched: sched, step: beginIndex(sched.Timesteps), outputs: make([][]float32, c.SolverOrder)}, nil
}

// beginIndex is _init_step_index on the first timestep: its index, or the second index when
// the timestep appears more than once (diffusers' index_for_timestep).
func beginIndex(ts []int64) int {
	first := -1
	for i, t := range ts {
		if t == ts[0] {
			if first >= 0 {
				return i
			}
			first = i
		}
	}
	return first
}

// Schedule returns the sampler's schedule (shared, do not modify).
func (s *Sampler) Schedule() *Schedule { return s.sched }

// StepIndex is the index of the next step.
func (s *Sampler) StepIndex() int { return s.step }

// Timestep is the transformer's timestep input at the next step.
func (s *Sampler) Timestep() (int64, error) {
	if s.step >= s.sched.Len() {
		return 0, fmt.Errorf("%w: all %d steps are done", ErrConfig, s.sched.Len())
	}
	return s.sched.Timesteps[s.step], nil
}

// Step is UniPCMultistepScheduler.step: modelOutput is the transformer's (guided) flow
// prediction for sample at the current timestep; prev receives the sample of the next one
// (prev may not alias the inputs). The corrector refines sample with this output first (from
// the second step), then the predictor advances it.
func (s *Sampler) Step(prev, modelOutput, sample []float32) error {
	n := len(sample)
	if len(modelOutput) != n || len(prev) != n {
		return fmt.Errorf("%w: step with %d sample, %d model output and %d destination values", ErrConfig, n, len(modelOutput), len(prev))
	}
	if s.step >= s.sched.Len() {
		return fmt.Errorf("%w: step %d of a %d-step schedule", ErrConfig, s.step+1, s.sched.Len())
	}
	sig := s.sched.Sigmas
	// convert_model_output: x0 = sample - sigma*v.
	sigma := sig[s.step]
	conv := make([]float32, n)
	for i := range conv {
		conv[i] = sample[i] - float32(sigma*modelOutput[i])
	}
	if s.step > 0 && !slices.Contains(s.cfg.DisableCorrector, s.step-1) && s.lastSample != nil {
		corrected := make([]float32, n)
		if err := s.corrector(corrected, conv, s.lastSample, sample, s.thisOrder); err != nil {
			return err
		}
		sample = corrected
	}
	copy(s.outputs, s.outputs[1:])
	s.outputs[len(s.outputs)-1] = conv
	order := s.cfg.SolverOrder
	if s.cfg.LowerOrderFinal {
		order = min(order, s.sched.Len()-s.step)
	}
	s.thisOrder = min(order, s.lowerOrderNums+1)
	s.lastSample = sample
	if err := s.predictor(prev, sample, s.thisOrder); err != nil {
		return err
	}
	if s.lowerOrderNums < s.cfg.SolverOrder {
		s.lowerOrderNums++
	}
	s.step++
	return nil
}

// lambda is log(alpha) - log(sigma) of a flow sigma (alpha = 1 - sigma), in float32.
func lambda(sigma float32) (alpha, lam float32) {
	alpha = 1 - sigma
	return alpha, log32(alpha) - log32(sigma)
}

func log32(x float32) float32   { return float32(math.Log(float64(x))) }
func expm132(x float32) float32 { return float32(math.Expm1(float64(x))) }

// coeffs are the terms both updates share: h, hh = -h, h*phi_1 = expm1(hh), B(h) = expm1(hh)
// (bh2), and the right-hand side b of the order's linear system.
type coeffs struct {
	alphaT, sigmaT, sigmaS0 float32
	hPhi1, bh               float32
	rks, b                  []float32
	d1s                     [][]float32
}

// terms computes, for target sigma sigT from sigS0 (index s0), the history differences D1_i =
// (m_i - m0)/r_i over the earlier outputs at sigma indices idx(i), i = 1..order-1.
func (s *Sampler) terms(sigT, sigS0 float32, order int, hist func(i int) (sigma float32, m []float32), m0 []float32) coeffs {
	alphaT, lamT := lambda(sigT)
	_, lamS0 := lambda(sigS0)
	h := lamT - lamS0
	c := coeffs{alphaT: alphaT, sigmaT: sigT, sigmaS0: sigS0}
	for i := 1; i < order; i++ {
		sigI, mi := hist(i)
		_, lamI := lambda(sigI)
		rk := (lamI - lamS0) / h
		c.rks = append(c.rks, rk)
		d := make([]float32, len(m0))
		for j := range d {
			d[j] = (mi[j] - m0[j]) / rk
		}
		c.d1s = append(c.d1s, d)
	}
	c.rks = append(c.rks, 1)
	hh := -h
	c.hPhi1 = expm132(hh)
	hPhiK := c.hPhi1/hh - 1
	c.bh = expm132(hh)
	fact := 1
	for i := 1; i <= order; i++ {
		c.b = append(c.b, float32(hPhiK*float32(fact))/c.bh)
		fact *= i + 1
		hPhiK = float32(hPhiK/hh) - float32(1/float64(fact))
	}
	return c
}

// rmatrix is R: row i-1 holds rks^(i-1), i = 1..order.
func rmatrix(rks []float32, order int) [][]float32 {
	r := make([][]float32, order)
	for i := range r {
		r[i] = make([]float32, len(rks))
		for k, v := range rks {
			switch i {
			case 0:
				r[i][k] = 1
			case 1:
				r[i][k] = v
			default:
				r[i][k] = float32(v * v)
			}
		}
	}
	return r
}

// predictor is multistep_uni_p_bh_update with predict_x0: from sample at sigma[step] to
// sigma[step+1], with the order-1 earlier outputs.
func (s *Sampler) predictor(prev, x []float32, order int) error {
	m0 := s.outputs[len(s.outputs)-1]
	c := s.terms(s.sched.Sigmas[s.step+1], s.sched.Sigmas[s.step], order, func(i int) (float32, []float32) {
		return s.sched.Sigmas[s.step-i], s.outputs[len(s.outputs)-1-i]
	}, m0)
	var rhos []float32
	switch {
	case len(c.d1s) == 0:
	case order == 2:
		rhos = []float32{0.5}
	default:
		r := rmatrix(c.rks, order)
		sub := make([][]float32, order-1)
		for i := range sub {
			sub[i] = r[i][:order-1]
		}
		var err error
		if rhos, err = solve32(sub, c.b[:order-1], false); err != nil {
			return err
		}
	}
	a := c.sigmaT / c.sigmaS0
	ah := c.alphaT * c.hPhi1
	ab := c.alphaT * c.bh
	for j := range prev {
		xt := float32(a*x[j]) - float32(ah*m0[j])
		if rhos != nil {
			xt -= float32(ab * einsum(rhos, c.d1s, j))
		}
		prev[j] = xt
	}
	return nil
}

// corrector is multistep_uni_c_bh_update with predict_x0: it refines this sample (at
// sigma[step]) from the last sample (at sigma[step-1]) with this step's converted output.
func (s *Sampler) corrector(dst, modelT, last, _ []float32, order int) error {
	m0 := s.outputs[len(s.outputs)-1]
	c := s.terms(s.sched.Sigmas[s.step], s.sched.Sigmas[s.step-1], order, func(i int) (float32, []float32) {
		return s.sched.Sigmas[s.step-(i+1)], s.outputs[len(s.outputs)-1-i]
	}, m0)
	rhos := []float32{0.5}
	if order != 1 {
		var err error
		if rhos, err = solve32(rmatrix(c.rks, order), c.b, true); err != nil {
			return err
		}
	}
	a := c.sigmaT / c.sigmaS0
	ah := c.alphaT * c.hPhi1
	ab := c.alphaT * c.bh
	last1 := rhos[len(rhos)-1]
	for j := range dst {
		xt := float32(a*last[j]) - float32(ah*m0[j])
		var corr float32
		if len(c.d1s) > 0 {
			corr = einsum(rhos[:len(rhos)-1], c.d1s, j)
		}
		corr += float32(last1 * (modelT[j] - m0[j]))
		dst[j] = xt - float32(ab*corr)
	}
	return nil
}

// einsum is sum_k rhos[k]*d1s[k][j] in float32, in k order.
func einsum(rhos []float32, d1s [][]float32, j int) float32 {
	var acc float32
	for k, r := range rhos {
		p := float32(r * d1s[k][j])
		if k == 0 {
			acc = p
			continue
		}
		acc += p
	}
	return acc
}

// solve32 solves a*x = b (n <= 3) in float32 as torch 1.13's torch.linalg.solve does with
// reference LAPACK (sgesv's parts). A contiguous matrix (contiguous true: the corrector's R)
// is factored transposed — LU with partial pivoting, sgetrf: the pivot column scaled by the
// reciprocal pivot, rank-1 updates — and solved with trans='T' (sgetrs: U^T y = b, L^T x = y,
// the row swaps undone in reverse); a strided view (the predictor's R[:-1,:-1]) is factored as
// it is and solved without transposition (row swaps on b, L y = b, U x = y).
func solve32(a [][]float32, b []float32, contiguous bool) ([]float32, error) {
	n := len(b)
	m := make([][]float32, n) // m = a^T when contiguous
	for i := range m {
		m[i] = make([]float32, n)
		for j := range m[i] {
			if contiguous {
				m[i][j] = a[j][i]
			} else {
				m[i][j] = a[i][j]
			}
		}
	}
	piv := make([]int, n)
	for k := range n {
		p := k
		for i := k + 1; i < n; i++ {
			if abs32(m[i][k]) > abs32(m[p][k]) {
				p = i
			}
		}
		piv[k] = p
		if m[p][k] == 0 {
			return nil, fmt.Errorf("%w: singular UniPC system", ErrConfig)
		}
		m[k], m[p] = m[p], m[k]
		inv := 1 / m[k][k]
		for i := k + 1; i < n; i++ {
			m[i][k] = float32(m[i][k] * inv)
		}
		for j := k + 1; j < n; j++ {
			for i := k + 1; i < n; i++ {
				m[i][j] -= float32(m[k][j] * m[i][k])
			}
		}
	}
	x := slices.Clone(b)
	if !contiguous {
		for i := range n {
			x[i], x[piv[i]] = x[piv[i]], x[i]
		}
		for k := range n { // L y = b (unit diagonal), skipping zero entries as strsm does
			if x[k] != 0 {
				for i := k + 1; i < n; i++ {
					x[i] -= float32(x[k] * m[i][k])
				}
			}
		}
		for k := n - 1; k >= 0; k-- { // U x = y
			if x[k] != 0 {
				x[k] /= m[k][k]
				for i := range k {
					x[i] -= float32(x[k] * m[i][k])
				}
			}
		}
		return x, nil
	}
	for i := range n { // U^T y = b
		t := x[i]
		for k := range i {
			t -= float32(m[k][i] * x[k])
		}
		x[i] = t / m[i][i]
	}
	for i := n - 1; i >= 0; i-- { // L^T x = y (unit diagonal)
		t := x[i]
		for k := i + 1; k < n; k++ {
			t -= float32(m[k][i] * x[k])
		}
		x[i] = t
	}
	for i := n - 1; i >= 0; i-- {
		x[i], x[piv[i]] = x[piv[i]], x[i]
	}
	return x, nil
}

func abs32(v float32) float32 { return float32(math.Abs(float64(v))) }
