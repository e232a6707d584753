package imaging

import "math"

// Pillow's fixed-point resampling (libImaging/Resample.c), bit for bit: the preprocessing of
// models trained on PIL's Image.resize (torchvision's ImageNet transforms, diffusers'
// VaeImageProcessor) is reproduced exactly only with its integer arithmetic.

// PILPrecisionBits is Resample.c's PRECISION_BITS for 8-bit images (32 - 8 - 2).
const PILPrecisionBits = 32 - 8 - 2

// PILFilter is one of Pillow's resampling filters.
type PILFilter int

// The filters reproduced here.
const (
	// PILBilinear is Image.BILINEAR (a triangle of support 1, widened by the downscale factor).
	PILBilinear PILFilter = iota
	// PILLanczos is Image.LANCZOS (a = 3).
	PILLanczos
)

func (f PILFilter) support() float64 {
	if f == PILLanczos {
		return 3
	}
	return 1
}

func (f PILFilter) weight(x float64) float64 {
	if f == PILLanczos { // lanczos_filter: sinc(x) * sinc(x/3) inside [-3, 3)
		if -3 <= x && x < 3 {
			return sinc(x) * sinc(x/3)
		}
		return 0
	}
	x = math.Abs(x) // bilinear_filter
	if x < 1 {
		return 1 - x
	}
	return 0
}

func sinc(x float64) float64 {
	if x == 0 {
		return 1
	}
	x *= math.Pi
	return math.Sin(x) / x
}

// PILCoeffs are Resample.c's precompute_coeffs normalised to fixed point as
// normalize_coeffs_8bpc: output position i reads Bounds[2i+1] input samples from Bounds[2i],
// with weights K[i*KSize:].
type PILCoeffs struct {
	KSize  int
	Bounds []int
	K      []int32
}

// NewPILCoeffs is precompute_coeffs(inSize, 0, inSize, outSize, filter).
func NewPILCoeffs(inSize, outSize int, f PILFilter) PILCoeffs {
	scale := float64(inSize) / float64(outSize)
	filterscale := max(scale, 1.0)
	support := f.support() * filterscale
	ksize := int(math.Ceil(support))*2 + 1
	c := PILCoeffs{KSize: ksize, Bounds: make([]int, 2*outSize), K: make([]int32, outSize*ksize)}
	w := make([]float64, ksize)
	ss := 1.0 / filterscale
	for xx := range outSize {
		center := (float64(xx) + 0.5) * scale
		xmin := max(int(center-support+0.5), 0) // C's (int) truncates toward zero
		xmax := min(int(center+support+0.5), inSize) - xmin
		var ww float64
		for x := range xmax {
			w[x] = f.weight((float64(x+xmin) - center + 0.5) * ss)
			ww += w[x]
		}
		k := c.K[xx*ksize : (xx+1)*ksize]
		for x := range xmax {
			v := w[x]
			if ww != 0 {
				v /= ww
			}
			if v < 0 {
				k[x] = int32(-0.5 + v*(1<<PILPrecisionBits))
			} else {
				k[x] = int32(0.5 + v*(1<<PILPrecisionBits))
			}
		}
		c.Bounds[2*xx], c.Bounds[2*xx+1] = xmin, xmax
	}
	return c
}

// PILClip8 is Resample.c's clip8: a fixed-point sum back to a byte.
func PILClip8(v int32) uint8 {
	if v >= 1<<PILPrecisionBits<<8 {
		return 255
	}
	if v <= 0 {
		return 0
	}
	return uint8(v >> PILPrecisionBits)
}

// PILResize is Image.resize((ow, oh), filter) of interleaved 8-bit pixels with ch channels,
// bit for bit: the horizontal pass first (rounded to bytes), then the vertical one, each
// skipped when its size does not change (ImagingResampleInner).
func PILResize(src []uint8, w, h, ch, ow, oh int, f PILFilter) []uint8 {
	if ow != w {
		c := NewPILCoeffs(w, ow, f)
		out := make([]uint8, ow*h*ch)
		for y := range h {
			horizontal(out[y*ow*ch:(y+1)*ow*ch], src[y*w*ch:(y+1)*w*ch], ch, c)
		}
		src, w = out, ow
	}
	if oh != h {
		c := NewPILCoeffs(h, oh, f)
		row := w * ch
		out := make([]uint8, oh*row)
		acc := make([]int32, row)
		for y := range oh {
			ymin, n := c.Bounds[2*y], c.Bounds[2*y+1]
			k := c.K[y*c.KSize : y*c.KSize+n]
			for j := range acc {
				acc[j] = 1 << (PILPrecisionBits - 1)
			}
			i := 0
			for ; i+1 < len(k); i += 2 { // two taps per pass over the row: half the acc traffic
				in0 := src[(ymin+i)*row : (ymin+i+1)*row]
				in1 := src[(ymin+i+1)*row : (ymin+i+2)*row]
				w0, w1 := k[i], k[i+1]
				a := acc[:len(in0)]
				in1 = in1[:len(in0)]
				for j, v := range in0 {
					a[j] += int32(v)*w0 + int32(in1[j])*w1
				}
			}
			if i < len(k) {
				in := src[(ymin+i)*row : (ymin+i+1)*row]
				a, wt := acc[:len(in)], k[i]
				for j, v := range in {
					a[j] += int32(v) * wt
				}
			}
			for j, v := range acc {
				out[y*row+j] = PILClip8(v)
			}
		}
		src = out
	}
	return src
}

// horizontal is one row of ImagingResampleHorizontal_8bpc: out (ow pixels) from in.
func horizontal(out, in []uint8, ch int, c PILCoeffs) {
	const half = 1 << (PILPrecisionBits - 1)
	ow := len(out) / ch
	switch ch {
	case 1:
		for x := range ow {
			xmin, n := c.Bounds[2*x], c.Bounds[2*x+1]
			k := c.K[x*c.KSize : x*c.KSize+n]
			p := in[xmin : xmin+n]
			s := int32(half)
			for i, wt := range k {
				s += int32(p[i]) * wt
			}
			out[x] = PILClip8(s)
		}
	case 3:
		for x := range ow {
			xmin, n := c.Bounds[2*x], c.Bounds[2*x+1]
			k := c.K[x*c.KSize : x*c.KSize+n]
			p := in[3*xmin : 3*(xmin+n)]
			s0, s1, s2 := int32(half), int32(half), int32(half)
			for len(k) > 0 && len(p) >= 3 {
				wt := k[0]
				s0 += int32(p[0]) * wt
				s1 += int32(p[1]) * wt
				s2 += int32(p[2]) * wt
				k, p = k[1:], p[3:]
			}
			o := out[3*x : 3*x+3]
			o[0], o[1], o[2] = PILClip8(s0), PILClip8(s1), PILClip8(s2)
		}
	default:
		acc := make([]int32, ch)
		for x := range ow {
			xmin, n := c.Bounds[2*x], c.Bounds[2*x+1]
			k := c.K[x*c.KSize : x*c.KSize+n]
			for j := range acc {
				acc[j] = half
			}
			for i, wt := range k {
				p := in[(xmin+i)*ch:]
				for j := range acc {
					acc[j] += int32(p[j]) * wt
				}
			}
			for j, v := range acc {
				out[x*ch+j] = PILClip8(v)
			}
		}
	}
}
