// Package resnet is the host-side pipeline of the ResNet-50 ImageNet classifier: torchvision's
// ImageNet eval preprocessing reproduced to the bit (PIL's antialiased bilinear resize of the
// shorter side to 256, centre crop 224, ToTensor, Normalize, NCHW float32), the bfloat16
// conversion of the device dtype, assembly of padded device batches, softmax top-k
// post-processing with ImageNet labels, a runners.Runner that drives an injectable device
// function with cross-request batches, and the device functions of mock-device mode (the C
// simulator's resnet50 program through ttnn, and its bit-exact Go twin).
package resnet

import (
	"errors"
	"fmt"
	"image"
	"math"

	"github.com/tenstorrent/tt-media-server-go/media/imaging"
)

// Model geometry and normalisation (torchvision ResNet50_Weights.IMAGENET1K_V1 transforms).
const (
	ResizeSize = 256 // shorter side after resize
	InputSize  = 224 // centre crop, the network's input height and width
	Channels   = 3
	// ImageElems is the number of float32 values of one preprocessed image (3×224×224).
	ImageElems = Channels * InputSize * InputSize
	// NumClasses is the number of ImageNet-1k classes the network outputs.
	NumClasses = 1000
)

// Mean and Std are the ImageNet normalisation constants, as float32 like torch's tensors.
var (
	Mean = [Channels]float32{0.485, 0.456, 0.406}
	Std  = [Channels]float32{0.229, 0.224, 0.225}
)

// ErrEmptyImage is returned for an image without pixels.
var ErrEmptyImage = errors.New("empty image")

// Interp selects the resize of the preprocessing.
type Interp int

const (
	// PILBilinear is the reference: torchvision's Resize on a PIL image calls PIL's
	// Image.resize(BILINEAR), a triangle filter whose support widens with the downscale factor
	// (antialiased), in PIL's 22-bit fixed point, rounded to uint8 after each pass.
	PILBilinear Interp = iota
	// TorchBilinear is torchvision's Resize on a uint8 tensor with antialias=False: 2-tap
	// bilinear with half-pixel centres in float32 (torch's channels-last CPU kernel), rounded
	// half-to-even back to uint8.
	TorchBilinear
)

// Geometry is where the resize and the centre crop land for an input of a given size.
type Geometry struct {
	ResizedW, ResizedH int // size after the resize of the shorter side to 256
	CropLeft, CropTop  int // offset of the 224×224 crop in the resized image
}

// GeometryFor computes torchvision 0.14's geometry: the shorter side becomes 256, the longer
// int(256*long/short) (truncated); the crop offset is round((size-224)/2), half to even as
// Python's round.
func GeometryFor(w, h int) Geometry {
	var g Geometry
	if w <= h {
		g.ResizedW, g.ResizedH = ResizeSize, int(float64(ResizeSize*h)/float64(w))
	} else {
		g.ResizedW, g.ResizedH = int(float64(ResizeSize*w)/float64(h)), ResizeSize
	}
	g.CropLeft = int(math.RoundToEven(float64(g.ResizedW-InputSize) / 2))
	g.CropTop = int(math.RoundToEven(float64(g.ResizedH-InputSize) / 2))
	return g
}

// normLUT[c][v] is (v/255 - mean[c]) / std[c] computed in float32 exactly as torchvision's
// ToTensor (div(255)) followed by Normalize (sub_(mean).div_(std)).
var normLUT = func() (t [Channels][256]float32) {
	for c := range Channels {
		for v := range 256 {
			x := float32(v) / float32(255)
			x -= Mean[c]
			t[c][v] = x / Std[c]
		}
	}
	return t
}()

// Preprocess turns an image into the network input, a 3×224×224 NCHW float32 tensor (RGB,
// ImageNet-normalised), exactly as torchvision's reference transforms do on
// Image.convert('RGB') of the same pixels. Any alpha channel is dropped. It fails only for
// an empty image.
func Preprocess(img image.Image) ([]float32, error) {
	dst := make([]float32, ImageElems)
	if err := PreprocessInto(dst, img, PILBilinear); err != nil {
		return nil, err
	}
	return dst, nil
}

