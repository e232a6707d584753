// Package mp3dec decodes MPEG-1, MPEG-2 and MPEG-2.5 Layer III audio to mono float32 for a speech
// front-end, several times faster per core than go-mp3 (its normative ISO tables are our own
// generated source, tables_iso.go).
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
