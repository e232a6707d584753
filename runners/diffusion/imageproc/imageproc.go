// Package imageproc is the host-side input preparation of SDXL image-to-image and inpainting, as
// diffusers' VaeImageProcessor does it for a PIL image: resize to the model's size with PIL's
// Lanczos filter (bit-exact fixed-point resampling), scale to [-1, 1] (images) or to {0, 1}
// (masks: single channel, binarised at 0.5), the masked image, and the mask's nearest-neighbour
// resize to the latent size (torch's interpolate, as prepare_mask_latents does). Decoding and Pillow's
// filter coefficients are media/imaging's; the resize kernels here (resample.go) compute Pillow's
// integers faster than imaging.PILResize, fused with the normalisation, and are tested against it.
// This package starts from decoded pixels.
package imageproc

import (
	"errors"
	"fmt"
	"image"
	"math"
)

// ErrMask marks a mask that cannot be read as one channel.
var ErrMask = errors.New("mask is not single-channel")

// Image is a planar float32 tensor [C, H, W] (one image, no batch axis).
type Image struct {
	C, H, W int
	Pix     []float32
}

// Preprocess is VaeImageProcessor.preprocess of an RGB image to h x w: PIL's Lanczos resize
// (skipped when the size already matches), x/255 in float32, then 2x-1. The result is
// [3, h, w] in [-1, 1]. Alpha is ignored (the caller converted to RGB, as PIL's convert does).
func Preprocess(img *image.NRGBA, h, w int) (Image, error) {
	if err := checkSize(img, h, w); err != nil {
		return Image{}, err
	}
	src := source{
		Pix: img.Pix[img.PixOffset(img.Rect.Min.X, img.Rect.Min.Y):], Stride: img.Stride,
		BPP: 4, Ch: 3, W: img.Rect.Dx(), H: img.Rect.Dy(),
	}
	out := Image{C: 3, H: h, W: w, Pix: make([]float32, 3*h*w)}
	resize(src, w, h, &unit, out.Pix)
	return out, nil
}

// unit maps a byte to VaeImageProcessor's value: 2*(v/255)-1, each step in float32 as numpy
// and torch compute it.
var unit = func() (t [256]float32) {
	for v := range t {
		x := float32(v) / 255
		t[v] = 2*x - 1
	}
	return t
}()

// MaskChannel reads a mask image as one 8-bit channel: a grayscale image as it is; with
// alphaMarks (OpenAI's images/edits convention), an image whose alpha is not opaque everywhere
// by its alpha (fully transparent = 255, repaint; opaque = 0, keep; partial alpha inverted);
// otherwise an image whose red, green and blue agree at every pixel by that value (white =
// repaint, the diffusers convention; alpha is dropped as PIL's convert does). A colour image
// whose channels differ is refused with ErrMask: which of its channels marks the area would be
// a guess.
func MaskChannel(img image.Image, alphaMarks bool) (*image.Gray, error) {
	if img == nil {
		return nil, fmt.Errorf("%w: no image", ErrMask)
	}
	b := img.Bounds()
	out := image.NewGray(image.Rect(0, 0, b.Dx(), b.Dy()))
	switch m := img.(type) {
	case *image.Gray:
		for y := range b.Dy() {
			copy(out.Pix[y*out.Stride:y*out.Stride+b.Dx()], m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):])
		}
		return out, nil
	case *image.Gray16:
		for y := range b.Dy() {
			for x := range b.Dx() {
				out.Pix[y*out.Stride+x] = uint8(m.Gray16At(b.Min.X+x, b.Min.Y+y).Y >> 8)
			}
		}
		return out, nil
	}
	translucent := false
	for y := b.Min.Y; y < b.Max.Y && alphaMarks && !translucent; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if color8(img, x, y)[3] != 255 {
				translucent = true
				break
			}
		}
	}
	for y := range b.Dy() {
		for x := range b.Dx() {
			c := color8(img, b.Min.X+x, b.Min.Y+y)
			if translucent {
				out.Pix[y*out.Stride+x] = 255 - c[3]
				continue
			}
			if c[0] != c[1] || c[1] != c[2] {
				return nil, fmt.Errorf("%w: pixel (%d,%d) is colour (%d,%d,%d); send a grayscale mask (white = repaint) or one whose transparent pixels mark the area", ErrMask, x, y, c[0], c[1], c[2])
			}
			out.Pix[y*out.Stride+x] = c[0]
		}
	}
	return out, nil
}

