package imageproc

import (
	"encoding/binary"

	"github.com/tenstorrent/tt-media-server-go/media/imaging"
)

// The Lanczos resize of Preprocess and PreprocessMask: Pillow's fixed-point ImagingResample
// (imaging.PILResize is the plain reference; the tests hold this one to it and to diffusers'
// goldens), the same integers computed faster:
//   - two lanes per 64-bit multiply (SWAR). A sum of 8-bit samples times Pillow's 22-bit
//     coefficients fits an int32, so lo + hi<<32 times a sign-extended coefficient, summed
//     modulo 2^64, holds both lanes' sums exactly: lo is the low 32 bits, hi is (sum - lo)>>32.
//     The horizontal pass packs two source rows per lane pair (same coefficients), the
//     vertical pass two columns of one row (bytes x and x+4 of an 8-byte load);
//   - every output of the horizontal pass reads a window of the same width (Pillow's taps
//     padded with zero coefficients, which add nothing), so the inner loop has no edge cases;
//   - the source is read in place (NRGBA or Gray rows, any stride), the intermediate is planar
//     bytes, and the vertical pass writes the float32 result through a 256-entry table
//     (normalisation or binarisation fused into the resize).

// mask32 selects bytes 0 and 4 of a 64-bit word: two lanes of one byte each.
const mask32 = 0x000000ff_000000ff

// half is Pillow's rounding offset, in both lanes.
const half = 1<<(imaging.PILPrecisionBits-1) | 1<<(imaging.PILPrecisionBits-1)<<32

// lanes splits a two-lane sum into Pillow's two int32 sums.
func lanes(s uint64) (lo, hi int32) {
	lo = int32(uint32(s))
	return lo, int32((s - uint64(int64(lo))) >> 32)
}

// window is a filter's taps as fixed-width windows: output i reads K[i*Size:(i+1)*Size]
// against the input from Start[i]; K is sign-extended for 64-bit multiplies.
type window struct {
	Size  int
	Start []int
	K     []uint64
}

// newWindow pads Pillow's coefficients for inSize -> outSize to windows of equal width,
// shifted left at the right edge so that Start+Size never passes inSize.
func newWindow(inSize, outSize int) window {
	c := imaging.NewPILCoeffs(inSize, outSize, imaging.PILLanczos)
	size := min(c.KSize, inSize)
	w := window{Size: size, Start: make([]int, outSize), K: make([]uint64, outSize*size)}
	for i := range outSize {
		xmin, n := c.Bounds[2*i], c.Bounds[2*i+1]
		start := min(xmin, inSize-size)
		w.Start[i] = start
		k := w.K[i*size : (i+1)*size]
		for j, v := range c.K[i*c.KSize : i*c.KSize+n] {
			k[xmin-start+j] = uint64(int64(v))
		}
	}
	return w
}

// source is 8-bit pixels read in place: row y starts at Pix[y*Stride], a pixel is BPP bytes of
// which the first Ch are used: NRGBA as RGB (BPP 4, Ch 3) or Gray (BPP 1, Ch 1).
type source struct {
	Pix             []uint8
	Stride, BPP, Ch int
	W, H            int
}

// resize is Pillow's Lanczos Image.resize of src to ow x oh, channel by channel, written as
// out[c*oh*ow + y*ow + x] = table[byte]. Each pass is skipped when its size does not change, as
// ImagingResampleInner does.
func resize(src source, ow, oh int, table *[256]float32, out []float32) {
	if hasSIMD && resizeSIMD(src, ow, oh, table, out) {
		return
	}
	t := newLUT(table)
	var mid []uint8 // planar [Ch][H][ow]
	if ow != src.W {
		mid = horizontal(src, ow)
	} else {
		mid = planes(src)
	}
	plane := ow * src.H
	for c := range src.Ch {
		in := mid[c*plane : (c+1)*plane]
		dst := out[c*oh*ow : (c+1)*oh*ow]
		if oh == src.H {
			for i, v := range in {
				dst[i] = table[v]
			}
			continue
		}
		vertical(in, ow, src.H, oh, t, dst)
	}
}

