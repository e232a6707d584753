package resnet

import (
	"encoding/binary"
	"sync"

	"github.com/tenstorrent/tt-media-server-go/media/imaging"
)

// The reference resize (PIL's Image.resize(BILINEAR), then the centre crop) computed for the
// crop's pixels only, bit-identical to Pillow's Resample.c: the horizontal pass first, rounded
// to uint8, then the vertical pass. Each pass uses PIL's fixed-point weights, padded with zero
// weights to the same number of taps for every output (taps), so that the common small tap
// counts of a photo's downscale run as straight-line code; a zero weight adds nothing to a sum,
// so the padded sums are PIL's sums.

// half is 0.5 in PIL's fixed point, the rounding bias of every sum.
const half = 1 << (imaging.PILPrecisionBits - 1)

// rowLen is the bytes of one interleaved RGB row of the crop.
const rowLen = InputSize * Channels

// taps are PIL's weights for InputSize consecutive outputs (the crop's columns or rows), n per
// output, starting at input sample start[i]; weights beyond PIL's own count are zero.
type taps struct {
	n     int
	start [InputSize]int
	w     []uint64 // n per output; each a non-negative weight below 2^23
}

type tapsKey struct{ in, out, first int }

// tapsCache holds the taps of recently seen sizes (an upload's size recurs: cameras, clients
// that resize before sending). Bounded: it is emptied when full.
var tapsCache = struct {
	sync.Mutex
	m map[tapsKey]*taps
}{m: map[tapsKey]*taps{}}

const tapsCacheSize = 64

// tapsFor returns the taps of outputs first..first+223 of PIL's bilinear resize of in samples
// to out.
func tapsFor(in, out, first int) *taps {
	k := tapsKey{in, out, first}
	tapsCache.Lock()
	t := tapsCache.m[k]
	tapsCache.Unlock()
	if t != nil {
		return t
	}
	c := imaging.NewPILCoeffs(in, out, imaging.PILBilinear)
	t = &taps{}
	for i := range InputSize {
		t.n = max(t.n, c.Bounds[2*(first+i)+1])
	}
	t.w = make([]uint64, t.n*InputSize)
	for i := range InputSize {
		o := first + i
		xmin, n := c.Bounds[2*o], c.Bounds[2*o+1]
		// Shifted left where the window would run past the input's end (n ≤ t.n ≤ in).
		s := min(xmin, in-t.n)
		t.start[i] = s
		for j := range t.n {
			if idx := s + j - xmin; idx >= 0 && idx < n {
				t.w[i*t.n+j] = uint64(uint32(c.K[o*c.KSize+idx])) // bilinear weights are ≥ 0
			}
		}
	}
	tapsCache.Lock()
	if len(tapsCache.m) >= tapsCacheSize {
		clear(tapsCache.m)
	}
	tapsCache.m[k] = t
	tapsCache.Unlock()
	return t
}

// rb spreads an RGBX pixel's R and B into the low and high 32 bits: bilinear weights are
// non-negative and sum to 1<<22 (± rounding), so a channel's sum stays below 2^31 and R and B
// share one 64-bit multiply, bit-identical to two 32-bit sums.
func rb(v uint32) uint64 { return uint64(v&0xFF) | uint64(v&0xFF0000)<<16 }

// gch is an RGBX pixel's G.
func gch(v uint32) uint32 { return (v >> 8) & 0xFF }

// clip8u is Resample.c's clip8 for a non-negative sum.
func clip8u(v uint32) uint8 { return uint8(min(v>>imaging.PILPrecisionBits, 255)) }