// PreprocessInto writes the network input for img into dst (len ImageElems) with the chosen
// resize. It fails only for an empty image or a short dst.
func PreprocessInto(dst []float32, img image.Image, interp Interp) error {
	if len(dst) < ImageElems {
		return fmt.Errorf("resnet preprocess: dst holds %d values, need %d", len(dst), ImageElems)
	}
	if img == nil || img.Bounds().Empty() {
		return fmt.Errorf("resnet preprocess: %w", ErrEmptyImage)
	}
	rgb, ok := img.(*image.NRGBA)
	if !ok {
		rgb = imaging.ToRGB(img)
	}
	var crop [InputSize * InputSize * Channels]uint8
	b := rgb.Bounds()
	src := pixels{pix: rgb.Pix[rgb.PixOffset(b.Min.X, b.Min.Y):], stride: rgb.Stride, w: b.Dx(), h: b.Dy()}
	g := GeometryFor(src.w, src.h)
	switch interp {
	case PILBilinear:
		resizeCropPIL(crop[:], src, g)
	case TorchBilinear:
		resizeCropTorch(crop[:], src, g)
	default:
		return fmt.Errorf("resnet preprocess: unknown interpolation %d", interp)
	}
	const plane = InputSize * InputSize
	for c := range Channels {
		lut := &normLUT[c]
		out := dst[c*plane : (c+1)*plane]
		for i := range out {
			out[i] = lut[crop[i*Channels+c]]
		}
	}
	return nil
}

// pixels is 8-bit RGBX (4 bytes a pixel, the 4th ignored) with its origin at Pix[0].
type pixels struct {
	pix    []uint8
	stride int
	w, h   int
}

// resizeCropPIL writes into dst (224×224 RGB, interleaved) the centre crop of PIL's
// Image.resize((g.ResizedW, g.ResizedH), BILINEAR) of src. Only the pixels inside the crop are
// computed; each is bit-identical to PIL's (horizontal pass first, rounded to uint8, then the
// vertical pass, as ImagingResampleInner does).
func resizeCropPIL(dst []uint8, src pixels, g Geometry) {
	needH := g.ResizedW != src.w
	needV := g.ResizedH != src.h
	var hc, vc imaging.PILCoeffs
	if needH {
		hc = imaging.NewPILCoeffs(src.w, g.ResizedW, imaging.PILBilinear)
	}
	// Source rows the crop needs, and the vertical taps relative to the first of them.
	rowFirst, rowLast := g.CropTop, g.CropTop+InputSize
	if needV {
		vc = imaging.NewPILCoeffs(src.h, g.ResizedH, imaging.PILBilinear)
		rowFirst = vc.Bounds[2*g.CropTop]
		last := g.CropTop + InputSize - 1
		rowLast = vc.Bounds[2*last] + vc.Bounds[2*last+1]
		for oy := g.CropTop; oy <= last; oy++ {
			rowFirst = min(rowFirst, vc.Bounds[2*oy])
			rowLast = max(rowLast, vc.Bounds[2*oy]+vc.Bounds[2*oy+1])
		}
	}
	rows := rowLast - rowFirst
	// Horizontal pass over the needed rows, only the crop's columns.
	tmp := make([]uint8, rows*InputSize*Channels)
	for r := range rows {
		in := src.pix[(rowFirst+r)*src.stride:]
		out := tmp[r*InputSize*Channels : (r+1)*InputSize*Channels]
		if !needH {
			for x := range InputSize {
				p := in[4*(g.CropLeft+x):]
				out[3*x], out[3*x+1], out[3*x+2] = p[0], p[1], p[2]
			}
			continue
		}
		for x := range InputSize {
			ox := g.CropLeft + x
			xmin, n := hc.Bounds[2*ox], hc.Bounds[2*ox+1]
			k := hc.K[ox*hc.KSize : ox*hc.KSize+n]
			s0, s1, s2 := int32(1<<(imaging.PILPrecisionBits-1)), int32(1<<(imaging.PILPrecisionBits-1)), int32(1<<(imaging.PILPrecisionBits-1))
			p := in[4*xmin : 4*(xmin+n)]
			for i, w := range k {
				s0 += int32(p[4*i]) * w
				s1 += int32(p[4*i+1]) * w
				s2 += int32(p[4*i+2]) * w
			}
			out[3*x], out[3*x+1], out[3*x+2] = imaging.PILClip8(s0), imaging.PILClip8(s1), imaging.PILClip8(s2)
		}
	}
	if !needV {
		copy(dst, tmp[:InputSize*InputSize*Channels])
		return
	}
	// Vertical pass.
	const rowLen = InputSize * Channels
	var acc [rowLen]int32
	for y := range InputSize {
		oy := g.CropTop + y
		ymin, n := vc.Bounds[2*oy]-rowFirst, vc.Bounds[2*oy+1]
		k := vc.K[oy*vc.KSize : oy*vc.KSize+n]
		for i := range acc {
			acc[i] = 1 << (imaging.PILPrecisionBits - 1)
		}
		for i, w := range k {
			row := tmp[(ymin+i)*rowLen : (ymin+i+1)*rowLen]
			for j, v := range row {
				acc[j] += int32(v) * w
			}
		}
		out := dst[y*rowLen : (y+1)*rowLen]
		for j, v := range acc {
			out[j] = imaging.PILClip8(v)
		}
	}
}

