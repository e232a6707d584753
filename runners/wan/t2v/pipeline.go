package t2v

import (
	"context"
	"fmt"

	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/latents"
	"github.com/tenstorrent/tt-media-server-go/runners/wan/sampler"
	"github.com/tenstorrent/tt-media-server-go/runners/wan/umt5"
)

// Spec are the sizes a Device's programs were built for.
type Spec struct {
	// Shape is the clip the transformer and VAE programs take (81 frames at 832x480 on a
	// (2,4) mesh, 1280x720 on a Galaxy).
	Shape Shape
	// TextLen is the UMT5 sequence length (512) and TextDim its hidden size (4096).
	TextLen, TextDim int
}

// Device runs Wan2.2's programs. A device serves one request at a time.
type Device interface {
	// Spec returns the sizes the programs were built for.
	Spec() Spec
	// Encode runs the UMT5 encoder over TextLen ids with their attention mask; it returns the
	// last hidden state [TextLen, TextDim].
	Encode(ctx context.Context, ids, mask []int) ([]float32, error)
	// Transformer runs one expert (HighNoise or LowNoise) once: latents [16, F, H, W] (with
	// Request.Condition's channels after them for image-to-video) at timestep t conditioned
	// on text [TextLen, TextDim]; it returns the flow prediction of the latents' shape
	// [16, F, H, W].
	Transformer(ctx context.Context, expert int, latents []float32, t int64, text []float32) ([]float32, error)
	// VAE decodes un-normalised latents to [3, Frames, Height, Width] in [-1, 1].
	VAE(ctx context.Context, latents []float32) ([]float32, error)
}

// Config is a Wan2.2 T2V pipeline's model configuration.
type Config struct {
	Sampler  sampler.Config
	Guidance Guidance
	// Kernel is torch's normal-fill kernel the seeded latents reproduce.
	Kernel latents.Kernel
	// TwoStepLowNoise runs a 2-step generation's second step on the low-noise expert (with
	// Scale2) whatever its timestep, as tt-metal's WanPipeline does to warm both experts up.
	TwoStepLowNoise bool
	// DefaultNegativePrompt is encoded for the unconditional prediction when a request's
	// NegativePrompt is empty ("" keeps diffusers' behaviour: the empty prompt).
	DefaultNegativePrompt string
}

// Wan22Config is Wan2.2-T2V-A14B as HEAD's device code runs it (catalogue.Wan22Sampling):
// UniPC (runners/wan/sampler's Wan22T2V, the checkpoint's scheduler) with tt-metal's
// flow_shift 12.0, boundary_ratio 0.875, guidance 4.0 for the high-noise expert and 3.0 for
// the low-noise one, a 2-step run's second step on the low-noise expert, and Wan's default
// negative prompt when the request has none.
func Wan22Config() Config {
	return SamplingConfig(catalogue.Wan22Sampling)
}

// SamplingConfig is the pipeline configuration of a model HEAD samples as w.
func SamplingConfig(w catalogue.WanSampling) Config {
	s := sampler.Wan22T2V()
	s.FlowShift = w.FlowShift
	return Config{Sampler: s, Guidance: Guidance{Scale: w.Guidance, Scale2: w.Guidance2, BoundaryRatio: w.BoundaryRatio},
		TwoStepLowNoise: w.TwoStepLowNoise, DefaultNegativePrompt: w.DefaultNegativePrompt}
}

// Request is one text-to-video request.
type Request struct {
	Prompt, NegativePrompt string
	Steps                  int
	Seed                   uint64
	// Guidance, when non-nil, replaces the configuration's scales (BoundaryRatio stays).
	Guidance *Guidance
	// Condition, for image-to-video (runners/wan/i2v), is concatenated after the latents
	// along the channels as every step's transformer input (WanImageToVideoPipeline's
	// torch.cat([latents, condition], dim=1)): whole channels of the latents' frame size.
	// Nil for text-to-video.
	Condition []float32
}

// Hooks are called during Generate.
type Hooks struct {
	// Step is called after each denoising step with the steps done and the total; an error
	// stops the generation.
	Step func(done, total int) error
}

// Pipeline is Wan2.2 T2V on a Device.
type Pipeline struct {
	dev Device
	tok *umt5.Tokenizer
	cfg Config
}

// New checks that the tokenizer and the device agree.
func New(dev Device, tok *umt5.Tokenizer, cfg Config) (*Pipeline, error) {
	s := dev.Spec()
	if tok.MaxLen() != s.TextLen {
		return nil, fmt.Errorf("wan2.2 pipeline: the tokenizer makes %d ids, the text encoder takes %d", tok.MaxLen(), s.TextLen)
	}
	if _, err := cfg.Sampler.Schedule(1); err != nil {
		return nil, err
	}
	return &Pipeline{dev: dev, tok: tok, cfg: cfg}, nil
}

