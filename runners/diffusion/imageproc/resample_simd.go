package imageproc

import (
	"runtime"
	"sync"

	"github.com/tenstorrent/tt-media-server-go/media/imaging"
)

// resizeSIMD is resize with the AVX2 kernels (resample_amd64.s): the same integers in eight
// 32-bit lanes. Pixels stay interleaved between the passes (NRGBA's alpha is resampled too and
// dropped at the end), the horizontal pass takes two rows per call and the vertical pass 32
// bytes of a row per step. It reports false, having written nothing, for an image too narrow
// for its padded windows; resize then runs the portable path.
func resizeSIMD(src source, ow, oh int, table *[256]float32, out []float32) bool {
	bpp := src.BPP
	mid, stride := src.Pix, src.Stride
	if ow != src.W {
		step := 8 // taps per load: eight 1-byte pixels or two 4-byte ones
		if bpp == 4 {
			step = 2
		}
		c := imaging.NewPILCoeffs(src.W, ow, imaging.PILLanczos)
		size := (min(c.KSize, src.W) + step - 1) / step * step
		if size > src.W {
			return false
		}
		rep := bpp // each tap's weight once per byte of a pixel
		starts, k := make([]int, ow), make([]int32, ow*size*rep)
		for x := range ow {
			xmin, n := c.Bounds[2*x], c.Bounds[2*x+1]
			start := min(xmin, src.W-size)
			starts[x] = start * bpp // a byte offset
			for j, v := range c.K[x*c.KSize : x*c.KSize+n] {
				o := (x*size + xmin - start + j) * rep
				for r := range rep {
					k[o+r] = v
				}
			}
		}
		stride = ow * bpp
		buf := midBuffer(src.H * stride)
		defer midPool.Put(buf)
		mid = *buf
		rows(ow*src.H, (src.H+1)/2, func(lo, hi int) {
			for y := 2 * lo; y < min(2*hi, src.H); y += 2 {
				y1 := min(y+1, src.H-1)
				d0, d1 := &mid[y*stride], &mid[y1*stride]
				s0 := src.Pix[y*src.Stride : y*src.Stride+src.W*bpp]
				s1 := src.Pix[y1*src.Stride : y1*src.Stride+src.W*bpp]
				horizAVX2(d0, d1, &s0[0], &s1[0], &starts[0], &k[0], size*bpp/8, ow, bpp)
			}
		})
	}
	rowLen := ow * bpp
	if oh == src.H {
		for y := range oh {
			emit(out, mid[y*stride:y*stride+rowLen], y, ow, oh, bpp, table)
		}
		return true
	}
	c := imaging.NewPILCoeffs(src.H, oh, imaging.PILLanczos)
	w8 := rowLen &^ 7
	rows(ow*oh, oh, func(lo, hi int) {
		offs, k := make([]int, c.KSize), make([]int32, c.KSize)
		row := make([]uint8, rowLen)
		for y := lo; y < hi; y++ {
			ymin, n := c.Bounds[2*y], c.Bounds[2*y+1]
			copy(k, c.K[y*c.KSize:y*c.KSize+n])
			for i := range n {
				offs[i] = (ymin + i) * stride
			}
			_ = mid[offs[n-1]+rowLen-1] // every row read lies inside mid
			if w8 > 0 {
				vertAVX2(&row[0], &mid[0], &offs[0], &k[0], n, w8)
			}
			for x := w8; x < rowLen; x++ {
				s := int32(1 << (imaging.PILPrecisionBits - 1))
				for i, kv := range k[:n] {
					s += int32(mid[offs[i]+x]) * kv
				}
				row[x] = imaging.PILClip8(s)
			}
			emit(out, row, y, ow, oh, bpp, table)
		}
	})
	return true
}

// midPool keeps the horizontal pass's output between calls: every byte of it is written before
// it is read, so a reused buffer need not be cleared (a fresh one costs a clear of megabytes).
var midPool sync.Pool

// midBuffer is a buffer of n bytes from midPool, or a new one.
func midBuffer(n int) *[]uint8 {
	if b, ok := midPool.Get().(*[]uint8); ok && cap(*b) >= n {
		*b = (*b)[:n]
		return b
	}
	b := make([]uint8, n)
	return &b
}

// parallelPixels is the smallest pass (in output pixels) split across goroutines: below it the
// start-up costs more than a core saves. minParts raises the number of shares above GOMAXPROCS
// (tests use both to split small images on any machine).
var parallelPixels, minParts = 1 << 17, 0

// rows runs fn over [0, n) in one contiguous share per available core (GOMAXPROCS, at most 8)
// when the pass writes at least parallelPixels pixels, else in the caller. Shares write
// disjoint rows.
func rows(pixels, n int, fn func(lo, hi int)) {
	parts := min(max(runtime.GOMAXPROCS(0), minParts), 8, n)
	if pixels < parallelPixels || parts < 2 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := p*n/parts, (p+1)*n/parts
		wg.Go(func() { fn(lo, hi) })
	}
	wg.Wait()
}

// emit writes one output row of interleaved bytes into the planar float result: a gray row
// eight pixels per gather from table (the rest one by one), an RGBA row's red, green and blue
// one by one.
func emit(out []float32, row []uint8, y, ow, oh, bpp int, table *[256]float32) {
	if bpp == 1 {
		n8 := ow &^ 7
		dst := out[y*ow : (y+1)*ow]
		row = row[:len(dst)]
		if n8 > 0 {
			lutAVX2(&dst[0], &row[0], &table[0], n8)
		}
		for x := n8; x < len(dst); x++ {
			dst[x] = table[row[x]]
		}
		return
	}
	plane := ow * oh
	r, g, b := out[y*ow:(y+1)*ow], out[plane+y*ow:plane+(y+1)*ow], out[2*plane+y*ow:2*plane+(y+1)*ow]
	row = row[:4*len(r)]
	g, b = g[:len(r)], b[:len(r)]
	for x := range r { // three gathers per eight pixels measured no faster than this loop
		p := row[4*x : 4*x+3]
		r[x], g[x], b[x] = table[p[0]], table[p[1]], table[p[2]]
	}
}
