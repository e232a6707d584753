package mp3dec

import "math"

// granule runs stereo processing, the mixdown, the hybrid filter bank and the synthesis of
// granule gr, and appends its samples to out.
func (d *Decoder) granule(h Header, gr int, out []float32) []float32 {
	if h.Channels == 2 {
		if h.Mode == 1 && h.ModeExt != 0 {
			d.stereo(h, gr)
		}
		g0, g1 := &d.gi[gr][0], &d.gi[gr][1]
		if g0.blockType == g1.blockType && g0.mixed == g1.mixed {
			// Same transform for both: mix the spectra, transform once.
			nz := max(d.nz[0], d.nz[1])
			x0, x1 := d.xr[0][:nz], d.xr[1][:nz]
			for i := range x0 {
				x0[i] = (x0[i] + x1[i]) * 0.5
			}
			d.nz[0] = nz
			d.hybrid(g0, 0, 1, false)
		} else {
			d.hybrid(g0, 0, 0.5, false)
			d.hybrid(g1, 1, 0.5, true)
		}
	} else {
		d.hybrid(&d.gi[gr][0], 0, 1, false)
	}
	d.overlapAdd()
	return d.synth(out)
}

func (d *Decoder) subbands() int {
	if d.half {
		return 16
	}
	return 32
}

// stereo applies middle/side and intensity stereo to d.xr (ISO 11172-3 2.4.3.4.9, 13818-3
// 2.4.3.2).
func (d *Decoder) stereo(h Header, gr int) {
	ms := h.ModeExt&2 != 0
	l, r := &d.xr[0], &d.xr[1]
	nzR := d.nz[1]
	nz := max(d.nz[0], d.nz[1])
	d.nz[0], d.nz[1] = nz, nz
	if h.ModeExt&1 == 0 {
		if ms {
			midSide(l, r, 0, nz, 1)
		}
		return
	}
	bands := sfBands(h)
	long, short := bands[0], bands[1]
	g := &d.gi[gr][1]
	// apply handles one band (lines lo, lo+step, ... < hi) whose intensity position is pos.
	apply := func(lo, hi, step, pos, posMax int) {
		if pos == posMax || (h.Version == 1 && pos >= 7) {
			if ms {
				midSide(l, r, lo, hi, step)
			}
			return
		}
		var kl, kr float32
		if h.Version == 1 {
			kl, kr = isRatio[pos][0], isRatio[pos][1]
		} else {
			io := math.Pow(2, -0.25*float64(1+g.sfCompress&1))
			kl, kr = 1, 1
			if pos&1 == 1 {
				kl = float32(math.Pow(io, float64((pos+1)/2)))
			} else {
				kr = float32(math.Pow(io, float64(pos/2)))
			}
		}
		for i := lo; i < hi; i += step {
			v := l[i]
			l[i], r[i] = v*kl, v*kr
		}
		d.isBands++
	}
	longPos := func(sfb int) (int, int) {
		sfb = min(sfb, 20)
		if h.Version == 1 {
			return d.sfL[1][sfb], -1
		}
		return d.sfL[1][sfb], d.isMax[1][sfb]
	}
	shortPos := func(sfb, w int) (int, int) {
		sfb = min(sfb, 11)
		if h.Version == 1 {
			return d.sfS[1][sfb][w], -1
		}
		return d.sfS[1][sfb][w], d.isMxS[1][sfb]
	}
	longEnd := 576
	if g.blockType == 2 {
		longEnd = 0
		if g.mixed {
			longEnd = 36
		}
	}
	shortNonzero := g.blockType == 2 && nzR > longEnd
	if longEnd > 0 {
		// Long bands: intensity from the first band above the right channel's last non-zero
		// line (none, when the right channel has non-zero short bands).
		sfb0 := 0
		for sfb0 < 22 && long[sfb0] < longEnd && (long[sfb0] < nzR || shortNonzero) {
			sfb0++
		}
		if ms {
			midSide(l, r, 0, long[sfb0], 1)
		}
		for sfb := sfb0; sfb < 22 && long[sfb] < longEnd; sfb++ {
			p, pm := longPos(sfb)
			apply(long[sfb], min(long[sfb+1], longEnd), 1, p, pm)
		}
	}
	if g.blockType != 2 {
		return
	}
	first := 0
	if g.mixed {
		first = 3
	}
	for w := 0; w < 3; w++ {
		// Intensity from the band after the highest one with a non-zero line in window w.
		sfbW := first
		for sfb := 12; sfb >= first; sfb-- {
			nonzero := false
			for f := short[sfb]; f < short[sfb+1]; f++ {
				if r[3*f+w] != 0 {
					nonzero = true
					break
				}
			}
			if nonzero {
				sfbW = sfb + 1
				break
			}
		}
		for sfb := first; sfb < 13; sfb++ {
			lo, hi := 3*short[sfb]+w, 3*short[sfb+1]
			if sfb < sfbW {
				if ms {
					midSide(l, r, lo, hi, 3)
				}
				continue
			}
			p, pm := shortPos(sfb, w)
			apply(lo, hi, 3, p, pm)
		}
	}
	d.nz[0], d.nz[1] = 576, 576 // intensity bands may reach any line
}

