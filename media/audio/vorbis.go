package audio

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/jfreymuth/vorbis"
)

// Ogg Vorbis: our Ogg demuxer (ogg.go) feeds packets to jfreymuth/vorbis (the decoder under
// jfreymuth/oggvorbis v1.0.5), under recover. The library trusts its headers: a 20-byte setup
// header can make it allocate a terabyte (codebook entries × dimensions), and a comment header
// can claim 2³² comments; both are fatal out-of-memory errors that recover cannot catch. So
// the identification header is checked here, the comment header is never handed to it, and
// the setup header's codebooks are walked and bounded (checkVorbisSetup) before the library
// sees them.

const (
	vorbisCodebookSync = 0x564342
	// vorbisMaxSetupBytes bounds what the library may allocate for codebooks (Huffman trees,
	// value tables). Real encoders' books need well under 1 MiB.
	vorbisMaxSetupBytes = 32 << 20
)

// vorbisIDHeader is the identification header, validated.
type vorbisIDHeader struct {
	channels int
	rate     int
	block0   int
	block1   int
}

func parseVorbisID(p []byte) (vorbisIDHeader, error) {
	var h vorbisIDHeader
	if len(p) < 30 || string(p[:7]) != "\x01vorbis" {
		return h, fmt.Errorf("%w: Ogg Vorbis identification header is missing or short", ErrInvalidAudio)
	}
	if v := binary.LittleEndian.Uint32(p[7:]); v != 0 {
		return h, fmt.Errorf("%w: unknown Vorbis version %d", ErrInvalidAudio, v)
	}
	h.channels = int(p[11])
	h.rate = int(binary.LittleEndian.Uint32(p[12:]))
	e0, e1 := int(p[28]&0x0F), int(p[28]>>4)
	switch {
	case h.channels == 0:
		return h, fmt.Errorf("%w: Vorbis header declares 0 channels", ErrInvalidAudio)
	case h.rate < MinSampleRate || h.rate > MaxSampleRate:
		return h, fmt.Errorf("%w: Vorbis sample rate %d Hz is outside %d..%d Hz", ErrInvalidAudio, h.rate, MinSampleRate, MaxSampleRate)
	case e0 < 6 || e1 > 13 || e0 > e1:
		return h, fmt.Errorf("%w: Vorbis block sizes 2^%d and 2^%d are invalid", ErrInvalidAudio, e0, e1)
	case p[29]&1 == 0:
		return h, fmt.Errorf("%w: Vorbis identification header lacks its framing bit", ErrInvalidAudio)
	}
	h.block0, h.block1 = 1<<e0, 1<<e1
	return h, nil
}

// lsbReader reads Vorbis's LSB-first bit fields; ok turns false on reading past the end.
type lsbReader struct {
	b   []byte
	pos uint64 // in bits
	ok  bool
}

func (r *lsbReader) read(n uint) uint32 {
	var v uint32
	for i := uint(0); i < n; i++ {
		byteIdx := r.pos >> 3
		if byteIdx >= uint64(len(r.b)) {
			r.ok = false
			return 0
		}
		v |= uint32(r.b[byteIdx]>>(r.pos&7)&1) << i
		r.pos++
	}
	return v
}

// skip advances n bits; it fails when fewer remain.
func (r *lsbReader) skip(n uint64) {
	if n > uint64(len(r.b))*8-r.pos {
		r.ok = false
		r.pos = uint64(len(r.b)) * 8
		return
	}
	r.pos += n
}

func ilog(x uint64) uint {
	var n uint
	for ; x > 0; x >>= 1 {
		n++
	}
	return n
}

