package diffusionpipeline

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"math"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/clip"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/latents"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/samplers"
)

// timeIDsLen is the length of SDXL's add_time_ids: original (h, w), crop (top, left), target (h, w).
const timeIDsLen = 6

// Request is one text-to-image request, with diffusers' StableDiffusionXLPipeline semantics.
type Request struct {
	Prompt string
	// Prompt2 is the second encoder's prompt; "" means Prompt.
	Prompt2 string
	// NegativePrompt nil means none: zero negative embeddings when
	// Config.ForceZerosForEmptyPrompt (SDXL base), else "".
	NegativePrompt *string
	// NegativePrompt2 nil means NegativePrompt.
	NegativePrompt2 *string
	// Steps is num_inference_steps; ignored when Timesteps or Sigmas are given.
	Steps int
	// GuidanceScale > 1 enables classifier-free guidance.
	GuidanceScale float64
	// GuidanceRescale in [0, 1] (diffusers' rescale_noise_cfg), used with guidance only.
	GuidanceRescale float64
	// Seed nil draws a random seed.
	Seed *int64
	// Timesteps and Sigmas are custom schedules (at most one; len(Sigmas) includes the
	// final sigma, so N = len(Sigmas)-1 as in diffusers' EulerDiscreteScheduler).
	Timesteps []float64
	Sigmas    []float64
	// CropCoordsTopLeft is SDXL's crop_coords_top_left micro-conditioning (top, left).
	CropCoordsTopLeft [2]float64
}

// RequestFrom converts the server's request; an empty negative prompt means none (null).
func RequestFrom(r *runners.ImageRequest) Request {
	req := Request{
		Prompt: r.Prompt, Prompt2: r.Prompt2, Steps: r.NumInferenceSteps,
		GuidanceScale: r.GuidanceScale, GuidanceRescale: r.GuidanceRescale, Seed: r.Seed,
		Timesteps: r.Timesteps, Sigmas: r.Sigmas, CropCoordsTopLeft: r.CropCoordsTopLeft,
	}
	if r.NegativePrompt != "" {
		req.NegativePrompt = &r.NegativePrompt
	}
	if r.NegativePrompt2 != "" {
		req.NegativePrompt2 = &r.NegativePrompt2
	}
	return req
}

// Config is the model configuration of the pipeline.
type Config struct {
	// Scheduler is the EulerDiscreteScheduler configuration (SDXLEulerConfig).
	Scheduler samplers.EulerConfig
	// VAEScalingFactor divides the final latents before decoding (0.13025 for SDXL).
	VAEScalingFactor float32
	// ForceZerosForEmptyPrompt zeroes the negative embeddings when no negative prompt is
	// given (SDXL base's force_zeros_for_empty_prompt, true).
	ForceZerosForEmptyPrompt bool
	// Kernel is torch's normal-fill kernel the seeded latents reproduce.
	Kernel latents.Kernel
}

// SDXLConfig is stabilityai/stable-diffusion-xl-base-1.0's configuration.
func SDXLConfig() Config {
	return Config{
		Scheduler:                samplers.SDXLEulerConfig(),
		VAEScalingFactor:         0.13025,
		ForceZerosForEmptyPrompt: true,
		Kernel:                   latents.KernelAVX2,
	}
}

// Tokenizer makes both SDXL encoders' inputs; *clip.Tokenizer implements it.
type Tokenizer interface {
	SDXL(prompt, prompt2 string) clip.SDXLInputs
}

// Progress is told after each finished denoising step (step 1..total).
type Progress func(step, total int)

// Hooks observe a generation between steps; the zero value observes nothing.
type Hooks struct {
	// Step, when not nil, is called after each finished denoising step (step 1..total).
	// denoised returns the model's current estimate of the final latents (diffusers'
	// pred_original_sample, one image [C, H, W] in the denoiser's latent space), computed only
	// when called and valid until Step returns. A non-nil error stops the generation, which
	// returns it.
	Step func(step, total int, denoised func() []float32) error
}

// Pipeline generates images on one Device. It serves one request at a time.
type Pipeline struct {
	dev   Device
	tok   Tokenizer
	euler *samplers.Euler
	cfg   Config
	spec  Spec
}

