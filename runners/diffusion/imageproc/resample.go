package imageproc

import "math"

// PIL's fixed-point precision for 8-bit resampling (Resample.c: 32 - 8 - 2).
const precisionBits = 32 - 8 - 2

// lanczosSupport is PIL's LANCZOS filter support (a = 3).
const lanczosSupport = 3.0

func sinc(x float64) float64 {
	if x == 0 {
		return 1
	}
	x *= math.Pi
	return math.Sin(x) / x
}

// lanczos is Resample.c's lanczos_filter.
func lanczos(x float64) float64 {
	if -3 <= x && x < 3 {
		return sinc(x) * sinc(x/3)
	}
	return 0
}

// coeffs are PIL's precompute_coeffs normalised to fixed point as normalize_coeffs_8bpc: for
// output position i, taps start at bounds[2i] and number bounds[2i+1], weights k[i*ksize:].
type coeffs struct {
	ksize  int
	bounds []int
	k      []int32
}

// precompute is Resample.c's precompute_coeffs(inSize, 0, inSize, outSize, lanczos).
func precompute(inSize, outSize int) coeffs {
	scale := float64(inSize) / float64(outSize)
	filterscale := max(scale, 1.0)
	support := lanczosSupport * filterscale
	ksize := int(math.Ceil(support))*2 + 1
	c := coeffs{ksize: ksize, bounds: make([]int, 2*outSize), k: make([]int32, outSize*ksize)}
	w := make([]float64, ksize)
	ss := 1.0 / filterscale
	for xx := range outSize {
		center := (float64(xx) + 0.5) * scale
		xmin := max(int(center-support+0.5), 0) // C's (int) truncates toward zero
		xmax := min(int(center+support+0.5), inSize) - xmin
		var ww float64
		for x := range xmax {
			w[x] = lanczos((float64(x+xmin) - center + 0.5) * ss)
			ww += w[x]
		}
		k := c.k[xx*ksize : (xx+1)*ksize]
		for x := range xmax {
			v := w[x]
			if ww != 0 {
				v /= ww
			}
			if v < 0 {
				k[x] = int32(-0.5 + v*(1<<precisionBits))
			} else {
				k[x] = int32(0.5 + v*(1<<precisionBits))
			}
		}
		c.bounds[2*xx], c.bounds[2*xx+1] = xmin, xmax
	}
	return c
}

// clip8 is Resample.c's clip8: the fixed-point sum back to a byte.
func clip8(v int32) uint8 {
	if v >= 1<<precisionBits<<8 {
		return 255
	}
	if v <= 0 {
		return 0
	}
	return uint8(v >> precisionBits)
}

// resample is PIL's Image.resize((ow, oh), LANCZOS) of interleaved 8-bit pixels with ch
// channels, bit for bit: the horizontal pass first (rounded to bytes), then the vertical one,
// each skipped when its size does not change.
func resample(src []uint8, w, h, ch, ow, oh int) []uint8 {
	if ow != w {
		c := precompute(w, ow)
		out := make([]uint8, ow*h*ch)
		acc := make([]int32, ch)
		for y := range h {
			in := src[y*w*ch : (y+1)*w*ch]
			for x := range ow {
				xmin, n := c.bounds[2*x], c.bounds[2*x+1]
				k := c.k[x*c.ksize : x*c.ksize+n]
				for j := range acc {
					acc[j] = 1 << (precisionBits - 1)
				}
				for i, wt := range k {
					p := in[(xmin+i)*ch:]
					for j := range acc {
						acc[j] += int32(p[j]) * wt
					}
				}
				for j, v := range acc {
					out[(y*ow+x)*ch+j] = clip8(v)
				}
			}
		}
		src, w = out, ow
	}
	if oh != h {
		c := precompute(h, oh)
		row := w * ch
		out := make([]uint8, oh*row)
		acc := make([]int32, row)
		for y := range oh {
			ymin, n := c.bounds[2*y], c.bounds[2*y+1]
			k := c.k[y*c.ksize : y*c.ksize+n]
			for j := range acc {
				acc[j] = 1 << (precisionBits - 1)
			}
			for i, wt := range k {
				in := src[(ymin+i)*row : (ymin+i+1)*row]
				for j, v := range in {
					acc[j] += int32(v) * wt
				}
			}
			for j, v := range acc {
				out[y*row+j] = clip8(v)
			}
		}
		src = out
	}
	return src
}
