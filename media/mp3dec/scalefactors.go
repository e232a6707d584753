package mp3dec

// Scale factors: the band boundaries of each sample rate and the MPEG-1 and MPEG-2 (LSF)
// scale-factor syntax of ISO/IEC 11172-3 2.4.1.7 and 13818-3 2.4.3.2.

// sfBands returns the long and short scale-factor band boundaries of h's sample rate.
// MPEG-2.5 (an extension outside the ISO standards) uses MPEG-2's 16 kHz bands at 11.025 and
// 12 kHz, and bands of its own at 8 kHz, as libmad, mpg123 and minimp3 do.
func sfBands(h Header) [2][]int {
	switch {
	case h.Version == 1:
		return [2][]int{isoSfBands[0][h.rateIndex][0], isoSfBands[0][h.rateIndex][1]}
	case h.Version == 2:
		return [2][]int{isoSfBands[1][h.rateIndex][0], isoSfBands[1][h.rateIndex][1]}
	case h.Rate == 8000:
		return sfBands8k
	}
	return [2][]int{isoSfBands[1][2][0], isoSfBands[1][2][1]}
}

var sfBands8k = [2][]int{
	{0, 12, 24, 36, 48, 60, 72, 88, 108, 132, 160, 192, 232, 280, 336, 400, 476, 566, 568, 570, 572, 574, 576},
	{0, 8, 16, 24, 36, 52, 72, 96, 124, 160, 162, 164, 166, 192},
}

// scaleFactorsMPEG1 reads ISO 11172-3's scale factors of granule gr, channel ch.
func (d *Decoder) scaleFactorsMPEG1(r *bitReader, gr, ch int) {
	g := &d.gi[gr][ch]
	slen := isoSlenMPEG1[g.sfCompress]
	sfL, sfS := &d.sfL[ch], &d.sfS[ch]
	if g.blockType == 2 {
		first := 0
		if g.mixed {
			for sfb := 0; sfb < 8; sfb++ {
				sfL[sfb] = r.read(slen[0])
			}
			first = 3
		}
		for sfb := first; sfb < 12; sfb++ {
			n := slen[0]
			if sfb >= 6 {
				n = slen[1]
			}
			for w := 0; w < 3; w++ {
				sfS[sfb][w] = r.read(n)
			}
		}
		sfS[12] = [3]int{}
		return
	}
	bands := [5]int{0, 6, 11, 16, 21}
	for b := 0; b < 4; b++ {
		if gr == 1 && d.scfsi[ch][b] {
			continue // the granule-0 values stay
		}
		n := slen[0]
		if b >= 2 {
			n = slen[1]
		}
		for sfb := bands[b]; sfb < bands[b+1]; sfb++ {
			sfL[sfb] = r.read(n)
		}
	}
	sfL[21] = 0
}

// scaleFactorsMPEG2 reads ISO 13818-3's scale factors (one granule) of channel ch, including
// the intensity-stereo variant of the right channel, and each band's illegal intensity position.
func (d *Decoder) scaleFactorsMPEG2(r *bitReader, h Header, ch int) {
	g := &d.gi[0][ch]
	sfc := g.sfCompress
	var slen [4]int
	var part int
	g.preflag = false
	if h.Mode == 1 && h.ModeExt&1 != 0 && ch == 1 {
		isc := sfc >> 1
		switch {
		case isc < 180:
			slen, part = [4]int{isc / 36, (isc % 36) / 6, isc % 6, 0}, 3
		case isc < 244:
			isc -= 180
			slen, part = [4]int{(isc & 63) >> 4, (isc & 15) >> 2, isc & 3, 0}, 4
		default:
			isc -= 244
			slen, part = [4]int{isc / 3, isc % 3, 0, 0}, 5
		}
	} else {
		switch {
		case sfc < 400:
			slen, part = [4]int{(sfc >> 4) / 5, (sfc >> 4) % 5, (sfc & 15) >> 2, sfc & 3}, 0
		case sfc < 500:
			sfc -= 400
			slen, part = [4]int{(sfc >> 2) / 5, (sfc >> 2) % 5, sfc & 3, 0}, 1
		default:
			sfc -= 500
			slen, part = [4]int{sfc / 3, sfc % 3, 0, 0}, 2
			g.preflag = true
		}
	}
	bt := 0
	if g.blockType == 2 {
		bt = 1
		if g.mixed {
			bt = 2
		}
	}
	var list [39]int
	var maxes [39]int
	n := 0
	for p, cnt := range isoNrOfSfbMPEG2[bt][part] {
		for j := 0; j < cnt && n < len(list); j++ {
			list[n] = r.read(slen[p])
			maxes[n] = 1<<slen[p] - 1
			n++
		}
	}
	sfL, sfS := &d.sfL[ch], &d.sfS[ch]
	switch bt {
	case 0:
		for sfb := 0; sfb < 21; sfb++ {
			sfL[sfb], d.isMax[ch][sfb] = list[sfb], maxes[sfb]
		}
		sfL[21], d.isMax[ch][21] = 0, maxes[20]
	case 1:
		for sfb := 0; sfb < 12; sfb++ {
			for w := 0; w < 3; w++ {
				sfS[sfb][w] = list[3*sfb+w]
			}
			d.isMxS[ch][sfb] = maxes[3*sfb]
		}
		sfS[12], d.isMxS[ch][12] = [3]int{}, maxes[33]
	default:
		for sfb := 0; sfb < 6; sfb++ {
			sfL[sfb], d.isMax[ch][sfb] = list[sfb], maxes[sfb]
		}
		for sfb := 3; sfb < 12; sfb++ {
			for w := 0; w < 3; w++ {
				sfS[sfb][w] = list[6+3*(sfb-3)+w]
			}
			d.isMxS[ch][sfb] = maxes[6+3*(sfb-3)]
		}
		sfS[12], d.isMxS[ch][12] = [3]int{}, maxes[32]
	}
}
