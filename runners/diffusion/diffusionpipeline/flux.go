package diffusionpipeline

import (
	"context"
	"errors"
	"fmt"
	"image"
	"math"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/latents"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/samplers"
)

// FluxSpec are the tensor sizes a FluxDevice's programs were built for.
type FluxSpec struct {
	// LatentChannels, LatentHeight and LatentWidth are one image's unpacked latent shape (16,
	// 128, 128 at 1024x1024); the transformer sees them packed in 2x2 patches
	// (ImageSeqLen tokens of LatentChannels*4).
	LatentChannels, LatentHeight, LatentWidth int
	// CLIPSeqLen is CLIP-L's sequence length (77); PooledSize its pooled output (768), the
	// transformer's pooled_projections.
	CLIPSeqLen, PooledSize int
	// T5SeqLen is the T5 encoder's sequence length (max_sequence_length: 512 for dev, 256 for
	// schnell); JointDim its hidden size (4096), the transformer's joint_attention_dim.
	T5SeqLen, JointDim int
	// Guidance: the transformer takes the embedded guidance scale (FLUX.1-dev's
	// guidance_embeds); schnell's does not.
	Guidance bool
	// ImageHeight and ImageWidth are the VAE decoder's output size in pixels.
	ImageHeight, ImageWidth int
}

// LatentElems is the number of values of one image's latents (packed or not).
func (s FluxSpec) LatentElems() int { return s.LatentChannels * s.LatentHeight * s.LatentWidth }

// ImageSeqLen is the packed latents' number of tokens, (H/2)*(W/2): the image_seq_len that
// sets FLUX.1-dev's shift.
func (s FluxSpec) ImageSeqLen() int { return (s.LatentHeight / 2) * (s.LatentWidth / 2) }

// PackedDim is one packed token's width, LatentChannels*4 (the transformer's in_channels, 64).
func (s FluxSpec) PackedDim() int { return s.LatentChannels * 4 }

// FluxInputs is one prompt's input to the two Flux text encoders.
type FluxInputs struct {
	// CLIP are CLIP-L's CLIPSeqLen ids (padded with <|endoftext|>), T5 the T5 encoder's
	// T5SeqLen ids (with its end token, padded).
	CLIP, T5 []int
}

// FluxEmbeds are the text encoders' outputs for one prompt, row-major float32.
type FluxEmbeds struct {
	// Pooled is CLIP-L's pooled output [PooledSize].
	Pooled []float32
	// T5Hidden is T5's last hidden state [T5SeqLen, JointDim].
	T5Hidden []float32
}

// FluxCond is the transformer's conditioning for one request; it does not change between
// steps.
type FluxCond struct {
	// Hidden is encoder_hidden_states [1, T5SeqLen, JointDim] (T5's states only: Flux puts
	// no CLIP token in the sequence).
	Hidden []float32
	// Pooled is pooled_projections [1, PooledSize].
	Pooled []float32
	// TxtIDs is txt_ids [T5SeqLen, 3] (zeros) and ImgIDs img_ids [ImageSeqLen, 3] (0, row,
	// column): the tokens' rotary positions.
	TxtIDs, ImgIDs []float32
	// Guidance is the embedded guidance scale (FLUX.1-dev), unused without Spec().Guidance.
	Guidance float32
}

// FluxDevice runs the Flux.1 programs. A device serves one request at a time.
type FluxDevice interface {
	// Spec returns the sizes the programs were built for.
	Spec() FluxSpec
	// Encode runs CLIP-L and T5 once over one prompt.
	Encode(ctx context.Context, in FluxInputs) (FluxEmbeds, error)
	// Transformer runs one denoising step: packed is [1, ImageSeqLen, PackedDim], t the
	// transformer's timestep input (the scheduler's timestep / 1000, as FluxPipeline passes
	// it); it returns the velocity of the same shape. The same *FluxCond is passed for every
	// step of a request.
	Transformer(ctx context.Context, packed []float32, t float32, cond *FluxCond) ([]float32, error)
	// VAE decodes one image's unpacked latents [C, H, W] (already unscaled and shifted) to
	// [3, ImageHeight, ImageWidth] with values nominally in [-1, 1].
	VAE(ctx context.Context, latents []float32) ([]float32, error)
}

// FluxRequest is one text-to-image request with diffusers' FluxPipeline semantics.
type FluxRequest struct {
	// Prompt goes to CLIP-L, Prompt2 to T5 ("" means Prompt).
	Prompt, Prompt2 string
	// Steps is num_inference_steps; ignored when Sigmas are given.
	Steps int
	// GuidanceScale is FLUX.1-dev's embedded guidance (0 means the configuration's default,
	// 3.5). FLUX.1-schnell is guidance-distilled and takes none: a non-zero value is refused.
	GuidanceScale float64
	// Seed nil draws a random seed.
	Seed *int64
	// Sigmas is a custom schedule (FluxPipeline's sigmas=: n values give n steps, before the
	// dynamic shift).
	Sigmas []float64
}