// New builds a pipeline over dev.
func New(dev Device, tok Tokenizer, cfg Config) (*Pipeline, error) {
	if dev == nil || tok == nil {
		return nil, errors.New("pipeline: nil device or tokenizer")
	}
	if !(cfg.VAEScalingFactor > 0) {
		return nil, fmt.Errorf("pipeline: VAE scaling factor %v must be positive", cfg.VAEScalingFactor)
	}
	euler, err := samplers.NewEuler(cfg.Scheduler)
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	spec := dev.Spec()
	if spec.LatentElems() <= 0 || spec.SeqLen <= 0 || spec.HiddenSize <= 0 || spec.PooledSize <= 0 ||
		spec.ImageHeight <= 0 || spec.ImageWidth <= 0 {
		return nil, fmt.Errorf("pipeline: device spec %+v has an empty size", spec)
	}
	return &Pipeline{dev: dev, tok: tok, euler: euler, cfg: cfg, spec: spec}, nil
}

// Schedule returns the request's scheduler schedule (its length is the number of UNet
// runs). Both Timesteps and Sigmas, or an unusable schedule, give an error wrapping
// runners.ErrBadRequest.
func (p *Pipeline) Schedule(req Request) (*samplers.EulerSchedule, error) {
	return pickSchedule(p.euler, req.Steps, req.Timesteps, req.Sigmas)
}

// scheduler is what Euler and FlowMatch offer for a request's schedule.
type scheduler[S any] interface {
	Schedule(n int) (S, error)
	ScheduleFromTimesteps(timesteps []float64) (S, error)
	ScheduleFromSigmas(sigmas []float64) (S, error)
}

// pickSchedule makes the schedule of a request: custom timesteps or sigmas (at most one), or
// steps. Errors wrap runners.ErrBadRequest.
func pickSchedule[S any](sc scheduler[S], steps int, timesteps, sigmas []float64) (S, error) {
	var (
		s   S
		err error
	)
	switch {
	case len(timesteps) > 0 && len(sigmas) > 0:
		return s, fmt.Errorf("%w: only one of timesteps and sigmas may be given", runners.ErrBadRequest)
	case len(timesteps) > 0:
		s, err = sc.ScheduleFromTimesteps(timesteps)
	case len(sigmas) > 0:
		s, err = sc.ScheduleFromSigmas(sigmas)
	default:
		s, err = sc.Schedule(steps)
	}
	if err != nil {
		return s, fmt.Errorf("%w: %w", runners.ErrBadRequest, err)
	}
	return s, nil
}

// Generate runs the request and returns the decoded image. ctx is checked before the
// encoders, before every UNet step and before the VAE; a cancelled request returns ctx's
// error. progress may be nil.
func (p *Pipeline) Generate(ctx context.Context, req Request, progress Progress) (*image.NRGBA, error) {
	var h Hooks
	if progress != nil {
		h.Step = func(step, total int, _ func() []float32) error { progress(step, total); return nil }
	}
	return p.GenerateWith(ctx, req, h)
}

// GenerateWith is Generate with hooks called between the steps.
func (p *Pipeline) GenerateWith(ctx context.Context, req Request, hooks Hooks) (*image.NRGBA, error) {
	return p.generate(ctx, req, nil, hooks)
}

