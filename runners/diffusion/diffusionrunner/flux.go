package diffusionrunner

import (
	"context"
	"errors"
	"fmt"
	"image"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/diffusionpipeline"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// errNoT5 means a Flux weights directory without its T5 tokenizer.
var errNoT5 = errors.New("diffusion runner: no T5 tokenizer (tokenizer_2/)")

// FluxConfig configures one FluxRunner.
type FluxConfig struct {
	// Variant is FLUX.1-dev or FLUX.1-schnell.
	Variant diffusionpipeline.FluxVariant
	// Setup is the weights (tokenizer/ and tokenizer_2/), device and programs (the
	// simulator's; nil is the full-size FluxPrograms()).
	Setup
}

// FluxRunner is the Flux.1 runner on one device group: diffusionpipeline.FluxPipeline over the
// variant's four programs, one image per task. A request's fields are honoured or refused:
// prompt (CLIP), prompt_2 (T5; default the prompt), num_inference_steps, seed (none is 0, as
// HEAD's Flux runner), guidance_scale (dev's embedded guidance, 0 = 3.5; schnell refuses one),
// sigmas, partial images; negative prompts, guidance_rescale, crop coordinates, timesteps,
// image inputs and LoRA are 400s naming the field (Flux has no classifier-free guidance and
// FluxPipeline takes none of them).
type FluxRunner struct {
	cfg FluxConfig
	tok tokenizers
	log *slog.Logger

	mu     sync.Mutex // guards the fields below against Close during Run
	dev    *ttnn.Device
	fd     *diffusionpipeline.TTNNFluxDevice
	flux   *diffusionpipeline.FluxPipeline
	closed bool
}

// NewFlux loads the tokenizers (tokenizer/ and tokenizer_2/); the device is opened by Warmup.
func NewFlux(cfg FluxConfig) (*FluxRunner, error) {
	c, err := loadCLIP(cfg.WeightsDir)
	if err != nil {
		return nil, err
	}
	t5dir := filepath.Join(cfg.WeightsDir, "tokenizer_2")
	if _, err := os.Stat(t5dir); err != nil || loadT5 == nil {
		return nil, fmt.Errorf("%w: %s needs it, %q has no tokenizer_2/", errNoT5, cfg.Variant.Config().Name, cfg.WeightsDir)
	}
	t5, err := loadT5(t5dir)
	if err != nil {
		return nil, fmt.Errorf("%s: tokenizer_2: %w", cfg.Variant.Config().Name, err)
	}
	log := cfg.withDefaults()
	return &FluxRunner{cfg: cfg, tok: tokenizers{clip: c, t5: t5}, log: log}, nil
}

// Warmup opens the device, loads the programs (capturing the transformer trace) and runs
// HEAD's warm-up request ("Sunrise on a beach", 2 steps).
func (r *FluxRunner) Warmup(ctx context.Context) (err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	name := r.cfg.Variant.Config().Name
	if r.closed {
		return ErrClosed
	}
	if r.dev != nil {
		return nil
	}
	defer func() {
		if err != nil {
			_ = r.closeDevice()
			err = fmt.Errorf("%s warm-up: %w", name, err)
		}
	}()
	if r.dev, _, err = r.cfg.openDevice(ctx); err != nil {
		return err
	}
	if r.cfg.Backend == config.BackendMetal {
		r.fd, err = diffusionpipeline.NewMetalFluxDevice(ctx, r.dev, r.cfg.WeightsDir, r.cfg.Variant)
	} else {
		set := r.cfg.Programs
		if set == nil {
			set = diffusionpipeline.FluxPrograms()
		}
		r.fd, err = diffusionpipeline.NewTTNNFluxDevice(ctx, r.dev, set, r.cfg.Variant)
	}
	if err != nil {
		return err
	}
	if r.flux, err = diffusionpipeline.NewFlux(r.fd, r.tok.clip, r.tok.t5, r.cfg.Variant.Config()); err != nil {
		return err
	}
	seed := int64(0)
	if _, err := r.flux.Generate(ctx, diffusionpipeline.FluxRequest{Prompt: "Sunrise on a beach", Steps: 2, Seed: &seed}, diffusionpipeline.Hooks{}); err != nil {
		return fmt.Errorf("warm-up image: %w", err)
	}
	return nil
}

// Stats returns the device's program runs so far (zero before Warmup).
func (r *FluxRunner) Stats() diffusionpipeline.Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fd == nil {
		return diffusionpipeline.Stats{}
	}
	return r.fd.Stats()
}

