package diffusionpipeline

import (
	"context"
	"errors"
	"fmt"
	"image"
	"math"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/clip"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/latents"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/samplers"
)

// T5SeqLen is SD3.5's T5 sequence length (the pipelines' max_sequence_length, 256).
const T5SeqLen = 256

// SD3Spec are the tensor sizes an SD3Device's programs were built for.
type SD3Spec struct {
	// LatentChannels, LatentHeight and LatentWidth are one image's latent shape (16, 128, 128
	// for SD3.5 Large at 1024x1024).
	LatentChannels, LatentHeight, LatentWidth int
	// CLIPSeqLen is the CLIP encoders' sequence length (77); CLIPHidden their concatenated
	// penultimate hidden size (768 + 1280 = 2048); PooledSize their concatenated projected
	// pooled outputs (768 + 1280 = 2048).
	CLIPSeqLen, CLIPHidden, PooledSize int
	// T5SeqLen is the T5 encoder's sequence length (256); JointDim the transformer's
	// joint_attention_dim (4096), which is also T5's hidden size.
	T5SeqLen, JointDim int
	// ImageHeight and ImageWidth are the VAE decoder's output size in pixels.
	ImageHeight, ImageWidth int
}

// LatentElems is the number of elements of one image's latents.
func (s SD3Spec) LatentElems() int { return s.LatentChannels * s.LatentHeight * s.LatentWidth }

// JointSeqLen is the transformer's prompt sequence: CLIP's then T5's tokens (77 + 256 = 333).
func (s SD3Spec) JointSeqLen() int { return s.CLIPSeqLen + s.T5SeqLen }

// SD3Inputs is one prompt's input to the three SD3.5 text encoders.
type SD3Inputs struct {
	// CLIP are CLIP-L's (Encoder1) and CLIP-G's (Encoder2) 77 ids.
	CLIP clip.SDXLInputs
	// T5 are the T5 encoder's T5SeqLen ids (padded, with its end token), or nil when the
	// pipeline has no T5 encoder: its embeddings are then zeros, as diffusers does without
	// text_encoder_3.
	T5 []int
}

// SD3Embeds are the three text encoders' outputs for a batch of prompts, row-major float32.
type SD3Embeds struct {
	// Batch is the number of prompts.
	Batch int
	// CLIPHidden is [Batch, CLIPSeqLen, CLIPHidden]: both CLIP encoders' penultimate hidden
	// states concatenated along the last axis (CLIP-L first).
	CLIPHidden []float32
	// T5Hidden is [Batch, T5SeqLen, JointDim], T5's last hidden state; nil when no prompt had T5 ids.
	T5Hidden []float32
	// Pooled is [Batch, PooledSize]: both CLIP encoders' projected pooled outputs, concatenated.
	Pooled []float32
}

// SD3Cond is the transformer's conditioning for one request; it does not change between steps.
type SD3Cond struct {
	// Batch is 2 with classifier-free guidance (row 0 negative, row 1 positive), else 1.
	Batch int
	// Hidden is encoder_hidden_states [Batch, JointSeqLen, JointDim]: the CLIP states
	// zero-padded to JointDim, followed by T5's.
	Hidden []float32
	// Pooled is pooled_projections [Batch, PooledSize].
	Pooled []float32
}

// SD3Device runs the SD3.5 programs. A device serves one request at a time.
type SD3Device interface {
	// Spec returns the sizes the programs were built for.
	Spec() SD3Spec
	// Encode runs the text encoders once over the prompts.
	Encode(ctx context.Context, prompts []SD3Inputs) (SD3Embeds, error)
	// Transformer runs one MMDiT denoising step: sample is [cond.Batch, C, H, W], t the
	// timestep (sigma*1000); it returns the velocity prediction of the same shape. The same
	// *SD3Cond is passed for every step of a request.
	Transformer(ctx context.Context, sample []float32, t float32, cond *SD3Cond) ([]float32, error)
	// VAE decodes one image's latents [C, H, W] (already unscaled and shifted) to
	// [3, ImageHeight, ImageWidth] with values nominally in [-1, 1].
	VAE(ctx context.Context, latents []float32) ([]float32, error)
}