// midSide turns middle/side lines lo, lo+step, ... < hi into left/right.
func midSide(l, r *[576]float32, lo, hi, step int) {
	for i := lo; i < hi; i += step {
		m, s := l[i], r[i]
		l[i], r[i] = (m+s)*math.Sqrt2/2, (m-s)*math.Sqrt2/2
	}
}

// hybrid anti-aliases and inverse-transforms channel ch's spectrum into d.y, multiplied by
// scale, replacing d.y or adding to it.
func (d *Decoder) hybrid(g *granuleInfo, ch int, scale float32, add bool) {
	xr := &d.xr[ch]
	nz := d.nz[ch]
	nsb := d.subbands()
	if g.blockType != 2 || g.mixed {
		last := 31 // the boundaries between subbands sb-1 and sb, sb = 1..last
		if g.blockType == 2 {
			last = 1
		}
		last = min(last, (nz+7)/18, nsb)
		for sb := 1; sb <= last; sb++ {
			for i := 0; i < 8; i++ {
				a, b := xr[18*sb-1-i], xr[18*sb+i]
				xr[18*sb-1-i] = a*csAlias[i] - b*caAlias[i]
				xr[18*sb+i] = b*csAlias[i] + a*caAlias[i]
			}
		}
		if last > 0 {
			nz = max(nz, 18*last+8)
		}
	}
	live := min(nsb, (nz+17)/18)
	for sb := 0; sb < live; sb++ {
		in := (*[18]float32)(xr[18*sb:])
		dst := &d.y[sb]
		if !add {
			*dst = [36]float32{}
		}
		bt := g.blockType
		if g.mixed && sb < 2 {
			bt = 0
		}
		if bt == 2 {
			imdct12(in, dst, scale)
		} else {
			imdct36(in, dst, bt, scale)
		}
	}
	if !add {
		for sb := live; sb < nsb; sb++ {
			d.y[sb] = [36]float32{}
		}
	}
}

// imdct36 adds the windowed 36-point IMDCT of in, times scale, to dst. Of its 36 outputs only
// 18 are distinct: u[17-i] = -u[i] for i < 9 and u[53-i] = u[i] for 18 ≤ i < 27.
func imdct36(in *[18]float32, dst *[36]float32, bt int, scale float32) {
	var c [18]float32
	for r := range c {
		row := &imdctCos[r]
		var a0, a1 float32
		for k := 0; k < 18; k += 2 {
			a0 += row[k] * in[k]
			a1 += row[k+1] * in[k+1]
		}
		c[r] = (a0 + a1) * scale
	}
	w := &imdctWin[bt]
	for i := 0; i < 9; i++ {
		dst[i] += w[i] * c[i]
		dst[17-i] -= w[17-i] * c[i]
		dst[18+i] += w[18+i] * c[9+i]
		dst[35-i] += w[35-i] * c[9+i]
	}
}

// imdct12 adds the three windowed 12-point IMDCTs of a short block (input interleaved by
// window) to dst[6:30], times scale.
func imdct12(in *[18]float32, dst *[36]float32, scale float32) {
	for w := 0; w < 3; w++ {
		for i := 0; i < 12; i++ {
			row := &imdctShort[i]
			s := row[0]*in[w] + row[1]*in[3+w] + row[2]*in[6+w] + row[3]*in[9+w] + row[4]*in[12+w] + row[5]*in[15+w]
			dst[6+6*w+i] += s * scale
		}
	}
}

// overlapAdd adds the previous granule's second halves, keeps this granule's, applies the
// frequency inversion of odd subbands and transposes into time-slot order.
func (d *Decoder) overlapAdd() {
	nsb := d.subbands()
	for sb := 0; sb < nsb; sb++ {
		y, ov := &d.y[sb], &d.overlap[sb]
		for t := 0; t < 18; t++ {
			v := y[t] + ov[t]
			ov[t] = y[18+t]
			if sb&t&1 == 1 {
				v = -v
			}
			d.sb[t][sb] = v
		}
	}
}

