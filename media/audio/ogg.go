package audio

import (
	"encoding/binary"
	"fmt"
)

// Ogg demuxing (RFC 3533), shared by the Vorbis and Opus paths. It is our own, not the codec
// libraries': every page is bounds-checked against the real input and CRC-checked, packets are
// sub-slices of the input (only packets spanning pages are copied, so everything allocated is
// bounded by the input size), and each packet carries the granule position of the page on which
// it ends, which exact duration and gapless trimming need.

const (
	oggHeaderLen = 27
	oggFlagCont  = 0x01 // first packet continues one from the previous page
	oggFlagBOS   = 0x02 // beginning of stream
	oggFlagEOS   = 0x04 // end of stream
	oggNoGranule = -1   // granule position of a page on which no packet ends
	// oggMaxPrealloc caps the samples preallocated from granule-based estimates (16 MiB of
	// float32); a longer stream grows its buffer as it really decodes.
	oggMaxPrealloc = 1 << 22
)

// oggPacket is one logical packet of the first logical stream.
type oggPacket struct {
	data []byte
	// granule is the granule position of the page this packet ends on when it is the last
	// packet ending there, else oggNoGranule: the granule of a page belongs to its last packet.
	granule int64
	page    int // page index (0-based) on which the packet ends
	index   int // packet index in the stream
}

// oggStream describes a validated logical stream.
type oggStream struct {
	serial  uint32
	pages   int
	packets int
	// lastGranule is the granule position of the last page with one (the EOS page of an
	// intact file); oggNoGranule when none has one.
	lastGranule int64
}

var oggCRCTable = func() (t [256]uint32) {
	for i := range t {
		r := uint32(i) << 24
		for range 8 {
			if r&0x80000000 != 0 {
				r = r<<1 ^ 0x04C11DB7
			} else {
				r <<= 1
			}
		}
		t[i] = r
	}
	return t
}()

func oggCRC(crc uint32, b []byte) uint32 {
	for _, v := range b {
		crc = crc<<8 ^ oggCRCTable[byte(crc>>24)^v]
	}
	return crc
}

// oggFirstPacket returns the first packet of the first page without checking the CRC (for
// sniffing a possibly short prefix). ok is false when the page header is incomplete.
func oggFirstPacket(data []byte) (pkt []byte, ok bool) {
	if len(data) < oggHeaderLen || string(data[:4]) != "OggS" {
		return nil, false
	}
	nseg := int(data[26])
	if len(data) < oggHeaderLen+nseg || nseg == 0 {
		return nil, false
	}
	size := 0
	for _, s := range data[oggHeaderLen : oggHeaderLen+nseg] {
		size += int(s)
		if s < 255 {
			break
		}
	}
	body := data[oggHeaderLen+nseg:]
	return body[:min(size, len(body))], true
}

