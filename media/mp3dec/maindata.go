package mp3dec

// Main data: Huffman decoding of the big-values and count1 regions, and requantisation.

import (
	"fmt"
	"math"
)

// huffman decodes the big-values and count1 regions of one granule and channel into d.ix and
// sets d.nz.
func (d *Decoder) huffman(r *bitReader, h Header, g *granuleInfo, ch, end int) error {
	ix := &d.ix[ch]
	*ix = [576]int32{}
	bv := 2 * g.bigValues
	i := 0
	for i < bv {
		t := g.tableSelect[0]
		limit := min(g.region1, bv)
		if i >= g.region1 {
			t = g.tableSelect[1]
			limit = min(g.region2, bv)
			if i >= g.region2 {
				t = g.tableSelect[2]
				limit = bv
			}
		}
		lut := &huff[t]
		if lut.t == nil { // table 0: all zero
			i = limit
			continue
		}
		for ; i < limit; i += 2 {
			v := r.peek()
			e := lut.t[v>>(32-rootBits)]
			if e&huffSub != 0 {
				sb := (e >> 24) & 31
				e = lut.t[(e&0xffffff)+(v<<rootBits)>>(32-sb)]
			}
			n := int(e>>8) & 0xff
			if n == 0 {
				return fmt.Errorf("%w: invalid Huffman code (table %d)", ErrCorrupt, t)
			}
			r.pos += n
			x, y := int32(e>>4&15), int32(e&15)
			if x != 0 {
				if x == 15 && lut.linbits > 0 {
					x += int32(r.read(lut.linbits))
				}
				if r.bit() {
					x = -x
				}
			}
			if y != 0 {
				if y == 15 && lut.linbits > 0 {
					y += int32(r.read(lut.linbits))
				}
				if r.bit() {
					y = -y
				}
			}
			ix[i], ix[i+1] = x, y
		}
		if r.pos > end {
			return fmt.Errorf("%w: big values overrun part2_3_length", ErrCorrupt)
		}
	}
	lut := &huff[32+g.count1Table]
	for i < 576 && r.pos < end {
		v := r.peek()
		e := lut.t[v>>(32-rootBits)]
		n := int(e>>8) & 0xff
		if n == 0 {
			return fmt.Errorf("%w: invalid count1 Huffman code", ErrCorrupt)
		}
		r.pos += n
		var q [4]int32
		for k := 0; k < 4; k++ {
			if e&(8>>k) != 0 {
				q[k] = 1
				if r.bit() {
					q[k] = -1
				}
			}
		}
		if r.pos > end { // the last quadruple ran past the data: drop it
			break
		}
		for k := 0; k < 4 && i < 576; k++ {
			ix[i] = q[k]
			i++
		}
	}
	for i > 0 && ix[i-1] == 0 {
		i--
	}
	d.nz[ch] = i
	return nil
}

// gain2 holds 2^(e/4) for e in [-gainBias, 64).
const gainBias = 400

var gain2 = func() (t [gainBias + 64]float32) {
	for i := range t {
		t[i] = float32(math.Exp2(float64(i-gainBias) / 4))
	}
	return
}()

func gainAt(e int) float32 {
	return gain2[min(max(e+gainBias, 0), len(gain2)-1)]
}

// requantize turns d.ix into d.xr (short blocks reordered into subband order).
func (d *Decoder) requantize(h Header, g *granuleInfo, ch int) {
	ix, xr := &d.ix[ch], &d.xr[ch]
	nz := d.nz[ch]
	*xr = [576]float32{}
	bands := sfBands(h)
	long, short := bands[0], bands[1]
	shift := 2 * (1 + g.sfScale)
	base := g.globalGain - 210
	longEnd := 576
	if g.blockType == 2 {
		longEnd = 0
		if g.mixed {
			longEnd = 36
		}
	}
	for sfb := 0; sfb < 22 && long[sfb] < min(nz, longEnd); sfb++ {
		sf := d.sfL[ch][sfb]
		if g.preflag {
			sf += pretab[sfb]
		}
		gain := gainAt(base - shift*sf)
		hi := min(long[sfb+1], nz, longEnd)
		for i := long[sfb]; i < hi; i++ {
			xr[i] = pow43q(ix[i]) * gain
		}
	}
	if longEnd == 576 {
		return
	}
	first := 0
	if g.mixed {
		first = 3
	}
	d.nz[ch] = min(nz, longEnd)
	for sfb := first; sfb < 13; sfb++ {
		lo := 3 * short[sfb]
		if lo >= nz {
			break
		}
		d.nz[ch] = 3 * short[sfb+1] // reordered, the band's lines stay within its range
		width := short[sfb+1] - short[sfb]
		for w := 0; w < 3; w++ {
			gain := gainAt(base - 8*g.subGain[w] - shift*d.sfS[ch][sfb][w])
			src := lo + w*width
			for j := 0; j < width; j++ {
				xr[lo+3*j+w] = pow43q(ix[src+j]) * gain
			}
		}
	}
}

func pow43q(v int32) float32 {
	if v < 0 {
		return -pow43[-v]
	}
	return pow43[v]
}