// FluxConfig is the model configuration of a Flux.1 pipeline.
type FluxConfig struct {
	// Name is the checkpoint's name in messages ("FLUX.1-dev").
	Name string
	// Scheduler is the FlowMatchEulerDiscreteScheduler configuration: dev shifts dynamically
	// with the resolution, schnell has a static shift of 1.
	Scheduler samplers.FlowMatchConfig
	// DefaultGuidance is the embedded guidance of a request without one (dev 3.5; schnell 0:
	// no guidance input).
	DefaultGuidance float64
	// VAEScalingFactor and VAEShiftFactor undo the latent normalisation before decoding:
	// latents/scaling + shift (0.3611 and 0.1159 for Flux.1's autoencoder).
	VAEScalingFactor, VAEShiftFactor float32
	// Kernel is torch's normal-fill kernel the seeded latents reproduce.
	Kernel latents.Kernel
}

// FluxDevConfig is black-forest-labs/FLUX.1-dev's configuration.
func FluxDevConfig() FluxConfig {
	return FluxConfig{Name: "FLUX.1-dev", Scheduler: samplers.FluxDevFlowMatchConfig(), DefaultGuidance: 3.5,
		VAEScalingFactor: 0.3611, VAEShiftFactor: 0.1159, Kernel: latents.KernelAVX2}
}

// FluxSchnellConfig is black-forest-labs/FLUX.1-schnell's configuration.
func FluxSchnellConfig() FluxConfig {
	return FluxConfig{Name: "FLUX.1-schnell", Scheduler: samplers.FluxSchnellFlowMatchConfig(),
		VAEScalingFactor: 0.3611, VAEShiftFactor: 0.1159, Kernel: latents.KernelAVX2}
}

// FluxPipeline generates Flux.1 images on one FluxDevice. It serves one request at a time.
type FluxPipeline struct {
	dev  FluxDevice
	tok  Tokenizer
	t5   T5Tokenizer
	flow *samplers.FlowMatch
	cfg  FluxConfig
	spec FluxSpec
}

// NewFlux builds a Flux.1 pipeline over dev. Both tokenizers are required: Flux has no
// embeddings without T5.
func NewFlux(dev FluxDevice, tok Tokenizer, t5 T5Tokenizer, cfg FluxConfig) (*FluxPipeline, error) {
	if dev == nil || tok == nil || t5 == nil {
		return nil, errors.New("pipeline: Flux needs a device, a CLIP tokenizer and a T5 tokenizer")
	}
	flow, err := newFlowMatch(cfg.VAEScalingFactor, cfg.VAEShiftFactor, cfg.Scheduler)
	if err != nil {
		return nil, err
	}
	s := dev.Spec()
	if s.LatentChannels < 1 || s.LatentHeight < 2 || s.LatentWidth < 2 || s.LatentHeight%2 != 0 || s.LatentWidth%2 != 0 ||
		s.CLIPSeqLen <= 0 || s.PooledSize <= 0 || s.T5SeqLen <= 0 || s.JointDim <= 0 || s.ImageHeight <= 0 || s.ImageWidth <= 0 {
		return nil, fmt.Errorf("pipeline: device spec %+v has an empty or inconsistent size", s)
	}
	if s.Guidance != (cfg.DefaultGuidance > 0) {
		return nil, fmt.Errorf("pipeline: %s programs %s a guidance input", cfg.Name, map[bool]string{true: "have", false: "lack"}[s.Guidance])
	}
	return &FluxPipeline{dev: dev, tok: tok, t5: t5, flow: flow, cfg: cfg, spec: s}, nil
}

// Mu is the request's dynamic shift: calculate_shift of the programs' image sequence length.
func (p *FluxPipeline) Mu() float64 { return p.flow.Mu(p.spec.ImageSeqLen()) }

// Schedule returns the request's schedule (its length is the number of transformer runs):
// FluxPipeline's linspace(1, 1/N, N) sigmas or the request's, shifted with Mu. An unusable
// schedule gives an error wrapping runners.ErrBadRequest.
func (p *FluxPipeline) Schedule(req FluxRequest) (*samplers.FlowSchedule, error) {
	sigmas := req.Sigmas
	if len(sigmas) == 0 {
		var err error
		if sigmas, err = samplers.FluxSigmas(req.Steps); err != nil {
			return nil, fmt.Errorf("%w: %w", runners.ErrBadRequest, err)
		}
	}
	s, err := p.flow.ScheduleFromSigmasMu(sigmas, p.Mu())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", runners.ErrBadRequest, err)
	}
	return s, nil
}