// walkOgg validates the pages of data's first logical stream and, when emit is not nil, hands
// it every packet in order (a first pass with emit nil learns the last granule position before
// anything is decoded). Packets are sub-slices of data, or fresh copies for packets spanning
// pages, and are not retained here: memory stays bounded by the largest packet whatever the
// number of packets. codec names the codec in messages. It fails with ErrInvalidAudio on
// truncation, a CRC mismatch, lost page sync, pages missing from the sequence or a stream
// without its end-of-stream page, with ErrUnsupportedFormat on multiplexed or chained streams,
// and with emit's error. Other bytes after the EOS page are ignored.
func walkOgg(data []byte, codec string, emit func(oggPacket) error) (*oggStream, error) {
	st := &oggStream{lastGranule: oggNoGranule}
	var partial []byte // packet continued from an earlier page (collected only when emitting)
	havePartial := false
	var pagePkts []oggPacket
	off := 0
	for {
		if off == len(data) {
			return nil, fmt.Errorf("%w: Ogg %s stream ends after %d pages without its end-of-stream page (truncated file?)", ErrInvalidAudio, codec, st.pages)
		}
		if len(data)-off < oggHeaderLen {
			return nil, fmt.Errorf("%w: Ogg %s stream is truncated: page %d header at byte %d is cut off", ErrInvalidAudio, codec, st.pages, off)
		}
		h := data[off : off+oggHeaderLen]
		if string(h[:4]) != "OggS" {
			return nil, fmt.Errorf("%w: corrupt Ogg %s stream: no page at byte %d (lost sync after %d pages)", ErrInvalidAudio, codec, off, st.pages)
		}
		if h[4] != 0 {
			return nil, fmt.Errorf("%w: Ogg page %d has unknown version %d", ErrInvalidAudio, st.pages, h[4])
		}
		flags := h[5]
		granule := int64(binary.LittleEndian.Uint64(h[6:14]))
		serial := binary.LittleEndian.Uint32(h[14:18])
		seq := binary.LittleEndian.Uint32(h[18:22])
		nseg := int(h[26])
		if len(data)-off < oggHeaderLen+nseg {
			return nil, fmt.Errorf("%w: Ogg %s stream is truncated: page %d segment table at byte %d is cut off", ErrInvalidAudio, codec, st.pages, off)
		}
		lace := data[off+oggHeaderLen : off+oggHeaderLen+nseg]
		size := 0
		for _, s := range lace {
			size += int(s)
		}
		end := off + oggHeaderLen + nseg + size
		if end > len(data) {
			return nil, fmt.Errorf("%w: Ogg %s stream is truncated: page %d at byte %d needs %d bytes but %d remain",
				ErrInvalidAudio, codec, st.pages, off, end-off, len(data)-off)
		}
		crc := oggCRC(0, data[off:off+22])
		crc = oggCRC(crc, []byte{0, 0, 0, 0})
		crc = oggCRC(crc, data[off+26:end])
		if crc != binary.LittleEndian.Uint32(h[22:26]) {
			return nil, fmt.Errorf("%w: corrupt Ogg %s stream: page %d at byte %d fails its CRC check", ErrInvalidAudio, codec, st.pages, off)
		}
		switch {
		case st.pages == 0:
			if flags&oggFlagBOS == 0 {
				return nil, fmt.Errorf("%w: Ogg %s stream does not start with a beginning-of-stream page", ErrInvalidAudio, codec)
			}
			st.serial = serial
		case serial != st.serial:
			return nil, fmt.Errorf("%w: multiplexed Ogg files (several logical streams, e.g. audio with video) are not supported; send a single Ogg %s stream",
				ErrUnsupportedFormat, codec)
		case flags&oggFlagBOS != 0:
			return nil, fmt.Errorf("%w: Ogg page %d repeats the beginning-of-stream flag", ErrInvalidAudio, st.pages)
		case seq != uint32(st.pages):
			return nil, fmt.Errorf("%w: Ogg %s stream has a gap: page %d carries sequence number %d (pages lost or reordered)", ErrInvalidAudio, codec, st.pages, seq)
		}
		if cont := flags&oggFlagCont != 0; cont != havePartial {
			if havePartial {
				return nil, fmt.Errorf("%w: corrupt Ogg %s stream: page %d does not continue the packet left open by the previous page", ErrInvalidAudio, codec, st.pages)
			}
			return nil, fmt.Errorf("%w: corrupt Ogg %s stream: page %d continues a packet that was never started", ErrInvalidAudio, codec, st.pages)
		}
		body := data[off+oggHeaderLen+nseg : end]
		pagePkts = pagePkts[:0]
		pos, start := 0, 0
		for _, s := range lace {
			pos += int(s)
			if s == 255 {
				continue
			}
			if emit != nil {
				pkt := body[start:pos]
				if havePartial {
					pkt = append(partial, pkt...)
					partial = nil
				}
				pagePkts = append(pagePkts, oggPacket{data: pkt, granule: oggNoGranule, page: st.pages, index: st.packets})
			}
			havePartial = false
			st.packets++
			start = pos
		}
		if start < pos { // the page ends inside a packet
			if emit != nil {
				partial = append(partial, body[start:pos]...)
			}
			havePartial = true
		}
		if granule != oggNoGranule {
			if len(pagePkts) > 0 {
				pagePkts[len(pagePkts)-1].granule = granule
			}
			st.lastGranule = granule
		}
		for _, p := range pagePkts {
			if err := emit(p); err != nil {
				return nil, err
			}
		}
		st.pages++
		off = end
		if flags&oggFlagEOS != 0 {
			if havePartial {
				return nil, fmt.Errorf("%w: Ogg %s stream ends inside a packet", ErrInvalidAudio, codec)
			}
			if rest := data[off:]; len(rest) >= oggHeaderLen && string(rest[:4]) == "OggS" && rest[5]&oggFlagBOS != 0 {
				return nil, fmt.Errorf("%w: chained Ogg files (several streams one after another) are not supported; send a single Ogg %s stream",
					ErrUnsupportedFormat, codec)
			}
			return st, nil
		}
	}
}

// oggClock follows the sample position of decoded audio packets to find which samples are real
// audio (Vorbis I spec A.2, RFC 7845 §4).
type oggClock struct {
	decoded int64 // samples decoded so far
	start   int64 // position of the first decoded sample
	known   bool  // start has been fixed by a granule
}

// add accounts for n samples decoded from p; lastPage is the stream's last page index.
func (c *oggClock) add(p oggPacket, n int, lastPage int) {
	c.decoded += int64(n)
	if c.known || p.granule == oggNoGranule {
		return
	}
	// The samples of every packet up to and including this one end at its granule. When that
	// page is also the last one, a shortfall is end trimming and the stream starts at 0.
	c.known = true
	if p.page != lastPage || p.granule > c.decoded {
		c.start = p.granule - c.decoded
	}
}

// trim returns the range [head, tail) of the decoded samples to keep, given preSkip samples to
// drop at the start (Opus) and the stream's last granule position.
func (c *oggClock) trim(preSkip int, last int64) (head, tail int64, err error) {
	head = int64(preSkip)
	if c.start < 0 { // the encoder asked to drop samples at the start
		head = max(head, -c.start)
	}
	tail = c.decoded
	if last != oggNoGranule && last-c.start < tail { // end trimming
		tail = last - c.start
	}
	if head >= tail {
		return 0, 0, fmt.Errorf("%w: the stream's granule positions leave no audio (%d samples decoded, %d to skip at the start, end at %d)",
			ErrInvalidAudio, c.decoded, head, tail)
	}
	return head, tail, nil
}
