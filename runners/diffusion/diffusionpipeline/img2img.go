package diffusionpipeline

import (
	"context"
	"errors"
	"fmt"
	"image"
	"math"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/imageproc"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/latents"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/samplers"
)

// ErrNoEncoder means image-to-image or inpainting on a device without the VAE encoder program.
var ErrNoEncoder = errors.New("pipeline: the device has no VAE encoder program")

// ImageInput is the image part of an image-to-image or inpainting request, already at the
// model's size (imageproc.Preprocess / PreprocessMask).
type ImageInput struct {
	// Image is [3, ImageHeight, ImageWidth] in [-1, 1].
	Image imageproc.Image
	// Mask, for inpainting, is [1, ImageHeight, ImageWidth] of 0 (keep) and 1 (repaint).
	Mask *imageproc.Image
	// Strength in [0, 1] keeps the last int(steps*strength) steps of the schedule.
	Strength float64
}

// GenerateImage runs diffusers' StableDiffusionXLImg2ImgPipeline (in.Mask nil) or
// StableDiffusionXLInpaintPipeline: the schedule cut by strength (get_timesteps), the image
// encoded by the device's VAE encoder, a latent drawn from its distribution with the request's
// seeded generator and scaled by the VAE scaling factor, noise from the same generator added
// at the start timestep (add_noise), then the denoising loop and the VAE decoder. Inpainting
// also encodes the masked image; a 9-channel (inpainting) UNet takes the latents, the mask
// resized to the latents and the masked image's latents concatenated, a 4-channel UNet's
// latents are blended with the re-noised image latents outside the mask after every step.
// Errors of the request (strength leaving no step, sizes) wrap runners.ErrBadRequest.
func (p *Pipeline) GenerateImage(ctx context.Context, req Request, in ImageInput, hooks Hooks) (*image.NRGBA, error) {
	s := p.spec
	if in.Image.C != 3 || in.Image.H != s.ImageHeight || in.Image.W != s.ImageWidth || len(in.Image.Pix) != 3*s.ImageHeight*s.ImageWidth {
		return nil, fmt.Errorf("%w: image is %dx%dx%d, the model takes 3x%dx%d", runners.ErrBadRequest,
			in.Image.C, in.Image.H, in.Image.W, s.ImageHeight, s.ImageWidth)
	}
	if m := in.Mask; m != nil && (m.C != 1 || m.H != s.ImageHeight || m.W != s.ImageWidth || len(m.Pix) != m.H*m.W) {
		return nil, fmt.Errorf("%w: mask is %dx%dx%d, the model takes 1x%dx%d", runners.ErrBadRequest, m.C, m.H, m.W, s.ImageHeight, s.ImageWidth)
	}
	if in.Mask == nil && s.UNetIn() != s.LatentChannels {
		return nil, fmt.Errorf("%w: the inpainting UNet needs a mask", runners.ErrBadRequest)
	}
	if _, ok := p.dev.(ImageEncoder); !ok {
		return nil, ErrNoEncoder
	}
	return p.generate(ctx, req, &in, hooks)
}

// strengthSchedule is get_timesteps: the schedule from the begin index that strength gives.
func (p *Pipeline) strengthSchedule(full *samplers.EulerSchedule, in *ImageInput) (*samplers.EulerSchedule, error) {
	start, kept, err := samplers.StrengthStart(full.Len(), in.Strength)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", runners.ErrBadRequest, err)
	}
	if kept < 1 {
		return nil, fmt.Errorf("%w: strength %v of %d inference steps leaves %d denoising steps; raise strength or num_inference_steps",
			runners.ErrBadRequest, in.Strength, full.Len(), kept)
	}
	return full.From(start)
}

// prepared is an image request's state for the denoising loop.
type prepared struct {
	latents []float32 // the initial latents
	// concat: the 9-channel UNet input's mask [1, h, w] and masked-image latents [C, h, w].
	concat                    bool
	maskLatent, maskedLatents []float32
	// blend: the 4-channel inpainting blend's image latents, noise and latent-size mask.
	blend               bool
	imageLatents, noise []float32
}