// generate runs text-to-image (in nil), image-to-image or inpainting.
func (p *Pipeline) generate(ctx context.Context, req Request, in *ImageInput, hooks Hooks) (*image.NRGBA, error) {
	if math.IsNaN(req.GuidanceScale) || math.IsInf(req.GuidanceScale, 0) ||
		!(req.GuidanceRescale >= 0 && req.GuidanceRescale <= 1) {
		return nil, fmt.Errorf("%w: guidance_scale %v, guidance_rescale %v", runners.ErrBadRequest, req.GuidanceScale, req.GuidanceRescale)
	}
	sched, err := p.Schedule(req)
	if err != nil {
		return nil, err
	}
	if in != nil {
		if sched, err = p.strengthSchedule(sched, in); err != nil {
			return nil, err
		}
	} else if p.spec.UNetIn() != p.spec.LatentChannels {
		return nil, fmt.Errorf("%w: the inpainting UNet needs an image and a mask", runners.ErrBadRequest)
	}
	cfg := req.GuidanceScale > 1
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cond, err := p.encode(ctx, req, cfg)
	if err != nil {
		return nil, err
	}

	seed, err := seedOf(req.Seed)
	if err != nil {
		return nil, err
	}
	gen, err := latents.NewGenerator(seed, p.cfg.Kernel)
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	s := p.spec
	n, elems := sched.Len(), s.LatentElems()
	var (
		x    []float32
		prep *prepared
	)
	if in == nil {
		x = make([]float32, elems)
		if err := gen.FillNormal(ctx, x); err != nil {
			return nil, fmt.Errorf("pipeline: initial latents: %w", err)
		}
		sigma0 := sched.InitNoiseSigma()
		for i := range x {
			x[i] *= sigma0
		}
	} else {
		if prep, err = p.prepare(ctx, gen, sched, in); err != nil {
			return nil, err
		}
		x = prep.latents
	}

	rowElems := s.UNetIn() * s.LatentHeight * s.LatentWidth
	input := make([]float32, cond.Batch*rowElems)
	noise := make([]float32, elems)
	var x0 []float32 // pred_original_sample, kept only for hooks
	if hooks.Step != nil {
		x0 = make([]float32, elems)
	}
	for i := range n {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := sched.ScaleModelInput(input[:elems], x, i); err != nil {
			return nil, fmt.Errorf("pipeline: step %d: %w", i, err)
		}
		if prep != nil && prep.concat { // the inpainting UNet: latents, mask, masked-image latents
			copy(input[elems:], prep.maskLatent)
			copy(input[elems+len(prep.maskLatent):rowElems], prep.maskedLatents)
		}
		for b := 1; b < cond.Batch; b++ {
			copy(input[b*rowElems:(b+1)*rowElems], input[:rowElems])
		}
		out, err := p.dev.UNet(ctx, input, sched.Timesteps[i], cond)
		if err != nil {
			return nil, fmt.Errorf("pipeline: UNet step %d of %d: %w", i+1, n, err)
		}
		if len(out) != cond.Batch*elems {
			return nil, fmt.Errorf("pipeline: UNet step %d returned %d values, want %d", i+1, len(out), cond.Batch*elems)
		}
		if cfg {
			Guide(noise, out[:elems], out[elems:], req.GuidanceScale, req.GuidanceRescale)
		} else {
			copy(noise, out)
		}
		if err := sched.Step(x, x0, noise, x, i); err != nil {
			return nil, fmt.Errorf("pipeline: scheduler step %d: %w", i, err)
		}
		if prep != nil && prep.blend {
			if err := prep.blendStep(sched, x, i); err != nil {
				return nil, err
			}
		}
		if hooks.Step != nil {
			if err := hooks.Step(i+1, n, func() []float32 { return x0 }); err != nil {
				return nil, err
			}
		}
	}

	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i := range x {
		x[i] /= p.cfg.VAEScalingFactor
	}
	pix, err := p.dev.VAE(ctx, x)
	if err != nil {
		return nil, fmt.Errorf("pipeline: VAE decode: %w", err)
	}
	return ToImage(pix, s.ImageHeight, s.ImageWidth)
}

