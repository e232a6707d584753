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
	return preprocess(f32Sink(dst[:ImageElems]), img, interp)
}

// PreprocessBF16Into writes the network input for img into dst as the device takes it:
// bfloat16 (torch's .to(torch.bfloat16) of Preprocess's tensor, bit for bit), little-endian,
// 2*ImageElems bytes. Normalisation and the bf16 rounding are one table look-up per value.
func PreprocessBF16Into(dst []byte, img image.Image, interp Interp) error {
	if len(dst) < 2*ImageElems {
		return fmt.Errorf("resnet preprocess: dst holds %d bytes, need %d", len(dst), 2*ImageElems)
	}
	return preprocess(bf16Sink(dst[:2*ImageElems]), img, interp)
}

func preprocess(sink rowSink, img image.Image, interp Interp) error {
	if img == nil || img.Bounds().Empty() {
		return fmt.Errorf("resnet preprocess: %w", ErrEmptyImage)
	}
	if interp != PILBilinear && interp != TorchBilinear {
		return fmt.Errorf("resnet preprocess: unknown interpolation %d", interp)
	}
	rgb, ok := img.(*image.NRGBA)
	if !ok {
		rgb = imaging.ToRGB(img)
	}
	b := rgb.Bounds()
	src := pixels{pix: rgb.Pix[rgb.PixOffset(b.Min.X, b.Min.Y):], stride: rgb.Stride, w: b.Dx(), h: b.Dy()}
	g := GeometryFor(src.w, src.h)
	if interp == PILBilinear {
		// Resize, crop and normalisation fused: only the crop's pixels are computed.
		resizeCropPIL(sink, src, g)
		return nil
	}
	var crop [InputSize * rowLen]uint8
	resizeCropTorch(crop[:], src, g)
	for y := range InputSize {
		sink.row(y, crop[y*rowLen:(y+1)*rowLen])
	}
	return nil
}

// pixels is 8-bit RGBX (4 bytes a pixel, the 4th ignored) with its origin at Pix[0].
type pixels struct {
	pix    []uint8
	stride int
	w, h   int
}

// rowSink takes the crop row by row (interleaved RGB, rowLen bytes) and writes the tensor.
type rowSink interface{ row(y int, rgb []uint8) }

// f32Sink writes the planar normalised float32 tensor (ImageElems values).
type f32Sink []float32

func (d f32Sink) row(y int, rgb []uint8) {
	const plane = InputSize * InputSize
	r := d[y*InputSize:][:InputSize]
	g := d[plane+y*InputSize:][:InputSize]
	b := d[2*plane+y*InputSize:][:InputSize]
	rgb = rgb[:rowLen]
	for x := range InputSize {
		px := rgb[3*x:][:3]
		r[x], g[x], b[x] = normLUT[0][px[0]], normLUT[1][px[1]], normLUT[2][px[2]]
	}
}

// bf16Sink writes the planar normalised tensor as little-endian bfloat16 (2*ImageElems bytes).
type bf16Sink []byte

func (d bf16Sink) row(y int, rgb []uint8) {
	const plane = 2 * InputSize * InputSize
	r := d[2*y*InputSize:][:2*InputSize]
	g := d[plane+2*y*InputSize:][:2*InputSize]
	b := d[2*plane+2*y*InputSize:][:2*InputSize]
	rgb = rgb[:rowLen]
	for x := range InputSize {
		px := rgb[3*x:][:3]
		binary.LittleEndian.PutUint16(r[2*x:], bf16LUT[0][px[0]])
		binary.LittleEndian.PutUint16(g[2*x:], bf16LUT[1][px[1]])
		binary.LittleEndian.PutUint16(b[2*x:], bf16LUT[2][px[2]])
	}
}

// bf16LUT[c][v] is normLUT[c][v] rounded to bfloat16 as ToBF16 rounds.
var bf16LUT = func() (t [Channels][256]uint16) {
	for c := range Channels {
		for v := range 256 {
			t[c][v] = BF16(normLUT[c][v])
		}
	}
	return t
}()

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