// guidance is the request's embedded guidance value, or an error naming guidance_scale.
func (p *FluxPipeline) guidance(g float64) (float32, error) {
	switch {
	case math.IsNaN(g) || math.IsInf(g, 0) || g < 0:
		return 0, fmt.Errorf("%w: guidance_scale %v", runners.ErrBadRequest, g)
	case !p.spec.Guidance && g != 0:
		return 0, fmt.Errorf("%w: guidance_scale: %s is guidance-distilled and takes no guidance", runners.ErrBadRequest, p.cfg.Name)
	case g == 0:
		g = p.cfg.DefaultGuidance
	}
	return float32(g), nil
}

// Generate runs the request and returns the decoded image. ctx is checked before the
// encoders, before every transformer step and before the VAE; a cancelled request returns
// ctx's error. Hooks see every finished step, with the estimate of the final latents
// unpacked to [C, H, W].
func (p *FluxPipeline) Generate(ctx context.Context, req FluxRequest, hooks Hooks) (*image.NRGBA, error) {
	g, err := p.guidance(req.GuidanceScale)
	if err != nil {
		return nil, err
	}
	sched, err := p.Schedule(req)
	if err != nil {
		return nil, err
	}
	seed, err := seedOf(req.Seed)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cond, err := p.encode(ctx, req, g)
	if err != nil {
		return nil, err
	}
	s := p.spec
	c, h, w := s.LatentChannels, s.LatentHeight, s.LatentWidth
	raw, err := latents.Randn(ctx, seed, p.cfg.Kernel, 1, c, h, w)
	if err != nil {
		return nil, fmt.Errorf("pipeline: initial latents: %w", err)
	}
	x := make([]float32, len(raw))
	if err := PackLatents(x, raw, c, h, w); err != nil {
		return nil, err
	}
	n := sched.Len()
	var x0, packed0 []float32
	for i := range n {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		v, err := p.dev.Transformer(ctx, x, sched.Timesteps[i]/1000, cond)
		if err != nil {
			return nil, fmt.Errorf("pipeline: transformer step %d of %d: %w", i+1, n, err)
		}
		if len(v) != len(x) {
			return nil, fmt.Errorf("pipeline: transformer step %d returned %d values, want %d", i+1, len(v), len(x))
		}
		if err := sched.Step(x, v, x, i); err != nil {
			return nil, fmt.Errorf("pipeline: scheduler step %d: %w", i, err)
		}
		if hooks.Step != nil {
			sigma := sched.Sigmas[i+1]
			denoised := func() []float32 {
				if x0 == nil {
					x0, packed0 = make([]float32, len(x)), make([]float32, len(x))
				}
				for k := range packed0 {
					packed0[k] = x[k] - sigma*v[k]
				}
				_ = UnpackLatents(x0, packed0, c, h, w) // shapes checked above
				return x0
			}
			if err := hooks.Step(i+1, n, denoised); err != nil {
				return nil, err
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := UnpackLatents(raw, x, c, h, w); err != nil {
		return nil, err
	}
	return decodeFlow(ctx, p.dev, raw, p.cfg.VAEScalingFactor, p.cfg.VAEShiftFactor, s.ImageHeight, s.ImageWidth)
}

// encode runs the encoders once and builds the transformer's conditioning, as
// FluxPipeline.encode_prompt does: CLIP-L's pooled output of the prompt, T5's states of
// prompt_2 (default the prompt), zero text ids, the latent image ids.
func (p *FluxPipeline) encode(ctx context.Context, req FluxRequest, g float32) (*FluxCond, error) {
	s := p.spec
	in := FluxInputs{CLIP: p.tok.SDXL(req.Prompt, req.Prompt).Encoder1.IDs, T5: p.t5.T5IDs(or(req.Prompt2, req.Prompt), s.T5SeqLen)}
	if len(in.CLIP) != s.CLIPSeqLen || len(in.T5) != s.T5SeqLen {
		return nil, fmt.Errorf("pipeline: tokenizers gave %d CLIP and %d T5 ids, want %d and %d", len(in.CLIP), len(in.T5), s.CLIPSeqLen, s.T5SeqLen)
	}
	emb, err := p.dev.Encode(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("pipeline: text encoders: %w", err)
	}
	if len(emb.Pooled) != s.PooledSize || len(emb.T5Hidden) != s.T5SeqLen*s.JointDim {
		return nil, fmt.Errorf("pipeline: text encoders returned %d pooled and %d T5 values, want %d and %d",
			len(emb.Pooled), len(emb.T5Hidden), s.PooledSize, s.T5SeqLen*s.JointDim)
	}
	return &FluxCond{Hidden: emb.T5Hidden, Pooled: emb.Pooled, TxtIDs: make([]float32, s.T5SeqLen*3),
		ImgIDs: LatentImageIDs(s.LatentHeight, s.LatentWidth), Guidance: g}, nil
}