// checkVorbisSetup walks the codebooks of a setup header (Vorbis I spec §3.2.1) exactly as the
// decoder will read them and refuses what would make it allocate out of proportion or loop
// forever: empty or zero-dimension books (0 entries makes the library allocate 2³² tree nodes;
// a 0-dimension book never advances its residue loop), more entries × dimensions than 2²⁴ (the
// bound libvorbis enforces), Huffman codes that are not a complete prefix code (an incomplete
// tree makes the library's lookup loop forever on the missing branch; libvorbis refuses such
// books too, save a single-entry one), tables the packet cannot hold, or more than
// vorbisMaxSetupBytes in all.
func checkVorbisSetup(p []byte) error {
	if len(p) < 8 || string(p[:7]) != "\x05vorbis" {
		return fmt.Errorf("%w: Ogg Vorbis setup header is missing", ErrInvalidAudio)
	}
	r := &lsbReader{b: p[7:], ok: true}
	books := int(r.read(8)) + 1
	var budget uint64
	for b := 0; b < books && r.ok; b++ {
		if r.read(24) != vorbisCodebookSync {
			if !r.ok {
				break
			}
			return fmt.Errorf("%w: Vorbis setup header: codebook %d has a bad sync pattern", ErrInvalidAudio, b)
		}
		dims := uint64(r.read(16))
		entries := uint64(r.read(24))
		if !r.ok {
			break
		}
		if dims == 0 || entries == 0 || ilog(dims)+ilog(entries) > 24 {
			return fmt.Errorf("%w: Vorbis setup header: codebook %d has %d entries of dimension %d", ErrInvalidAudio, b, entries, dims)
		}
		// kraft sums 2^(32-length) over the used codewords: 2^32 for a complete prefix code.
		var kraft, used uint64
		if r.read(1) == 1 { // ordered: lengths in runs
			length := uint64(r.read(5)) + 1
			for cur := uint64(0); cur < entries && r.ok; {
				num := uint64(r.read(ilog(entries - cur)))
				if cur+num > entries || length > 32 {
					return fmt.Errorf("%w: Vorbis setup header: codebook %d has inconsistent codeword lengths", ErrInvalidAudio, b)
				}
				kraft += num << (32 - length)
				used += num
				cur += num
				length++
			}
		} else {
			sparse := r.read(1) == 1
			for i := uint64(0); i < entries && r.ok; i++ {
				if !sparse || r.read(1) == 1 {
					kraft += 1 << (32 - (uint64(r.read(5)) + 1))
					used++
				}
			}
		}
		if r.ok && used != 1 && kraft != 1<<32 {
			return fmt.Errorf("%w: Vorbis setup header: codebook %d is not a complete prefix code", ErrInvalidAudio, b)
		}
		budget += 9 * entries // the library's Huffman tree: 2 uint32 and a byte per entry
		lookup := r.read(4)
		switch lookup {
		case 0:
		case 1, 2:
			r.skip(32 + 32)
			bits := uint64(r.read(4)) + 1
			r.read(1)
			var values uint64
			if lookup == 1 {
				values = uint64(math.Floor(math.Pow(float64(entries), 1/float64(dims))))
			} else {
				values = entries * dims
			}
			r.skip(values * bits) // fails unless the packet holds the table
			budget += 4*values + 4*entries*dims
		default:
			return fmt.Errorf("%w: Vorbis setup header: codebook %d has unknown lookup type %d", ErrInvalidAudio, b, lookup)
		}
		if budget > vorbisMaxSetupBytes {
			return fmt.Errorf("%w: Vorbis setup header: codebooks would need more than %d MiB", ErrInvalidAudio, vorbisMaxSetupBytes>>20)
		}
	}
	if !r.ok {
		return fmt.Errorf("%w: Vorbis setup header is truncated", ErrInvalidAudio)
	}
	return nil
}