// SD3Request is one text-to-image request with diffusers' StableDiffusion3Pipeline semantics.
type SD3Request struct {
	Prompt string
	// Prompt2 (CLIP-G) and Prompt3 (T5); "" means Prompt.
	Prompt2, Prompt3 string
	// NegativePrompt "" is the empty prompt (SD3 encodes it; there are no zero embeddings);
	// NegativePrompt2 and NegativePrompt3 "" mean NegativePrompt.
	NegativePrompt, NegativePrompt2, NegativePrompt3 string
	// Steps is num_inference_steps; ignored when Timesteps or Sigmas are given.
	Steps int
	// GuidanceScale > 1 enables classifier-free guidance.
	GuidanceScale float64
	// Seed nil draws a random seed.
	Seed *int64
	// Timesteps and Sigmas are custom schedules (at most one; n values give n steps, as
	// FlowMatchEulerDiscreteScheduler.set_timesteps takes them).
	Timesteps []float64
	Sigmas    []float64
}

// SD3Config is the model configuration of the SD3.5 pipeline.
type SD3Config struct {
	// Scheduler is the FlowMatchEulerDiscreteScheduler configuration (shift 3.0).
	Scheduler samplers.FlowMatchConfig
	// VAEScalingFactor and VAEShiftFactor undo the latent normalisation before decoding:
	// latents/scaling + shift (1.5305 and 0.0609 for SD3.5).
	VAEScalingFactor, VAEShiftFactor float32
	// Kernel is torch's normal-fill kernel the seeded latents reproduce.
	Kernel latents.Kernel
}

// SD35Config is stabilityai/stable-diffusion-3.5-large's configuration.
func SD35Config() SD3Config {
	return SD3Config{
		Scheduler:        samplers.SD35FlowMatchConfig(),
		VAEScalingFactor: 1.5305,
		VAEShiftFactor:   0.0609,
		Kernel:           latents.KernelAVX2,
	}
}

// T5Tokenizer makes the T5 encoder's padded input ids (with the end token, truncated to
// maxLen, then padded), as diffusers' tokenizer_3(padding="max_length", truncation=True).
type T5Tokenizer interface {
	T5IDs(text string, maxLen int) []int
}

// SD3Pipeline generates SD3.5 images on one SD3Device. It serves one request at a time.
type SD3Pipeline struct {
	dev  SD3Device
	tok  Tokenizer
	t5   T5Tokenizer
	flow *samplers.FlowMatch
	cfg  SD3Config
	spec SD3Spec
}

// NewSD3 builds an SD3.5 pipeline over dev. t5 may be nil: the T5 embeddings are then zeros
// (diffusers without text_encoder_3), and the device's T5 encoder does not run.
func NewSD3(dev SD3Device, tok Tokenizer, t5 T5Tokenizer, cfg SD3Config) (*SD3Pipeline, error) {
	if dev == nil || tok == nil {
		return nil, errors.New("pipeline: nil device or tokenizer")
	}
	flow, err := newFlowMatch(cfg.VAEScalingFactor, cfg.VAEShiftFactor, cfg.Scheduler)
	if err != nil {
		return nil, err
	}
	s := dev.Spec()
	if s.LatentElems() <= 0 || s.CLIPSeqLen <= 0 || s.CLIPHidden <= 0 || s.PooledSize <= 0 || s.T5SeqLen <= 0 ||
		s.JointDim < s.CLIPHidden || s.ImageHeight <= 0 || s.ImageWidth <= 0 {
		return nil, fmt.Errorf("pipeline: device spec %+v has an empty or inconsistent size", s)
	}
	return &SD3Pipeline{dev: dev, tok: tok, t5: t5, flow: flow, cfg: cfg, spec: s}, nil
}

