// Package resnet is the host-side pipeline of the ResNet-50 ImageNet classifier: torchvision's
// ImageNet eval preprocessing reproduced to the bit (PIL's antialiased bilinear resize of the
// shorter side to 256, centre crop 224, ToTensor, Normalize, NCHW float32), the bfloat16
// conversion of the device dtype, assembly of padded device batches, softmax top-k
// post-processing with ImageNet labels, a runners.Runner that drives an injectable device
// function with cross-request batches, and the device functions of mock-device mode (the C
// simulator's resnet50 program through ttnn, and its bit-exact Go twin).
package resnet

import (
	"encoding/binary"
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
		// Resize, crop and normalisation fused: only the crop's pixels are computed.
		resizeCropPIL(nil, dst[:ImageElems], src, g)
		return nil
	case TorchBilinear:
		resizeCropTorch(crop[:], src, g)
	default:
		return fmt.Errorf("resnet preprocess: unknown interpolation %d", interp)
	}
	normalize(dst[:ImageElems], crop[:])
	return nil
}

// pixels is 8-bit RGBX (4 bytes a pixel, the 4th ignored) with its origin at Pix[0].
type pixels struct {
	pix    []uint8
	stride int
	w, h   int
}

// resizeCropPIL writes into dst (224×224 RGB, interleaved) the centre crop of PIL's
// Image.resize((g.ResizedW, g.ResizedH), BILINEAR) of src; with norm set (len ImageElems) it
// writes the normalised planar tensor there instead, row by row as the crop is computed. Only the pixels inside the crop are
// computed; each is bit-identical to PIL's (horizontal pass first, rounded to uint8, then the
// vertical pass, as ImagingResampleInner does).
func resizeCropPIL(dst []uint8, norm []float32, src pixels, g Geometry) {
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
		hpass(out, in, &hc, g.CropLeft)
	}
	if !needV {
		if norm != nil {
			normalize(norm, tmp[:InputSize*InputSize*Channels])
			return
		}
		copy(dst, tmp[:InputSize*InputSize*Channels])
		return
	}
	// Vertical pass, two interleaved samples per uint64 (see hpass), fused with the
	// normalisation when norm is set.
	const rowLen = InputSize * Channels
	var acc [rowLen / 2]uint64
	var crop [rowLen]uint8
	for y := range InputSize {
		oy := g.CropTop + y
		ymin, n := vc.Bounds[2*oy]-rowFirst, vc.Bounds[2*oy+1]
		k := vc.K[oy*vc.KSize : oy*vc.KSize+n]
		for i := range acc {
			acc[i] = half | half<<32
		}
		rows := tmp[ymin*rowLen : (ymin+n)*rowLen]
		for len(k) >= 2 {
			r0, r1 := rows[:rowLen:rowLen], rows[rowLen:2*rowLen:2*rowLen]
			w0, w1 := uint64(uint32(k[0])), uint64(uint32(k[1]))
			for j := range acc {
				a := uint64(binary.LittleEndian.Uint16(r0[2*j:]))
				b := uint64(binary.LittleEndian.Uint16(r1[2*j:]))
				acc[j] += ((a&0xFF)|(a>>8)<<32)*w0 + ((b&0xFF)|(b>>8)<<32)*w1
			}
			k, rows = k[2:], rows[2*rowLen:]
		}
		if len(k) == 1 {
			r0 := rows[:rowLen:rowLen]
			w0 := uint64(uint32(k[0]))
			for j := range acc {
				a := uint64(binary.LittleEndian.Uint16(r0[2*j:]))
				acc[j] += ((a & 0xFF) | (a>>8)<<32) * w0
			}
		}
		out := crop[:]
		if norm == nil {
			out = dst[y*rowLen : (y+1)*rowLen]
		}
		for j, v := range acc {
			out[2*j] = clip8u(uint32(v))
			out[2*j+1] = clip8u(uint32(v >> 32))
		}
		if norm != nil {
			const plane = InputSize * InputSize
			r := norm[y*InputSize : y*InputSize+InputSize]
			gg := norm[plane+y*InputSize : plane+y*InputSize+InputSize]
			b := norm[2*plane+y*InputSize : 2*plane+y*InputSize+InputSize]
			for x := range InputSize {
				px := crop[3*x : 3*x+3 : 3*x+3]
				r[x], gg[x], b[x] = normLUT[0][px[0]], normLUT[1][px[1]], normLUT[2][px[2]]
			}
		}
	}
}