// decodeVorbis decodes an Ogg Vorbis stream, downmixes and trims it to the exact length its
// granule positions give.
func decodeVorbis(ctx context.Context, data []byte, lim Limits) (p *pcm, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("%w: corrupt Vorbis data (decoder failed: %v)", ErrInvalidAudio, r)
		}
	}()
	st, err := walkOgg(data, "Vorbis", nil)
	if err != nil {
		return nil, err
	}
	if st.packets < 3 {
		return nil, fmt.Errorf("%w: Ogg Vorbis stream has %d of its 3 header packets and no audio", ErrInvalidAudio, st.packets)
	}
	var (
		dec       vorbis.Decoder
		id        vorbisIDHeader
		idPacket  []byte
		mono      []float32
		buf       []float32
		clock     oggClock
		maxFrames = int64(-1)
	)
	_, err = walkOgg(data, "Vorbis", func(pk oggPacket) error {
		switch pk.index {
		case 0:
			id, err = parseVorbisID(pk.data)
			idPacket = pk.data
			return err
		case 1:
			if len(pk.data) < 7 || string(pk.data[:7]) != "\x03vorbis" {
				return fmt.Errorf("%w: Ogg Vorbis comment header is missing", ErrInvalidAudio)
			}
			return nil // never handed to the library (see above)
		case 2:
			return vorbisStart(&dec, id, idPacket, pk.data, st, lim, &mono, &buf, &maxFrames)
		}
		if (pk.index-3)%64 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		n := 0
		if len(pk.data) > 0 { // an empty packet decodes to nothing (spec §4.3.1)
			out, err := dec.DecodeInto(pk.data, buf)
			if err != nil {
				return fmt.Errorf("%w: corrupt Vorbis audio packet %d: %v", ErrInvalidAudio, pk.index-3, err)
			}
			n = len(out) / id.channels
			inv := 1 / float32(id.channels)
			for f := 0; f < n; f++ {
				var s float32
				for c := 0; c < id.channels; c++ {
					s += out[f*id.channels+c]
				}
				mono = append(mono, sanitize(s*inv))
			}
		}
		clock.add(pk, n, st.pages-1)
		if err := lim.meter.grow(int64(len(mono)), id.rate); err != nil {
			return err
		}
		if maxFrames >= 0 && int64(len(mono)) > maxFrames {
			return checkDuration(int64(len(mono)), id.rate, lim)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	head, tail, err := clock.trim(0, st.lastGranule)
	if err != nil {
		return nil, err
	}
	return &pcm{mono: mono[head:tail], rate: id.rate, channels: id.channels}, nil
}

// vorbisStart checks the setup header and the duration, and readies the decoder and buffers.
func vorbisStart(dec *vorbis.Decoder, id vorbisIDHeader, idPacket, setup []byte, st *oggStream, lim Limits,
	mono, buf *[]float32, maxFrames *int64) error {
	if err := checkVorbisSetup(setup); err != nil {
		return err
	}
	if st.lastGranule != oggNoGranule {
		if err := checkDuration(st.lastGranule, id.rate, lim); err != nil {
			return err
		}
	}
	if err := dec.ReadHeader(idPacket); err != nil {
		return fmt.Errorf("%w: bad Vorbis identification header: %v", ErrInvalidAudio, err)
	}
	if err := dec.ReadHeader(setup); err != nil {
		return fmt.Errorf("%w: bad Vorbis setup header: %v", ErrInvalidAudio, err)
	}
	if lim.MaxDuration > 0 {
		// Trimming removes at most one block at each end.
		*maxFrames = int64(lim.MaxDuration*float64(id.rate)) + int64(2*id.block1)
	}
	// Each packet yields at most block1/2 frames; a granule-based estimate sizes the buffer,
	// but never beyond what the packets can produce.
	est := int64(st.packets-3) * int64(id.block1/2)
	if st.lastGranule > 0 {
		est = min(est, st.lastGranule+int64(id.block1))
	}
	if *maxFrames >= 0 {
		est = min(est, *maxFrames)
	}
	if err := lim.meter.need(min(est, oggMaxPrealloc), id.rate); err != nil {
		return err
	}
	*mono = make([]float32, 0, min(est, oggMaxPrealloc))
	*buf = make([]float32, dec.BufferSize())
	return nil
}
