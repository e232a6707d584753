package diffusionpipeline

import (
	"context"

	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/clip"
)

// Spec are the tensor sizes a Device's programs were built for.
type Spec struct {
	// LatentChannels, LatentHeight and LatentWidth are one image's latent shape (4, 128, 128
	// for SDXL at 1024x1024).
	LatentChannels, LatentHeight, LatentWidth int
	// SeqLen is the text encoders' sequence length (77); HiddenSize the concatenated
	// per-token embedding of both encoders (768 + 1280 = 2048); PooledSize the pooled text
	// embedding of the second encoder (1280).
	SeqLen, HiddenSize, PooledSize int
	// ImageHeight and ImageWidth are the VAE decoder's output size in pixels.
	ImageHeight, ImageWidth int
	// UNetChannels is the UNet's sample channels: 0 or LatentChannels for the text-to-image
	// and image-to-image UNet, 2*LatentChannels+1 (9) for the inpainting UNet, whose input is
	// the latents, the mask and the masked image's latents concatenated.
	UNetChannels int
}

// UNetIn is the UNet's sample channels (UNetChannels, or LatentChannels when 0).
func (s Spec) UNetIn() int {
	if s.UNetChannels > 0 {
		return s.UNetChannels
	}
	return s.LatentChannels
}

// LatentElems is the number of elements of one image's latents.
func (s Spec) LatentElems() int { return s.LatentChannels * s.LatentHeight * s.LatentWidth }

// Embeds are text-encoder outputs for a batch of prompts, row-major float32.
type Embeds struct {
	// Batch is the number of prompts.
	Batch int
	// Hidden is [Batch, SeqLen, HiddenSize]: both encoders' penultimate hidden states,
	// concatenated along the last axis (encoder 1 first).
	Hidden []float32
	// Pooled is [Batch, PooledSize]: the second encoder's projected pooled output.
	Pooled []float32
}

// Cond is the UNet's conditioning for one request; it does not change between steps.
type Cond struct {
	// Batch is 2 with classifier-free guidance (row 0 negative, row 1 positive), else 1.
	Batch int
	// Hidden is encoder_hidden_states [Batch, SeqLen, HiddenSize].
	Hidden []float32
	// Pooled is text_embeds [Batch, PooledSize].
	Pooled []float32
	// TimeIDs is time_ids [Batch, 6]: original size, crop top-left, target size.
	TimeIDs []float32
}

// Device runs the SDXL programs. A Device serves one request at a time.
type Device interface {
	// Spec returns the sizes the programs were built for.
	Spec() Spec
	// Encode runs both text encoders once over the prompts (one SDXLInputs per prompt).
	Encode(ctx context.Context, prompts []clip.SDXLInputs) (Embeds, error)
	// UNet runs one denoising step: sample is [cond.Batch, C, H, W] (already scaled by
	// scale_model_input), t the timestep; it returns the noise prediction of the same shape.
	// The same *Cond is passed for every step of a request.
	UNet(ctx context.Context, sample []float32, t float32, cond *Cond) ([]float32, error)
	// VAE decodes one image's latents [C, H, W] (already divided by the scaling factor) to
	// [3, ImageHeight, ImageWidth] with values nominally in [-1, 1].
	VAE(ctx context.Context, latents []float32) ([]float32, error)
}

// ImageEncoder is a Device that also runs the VAE encoder (image-to-image and inpainting).
type ImageEncoder interface {
	// VAEEncode encodes one image [3, ImageHeight, ImageWidth] in [-1, 1] to the moments of the
	// latent distribution [2*C, H, W]: the mean's C channels, then the log-variance's
	// (diffusers' AutoencoderKL.encode(...).latent_dist parameters).
	VAEEncode(ctx context.Context, image []float32) ([]float32, error)
}
