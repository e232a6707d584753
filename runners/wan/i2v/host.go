// Package i2v is the host side of Wan2.2 image-to-video (Wan2.2-I2V-A14B, diffusers'
// WanImageToVideoPipeline without a CLIP image encoder, as A14B has none): the conditioning
// images' preprocessing, the conditioning video (images at their frame positions, zeros
// elsewhere), the mask over latent frames, the VAE-encoded condition's normalisation, and the
// pipeline that drives a Device's programs (UMT5 encoder, VAE encoder, the two 36-channel
// transformer experts, VAE decoder) through runners/wan/t2v's denoising loop, whose transformer
// input is [latents, mask, condition] at every step.
package i2v

import (
	"errors"
	"fmt"
	"image"
	"image/draw"

	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/imageproc"
	"github.com/tenstorrent/tt-media-server-go/runners/wan/t2v"
)

// ErrRequest means a request the pipeline refuses (the message names the field).
var ErrRequest = errors.New("wan2.2 i2v")

// MaskChannels is the mask's channel count (vae_scale_factor_temporal: one channel per frame
// of a latent frame's group of four), and ConditionChannels the condition's (mask and the
// 16 latent channels); InputChannels is the transformer's input (latents and condition: 36).
const (
	MaskChannels      = t2v.TemporalFactor
	ConditionChannels = MaskChannels + t2v.LatentChannels
	InputChannels     = t2v.LatentChannels + ConditionChannels
)

// Image is one conditioning image and the frame it anchors (0 is the first frame).
type Image struct {
	Image    image.Image
	FramePos int
}

// Preprocess is VideoProcessor.preprocess of one RGB image to height x width, as
// WanImageToVideoPipeline calls it: PIL's Lanczos resize (runners/diffusion/imageproc, bit for
// bit), x/255 in float32, then 2x-1. The result is [3, height, width] in [-1, 1].
func Preprocess(img image.Image, height, width int) ([]float32, error) {
	if img == nil || img.Bounds().Empty() {
		return nil, fmt.Errorf("%w: image_prompts: an empty image", ErrRequest)
	}
	nrgba, ok := img.(*image.NRGBA)
	if !ok {
		b := img.Bounds()
		nrgba = image.NewNRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
		draw.Draw(nrgba, nrgba.Bounds(), img, b.Min, draw.Src)
	}
	out, err := imageproc.Preprocess(nrgba, height, width)
	if err != nil {
		return nil, fmt.Errorf("%w: image_prompts: %w", ErrRequest, err)
	}
	return out.Pix, nil
}

// CheckPositions refuses frame positions outside the clip or given twice (the message names
// image_prompts, as HEAD's tt-metal pipeline refuses duplicates).
func CheckPositions(positions []int, frames int) error {
	if len(positions) == 0 {
		return fmt.Errorf("%w: image_prompts: at least one conditioning image is needed", ErrRequest)
	}
	seen := make(map[int]bool, len(positions))
	for _, p := range positions {
		if p < 0 || p >= frames {
			return fmt.Errorf("%w: image_prompts: frame_pos %d is outside the clip's %d frames (0 to %d)", ErrRequest, p, frames, frames-1)
		}
		if seen[p] {
			return fmt.Errorf("%w: image_prompts: frame_pos %d is given twice", ErrRequest, p)
		}
		seen[p] = true
	}
	return nil
}

// VideoCondition is the video the VAE encodes, [3, frames, height, width]: each preprocessed
// image ([3, height, width]) at its frame position, zeros elsewhere. With one image at frame 0
// it is diffusers' torch.cat([image, zeros]); with a second at frames-1 its last_image form;
// other positions are HEAD's (tt-metal's WanPipelineI2V, which generalises both).
func VideoCondition(images [][]float32, positions []int, frames, height, width int) ([]float32, error) {
	if len(images) != len(positions) {
		return nil, fmt.Errorf("%w: %d images for %d frame positions", ErrRequest, len(images), len(positions))
	}
	if err := CheckPositions(positions, frames); err != nil {
		return nil, err
	}
	plane := height * width
	out := make([]float32, 3*frames*plane)
	for i, img := range images {
		if len(img) != 3*plane {
			return nil, fmt.Errorf("%w: image %d has %d values, not 3x%dx%d", ErrRequest, i, len(img), height, width)
		}
		for c := range 3 {
			copy(out[(c*frames+positions[i])*plane:], img[c*plane:(c+1)*plane])
		}
	}
	return out, nil
}

// Mask is prepare_latents' mask over latent frames, [4, latentFrames, lh, lw]: per frame 1 where
// an image anchors it and 0 elsewhere; the first frame's value repeated four times (the causal
// VAE's first latent frame stands for one frame), then grouped four frames per latent frame and
// transposed so that channel j of latent frame k is frame 4k+j-3's value (frame 0's for k = 0).
func Mask(positions []int, frames, lh, lw int) ([]float32, error) {
	if (frames-1)%t2v.TemporalFactor != 0 {
		return nil, fmt.Errorf("%w: num_frames %d: num_frames-1 must be a multiple of %d", ErrRequest, frames, t2v.TemporalFactor)
	}
	if err := CheckPositions(positions, frames); err != nil {
		return nil, err
	}
	on := make([]bool, frames)
	for _, p := range positions {
		on[p] = true
	}
	lf := (frames-1)/t2v.TemporalFactor + 1
	plane := lh * lw
	out := make([]float32, MaskChannels*lf*plane)
	for j := range MaskChannels {
		for k := range lf {
			if !on[max(0, t2v.TemporalFactor*k+j-(t2v.TemporalFactor-1))] {
				continue
			}
			dst := out[(j*lf+k)*plane : (j*lf+k+1)*plane]
			for i := range dst {
				dst[i] = 1
			}
		}
	}
	return out, nil
}

// Normalize applies prepare_latents' latent normalisation in place to the VAE encoder's
// output ([16, F, H, W], the distribution's mode): (x - mean) * (1/std) per channel in float32,
// AutoencoderKLWan's latents_mean and latents_std (t2v.LatentsMean, t2v.LatentsStd).
func Normalize(latents []float32) {
	per := len(latents) / t2v.LatentChannels
	for c := range t2v.LatentChannels {
		inv := 1 / t2v.LatentsStd[c]
		for i := c * per; i < (c+1)*per; i++ {
			latents[i] = (latents[i] - t2v.LatentsMean[c]) * inv
		}
	}
}

// Condition is torch.concat([mask, latent_condition], dim=1): [20, F, H, W] from the mask
// [4, F, H, W] and the normalised latent condition [16, F, H, W].
func Condition(mask, latent []float32) ([]float32, error) {
	if len(mask)*t2v.LatentChannels != len(latent)*MaskChannels {
		return nil, fmt.Errorf("%w: a mask of %d values with a latent condition of %d", ErrRequest, len(mask), len(latent))
	}
	return append(append(make([]float32, 0, len(mask)+len(latent)), mask...), latent...), nil
}

// The I2V program sets' name prefixes in t2v.Programs() (runners/programs declares them): T2V's
// four programs with 36-channel experts, and the VAE encoder (t2v.VAEEncoderName). Prefix480 is
// 832x480 on a 2x4 mesh, Prefix720 1280x720 on a 4x8 Galaxy; 81 frames each.
const (
	Prefix480 = "wan22-i2v"
	Prefix720 = "wan22-i2v-720p"
)
