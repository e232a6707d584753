// Package mp3dec decodes MPEG-1, MPEG-2 and MPEG-2.5 Layer III audio to mono float32 for a speech
// front-end, several times faster per core than go-mp3, whose tables it reuses.
//
// Where the time goes in a general decoder (go-mp3: the polyphase synthesis 47% of CPU,
// requantisation's math.Pow 11%) is cut three ways:
//
//   - Channels are mixed down inside the decoder. Everything after stereo processing is linear,
//     so the average of two channels can be taken on the spectra (when both use the same block
//     type) or on the IMDCT outputs (when not), and only one synthesis filter bank runs.
//   - Requantisation is a table lookup (|x|^(4/3) and 2^(n/4)); Huffman codes are read through a
//     two-level lookup table; the synthesis matrix is a fast 32-point DCT (Lee's algorithm).
//   - In half-rate mode (NewHalfRate) only subbands 0–15 are synthesised and every other output
//     sample is computed: the result is the full-band decode's even samples with the spectrum
//     above a quarter of the sample rate removed (0–11 kHz of a 44.1 kHz stream, at 22.05 kHz).
//     A caller that resamples to 16 kHz for Whisper discards everything above 8 kHz anyway, and
//     resamples half as many samples.
//
// The output is bit-for-bit reproducible, and a decoder started a few frames early (for the bit
// reservoir, the IMDCT overlap and the synthesis history) produces exactly the samples a
// decoder started at the beginning produces from then on, so callers can decode chunks of a
// file in parallel.
package mp3dec

import (
	"errors"
	"fmt"
	"math"
)

var (
	// ErrUnsupported: a valid stream this decoder does not decode (layers I and II).
	ErrUnsupported = errors.New("mp3dec: unsupported MPEG audio")
	// ErrCorrupt: the frame's side information or main data is inconsistent.
	ErrCorrupt = errors.New("mp3dec: corrupt MP3 frame")
)

// reservoirCap bounds the bytes kept from earlier frames: main_data_begin reaches back at most
// 511 bytes (MPEG-1) or 255 bytes (MPEG-2).
const reservoirCap = 512

// granuleInfo is one granule's side information for one channel.
type granuleInfo struct {
	part23      int
	bigValues   int
	globalGain  int
	sfCompress  int
	blockType   int // 0 normal, 1 start, 2 short, 3 stop
	mixed       bool
	tableSelect [3]int
	subGain     [3]int
	region1     int // first line of region 1
	region2     int // first line of region 2
	preflag     bool
	sfScale     int
	count1Table int
}

// Decoder decodes the frames of one stream, in order. It is not safe for concurrent use.
type Decoder struct {
	half  bool
	phase int // half rate: output the full-rate samples 2j+phase

	res    [reservoirCap]byte
	resLen int
	buf    []byte // main data of the current frame, with the reservoir bytes it reaches back to

	scfsi [2][4]bool
	gi    [2][2]granuleInfo
	sfL   [2][22]int    // long-block scale factors (band 21 has none: 0)
	sfS   [2][13][3]int // short-block scale factors (band 12 has none: 0)
	isMax [2][22]int    // MPEG-2 intensity stereo: the illegal position of each long band
	isMxS [2][13]int    // and of each short band

	concealed int
	isBands   int // bands decoded with intensity stereo (tests check the fixtures reach them)

	ix [2][576]int32
	xr [2][576]float32
	nz [2]int // lines [nz, 576) of xr are zero

	y       [32][36]float32 // IMDCT outputs of the granule
	overlap [32][18]float32
	sb      [18][32]float32 // subband samples, time slot major

	v   [16][64]float32 // synthesis history (ring, newest at vi)
	vi  int
	dct [32]float32
}

// New returns a full-rate decoder.
func New() *Decoder {
	return &Decoder{buf: make([]byte, 0, 2*4096)}
}

// NewHalfRate returns a decoder whose output sample j is the full-rate decode's sample
// 2j+phase (phase 0 or 1) with the upper half of the spectrum left out (see the package doc).
func NewHalfRate(phase int) *Decoder {
	return &Decoder{half: true, phase: phase & 1, buf: make([]byte, 0, 2*4096)}
}

// OutputSamples is the number of samples Decode appends per frame of h.
func (d *Decoder) OutputSamples(h Header) int {
	if d.half {
		return h.Samples / 2
	}
	return h.Samples
}

