package diffusionpipeline

import "fmt"

// FluxLatentSize is FluxPipeline's latent height or width for an image side in pixels:
// 2*(side // (vae_scale_factor*2)), vae_scale_factor 8, so that the latents split into 2x2
// patches.
func FluxLatentSize(side int) int { return 2 * (side / 16) }

// FluxImageSeqLen is the packed latents' sequence length (the image tokens) of a height x
// width image: (h/2)*(w/2) of the latent size, the image_seq_len that sets Flux.1-dev's shift.
func FluxImageSeqLen(height, width int) int {
	return (FluxLatentSize(height) / 2) * (FluxLatentSize(width) / 2)
}

// PackLatents is FluxPipeline._pack_latents for one image: [C, H, W] latents (H and W even)
// to [(H/2)*(W/2), C*4] tokens, each token one 2x2 patch of every channel
// (view(C, H/2, 2, W/2, 2).permute(1, 3, 0, 2, 4)). dst may not alias src.
func PackLatents(dst, src []float32, c, h, w int) error {
	if err := packShape(dst, src, c, h, w); err != nil {
		return err
	}
	hp, wp := h/2, w/2
	for i := range hp {
		for j := range wp {
			tok := dst[(i*wp+j)*c*4:]
			for ch := range c {
				for di := range 2 {
					row := src[(ch*h+2*i+di)*w+2*j:]
					tok[ch*4+di*2] = row[0]
					tok[ch*4+di*2+1] = row[1]
				}
			}
		}
	}
	return nil
}

// UnpackLatents is FluxPipeline._unpack_latents for one image, the inverse of PackLatents:
// [(H/2)*(W/2), C*4] tokens to [C, H, W] latents. dst may not alias src.
func UnpackLatents(dst, src []float32, c, h, w int) error {
	if err := packShape(dst, src, c, h, w); err != nil {
		return err
	}
	hp, wp := h/2, w/2
	for i := range hp {
		for j := range wp {
			tok := src[(i*wp+j)*c*4:]
			for ch := range c {
				for di := range 2 {
					row := dst[(ch*h+2*i+di)*w+2*j:]
					row[0] = tok[ch*4+di*2]
					row[1] = tok[ch*4+di*2+1]
				}
			}
		}
	}
	return nil
}

func packShape(dst, src []float32, c, h, w int) error {
	if c < 1 || h < 2 || w < 2 || h%2 != 0 || w%2 != 0 {
		return fmt.Errorf("pipeline: latents [%d, %d, %d] cannot be packed in 2x2 patches", c, h, w)
	}
	if n := c * h * w; len(src) != n || len(dst) != n {
		return fmt.Errorf("pipeline: packing [%d, %d, %d] latents: src %d, dst %d values", c, h, w, len(src), len(dst))
	}
	return nil
}

// LatentImageIDs is FluxPipeline._prepare_latent_image_ids(h/2, w/2) for latents of height h
// and width w: [(h/2)*(w/2), 3] float32 rows (0, row, column), the image tokens' positions for
// the transformer's rotary embedding.
func LatentImageIDs(h, w int) []float32 {
	hp, wp := h/2, w/2
	ids := make([]float32, 0, hp*wp*3)
	for i := range hp {
		for j := range wp {
			ids = append(ids, 0, float32(i), float32(j))
		}
	}
	return ids
}