// planes copies the used channels of src into planar bytes.
func planes(src source) []uint8 {
	plane := src.W * src.H
	mid := make([]uint8, src.Ch*plane)
	for y := range src.H {
		row := src.Pix[y*src.Stride:]
		for x := range src.W {
			for c := range src.Ch {
				mid[c*plane+y*src.W+x] = row[x*src.BPP+c]
			}
		}
	}
	return mid
}

// horizontal is ImagingResampleHorizontal_8bpc of every row of src to ow pixels, two rows at a
// time (row y in the low lane, y+1 in the high one), into planar bytes [Ch][H][ow].
func horizontal(src source, ow int) []uint8 {
	win := newWindow(src.W, ow)
	ch, plane := src.Ch, ow*src.H
	mid := make([]uint8, ch*plane)
	var packed []uint64     // [x][c]
	var packed3 [][3]uint64 // [x][c] for three channels
	if ch == 3 {
		packed3 = make([][3]uint64, src.W)
	} else {
		packed = make([]uint64, ch*src.W)
	}
	for y := 0; y < src.H; y += 2 {
		r0 := src.Pix[y*src.Stride : y*src.Stride+src.W*src.BPP]
		r1 := r0
		if y+1 < src.H {
			r1 = src.Pix[(y+1)*src.Stride : (y+1)*src.Stride+src.W*src.BPP]
		}
		if ch == 3 {
			pack3(packed3, r0, r1)
			horizontal3(mid[y*ow:], plane, ow, src.H-y, packed3, win)
		} else {
			pack1(packed, r0, r1)
			horizontal1(mid[y*ow:], ow, src.H-y, packed, win)
		}
	}
	return mid
}

// pack3 interleaves red, green and blue of two NRGBA rows into lanes.
func pack3(packed [][3]uint64, r0, r1 []uint8) {
	r0, r1 = r0[:4*len(packed)], r1[:4*len(packed)]
	for x := range packed {
		v := uint64(binary.LittleEndian.Uint32(r0[4*x:])) | uint64(binary.LittleEndian.Uint32(r1[4*x:]))<<32
		packed[x] = [3]uint64{v & mask32, v >> 8 & mask32, v >> 16 & mask32}
	}
}

// pack1 interleaves two one-byte-per-pixel rows into lanes.
func pack1(packed []uint64, r0, r1 []uint8) {
	r1 = r1[:len(r0)]
	packed = packed[:len(r0)]
	for x, v := range r0 {
		packed[x] = uint64(v) | uint64(r1[x])<<32
	}
}

// put writes a two-lane sum as bytes: row y at dst[0], row y+1 at dst[next] when rows > 1.
func put(dst []uint8, next, rows int, s uint64) {
	lo, hi := lanes(s)
	dst[0] = imaging.PILClip8(lo)
	if rows > 1 {
		dst[next] = imaging.PILClip8(hi)
	}
}

func horizontal1(dst []uint8, ow, rows int, packed []uint64, win window) {
	size := win.Size
	for x := range ow {
		start := win.Start[x]
		s := dot1(win.K[x*size:(x+1)*size], packed[start:start+size])
		put(dst[x:], ow, rows, s)
	}
}

// dot1 is one output's two-lane sum over its window (len(p) == len(k)).
//
//go:noinline // inlined, its accumulators spill to the stack in the caller's loop
func dot1(k, p []uint64) uint64 {
	s, t := uint64(half), uint64(0)
	p = p[:len(k)]
	i := 0
	for ; i+1 < len(k); i += 2 {
		s += p[i] * k[i]
		t += p[i+1] * k[i+1]
	}
	if i < len(k) {
		s += p[i] * k[i]
	}
	return s + t
}