// Decode decodes one whole frame (header included) and appends its mono samples to out. It
// fails only when frame is not a whole Layer III frame. A frame whose main data starts
// in bytes the decoder has not seen (the first frames of a chunk, or after damage), and a
// granule whose side information or main data is inconsistent, decode as silence, with the
// overlap of the previous granule still played out, as ffmpeg does; Concealed counts them.
func (d *Decoder) Decode(frame []byte, out []float32) ([]float32, error) {
	h, ok := ParseHeader(frame)
	switch {
	case !ok:
		return out, fmt.Errorf("%w: bad frame header", ErrCorrupt)
	case h.Layer != 3:
		return out, fmt.Errorf("%w: MPEG layer %d", ErrUnsupported, h.Layer)
	case len(frame) < h.Size:
		return out, fmt.Errorf("%w: frame is %d bytes, its header says %d", ErrCorrupt, len(frame), h.Size)
	}
	pos := 4
	if h.CRC {
		pos += 2
	}
	side := h.SideInfoSize()
	if pos+side > h.Size {
		return out, fmt.Errorf("%w: frame of %d bytes is too short for its side information", ErrCorrupt, h.Size)
	}
	mdb, err := d.readSideInfo(h, frame[pos:pos+side])
	main := frame[pos+side : h.Size]
	haveData := err == nil && mdb <= d.resLen
	damaged := !haveData
	if haveData {
		d.buf = append(d.buf[:0], d.res[d.resLen-mdb:d.resLen]...)
		d.buf = append(d.buf, main...)
	}
	d.keep(main)

	ngr := 2
	if h.Version != 1 {
		ngr = 1
	}
	r := bitReader{b: d.buf}
	for gr := 0; gr < ngr; gr++ {
		for ch := 0; ch < h.Channels; ch++ {
			if !haveData {
				d.silence(ch)
				continue
			}
			end := r.pos + d.gi[gr][ch].part23
			if err := d.channel(&r, h, gr, ch, end); err != nil {
				// Damaged main data: this granule's channel is silent, as in ffmpeg.
				damaged = true
				d.silence(ch)
			}
			r.pos = end
		}
		out = d.granule(h, gr, out)
	}
	if damaged {
		d.concealed++
	}
	return out, nil
}

// silence empties channel ch's spectrum (requantize writes all of it otherwise): the other
// channel's processing reads up to its own non-zero limit.
func (d *Decoder) silence(ch int) {
	d.xr[ch] = [576]float32{}
	d.nz[ch] = 0
}

// Concealed counts the frames decoded wholly or partly as silence: their side information or
// main data was inconsistent, or their main data began before the first frame this decoder saw.
func (d *Decoder) Concealed() int { return d.concealed }

// channel decodes granule gr, channel ch, whose part 2 and 3 end at bit end, into d.xr.
func (d *Decoder) channel(r *bitReader, h Header, gr, ch, end int) error {
	g := &d.gi[gr][ch]
	if end > 8*len(d.buf) {
		return fmt.Errorf("%w: granule data runs %d bits past the frame", ErrCorrupt, end-8*len(d.buf))
	}
	if h.Version == 1 {
		d.scaleFactorsMPEG1(r, gr, ch)
	} else {
		d.scaleFactorsMPEG2(r, h, ch)
	}
	if r.pos > end {
		return fmt.Errorf("%w: scale factors overrun part2_3_length", ErrCorrupt)
	}
	if err := d.huffman(r, h, g, ch, end); err != nil {
		return err
	}
	d.requantize(h, g, ch)
	return nil
}

// keep appends main data to the reservoir, keeping its last reservoirCap bytes.
func (d *Decoder) keep(main []byte) {
	if len(main) >= reservoirCap {
		d.resLen = copy(d.res[:], main[len(main)-reservoirCap:])
		return
	}
	if d.resLen+len(main) > reservoirCap {
		drop := d.resLen + len(main) - reservoirCap
		copy(d.res[:], d.res[drop:d.resLen])
		d.resLen -= drop
	}
	d.resLen += copy(d.res[d.resLen:], main)
}