// color8 is a pixel's non-premultiplied 8-bit RGBA: NRGBA's bytes as they are (PNG with alpha),
// RGBA's (PNG without alpha, always opaque there) un-premultiplied, other types through At.
func color8(img image.Image, x, y int) [4]uint8 {
	switch m := img.(type) {
	case *image.NRGBA:
		o := m.PixOffset(x, y)
		return [4]uint8(m.Pix[o : o+4])
	case *image.RGBA:
		o := m.PixOffset(x, y)
		if p := [4]uint8(m.Pix[o : o+4]); p[3] == 255 {
			return p
		}
	}
	r, g, b, a := img.At(x, y).RGBA()
	if a == 0 {
		return [4]uint8{0, 0, 0, 0} // colour lost in premultiplied formats
	}
	// 16-bit non-premultiplied, then its high byte (the 8-bit value a 16-bit one was widened from).
	un := func(v uint32) uint8 { return uint8((v * 0xffff / a) >> 8) }
	return [4]uint8{un(r), un(g), un(b), uint8(a >> 8)}
}

// binarise maps a byte to the binarised mask value: 1 where v/255 (float32) >= 0.5, else 0.
var binarise = func() (t [256]float32) {
	for v := range t {
		if float32(v)/255 >= 0.5 {
			t[v] = 1
		}
	}
	return t
}()

// PreprocessMask is the inpainting mask processor (VaeImageProcessor with do_normalize False,
// do_binarize and do_convert_grayscale): PIL's Lanczos resize of the channel to h x w, x/255,
// then 0 below 0.5 and 1 from it. The result is [1, h, w].
func PreprocessMask(mask *image.Gray, h, w int) (Image, error) {
	if mask == nil || h <= 0 || w <= 0 || mask.Rect.Empty() {
		return Image{}, fmt.Errorf("imageproc: empty mask or size %dx%d", w, h)
	}
	src := source{
		Pix: mask.Pix[mask.PixOffset(mask.Rect.Min.X, mask.Rect.Min.Y):], Stride: mask.Stride,
		BPP: 1, Ch: 1, W: mask.Rect.Dx(), H: mask.Rect.Dy(),
	}
	out := Image{C: 1, H: h, W: w, Pix: make([]float32, h*w)}
	resize(src, w, h, &binarise, out.Pix)
	return out, nil
}

// Masked is the inpainting pipeline's masked image: image * (mask < 0.5), so the area to
// repaint becomes 0 (mid-grey in [-1, 1]). image is [C, H, W], mask [1, H, W].
func Masked(img, mask Image) (Image, error) {
	if mask.C != 1 || mask.H != img.H || mask.W != img.W {
		return Image{}, fmt.Errorf("imageproc: mask %dx%dx%d for image %dx%dx%d", mask.C, mask.H, mask.W, img.C, img.H, img.W)
	}
	out := Image{C: img.C, H: img.H, W: img.W, Pix: make([]float32, len(img.Pix))}
	plane := img.H * img.W
	for c := range img.C {
		for i := range plane {
			if mask.Pix[i] < 0.5 {
				out.Pix[c*plane+i] = img.Pix[c*plane+i]
			}
		}
	}
	return out, nil
}

// Nearest is torch.nn.functional.interpolate(mode="nearest") of a [C, H, W] tensor to h x w,
// as prepare_mask_latents resizes the mask to the latent size: source index
// min(floor(dst * (in/out as float32)), in-1), or the index itself when the size is unchanged.
func Nearest(src Image, h, w int) (Image, error) {
	if h <= 0 || w <= 0 || len(src.Pix) != src.C*src.H*src.W || src.H <= 0 || src.W <= 0 {
		return Image{}, fmt.Errorf("imageproc: nearest %dx%dx%d to %dx%d", src.C, src.H, src.W, h, w)
	}
	ys, xs := nearestIdx(src.H, h), nearestIdx(src.W, w)
	out := Image{C: src.C, H: h, W: w, Pix: make([]float32, src.C*h*w)}
	for c := range src.C {
		for y, sy := range ys {
			for x, sx := range xs {
				out.Pix[(c*h+y)*w+x] = src.Pix[(c*src.H+sy)*src.W+sx]
			}
		}
	}
	return out, nil
}

func nearestIdx(in, out int) []int {
	idx := make([]int, out)
	scale := float32(in) / float32(out)
	for i := range idx {
		switch {
		case in == out:
			idx[i] = i
		case out == 2*in:
			idx[i] = i >> 1
		default:
			idx[i] = min(int(math.Floor(float64(float32(i)*scale))), in-1)
		}
	}
	return idx
}

func checkSize(img *image.NRGBA, h, w int) error {
	if img == nil || img.Rect.Empty() {
		return errors.New("imageproc: empty image")
	}
	if h <= 0 || w <= 0 {
		return fmt.Errorf("imageproc: target size %dx%d", w, h)
	}
	return nil
}