// hpass computes one row of the crop's horizontal pass over the RGBX row in, rounded to uint8
// into out (RGB interleaved).
func hpass(out, in []uint8, t *taps) {
	out = out[:rowLen]
	switch t.n {
	case 2:
		for x := range InputSize {
			p := in[4*t.start[x]:][:8]
			w := t.w[2*x:][:2]
			v0, v1 := binary.LittleEndian.Uint32(p), binary.LittleEndian.Uint32(p[4:])
			s := uint64(half|half<<32) + rb(v0)*w[0] + rb(v1)*w[1]
			g := uint32(half) + gch(v0)*uint32(w[0]) + gch(v1)*uint32(w[1])
			o := out[3*x:][:3]
			o[0], o[1], o[2] = clip8u(uint32(s)), clip8u(g), clip8u(uint32(s>>32))
		}
	case 3:
		for x := range InputSize {
			p := in[4*t.start[x]:][:12]
			w := t.w[3*x:][:3]
			v0, v1, v2 := binary.LittleEndian.Uint32(p), binary.LittleEndian.Uint32(p[4:]), binary.LittleEndian.Uint32(p[8:])
			s := uint64(half|half<<32) + rb(v0)*w[0] + rb(v1)*w[1] + rb(v2)*w[2]
			g := uint32(half) + gch(v0)*uint32(w[0]) + gch(v1)*uint32(w[1]) + gch(v2)*uint32(w[2])
			o := out[3*x:][:3]
			o[0], o[1], o[2] = clip8u(uint32(s)), clip8u(g), clip8u(uint32(s>>32))
		}
	case 4:
		for x := range InputSize {
			p := in[4*t.start[x]:][:16]
			w := t.w[4*x:][:4]
			v0, v1 := binary.LittleEndian.Uint32(p), binary.LittleEndian.Uint32(p[4:])
			v2, v3 := binary.LittleEndian.Uint32(p[8:]), binary.LittleEndian.Uint32(p[12:])
			s := uint64(half|half<<32) + rb(v0)*w[0] + rb(v1)*w[1] + rb(v2)*w[2] + rb(v3)*w[3]
			g := uint32(half) + gch(v0)*uint32(w[0]) + gch(v1)*uint32(w[1]) + gch(v2)*uint32(w[2]) + gch(v3)*uint32(w[3])
			o := out[3*x:][:3]
			o[0], o[1], o[2] = clip8u(uint32(s)), clip8u(g), clip8u(uint32(s>>32))
		}
	default:
		n := t.n
		for x := range InputSize {
			p := in[4*t.start[x]:][:4*n]
			w := t.w[n*x:][:n]
			s, g := uint64(half|half<<32), uint32(half)
			for len(w) >= 4 {
				v0, v1 := binary.LittleEndian.Uint32(p), binary.LittleEndian.Uint32(p[4:])
				v2, v3 := binary.LittleEndian.Uint32(p[8:]), binary.LittleEndian.Uint32(p[12:])
				s += rb(v0)*w[0] + rb(v1)*w[1] + rb(v2)*w[2] + rb(v3)*w[3]
				g += gch(v0)*uint32(w[0]) + gch(v1)*uint32(w[1]) + gch(v2)*uint32(w[2]) + gch(v3)*uint32(w[3])
				w, p = w[4:], p[16:]
			}
			for i, wt := range w {
				v := binary.LittleEndian.Uint32(p[4*i:])
				s += rb(v) * wt
				g += gch(v) * uint32(wt)
			}
			o := out[3*x:][:3]
			o[0], o[1], o[2] = clip8u(uint32(s)), clip8u(g), clip8u(uint32(s>>32))
		}
	}
}

// hcopy is the horizontal "pass" when the width does not change: the crop's columns as RGB.
func hcopy(out, in []uint8, left int) {
	out = out[:rowLen]
	for x := range InputSize {
		p := in[4*(left+x):][:3]
		o := out[3*x:][:3]
		o[0], o[1], o[2] = p[0], p[1], p[2]
	}
}

// pair spreads two bytes (little-endian in v) into the low and high 32 bits.
func pair(v uint16) uint64 { return uint64(v&0xFF) | uint64(v>>8)<<32 }