// prepare makes the initial latents (and the inpainting inputs) in diffusers' order of draws
// from the request's generator: the image's latent sample, the noise, the masked image's
// latent sample.
func (p *Pipeline) prepare(ctx context.Context, gen *latents.Generator, sched *samplers.EulerSchedule, in *ImageInput) (*prepared, error) {
	s := p.spec
	elems := s.LatentElems()
	inpaint := in.Mask != nil
	nine := s.UNetIn() == 2*s.LatentChannels+1
	if inpaint && !nine && s.UNetIn() != s.LatentChannels {
		return nil, fmt.Errorf("pipeline: a UNet of %d input channels is neither the 4- nor the 9-channel one", s.UNetIn())
	}
	isMax := in.Strength == 1
	pr := &prepared{concat: inpaint && nine, blend: inpaint && !nine}
	var imgLat []float32
	if !inpaint || !isMax || pr.blend {
		var err error
		if imgLat, err = p.encodeImage(ctx, gen, in.Image.Pix); err != nil {
			return nil, err
		}
	}
	noise := make([]float32, elems)
	if err := gen.FillNormal(ctx, noise); err != nil {
		return nil, fmt.Errorf("pipeline: noise: %w", err)
	}
	pr.latents = make([]float32, elems)
	if inpaint && isMax {
		sigma0 := sched.InitNoiseSigma()
		for i, v := range noise {
			pr.latents[i] = v * sigma0
		}
	} else if err := sched.AddNoise(pr.latents, imgLat, noise, 0); err != nil {
		return nil, fmt.Errorf("pipeline: add noise: %w", err)
	}
	if !inpaint {
		return pr, nil
	}
	ml, err := imageproc.Nearest(*in.Mask, s.LatentHeight, s.LatentWidth)
	if err != nil {
		return nil, fmt.Errorf("pipeline: mask latents: %w", err)
	}
	pr.maskLatent = ml.Pix
	masked, err := imageproc.Masked(in.Image, *in.Mask)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", runners.ErrBadRequest, err)
	}
	if pr.maskedLatents, err = p.encodeImage(ctx, gen, masked.Pix); err != nil {
		return nil, err
	}
	if pr.blend {
		pr.imageLatents, pr.noise = imgLat, noise
	}
	return pr, nil
}

// encodeImage runs the VAE encoder on one image and draws its scaled latent.
func (p *Pipeline) encodeImage(ctx context.Context, gen *latents.Generator, pix []float32) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	enc, ok := p.dev.(ImageEncoder)
	if !ok {
		return nil, ErrNoEncoder
	}
	moments, err := enc.VAEEncode(ctx, pix)
	if err != nil {
		return nil, fmt.Errorf("pipeline: VAE encode: %w", err)
	}
	lat := make([]float32, p.spec.LatentElems())
	if err := SampleLatentDist(ctx, lat, moments, gen, p.cfg.VAEScalingFactor); err != nil {
		return nil, err
	}
	return lat, nil
}

// blendStep is the 4-channel inpainting UNet's per-step blend after step i: outside the mask
// the latents are the image latents re-noised at the next timestep (the clean image latents
// after the last step), inside they are the denoised ones.
func (pr *prepared) blendStep(sched *samplers.EulerSchedule, x []float32, i int) error {
	proper := pr.imageLatents
	if i < sched.Len()-1 {
		proper = make([]float32, len(x))
		if err := sched.AddNoise(proper, pr.imageLatents, pr.noise, i+1); err != nil {
			return fmt.Errorf("pipeline: blend: %w", err)
		}
	}
	plane := len(pr.maskLatent)
	for k := range x {
		m := pr.maskLatent[k%plane]
		x[k] = float32((1-m)*proper[k]) + float32(m*x[k])
	}
	return nil
}

// SampleLatentDist writes into dst (C*H*W values) DiagonalGaussianDistribution(moments).sample
// times scaling: moments is [2C, H, W] (mean, then log-variance clamped to [-30, 20]); the
// standard normal draws come from gen; x = (mean + exp(0.5*logvar)*eps) * scaling, in float32.
func SampleLatentDist(ctx context.Context, dst, moments []float32, gen *latents.Generator, scaling float32) error {
	n := len(dst)
	if len(moments) != 2*n {
		return fmt.Errorf("pipeline: VAE encoder returned %d moments for %d latents", len(moments), n)
	}
	if err := gen.FillNormal(ctx, dst); err != nil {
		return fmt.Errorf("pipeline: latent sample: %w", err)
	}
	for i, eps := range dst {
		logvar := min(max(moments[n+i], -30), 20)
		std := float32(math.Exp(float64(float32(0.5 * logvar))))
		dst[i] = (moments[i] + float32(std*eps)) * scaling
	}
	return nil
}

// Spec returns the device's sizes (the model's image size is ImageHeight x ImageWidth).
func (p *Pipeline) Spec() Spec { return p.spec }