// torchIndex is torch's compute_source_index_and_lambda for one output position
// (align_corners=False) as the reference build computed it: the ratio in/out in float32, the
// source position ratio*(i+0.5)-0.5 in double, the lambdas stored as float32. (This, and the
// fused multiply-adds below, are what reproduce all golden tensors exactly, including the
// pixels whose value is within float32 rounding of a .5 tie; see preprocess_test.go.)
func torchIndex(ratio float32, out, inSize, outSize int) (i0, i1 int, l0, l1 float32) {
	if inSize == outSize {
		return out, out, 1, 0
	}
	real := float64(ratio)*(float64(out)+0.5) - 0.5
	if real < 0 {
		real = 0
	}
	i0 = int(real)
	i1 = i0
	if i0 < inSize-1 {
		i1++
	}
	l1 = float32(min(max(real-float64(i0), 0), 1))
	l0 = 1 - l1
	return i0, i1, l0, l1
}

// fma32 is a float32 fused multiply-add: a*b+c rounded once.
func fma32(a, b, c float32) float32 { return float32(math.FMA(float64(a), float64(b), float64(c))) }

// resizeCropTorch writes into dst the centre crop of torchvision's tensor resize with
// antialias=False: torch's separable bilinear kernel in float32, each row interpolated as
// x0*w0 + x1*w1 and the two rows combined the same way, the additions fused with the second
// product (as the compiled kernel does), then rounded half to even.
func resizeCropTorch(dst []uint8, src pixels, g Geometry) {
	rh := float32(src.h) / float32(g.ResizedH)
	rw := float32(src.w) / float32(g.ResizedW)
	var ix0, ix1 [InputSize]int
	var lx0, lx1 [InputSize]float32
	for x := range InputSize {
		i0, i1, l0, l1 := torchIndex(rw, g.CropLeft+x, src.w, g.ResizedW)
		ix0[x], ix1[x], lx0[x], lx1[x] = 4*i0, 4*i1, l0, l1
	}
	for y := range InputSize {
		ih0, ih1, h0, h1 := torchIndex(rh, g.CropTop+y, src.h, g.ResizedH)
		r0 := src.pix[ih0*src.stride : ih0*src.stride+4*src.w]
		r1 := src.pix[ih1*src.stride : ih1*src.stride+4*src.w]
		out := dst[y*InputSize*Channels : (y+1)*InputSize*Channels]
		for x := range InputSize {
			a, b, w0, w1 := ix0[x], ix1[x], lx0[x], lx1[x]
			for c := range Channels {
				t0 := fma32(float32(r0[b+c]), w1, float32(float32(r0[a+c])*w0))
				t1 := fma32(float32(r1[b+c]), w1, float32(float32(r1[a+c])*w0))
				v := fma32(t1, h1, float32(t0*h0))
				out[x*Channels+c] = uint8(min(max(math.RoundToEven(float64(v)), 0), 255))
			}
		}
	}
}