// vpass computes one crop row of the vertical pass from the n consecutive horizontal-pass rows
// in rows (rowLen bytes each) with weights w, into out. Two samples share each 64-bit sum
// (see rb).
func vpass(out, rows []uint8, w []uint64, acc *[rowLen / 2]uint64) {
	out = out[:rowLen]
	switch len(w) {
	case 2:
		r0, r1 := rows[:rowLen], rows[rowLen:][:rowLen]
		w0, w1 := w[0], w[1]
		for j := 0; j < rowLen; j += 2 {
			s := uint64(half|half<<32) + pair(binary.LittleEndian.Uint16(r0[j:]))*w0 + pair(binary.LittleEndian.Uint16(r1[j:]))*w1
			out[j], out[j+1] = clip8u(uint32(s)), clip8u(uint32(s>>32))
		}
		return
	case 3:
		r0, r1, r2 := rows[:rowLen], rows[rowLen:][:rowLen], rows[2*rowLen:][:rowLen]
		w0, w1, w2 := w[0], w[1], w[2]
		for j := 0; j < rowLen; j += 2 {
			s := uint64(half|half<<32) + pair(binary.LittleEndian.Uint16(r0[j:]))*w0 +
				pair(binary.LittleEndian.Uint16(r1[j:]))*w1 + pair(binary.LittleEndian.Uint16(r2[j:]))*w2
			out[j], out[j+1] = clip8u(uint32(s)), clip8u(uint32(s>>32))
		}
		return
	case 4:
		r0, r1, r2, r3 := rows[:rowLen], rows[rowLen:][:rowLen], rows[2*rowLen:][:rowLen], rows[3*rowLen:][:rowLen]
		w0, w1, w2, w3 := w[0], w[1], w[2], w[3]
		for j := 0; j < rowLen; j += 2 {
			s := uint64(half|half<<32) + pair(binary.LittleEndian.Uint16(r0[j:]))*w0 +
				pair(binary.LittleEndian.Uint16(r1[j:]))*w1 + pair(binary.LittleEndian.Uint16(r2[j:]))*w2 +
				pair(binary.LittleEndian.Uint16(r3[j:]))*w3
			out[j], out[j+1] = clip8u(uint32(s)), clip8u(uint32(s>>32))
		}
		return
	}
	for i := range acc {
		acc[i] = half | half<<32
	}
	for len(w) >= 2 {
		r0, r1 := rows[:rowLen], rows[rowLen:][:rowLen]
		w0, w1 := w[0], w[1]
		for i := range acc {
			acc[i] += pair(binary.LittleEndian.Uint16(r0[2*i:]))*w0 + pair(binary.LittleEndian.Uint16(r1[2*i:]))*w1
		}
		w, rows = w[2:], rows[2*rowLen:]
	}
	if len(w) == 1 {
		r0, w0 := rows[:rowLen], w[0]
		for i := range acc {
			acc[i] += pair(binary.LittleEndian.Uint16(r0[2*i:])) * w0
		}
	}
	for i, v := range acc {
		out[2*i], out[2*i+1] = clip8u(uint32(v)), clip8u(uint32(v>>32))
	}
}

// hrowsPool recycles the horizontal pass's rows (a few hundred KiB per image).
var hrowsPool sync.Pool

// resizeCropPIL hands sink the 224 rows (interleaved RGB) of the centre crop of PIL's
// Image.resize((g.ResizedW, g.ResizedH), BILINEAR) of src, top to bottom. Only the pixels
// inside the crop are computed; each is bit-identical to PIL's.
func resizeCropPIL(sink rowSink, src pixels, g Geometry) {
	needH := g.ResizedW != src.w
	needV := g.ResizedH != src.h
	var ht, vt *taps
	if needH {
		ht = tapsFor(src.w, g.ResizedW, g.CropLeft)
	}
	// Source rows the crop needs.
	rowFirst, rowLast := g.CropTop, g.CropTop+InputSize
	if needV {
		vt = tapsFor(src.h, g.ResizedH, g.CropTop)
		rowFirst, rowLast = vt.start[0], vt.start[InputSize-1]+vt.n // starts never decrease
	}
	rows := rowLast - rowFirst
	need := rows * rowLen
	var tmp []uint8
	if p, _ := hrowsPool.Get().(*[]uint8); p != nil && cap(*p) >= need {
		tmp = (*p)[:need]
	} else {
		tmp = make([]uint8, need)
	}
	defer hrowsPool.Put(&tmp)
	for r := range rows {
		in := src.pix[(rowFirst+r)*src.stride:]
		out := tmp[r*rowLen : (r+1)*rowLen]
		if needH {
			hpass(out, in, ht)
		} else {
			hcopy(out, in, g.CropLeft)
		}
	}
	if !needV {
		for y := range InputSize {
			sink.row(y, tmp[y*rowLen:(y+1)*rowLen])
		}
		return
	}
	var acc [rowLen / 2]uint64
	var crop [rowLen]uint8
	for y := range InputSize {
		first := (vt.start[y] - rowFirst) * rowLen
		vpass(crop[:], tmp[first:first+vt.n*rowLen], vt.w[y*vt.n:(y+1)*vt.n], &acc)
		sink.row(y, crop[:])
	}
}