func horizontal3(dst []uint8, plane, ow, rows int, px [][3]uint64, win window) {
	size := win.Size
	for x := range ow {
		start := win.Start[x]
		s0, s1, s2 := dot3(win.K[x*size:(x+1)*size], px[start:start+size])
		put(dst[x:], ow, rows, s0)
		put(dst[plane+x:], ow, rows, s1)
		put(dst[2*plane+x:], ow, rows, s2)
	}
}

// dot3 is one output's two-lane sums of three channels over its window (len(p) == len(k)).
//
//go:noinline // inlined, its accumulators spill to the stack in the caller's loop
func dot3(k []uint64, p [][3]uint64) (s0, s1, s2 uint64) {
	s0, s1, s2 = half, half, half
	p = p[:len(k)]
	for i, kv := range k {
		v := &p[i]
		s0 += v[0] * kv
		s1 += v[1] * kv
		s2 += v[2] * kv
	}
	return s0, s1, s2
}

// lut is the output table indexed by a fixed-point sum shifted down by
// PILPrecisionBits, before clipping: entry q+512 is table[clamp(q, 0, 255)], which is
// table[PILClip8(v)] for v>>PILPrecisionBits == q. A sum of bytes times Lanczos weights
// normalised to one stays far inside [-512, 512) (the weights' absolute sum is under 2).
type lut [1024]float32

func newLUT(table *[256]float32) *lut {
	var t lut
	for i := range t {
		t[i] = table[min(max(i-512, 0), 255)]
	}
	return &t
}

// pair writes a two-lane sum through t: the low lane to *lo, the high one to *hi.
func (t *lut) pair(s uint64, lo, hi *float32) {
	l := int64(int32(s))
	*lo = t[(l>>imaging.PILPrecisionBits+512)&1023]
	*hi = t[(int64(s-uint64(l))>>(32+imaging.PILPrecisionBits)+512)&1023]
}

// vertical is ImagingResampleVertical_8bpc of one plane (w x h bytes) to oh rows, written
// through t. Eight columns per step: bytes x and x+4 of one load share a lane pair.
func vertical(in []uint8, w, h, oh int, t *lut, out []float32) {
	c := imaging.NewPILCoeffs(h, oh, imaging.PILLanczos)
	k := make([]uint64, c.KSize)
	offs := make([]int, c.KSize)
	w8 := w &^ 7
	for y := range oh {
		ymin, n := c.Bounds[2*y], c.Bounds[2*y+1]
		for i, v := range c.K[y*c.KSize : y*c.KSize+n] {
			k[i] = uint64(int64(v))
			offs[i] = (ymin + i) * w
		}
		kk, oo := k[:n], offs[:n]
		dst := out[y*w : (y+1)*w]
		for x := 0; x < w8; x += 8 {
			a0, a1, a2, a3 := col8(in, oo, kk, x)
			d := dst[x : x+8]
			t.pair(a0, &d[0], &d[4])
			t.pair(a1, &d[1], &d[5])
			t.pair(a2, &d[2], &d[6])
			t.pair(a3, &d[3], &d[7])
		}
		for x := w8; x < w; x++ {
			s := int32(1 << (imaging.PILPrecisionBits - 1))
			for i, kv := range kk {
				s += int32(in[oo[i]+x]) * int32(kv)
			}
			dst[x] = t[(s>>imaging.PILPrecisionBits+512)&1023]
		}
	}
}

// col8 is the two-lane sums of eight columns from x over the rows at offs (len(offs) == len(k)).
//
//go:noinline // inlined, its accumulators spill to the stack in the caller's loop
func col8(in []uint8, offs []int, k []uint64, x int) (a0, a1, a2, a3 uint64) {
	a0, a1, a2, a3 = half, half, half, half
	offs = offs[:len(k)]
	for i, kv := range k {
		v := binary.LittleEndian.Uint64(in[offs[i]+x:])
		a0 += (v & mask32) * kv
		a1 += (v >> 8 & mask32) * kv
		a2 += (v >> 16 & mask32) * kv
		a3 += (v >> 24 & mask32) * kv
	}
	return a0, a1, a2, a3
}