// Run generates one image per task.
func (r *FluxRunner) Run(ctx context.Context, tasks []runners.Task) []runners.Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]runners.Outcome, len(tasks))
	for i, t := range tasks {
		switch {
		case r.closed:
			out[i].Err = ErrClosed
		case r.dev == nil:
			out[i].Err = ErrNotWarm
		default:
			img, err := r.generate(ctx, t)
			if err != nil {
				out[i].Err = fmt.Errorf("%s: %w", r.cfg.Variant.Config().Name, err)
				continue
			}
			out[i].Value = &runners.ImageResult{Images: []image.Image{img}}
		}
	}
	return out
}

// fluxRequest maps the request onto FluxPipeline's fields, refusing what Flux does not take.
func (r *FluxRunner) fluxRequest(req *runners.ImageRequest) (diffusionpipeline.FluxRequest, error) {
	refuse := func(field string) (diffusionpipeline.FluxRequest, error) {
		return diffusionpipeline.FluxRequest{}, fmt.Errorf("%w: %s is not supported by %s (no classifier-free guidance; FluxPipeline does not take it)",
			runners.ErrBadRequest, field, r.cfg.Variant.Config().Name)
	}
	switch {
	case req.NegativePrompt != "":
		return refuse("negative_prompt")
	case req.NegativePrompt2 != "":
		return refuse("negative_prompt_2")
	case req.GuidanceRescale != 0:
		return refuse("guidance_rescale")
	case req.CropCoordsTopLeft != [2]float64{}:
		return refuse("crop_coords_top_left")
	case len(req.Timesteps) > 0:
		return refuse("timesteps")
	case req.InitImage != nil || req.Mask != nil:
		return refuse("image")
	case req.LoRAPath != "":
		return refuse("lora_path")
	}
	steps := req.NumInferenceSteps
	if steps <= 0 {
		steps = r.cfg.DefaultSteps
	}
	seed := int64(0) // HEAD's Flux runner: int(request.seed or 0)
	if req.Seed != nil {
		seed = *req.Seed
	}
	return diffusionpipeline.FluxRequest{Prompt: req.Prompt, Prompt2: req.Prompt2, Steps: steps, GuidanceScale: req.GuidanceScale,
		Seed: &seed, Sigmas: req.Sigmas}, nil
}

// generate runs one task with progress and previews.
func (r *FluxRunner) generate(ctx context.Context, t runners.Task) (image.Image, error) {
	req, err := runners.RequestAs[*runners.ImageRequest](t)
	if err != nil || req == nil {
		return nil, fmt.Errorf("request is %T, not *runners.ImageRequest", t.Request)
	}
	fr, err := r.fluxRequest(req)
	if err != nil {
		return nil, err
	}
	tctx, done := taskContext(ctx, t)
	defer done()
	s := r.fd.Spec()
	hooks := stepHooks(tctx, t, req.PartialImages, [3]int{s.LatentChannels, s.LatentHeight, s.LatentWidth}, "")
	return r.flux.Generate(tctx, fr, hooks)
}

// Close releases the programs and the device; it is idempotent.
func (r *FluxRunner) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	return r.closeDevice()
}

func (r *FluxRunner) closeDevice() error {
	var errs []error
	if r.fd != nil {
		errs = append(errs, r.fd.Close())
		r.fd = nil
	}
	if r.dev != nil {
		errs = append(errs, r.dev.Close())
		r.dev = nil
	}
	r.flux = nil
	return errors.Join(errs...)
}

var _ runners.Runner = (*FluxRunner)(nil)
