// Package samplers reproduces the noise-schedule maths of diffusers' EulerDiscreteScheduler
// (SDXL) and FlowMatchEulerDiscreteScheduler (SD3.5): timesteps and sigmas for a number of
// inference steps or from a request's custom timesteps/sigmas, input scaling and the Euler
// step. Each value is computed in the precision diffusers computes it (numpy float64 where
// diffusers uses numpy, float32 where it uses torch float32), so schedules match diffusers'
// bit for bit and step outputs to float32 rounding.
//
// Unlike diffusers' schedulers, which count steps internally, a schedule here is an
// immutable value and every call names its step index; one schedule may serve many requests
// at once. Index i of a schedule is what diffusers reaches with set_begin_index(0) (the
// SDXL and SD3 pipelines) after i calls of step().
package samplers

import "errors"

// Errors returned by the samplers.
var (
	// ErrConfig means a scheduler configuration value is invalid or not supported.
	ErrConfig = errors.New("samplers: unsupported configuration")
	// ErrSteps means the number of steps or the custom timesteps/sigmas are unusable.
	ErrSteps = errors.New("samplers: invalid steps")
	// ErrStepIndex means a step index outside the schedule.
	ErrStepIndex = errors.New("samplers: step index out of range")
	// ErrShape means tensors of different lengths were passed together.
	ErrShape = errors.New("samplers: tensor length mismatch")
	// ErrTimestep means a timestep that is not in the schedule.
	ErrTimestep = errors.New("samplers: timestep not in schedule")
)