// Shape is the clip the device renders.
func (p *Pipeline) Shape() Shape { return p.dev.Spec().Shape }

// Generate renders one clip: the prompt (and, with guidance above 1, the negative prompt or
// the configuration's default) encoded once each with the states past seq_len zeroed; seeded latents; per step the expert
// and scale picked by timestep, the conditional and unconditional predictions combined, one
// UniPC step; then un-normalisation and the VAE. It returns the RGB24 frames.
func (p *Pipeline) Generate(ctx context.Context, req Request, hooks Hooks) ([][]byte, error) {
	g := p.cfg.Guidance
	if req.Guidance != nil {
		g.Scale, g.Scale2 = req.Guidance.Scale, req.Guidance.Scale2
	}
	if g.Scale2 == 0 {
		g.Scale2 = g.Scale // guidance_scale_2 defaults to guidance_scale
	}
	cfgOn := g.Scale > 1 // do_classifier_free_guidance
	smp, err := p.cfg.Sampler.New(req.Steps)
	if err != nil {
		return nil, fmt.Errorf("%w: num_inference_steps: %w", ErrRequest, err)
	}
	spec := p.dev.Spec()
	cond, err := p.encode(ctx, req.Prompt, spec)
	if err != nil {
		return nil, err
	}
	var uncond []float32
	if cfgOn {
		neg := req.NegativePrompt
		if neg == "" {
			neg = p.cfg.DefaultNegativePrompt // HEAD passes negative_prompts only when non-empty
		}
		if uncond, err = p.encode(ctx, neg, spec); err != nil {
			return nil, err
		}
	}
	sh := spec.Shape
	x, err := latents.Randn(ctx, req.Seed, p.cfg.Kernel, 1, LatentChannels, sh.LatentFrames, sh.LatentHeight, sh.LatentWidth)
	if err != nil {
		return nil, fmt.Errorf("wan2.2 latents: %w", err)
	}
	sched := smp.Schedule()
	next := make([]float32, len(x))
	in := x
	if n := len(req.Condition); n > 0 {
		if n%(len(x)/LatentChannels) != 0 {
			return nil, fmt.Errorf("wan2.2: a condition of %d values is not whole channels of %d", n, len(x)/LatentChannels)
		}
		in = make([]float32, len(x)+n)
		copy(in[len(x):], req.Condition)
	}
	for i, t := range sched.Timesteps {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("wan2.2: cancelled before step %d of %d: %w", i+1, sched.Len(), err)
		}
		expert, scale := g.Pick(t, p.cfg.Sampler.NumTrainTimesteps)
		if p.cfg.TwoStepLowNoise && i == 1 && sched.Len() == 2 {
			expert, scale = LowNoise, g.Scale2 // warmup_t2: the low-noise expert is warmed up too
		}
		if req.Condition != nil {
			copy(in, x)
		} else {
			in = x
		}
		v, err := p.dev.Transformer(ctx, expert, in, t, cond)
		if err != nil {
			return nil, fmt.Errorf("wan2.2 transformer step %d of %d: %w", i+1, sched.Len(), err)
		}
		if cfgOn {
			u, err := p.dev.Transformer(ctx, expert, in, t, uncond)
			if err != nil {
				return nil, fmt.Errorf("wan2.2 transformer step %d of %d (unconditional): %w", i+1, sched.Len(), err)
			}
			CFG(v, u, scale)
		}
		if err := smp.Step(next, v, x); err != nil {
			return nil, err
		}
		x, next = next, x
		if hooks.Step != nil {
			if err := hooks.Step(i+1, sched.Len()); err != nil {
				return nil, err
			}
		}
	}
	Unnormalize(x)
	video, err := p.dev.VAE(ctx, x)
	if err != nil {
		return nil, fmt.Errorf("wan2.2 VAE decode: %w", err)
	}
	return ToFrames(video, sh.Frames, sh.Height, sh.Width)
}

// encode tokenizes and encodes one prompt and zeroes the states past its seq_len, as
// _get_t5_prompt_embeds trims them and pads with zeros.
func (p *Pipeline) encode(ctx context.Context, prompt string, spec Spec) ([]float32, error) {
	enc := p.tok.Encode(prompt)
	h, err := p.dev.Encode(ctx, enc.IDs, enc.Mask)
	if err != nil {
		return nil, fmt.Errorf("wan2.2 text encoder: %w", err)
	}
	if len(h) != spec.TextLen*spec.TextDim {
		return nil, fmt.Errorf("wan2.2 text encoder: %d values, not %dx%d", len(h), spec.TextLen, spec.TextDim)
	}
	clear(h[enc.SeqLen*spec.TextDim:])
	return h, nil
}