// newFlowMatch checks a flow-matching model's VAE factors (scaling > 0, a finite shift) and
// builds its scheduler: SD3.5's and Flux's pipelines start alike.
func newFlowMatch(scaling, shift float32, sched samplers.FlowMatchConfig) (*samplers.FlowMatch, error) {
	if !(scaling > 0) || math.IsInf(float64(shift), 0) || shift != shift {
		return nil, fmt.Errorf("pipeline: VAE scaling factor %v / shift %v", scaling, shift)
	}
	flow, err := samplers.NewFlowMatch(sched)
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	return flow, nil
}

// decodeFlow undoes a flow-matching model's latent normalisation in place (x/scaling + shift)
// and decodes x with dev's VAE into an image of h x w: SD3.5's and Flux's pipelines end alike.
func decodeFlow(ctx context.Context, dev interface {
	VAE(ctx context.Context, latents []float32) ([]float32, error)
}, x []float32, scaling, shift float32, h, w int) (*image.NRGBA, error) {
	for i := range x {
		x[i] = x[i]/scaling + shift
	}
	pix, err := dev.VAE(ctx, x)
	if err != nil {
		return nil, fmt.Errorf("pipeline: VAE decode: %w", err)
	}
	return ToImage(pix, h, w)
}

// Schedule returns the request's flow-matching schedule (its length is the number of
// transformer runs). Both Timesteps and Sigmas, or an unusable schedule, give an error
// wrapping runners.ErrBadRequest.
func (p *SD3Pipeline) Schedule(req SD3Request) (*samplers.FlowSchedule, error) {
	return pickSchedule(p.flow, req.Steps, req.Timesteps, req.Sigmas)
}