// encode runs the encoders once and builds the UNet conditioning.
func (p *Pipeline) encode(ctx context.Context, req Request, cfg bool) (*Cond, error) {
	prompt2 := req.Prompt2
	if prompt2 == "" {
		prompt2 = req.Prompt
	}
	pos := p.tok.SDXL(req.Prompt, prompt2)
	prompts := []clip.SDXLInputs{pos}
	zeroNeg := cfg && req.NegativePrompt == nil && p.cfg.ForceZerosForEmptyPrompt
	if cfg && !zeroNeg {
		neg := ""
		if req.NegativePrompt != nil {
			neg = *req.NegativePrompt
		}
		neg2 := neg
		if req.NegativePrompt2 != nil {
			neg2 = *req.NegativePrompt2
		}
		prompts = []clip.SDXLInputs{p.tok.SDXL(neg, neg2), pos}
	}
	emb, err := p.dev.Encode(ctx, prompts)
	if err != nil {
		return nil, fmt.Errorf("pipeline: text encoders: %w", err)
	}
	s := p.spec
	hid, pool := s.SeqLen*s.HiddenSize, s.PooledSize
	if emb.Batch != len(prompts) || len(emb.Hidden) != emb.Batch*hid || len(emb.Pooled) != emb.Batch*pool {
		return nil, fmt.Errorf("pipeline: text encoders returned batch %d with %d/%d values for %d prompts",
			emb.Batch, len(emb.Hidden), len(emb.Pooled), len(prompts))
	}
	c := &Cond{Batch: 1, Hidden: emb.Hidden, Pooled: emb.Pooled}
	if zeroNeg { // negative row of zeros, positive row encoded
		c.Hidden = append(make([]float32, hid, 2*hid), emb.Hidden...)
		c.Pooled = append(make([]float32, pool, 2*pool), emb.Pooled...)
	}
	if cfg {
		c.Batch = 2
	}
	h, w := float32(s.ImageHeight), float32(s.ImageWidth)
	ids := []float32{h, w, float32(req.CropCoordsTopLeft[0]), float32(req.CropCoordsTopLeft[1]), h, w}
	for range c.Batch {
		c.TimeIDs = append(c.TimeIDs, ids...)
	}
	return c, nil
}

// seedOf is the request's seed as torch.manual_seed takes it (two's complement for negative
// seeds), or a random one.
func seedOf(seed *int64) (uint64, error) {
	if seed != nil {
		return uint64(*seed), nil
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, fmt.Errorf("pipeline: random seed: %w", err)
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

// Guide writes classifier-free guidance into dst: uncond + scale*(cond-uncond), in float32 as
// torch does; with rescale > 0 it then applies diffusers' rescale_noise_cfg over the whole
// tensor (one image; scale and rescale are Python floats): dst = rescale*dst*(std(cond)/std(dst)) + (1-rescale)*dst, with torch's
// unbiased standard deviation. dst may alias neither input.
func Guide(dst, uncond, cond []float32, scale, rescale float64) {
	g := float32(scale)
	for i := range dst {
		dst[i] = uncond[i] + g*(cond[i]-uncond[i])
	}
	if rescale <= 0 {
		return
	}
	// Python floats: 1 - rescale is computed in double, each factor then rounded to float32.
	r, keep := float32(rescale), float32(1-rescale)
	ratio := float32(stddev(cond)) / float32(stddev(dst))
	for i, v := range dst {
		dst[i] = r*(v*ratio) + keep*v
	}
}

// stddev is torch.std (unbiased), accumulated in float64.
func stddev(v []float32) float64 {
	if len(v) < 2 {
		return math.NaN()
	}
	var mean float64
	for _, x := range v {
		mean += float64(x)
	}
	mean /= float64(len(v))
	var ss float64
	for _, x := range v {
		d := float64(x) - mean
		ss += d * d
	}
	return math.Sqrt(ss / float64(len(v)-1))
}

// ToImage maps a VAE output [3, h, w] (values nominally in [-1, 1]) to an RGB image as
// diffusers' VaeImageProcessor.postprocess does: (x*0.5+0.5) clamped to [0, 1], times 255,
// rounded half to even.
func ToImage(pix []float32, h, w int) (*image.NRGBA, error) {
	if h <= 0 || w <= 0 || len(pix) != 3*h*w {
		return nil, fmt.Errorf("pipeline: VAE output has %d values, want 3x%dx%d", len(pix), h, w)
	}
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	plane := h * w
	for y := range h {
		for x := range w {
			o := img.PixOffset(x, y)
			for c := range 3 {
				v := pix[c*plane+y*w+x]*0.5 + 0.5
				if !(v > 0) { // also NaN
					v = 0
				}
				v = min(v, 1)
				img.Pix[o+c] = uint8(math.RoundToEven(float64(v * 255)))
			}
			img.Pix[o+3] = 0xff
		}
	}
	return img, nil
}