// synth runs the polyphase synthesis filter bank over the granule's 18 time slots.
func (d *Decoder) synth(out []float32) []float32 {
	for t := 0; t < 18; t++ {
		d.vi = (d.vi - 1) & 15
		v := &d.v[d.vi]
		x := &d.dct
		*x = d.sb[t]
		dct32(x)
		// V[i] = X[16+i]; V[16] = 0; V[32-i] = -V[i]; V[48+r] = -X[r]; V[96-i] = V[i].
		var nv [64]float32
		for i := 0; i < 16; i++ {
			nv[i] = x[16+i]
			nv[48+i] = -x[i]
			nv[32-i] = -x[16+i]
		}
		nv[16] = 0
		for j := 0; j < 15; j++ {
			nv[33+j] = -x[15-j]
		}
		*v = nv
		var acc [32]float32
		for i := 0; i < 8; i++ {
			a := &d.v[(d.vi+2*i)&15]
			b := (*[32]float32)(d.v[(d.vi+2*i+1)&15][32:])
			w0 := (*[32]float32)(synthWin[64*i:])
			w1 := (*[32]float32)(synthWin[64*i+32:])
			if d.half {
				for j := d.phase; j < 32; j += 2 {
					acc[j] += w0[j]*a[j] + w1[j]*b[j]
				}
				continue
			}
			for j := 0; j < 32; j++ {
				acc[j] += w0[j]*a[j] + w1[j]*b[j]
			}
		}
		if d.half {
			for j := d.phase; j < 32; j += 2 {
				out = append(out, acc[j])
			}
			continue
		}
		out = append(out, acc[:]...)
	}
	return out
}

// dct32 is the unnormalised DCT-II, X[k] = Σ x[n]·cos(π(2n+1)k/2N), in place, by Lee's
// decomposition: with a[i] = x[i] + x[N-1-i] and b[i] = (x[i] - x[N-1-i]) / (2·cos(π(2i+1)/2N)),
// X[2k] = A[k] and X[2k+1] = B[k] + B[k+1]. One function per size keeps every index constant.
func dct32(x *[32]float32) {
	var a, b [16]float32
	c := &dct32Cos[0]
	for i := 0; i < 16; i++ {
		u, v := x[i], x[31-i]
		a[i] = u + v
		b[i] = (u - v) * c[i]
	}
	dct16(&a)
	dct16(&b)
	for k := 0; k < 15; k++ {
		x[2*k] = a[k]
		x[2*k+1] = b[k] + b[k+1]
	}
	x[30], x[31] = a[15], b[15]
}

func dct16(x *[16]float32) {
	var a, b [8]float32
	c := &dct32Cos[1]
	for i := 0; i < 8; i++ {
		u, v := x[i], x[15-i]
		a[i] = u + v
		b[i] = (u - v) * c[i]
	}
	dct8(&a)
	dct8(&b)
	for k := 0; k < 7; k++ {
		x[2*k] = a[k]
		x[2*k+1] = b[k] + b[k+1]
	}
	x[14], x[15] = a[7], b[7]
}

func dct8(x *[8]float32) {
	var a, b [4]float32
	c := &dct32Cos[2]
	for i := 0; i < 4; i++ {
		u, v := x[i], x[7-i]
		a[i] = u + v
		b[i] = (u - v) * c[i]
	}
	dct4(&a)
	dct4(&b)
	x[0], x[1] = a[0], b[0]+b[1]
	x[2], x[3] = a[1], b[1]+b[2]
	x[4], x[5] = a[2], b[2]+b[3]
	x[6], x[7] = a[3], b[3]
}

func dct4(x *[4]float32) {
	c := &dct32Cos[3]
	a0, a1 := x[0]+x[3], x[1]+x[2]
	b0, b1 := (x[0]-x[3])*c[0], (x[1]-x[2])*c[1]
	// Size 2: X[0] = p + q, X[1] = (p - q)·dct32Cos[4][0].
	c2 := dct32Cos[4][0]
	A0, A1 := a0+a1, (a0-a1)*c2
	B0, B1 := b0+b1, (b0-b1)*c2
	x[0], x[1], x[2], x[3] = A0, B0+B1, A1, B1
}