// half is 0.5 in PIL's fixed point, the rounding bias of every sum.
const half = 1 << (imaging.PILPrecisionBits - 1)

// hpass computes one row of the crop's horizontal pass: for output columns cropLeft..+223,
// PIL's bilinear taps over the RGBX row in, rounded to uint8 into out (RGB interleaved).
// Bilinear weights are non-negative and sum to 1<<22 (± rounding), so a channel's sum stays
// below 2^31: R and B share one uint64 (R in the low 32 bits, B in the high), halving the
// multiplies; the result is bit-identical to three int32 sums.
func hpass(out, in []uint8, hc *imaging.PILCoeffs, cropLeft int) {
	for x := range InputSize {
		ox := cropLeft + x
		xmin, n := hc.Bounds[2*ox], hc.Bounds[2*ox+1]
		k := hc.K[ox*hc.KSize : ox*hc.KSize+n]
		p := in[4*xmin : 4*(xmin+n)]
		rb, gs := uint64(half|half<<32), uint32(half)
		for len(k) >= 4 && len(p) >= 16 {
			v0 := uint64(binary.LittleEndian.Uint32(p))
			v1 := uint64(binary.LittleEndian.Uint32(p[4:]))
			v2 := uint64(binary.LittleEndian.Uint32(p[8:]))
			v3 := uint64(binary.LittleEndian.Uint32(p[12:]))
			w0, w1, w2, w3 := uint64(uint32(k[0])), uint64(uint32(k[1])), uint64(uint32(k[2])), uint64(uint32(k[3]))
			rb += ((v0&0xFF)|(v0&0xFF0000)<<16)*w0 + ((v1&0xFF)|(v1&0xFF0000)<<16)*w1 +
				((v2&0xFF)|(v2&0xFF0000)<<16)*w2 + ((v3&0xFF)|(v3&0xFF0000)<<16)*w3
			gs += uint32((v0>>8)&0xFF)*uint32(w0) + uint32((v1>>8)&0xFF)*uint32(w1) +
				uint32((v2>>8)&0xFF)*uint32(w2) + uint32((v3>>8)&0xFF)*uint32(w3)
			k, p = k[4:], p[16:]
		}
		for len(k) >= 2 && len(p) >= 8 {
			v0 := uint64(binary.LittleEndian.Uint32(p))
			v1 := uint64(binary.LittleEndian.Uint32(p[4:]))
			w0, w1 := uint64(uint32(k[0])), uint64(uint32(k[1]))
			rb += ((v0&0xFF)|(v0&0xFF0000)<<16)*w0 + ((v1&0xFF)|(v1&0xFF0000)<<16)*w1
			gs += uint32((v0>>8)&0xFF)*uint32(w0) + uint32((v1>>8)&0xFF)*uint32(w1)
			k, p = k[2:], p[8:]
		}
		if len(k) == 1 && len(p) >= 4 {
			v := uint64(binary.LittleEndian.Uint32(p))
			rb += ((v & 0xFF) | (v&0xFF0000)<<16) * uint64(uint32(k[0]))
			gs += uint32((v>>8)&0xFF) * uint32(k[0])
		}
		o := out[3*x : 3*x+3 : 3*x+3]
		o[0], o[1], o[2] = clip8u(uint32(rb)), clip8u(gs), clip8u(uint32(rb>>32))
	}
}

// clip8u is clip8 for a non-negative sum.
func clip8u(v uint32) uint8 { return uint8(min(v>>imaging.PILPrecisionBits, 255)) }

// normalize writes the planar normalised tensor of an interleaved 224×224 RGB crop.
func normalize(dst []float32, crop []uint8) {
	const plane = InputSize * InputSize
	for c := range Channels {
		lut := &normLUT[c]
		out := dst[c*plane : (c+1)*plane]
		for i := range out {
			out[i] = lut[crop[i*Channels+c]]
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
