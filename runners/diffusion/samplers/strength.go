package samplers

import (
	"fmt"
	"math"
)

// StrengthStart is diffusers' get_timesteps without denoising_start (SDXL image-to-image and
// inpainting): of a schedule of n steps, strength keeps the last int(n*strength) (at most n;
// the product in float64 and truncated, as Python's int() does), so denoising starts at step
// index start = n - kept. strength must be in [0, 1]; kept may be 0 (the caller refuses it, as
// the pipelines raise "the number of pipeline steps is 0").
func StrengthStart(n int, strength float64) (start, kept int, err error) {
	if n < 1 {
		return 0, 0, fmt.Errorf("%w: %d inference steps", ErrSteps, n)
	}
	if math.IsNaN(strength) || strength < 0 || strength > 1 {
		return 0, 0, fmt.Errorf("%w: strength %v outside [0, 1]", ErrSteps, strength)
	}
	init := min(int(float64(n)*strength), n)
	start = max(n-init, 0)
	return start, n - start, nil
}

// From is the schedule the pipelines denoise after get_timesteps set the scheduler's
// begin_index to start: Timesteps[start:] and Sigmas[start:] (so step i of the result is step
// start+i of s). start must be in [0, Len()].
func (s *EulerSchedule) From(start int) (*EulerSchedule, error) {
	if start < 0 || start > len(s.Timesteps) {
		return nil, fmt.Errorf("%w: begin index %d of %d", ErrStepIndex, start, len(s.Timesteps))
	}
	c := *s
	c.Timesteps = s.Timesteps[start:]
	c.Sigmas = s.Sigmas[start:]
	c.initSigma = s.InitNoiseSigma()
	return &c, nil
}

// AddNoise is add_noise at step index i of s: dst = original + noise*sigma_i, in float32 as
// torch does (the product rounded, then the sum). i = 0 of a From(start) schedule is the
// image-to-image start (begin_index); i+1 after step i is the inpainting blend's next timestep
// (diffusers reads sigmas[step_index] once a step has run). i may be Len() (the final sigma).
// dst may alias original.
func (s *EulerSchedule) AddNoise(dst, original, noise []float32, i int) error {
	if i < 0 || i >= len(s.Sigmas) {
		return fmt.Errorf("%w: %d of %d sigmas", ErrStepIndex, i, len(s.Sigmas))
	}
	if len(dst) != len(original) || len(noise) != len(original) {
		return fmt.Errorf("%w: dst %d, original %d, noise %d", ErrShape, len(dst), len(original), len(noise))
	}
	sigma := s.Sigmas[i]
	for k, x := range original {
		dst[k] = x + float32(noise[k]*sigma)
	}
	return nil
}
