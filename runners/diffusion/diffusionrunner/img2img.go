package diffusionrunner

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"log/slog"
	"strconv"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/diffusionpipeline"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/imageproc"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/lora"
)

// imageInput preprocesses an image-to-image or inpainting request's image (and mask) to the
// model's size, as diffusers' VaeImageProcessor does (PIL Lanczos resize, [-1, 1]; the mask
// binarised at 0.5).
func (r *Runner) imageInput(req *runners.ImageRequest) (diffusionpipeline.ImageInput, error) {
	var in diffusionpipeline.ImageInput
	if req.InitImage == nil {
		return in, fmt.Errorf("%w: image is required", runners.ErrBadRequest)
	}
	edit := r.cfg.Model == SDXLEdit
	if edit && req.Mask == nil {
		return in, fmt.Errorf("%w: mask is required for %s", runners.ErrBadRequest, r.cfg.Model)
	}
	if !edit && req.Mask != nil {
		return in, fmt.Errorf("%w: mask is for inpainting (MODEL_RUNNER=%s)", runners.ErrBadRequest, catalogue.RunnerSDXLEdit)
	}
	if !(req.Strength >= 0 && req.Strength <= 1) {
		return in, fmt.Errorf("%w: strength %v outside [0, 1]", runners.ErrBadRequest, req.Strength)
	}
	s := r.sdxl.Spec()
	var err error
	if in.Image, err = imageproc.Preprocess(toNRGBA(req.InitImage), s.ImageHeight, s.ImageWidth); err != nil {
		return in, fmt.Errorf("%w: image: %w", runners.ErrBadRequest, err)
	}
	if edit {
		if b, mb := req.InitImage.Bounds(), req.Mask.Bounds(); b.Dx() != mb.Dx() || b.Dy() != mb.Dy() {
			return in, fmt.Errorf("%w: mask is %dx%d, image %dx%d: they must be the same size", runners.ErrBadRequest, mb.Dx(), mb.Dy(), b.Dx(), b.Dy())
		}
		m, err := imageproc.PreprocessMask(req.Mask, s.ImageHeight, s.ImageWidth)
		if err != nil {
			return in, fmt.Errorf("%w: mask: %w", runners.ErrBadRequest, err)
		}
		in.Mask = &m
	}
	in.Strength = req.Strength
	return in, nil
}

func toNRGBA(img image.Image) *image.NRGBA {
	if n, ok := img.(*image.NRGBA); ok {
		return n
	}
	b := img.Bounds()
	out := image.NewNRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(out, out.Rect, img, b.Min, draw.Src)
	return out
}

// applyLoRA makes the devices' weights the request's: its adapter fused at its scale (parsed
// and checked from LORA_ROOT, cached; the devices skip a fusion already in place), or the base
// weights for a request without one.
func (r *Runner) applyLoRA(ctx context.Context, req *runners.ImageRequest) error {
	var devs []*diffusionpipeline.TTNNDevice
	for _, c := range r.closers {
		if d, ok := c.(*diffusionpipeline.TTNNDevice); ok {
			devs = append(devs, d)
		}
	}
	if req.LoRAPath == "" {
		for _, d := range devs {
			if d.LoRAKey() == "" {
				continue
			}
			if err := d.UnfuseLoRA(ctx); err != nil {
				return err
			}
			r.logWeights(ctx, d, "LoRA unloaded", "")
		}
		return nil
	}
	if r.cfg.Model == SD35 {
		return fmt.Errorf("%w: lora_path is supported by the SDXL runners only", runners.ErrBadRequest)
	}
	if r.cfg.Backend == config.BackendMetal {
		// The declared SDXL programs have no weight-update path a compiled tt-mlir UNet could
		// honour (docs/DEVICE-PROGRAMS.md): refused rather than ignored.
		return fmt.Errorf("%w: lora_path is not supported on DEVICE_BACKEND=metal: the compiled programs have no LoRA weight update yet (docs/DEVICE-PROGRAMS.md)", runners.ErrBadRequest)
	}
	if !(req.LoRAScale >= 0 && req.LoRAScale <= 2) {
		return fmt.Errorf("%w: lora_scale %v outside [0, 2]", runners.ErrBadRequest, req.LoRAScale)
	}
	a, err := r.loras.Load(ctx, r.cfg.LoRARoot, req.LoRAPath)
	if err != nil {
		return fmt.Errorf("%w: %w", runners.ErrBadRequest, err)
	}
	key := a.Path + "@" + strconv.FormatFloat(req.LoRAScale, 'g', -1, 64)
	for _, d := range devs {
		if d.LoRAKey() == key {
			continue
		}
		if err := d.FuseLoRA(ctx, key, float32(req.LoRAScale), a.Factors()); err != nil {
			if errors.Is(err, lora.ErrInvalid) || errors.Is(err, diffusionpipeline.ErrNoLoRAProgram) {
				return fmt.Errorf("%w: %w", runners.ErrBadRequest, err)
			}
			return err
		}
		r.logWeights(ctx, d, "LoRA fused", key, "layers", len(a.Layers), "values", a.Values)
	}
	return nil
}

// logWeights logs the device's weights checksum after a change (operators and the end-to-end
// tests see which adapter is in).
func (r *Runner) logWeights(ctx context.Context, d *diffusionpipeline.TTNNDevice, msg, key string, args ...any) {
	sum, err := d.WeightsChecksum(ctx)
	if err != nil {
		sum = "unreadable: " + err.Error()
	}
	r.log.Log(ctx, slog.LevelInfo, "diffusion runner: "+msg, append([]any{"runner", r.cfg.Model.String(), "lora", key, "weights_checksum", sum}, args...)...)
}

// deviceStats sums the execution counts of the runner's devices.
func (r *Runner) deviceStats() diffusionpipeline.Stats {
	var sum diffusionpipeline.Stats
	for _, c := range r.closers {
		if d, ok := c.(interface {
			Stats() diffusionpipeline.Stats
		}); ok {
			st := d.Stats()
			sum.Encodes += st.Encodes
			sum.TraceReplays += st.TraceReplays
			sum.VAEDecodes += st.VAEDecodes
			sum.VAEEncodes += st.VAEEncodes
			sum.LoRAFuses += st.LoRAFuses
			sum.LoRAChunks += st.LoRAChunks
			sum.WeightRestores += st.WeightRestores
		}
	}
	return sum
}

// logCalls logs one image's device program runs (text encoders, VAE encoder, UNet steps, VAE
// decoder, LoRA fuse runs and returns to the base weights before it): the call sequence
// operators and the end-to-end tests check.
func (r *Runner) logCalls(ctx context.Context, before diffusionpipeline.Stats, strength float64) {
	after := r.deviceStats()
	r.log.Log(ctx, slog.LevelInfo, "diffusion runner: image done", "runner", r.cfg.Model.String(),
		"text_encodes", after.Encodes-before.Encodes, "vae_encodes", after.VAEEncodes-before.VAEEncodes,
		"unet_steps", after.TraceReplays-before.TraceReplays, "vae_decodes", after.VAEDecodes-before.VAEDecodes,
		"lora_fuse_runs", after.LoRAChunks-before.LoRAChunks, "weight_restores", after.WeightRestores-before.WeightRestores,
		"strength", strength, "backend", r.backend())
}