// readSideInfo parses the side information into d.gi and d.scfsi; it returns main_data_begin.
func (d *Decoder) readSideInfo(h Header, b []byte) (int, error) {
	r := bitReader{b: b}
	var mdb int
	ngr := 2
	if h.Version == 1 {
		mdb = r.read(9)
		if h.Channels == 1 {
			r.read(5)
		} else {
			r.read(3)
		}
		for ch := 0; ch < h.Channels; ch++ {
			for band := 0; band < 4; band++ {
				d.scfsi[ch][band] = r.bit()
			}
		}
	} else {
		ngr = 1
		mdb = r.read(8)
		r.read(h.Channels)
	}
	long := sfBands(h)[0]
	for gr := 0; gr < ngr; gr++ {
		for ch := 0; ch < h.Channels; ch++ {
			g := &d.gi[gr][ch]
			g.part23 = r.read(12)
			g.bigValues = r.read(9)
			if g.bigValues > 288 {
				return 0, fmt.Errorf("%w: big_values %d is over 288", ErrCorrupt, g.bigValues)
			}
			g.globalGain = r.read(8)
			if h.Version == 1 {
				g.sfCompress = r.read(4)
			} else {
				g.sfCompress = r.read(9)
			}
			if r.bit() { // window switching
				g.blockType = r.read(2)
				if g.blockType == 0 {
					return 0, fmt.Errorf("%w: window switching with block type 0", ErrCorrupt)
				}
				g.mixed = r.bit()
				g.tableSelect[0] = r.read(5)
				g.tableSelect[1] = r.read(5)
				g.tableSelect[2] = 0
				for w := 0; w < 3; w++ {
					g.subGain[w] = r.read(3)
				}
				// Region 1 starts where mpg123 starts it: 36 for short blocks, except in
				// MPEG-2.5 (band 6 for short blocks, which is 72 at 8 kHz); long[8] otherwise.
				switch {
				case h.Version == 25 && g.blockType == 2 && !g.mixed:
					g.region1 = long[6]
				case h.Version != 25 && g.blockType == 2:
					g.region1 = 36
				default:
					g.region1 = long[8]
				}
				g.region2 = 576
			} else {
				g.blockType, g.mixed = 0, false
				for i := 0; i < 3; i++ {
					g.tableSelect[i] = r.read(5)
				}
				r0 := r.read(4)
				r1 := r.read(3)
				g.region1 = long[min(r0+1, 22)]
				g.region2 = long[min(r0+r1+2, 22)]
				g.subGain = [3]int{}
			}
			for _, t := range g.tableSelect {
				if t == 4 || t == 14 {
					return 0, fmt.Errorf("%w: Huffman table %d does not exist", ErrCorrupt, t)
				}
			}
			if h.Version == 1 {
				g.preflag = r.bit()
			}
			g.sfScale = r.read(1)
			g.count1Table = r.read(1)
		}
	}
	return mdb, nil
}

// sfBands returns the long and short scale-factor band boundaries of h's sample rate.
// MPEG-2.5 (an extension outside the ISO standards) uses MPEG-2's 16 kHz bands at 11.025 and
// 12 kHz, and bands of its own at 8 kHz, as libmad, mpg123 and minimp3 do.
func sfBands(h Header) [2][]int {
	switch {
	case h.Version == 1:
		return [2][]int{goSfBandIndices[0][h.rateIndex][0], goSfBandIndices[0][h.rateIndex][1]}
	case h.Version == 2:
		return [2][]int{goSfBandIndices[1][h.rateIndex][0], goSfBandIndices[1][h.rateIndex][1]}
	case h.Rate == 8000:
		return sfBands8k
	}
	return [2][]int{goSfBandIndices[1][2][0], goSfBandIndices[1][2][1]}
}

var sfBands8k = [2][]int{
	{0, 12, 24, 36, 48, 60, 72, 88, 108, 132, 160, 192, 232, 280, 336, 400, 476, 566, 568, 570, 572, 574, 576},
	{0, 8, 16, 24, 36, 52, 72, 96, 124, 160, 162, 164, 166, 192},
}

// scaleFactorsMPEG1 reads ISO 11172-3's scale factors of granule gr, channel ch.
func (d *Decoder) scaleFactorsMPEG1(r *bitReader, gr, ch int) {
	g := &d.gi[gr][ch]
	slen := goScalefacSizesMpeg1[g.sfCompress]
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
	for p, cnt := range goScalefacSizesMpeg2[bt][part] {
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
