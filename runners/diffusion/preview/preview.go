// Package preview renders cheap RGB previews of diffusion latents for streamed partial
// images: the standard linear latent-to-RGB approximation (a 3xC matrix and a bias fitted
// to the VAE decoder's output, as ComfyUI's Latent2RGB previewer uses) for SDXL's 4 and
// SD3's 16 latent channels, and the choice of the steps after which previews are taken.
package preview

import (
	"errors"
	"fmt"
	"image"
	"math"
)

// ErrChannels means latents with a channel count that has no factors (only 4 and 16 do).
var ErrChannels = errors.New("preview: no latent-to-RGB factors for this channel count")

// factors is one latent format's linear map: rgb[k] = bias[k] + sum_c m[c][k]*latent[c].
type factors struct {
	m    [][3]float32
	bias [3]float32
}

// sdxl is SDXL's 4-channel map (ComfyUI comfy/latent_formats.py, class SDXL).
var sdxl = factors{
	m: [][3]float32{
		{0.3651, 0.4232, 0.4341},
		{-0.2533, -0.0042, 0.1068},
		{0.1076, 0.1111, -0.0362},
		{-0.3165, -0.2492, -0.2188},
	},
	bias: [3]float32{0.1084, -0.0175, -0.0011},
}

// sd3 is SD3's 16-channel map (ComfyUI comfy/latent_formats.py, class SD3), for latents in
// the transformer's space ((vae_latent - shift) * scale).
var sd3 = factors{
	m: [][3]float32{
		{-0.0922, -0.0175, 0.0749},
		{0.0311, 0.0633, 0.0954},
		{0.1994, 0.0927, 0.0458},
		{0.0856, 0.0339, 0.0902},
		{0.0587, 0.0272, -0.0496},
		{-0.0006, 0.1104, 0.0309},
		{0.0978, 0.0306, 0.0427},
		{-0.0042, 0.1038, 0.1358},
		{-0.0194, 0.0020, 0.0669},
		{-0.0488, 0.0130, -0.0268},
		{0.0922, 0.0988, 0.0951},
		{-0.0278, 0.0524, -0.0542},
		{0.0332, 0.0456, 0.0895},
		{-0.0069, -0.0030, -0.0810},
		{-0.0596, -0.0465, -0.0293},
		{-0.1448, -0.1463, -0.1189},
	},
	bias: [3]float32{0.2394, 0.2135, 0.1925},
}

// Render maps one image's latents [c, h, w] (the denoiser's latent space: SDXL's 4 channels
// or SD3's 16) to an RGB image of (w*scale)x(h*scale) pixels (nearest-neighbour upscaling;
// scale >= 1): rgb = factors x latent + bias, mapped from [-1, 1] to [0, 255] and clamped.
func Render(lat []float32, c, h, w, scale int) (*image.NRGBA, error) {
	var f factors
	switch c {
	case 4:
		f = sdxl
	case 16:
		f = sd3
	default:
		return nil, fmt.Errorf("%w: %d", ErrChannels, c)
	}
	if h <= 0 || w <= 0 || scale < 1 || len(lat) != c*h*w {
		return nil, fmt.Errorf("preview: %d latent values for %dx%dx%d at scale %d", len(lat), c, h, w, scale)
	}
	img := image.NewNRGBA(image.Rect(0, 0, w*scale, h*scale))
	plane := h * w
	for y := range h {
		for x := range w {
			rgb := f.bias
			for ch := range c {
				v := lat[ch*plane+y*w+x]
				for k := range 3 {
					rgb[k] += f.m[ch][k] * v
				}
			}
			var px [4]uint8
			for k, v := range rgb {
				px[k] = toByte(v)
			}
			px[3] = 0xff
			for dy := range scale {
				o := img.PixOffset(x*scale, y*scale+dy)
				for dx := range scale {
					copy(img.Pix[o+4*dx:o+4*dx+4], px[:])
				}
			}
		}
	}
	return img, nil
}

// toByte maps [-1, 1] to [0, 255], clamping (NaN gives 0).
func toByte(v float32) uint8 {
	u := (v + 1) / 2
	if !(u > 0) {
		return 0
	}
	return uint8(math.Round(float64(min(u, 1) * 255)))
}

// Steps returns the denoising steps (1-based, increasing) after which k previews of a
// steps-step generation are taken, spaced evenly: step (i+1)*steps/(k+1) for the i-th. At most
// steps-1 previews are taken (none after the last step, whose image is the result).
func Steps(steps, k int) []int {
	k = min(k, steps-1)
	if k <= 0 {
		return nil
	}
	at := make([]int, k)
	for i := range at {
		at[i] = (i + 1) * steps / (k + 1)
	}
	return at
}
