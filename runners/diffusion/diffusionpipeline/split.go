package diffusionpipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/clip"
)

// CFGSplit runs classifier-free guidance's two denoiser halves at the same time on two
// devices, as the TT pipelines do on a 2-chip (2,1) mesh (SDXL with TP2) or on two CFG
// submeshes (SD3.5): the unconditional (negative) row on Uncond, the conditional row on Cond.
// The encoders and the VAE run on Uncond only. Without guidance (one row) the step runs on
// Uncond alone. CFGSplit implements Device when both halves do; SD3CFGSplit does for SD3Device.
type CFGSplit struct {
	Uncond, Cond Device

	mu     sync.Mutex
	last   *Cond
	halves [2]*Cond
}

// Spec implements Device (the halves must agree; NewCFGSplit checks).
func (s *CFGSplit) Spec() Spec { return s.Uncond.Spec() }

// NewCFGSplit pairs two devices built for the same sizes.
func NewCFGSplit(uncond, cond Device) (*CFGSplit, error) {
	if uncond == nil || cond == nil {
		return nil, errors.New("pipeline: CFG split needs two devices")
	}
	if uncond.Spec() != cond.Spec() {
		return nil, fmt.Errorf("pipeline: CFG halves built for different sizes: %+v and %+v", uncond.Spec(), cond.Spec())
	}
	return &CFGSplit{Uncond: uncond, Cond: cond}, nil
}

// Encode implements Device on Uncond.
func (s *CFGSplit) Encode(ctx context.Context, prompts []clip.SDXLInputs) (Embeds, error) {
	return s.Uncond.Encode(ctx, prompts)
}

// VAE implements Device on Uncond.
func (s *CFGSplit) VAE(ctx context.Context, latents []float32) ([]float32, error) {
	return s.Uncond.VAE(ctx, latents)
}

// VAEEncode implements ImageEncoder on Uncond, when Uncond has the encoder.
func (s *CFGSplit) VAEEncode(ctx context.Context, image []float32) ([]float32, error) {
	enc, ok := s.Uncond.(ImageEncoder)
	if !ok {
		return nil, ErrNoEncoder
	}
	return enc.VAEEncode(ctx, image)
}

// rows returns row r of a [batch, n] tensor.
func rows(v []float32, batch, r int) []float32 {
	n := len(v) / batch
	return v[r*n : (r+1)*n]
}

// UNet implements Device: with two rows each half runs on its device concurrently. The
// per-half conditionings are made once per cond, so each device sees the same *Cond every
// step (and writes its conditioning inputs once).
func (s *CFGSplit) UNet(ctx context.Context, sample []float32, t float32, cond *Cond) ([]float32, error) {
	if cond == nil || cond.Batch != 2 {
		return s.Uncond.UNet(ctx, sample, t, cond)
	}
	s.mu.Lock()
	if cond != s.last {
		for r := range 2 {
			s.halves[r] = &Cond{Batch: 1, Hidden: rows(cond.Hidden, 2, r), Pooled: rows(cond.Pooled, 2, r), TimeIDs: rows(cond.TimeIDs, 2, r)}
		}
		s.last = cond
	}
	halves := s.halves
	s.mu.Unlock()
	return splitRun(ctx, sample, [2]func(ctx context.Context, half []float32) ([]float32, error){
		func(ctx context.Context, half []float32) ([]float32, error) {
			return s.Uncond.UNet(ctx, half, t, halves[0])
		},
		func(ctx context.Context, half []float32) ([]float32, error) {
			return s.Cond.UNet(ctx, half, t, halves[1])
		},
	})
}

// splitRun runs the two halves of sample concurrently and concatenates their outputs; a
// failure of either is the step's failure.
func splitRun(ctx context.Context, sample []float32, run [2]func(context.Context, []float32) ([]float32, error)) ([]float32, error) {
	if len(sample)%2 != 0 {
		return nil, fmt.Errorf("pipeline: CFG split of %d values", len(sample))
	}
	n := len(sample) / 2
	var (
		wg   sync.WaitGroup
		outs [2][]float32
		errs [2]error
	)
	for r := range 2 {
		wg.Go(func() { outs[r], errs[r] = run[r](ctx, sample[r*n:(r+1)*n]) })
	}
	wg.Wait()
	if err := errors.Join(errs[0], errs[1]); err != nil {
		return nil, err
	}
	if len(outs[0]) != n || len(outs[1]) != n {
		return nil, fmt.Errorf("pipeline: CFG halves returned %d and %d values, want %d each", len(outs[0]), len(outs[1]), n)
	}
	return append(outs[0], outs[1]...), nil
}

// SD3CFGSplit is CFGSplit for the SD3.5 pipeline: the two transformer halves run concurrently
// on Uncond and Cond (the demo's two CFG submeshes); the encoders and the VAE on Uncond.
type SD3CFGSplit struct {
	Uncond, Cond SD3Device

	mu     sync.Mutex
	last   *SD3Cond
	halves [2]*SD3Cond
}

// NewSD3CFGSplit pairs two devices built for the same sizes.
func NewSD3CFGSplit(uncond, cond SD3Device) (*SD3CFGSplit, error) {
	if uncond == nil || cond == nil {
		return nil, errors.New("pipeline: CFG split needs two devices")
	}
	if uncond.Spec() != cond.Spec() {
		return nil, fmt.Errorf("pipeline: CFG halves built for different sizes: %+v and %+v", uncond.Spec(), cond.Spec())
	}
	return &SD3CFGSplit{Uncond: uncond, Cond: cond}, nil
}

// Spec implements SD3Device.
func (s *SD3CFGSplit) Spec() SD3Spec { return s.Uncond.Spec() }

// Encode implements SD3Device on Uncond.
func (s *SD3CFGSplit) Encode(ctx context.Context, prompts []SD3Inputs) (SD3Embeds, error) {
	return s.Uncond.Encode(ctx, prompts)
}

// VAE implements SD3Device on Uncond.
func (s *SD3CFGSplit) VAE(ctx context.Context, latents []float32) ([]float32, error) {
	return s.Uncond.VAE(ctx, latents)
}

// Transformer implements SD3Device: with two rows each half runs on its device concurrently.
func (s *SD3CFGSplit) Transformer(ctx context.Context, sample []float32, t float32, cond *SD3Cond) ([]float32, error) {
	if cond == nil || cond.Batch != 2 {
		return s.Uncond.Transformer(ctx, sample, t, cond)
	}
	s.mu.Lock()
	if cond != s.last {
		for r := range 2 {
			s.halves[r] = &SD3Cond{Batch: 1, Hidden: rows(cond.Hidden, 2, r), Pooled: rows(cond.Pooled, 2, r)}
		}
		s.last = cond
	}
	halves := s.halves
	s.mu.Unlock()
	return splitRun(ctx, sample, [2]func(ctx context.Context, half []float32) ([]float32, error){
		func(ctx context.Context, half []float32) ([]float32, error) {
			return s.Uncond.Transformer(ctx, half, t, halves[0])
		},
		func(ctx context.Context, half []float32) ([]float32, error) {
			return s.Cond.Transformer(ctx, half, t, halves[1])
		},
	})
}

var (
	_ Device    = (*CFGSplit)(nil)
	_ SD3Device = (*SD3CFGSplit)(nil)
)