// Generate runs the request and returns the decoded image. ctx is checked before the
// encoders, before every transformer step and before the VAE; a cancelled request returns
// ctx's error. Hooks see every finished step.
func (p *SD3Pipeline) Generate(ctx context.Context, req SD3Request, hooks Hooks) (*image.NRGBA, error) {
	if math.IsNaN(req.GuidanceScale) || math.IsInf(req.GuidanceScale, 0) {
		return nil, fmt.Errorf("%w: guidance_scale %v", runners.ErrBadRequest, req.GuidanceScale)
	}
	sched, err := p.Schedule(req)
	if err != nil {
		return nil, err
	}
	guided := req.GuidanceScale > 1
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cond, err := p.encode(ctx, req, guided)
	if err != nil {
		return nil, err
	}
	seed, err := seedOf(req.Seed)
	if err != nil {
		return nil, err
	}
	s := p.spec
	// FlowMatch's init_noise_sigma is 1: the latents are the seeded normals as drawn.
	x, err := latents.Randn(ctx, seed, p.cfg.Kernel, 1, s.LatentChannels, s.LatentHeight, s.LatentWidth)
	if err != nil {
		return nil, fmt.Errorf("pipeline: initial latents: %w", err)
	}
	n, elems := sched.Len(), s.LatentElems()
	in := make([]float32, cond.Batch*elems)
	v := make([]float32, elems)
	var x0 []float32
	for i := range n {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for b := range cond.Batch {
			copy(in[b*elems:(b+1)*elems], x)
		}
		out, err := p.dev.Transformer(ctx, in, sched.Timesteps[i], cond)
		if err != nil {
			return nil, fmt.Errorf("pipeline: transformer step %d of %d: %w", i+1, n, err)
		}
		if len(out) != cond.Batch*elems {
			return nil, fmt.Errorf("pipeline: transformer step %d returned %d values, want %d", i+1, len(out), cond.Batch*elems)
		}
		if guided {
			Guide(v, out[:elems], out[elems:], req.GuidanceScale, 0)
		} else {
			copy(v, out)
		}
		if err := sched.Step(x, v, x, i); err != nil {
			return nil, fmt.Errorf("pipeline: scheduler step %d: %w", i, err)
		}
		if hooks.Step != nil {
			// x0 = x_i - sigma_i*v = x_{i+1} - sigma_{i+1}*v (the Euler step is linear in v).
			sigma := sched.Sigmas[i+1]
			denoised := func() []float32 {
				if x0 == nil {
					x0 = make([]float32, elems)
				}
				for k := range x0 {
					x0[k] = x[k] - sigma*v[k]
				}
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
	return decodeFlow(ctx, p.dev, x, p.cfg.VAEScalingFactor, p.cfg.VAEShiftFactor, s.ImageHeight, s.ImageWidth)
}

// inputs tokenizes one prompt for the three encoders.
func (p *SD3Pipeline) inputs(prompt, prompt2, prompt3 string) SD3Inputs {
	in := SD3Inputs{CLIP: p.tok.SDXL(prompt, prompt2)}
	if p.t5 != nil {
		in.T5 = p.t5.T5IDs(prompt3, p.spec.T5SeqLen)
	}
	return in
}

// or is a when it is not empty, else b.
func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// encode runs the encoders once (negative and positive prompt with guidance) and builds the
// transformer's joint conditioning, as StableDiffusion3Pipeline.encode_prompt does.
func (p *SD3Pipeline) encode(ctx context.Context, req SD3Request, guided bool) (*SD3Cond, error) {
	pos := p.inputs(req.Prompt, or(req.Prompt2, req.Prompt), or(req.Prompt3, req.Prompt))
	prompts := []SD3Inputs{pos}
	if guided {
		neg := p.inputs(req.NegativePrompt, or(req.NegativePrompt2, req.NegativePrompt), or(req.NegativePrompt3, req.NegativePrompt))
		prompts = []SD3Inputs{neg, pos}
	}
	for _, in := range prompts {
		if in.T5 != nil && len(in.T5) != p.spec.T5SeqLen {
			return nil, fmt.Errorf("pipeline: T5 tokenizer gave %d ids, want %d", len(in.T5), p.spec.T5SeqLen)
		}
	}
	emb, err := p.dev.Encode(ctx, prompts)
	if err != nil {
		return nil, fmt.Errorf("pipeline: text encoders: %w", err)
	}
	s := p.spec
	b := len(prompts)
	clipRow, t5Row := s.CLIPSeqLen*s.CLIPHidden, s.T5SeqLen*s.JointDim
	if emb.Batch != b || len(emb.CLIPHidden) != b*clipRow || len(emb.Pooled) != b*s.PooledSize ||
		(emb.T5Hidden != nil && len(emb.T5Hidden) != b*t5Row) || (p.t5 != nil && emb.T5Hidden == nil) {
		return nil, fmt.Errorf("pipeline: text encoders returned batch %d with %d/%d/%d values for %d prompts",
			emb.Batch, len(emb.CLIPHidden), len(emb.T5Hidden), len(emb.Pooled), b)
	}
	// encoder_hidden_states = cat([pad(clip, (0, JointDim-CLIPHidden)), t5], dim=-2).
	joint := s.JointSeqLen() * s.JointDim
	c := &SD3Cond{Batch: b, Hidden: make([]float32, b*joint), Pooled: emb.Pooled}
	for r := range b {
		row := c.Hidden[r*joint : (r+1)*joint]
		for tok := range s.CLIPSeqLen {
			copy(row[tok*s.JointDim:], emb.CLIPHidden[r*clipRow+tok*s.CLIPHidden:r*clipRow+(tok+1)*s.CLIPHidden])
		}
		if emb.T5Hidden != nil {
			copy(row[s.CLIPSeqLen*s.JointDim:], emb.T5Hidden[r*t5Row:(r+1)*t5Row])
		}
	}
	return c, nil
}
