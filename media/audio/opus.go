package audio

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/pion/opus"
)

// Ogg Opus (RFC 7845): our Ogg demuxer (ogg.go) feeds packets to pion/opus, a young pure-Go
// decoder (SILK, CELT, hybrid), under recover. pion/opus leaves the container semantics to the
// caller: the OpusHead pre-skip, the output gain and end trimming are applied here, so the
// result is sample-for-sample what libopusfile/ffmpeg return (up to the decoder's own accuracy).

const (
	opusRate = 48000 // Opus always decodes at 48 kHz here; OpusHead's input rate is informational
	// opusMaxPacketFrames is 120 ms at 48 kHz, the longest packet (RFC 6716 §3.2.5).
	opusMaxPacketFrames = 5760
)

// opusHead is the identification header, validated.
type opusHead struct {
	channels  int
	preSkip   int
	inputRate int
	gain      float32 // linear factor from the Q7.8 dB output gain
}

func parseOpusHead(p []byte) (opusHead, error) {
	var h opusHead
	if len(p) < 19 || string(p[:8]) != "OpusHead" {
		return h, fmt.Errorf("%w: Ogg Opus identification header (OpusHead) is missing or short", ErrInvalidAudio)
	}
	if p[8]>>4 != 0 {
		return h, fmt.Errorf("%w: Ogg Opus version %d.%d is not supported (only 0.x)", ErrUnsupportedFormat, p[8]>>4, p[8]&15)
	}
	h.channels = int(p[9])
	h.preSkip = int(binary.LittleEndian.Uint16(p[10:]))
	h.inputRate = int(binary.LittleEndian.Uint32(p[12:]))
	gainDB := float64(int16(binary.LittleEndian.Uint16(p[16:]))) / 256
	h.gain = float32(math.Pow(10, gainDB/20))
	family := p[18]
	switch {
	case h.channels == 0:
		return h, fmt.Errorf("%w: OpusHead declares 0 channels", ErrInvalidAudio)
	case family != 0 || h.channels > 2:
		return h, fmt.Errorf("%w: multichannel Ogg Opus (%d channels, mapping family %d) is not supported; send mono or stereo Opus, or %s",
			ErrUnsupportedFormat, h.channels, family, acceptedFormats)
	}
	return h, nil
}

// decodeOpus decodes an Ogg Opus stream at 48 kHz, downmixes, applies the output gain and
// trims it to the exact length its pre-skip and granule positions give.
func decodeOpus(ctx context.Context, data []byte, lim Limits) (p *pcm, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("%w: corrupt Opus data (decoder failed: %v)", ErrInvalidAudio, r)
		}
	}()
	st, err := walkOgg(data, "Opus", nil)
	if err != nil {
		return nil, err
	}
	if st.packets < 2 {
		return nil, fmt.Errorf("%w: Ogg Opus stream has no OpusTags header and no audio", ErrInvalidAudio)
	}
	var (
		head      opusHead
		dec       *opusPackets
		clock     oggClock
		maxFrames = int64(-1)
	)
	_, err = walkOgg(data, "Opus", func(pk oggPacket) error {
		switch pk.index {
		case 0:
			head, err = parseOpusHead(pk.data)
			return err
		case 1:
			if len(pk.data) < 8 || string(pk.data[:8]) != "OpusTags" {
				return fmt.Errorf("%w: Ogg Opus comment header (OpusTags) is missing", ErrInvalidAudio)
			}
			if st.lastGranule != oggNoGranule {
				if err := checkDuration(st.lastGranule-int64(head.preSkip), opusRate, lim); err != nil {
					return err
				}
			}
			if lim.MaxDuration > 0 {
				maxFrames = int64(lim.MaxDuration*opusRate) + int64(head.preSkip)
			}
			est := int64(st.packets-2) * opusMaxPacketFrames
			if st.lastGranule > 0 {
				est = min(est, st.lastGranule)
			}
			if maxFrames >= 0 {
				est = min(est, maxFrames+opusMaxPacketFrames)
			}
			if err := lim.meter.need(min(est, oggMaxPrealloc), opusRate); err != nil {
				return err
			}
			dec, err = newOpusPackets(head, est)
			return err
		}
		if (pk.index-2)%64 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		n, err := dec.decode(pk.data, pk.index-2)
		if err != nil {
			return err
		}
		clock.add(pk, n, st.pages-1)
		if err := lim.meter.grow(int64(len(dec.mono)), opusRate); err != nil {
			return err
		}
		if maxFrames >= 0 && int64(len(dec.mono)) > maxFrames+opusMaxPacketFrames {
			return checkDuration(int64(len(dec.mono)-head.preSkip), opusRate, lim)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	mono := dec.mono
	lo, hi, err := clock.trim(head.preSkip, st.lastGranule)
	if err != nil {
		return nil, err
	}
	return &pcm{mono: mono[lo:hi], rate: opusRate, channels: head.channels}, nil
}

// opusPackets decodes the Opus packets of one mono or stereo stream, in order, into mono samples
// at 48 kHz with the header's output gain applied (shared by the Ogg and WebM paths).
type opusPackets struct {
	dec      opus.Decoder
	channels int
	scale    float32
	buf      []float32
	mono     []float32
}

// newOpusPackets makes a decoder; est (frames, capped) sizes the output buffer.
func newOpusPackets(head opusHead, est int64) (*opusPackets, error) {
	dec, err := opus.NewDecoderWithOutput(opusRate, head.channels)
	if err != nil {
		return nil, fmt.Errorf("%w: Opus decoder: %v", ErrInvalidAudio, err)
	}
	return &opusPackets{
		dec:      dec,
		channels: head.channels,
		scale:    head.gain / float32(head.channels),
		buf:      make([]float32, opusMaxPacketFrames*head.channels),
		mono:     make([]float32, 0, max(min(est, oggMaxPrealloc), 0)),
	}, nil
}

// decode appends packet i's samples to o.mono and returns how many frames it decoded.
func (o *opusPackets) decode(pkt []byte, i int) (int, error) {
	n, err := o.dec.DecodeToFloat32(pkt, o.buf)
	if err != nil {
		return 0, fmt.Errorf("%w: corrupt Opus audio packet %d: %v", ErrInvalidAudio, i, err)
	}
	if n < 0 || n*o.channels > len(o.buf) {
		return 0, fmt.Errorf("%w: Opus packet %d decoded to %d samples", ErrInvalidAudio, i, n)
	}
	for f := 0; f < n; f++ {
		var s float32
		for c := 0; c < o.channels; c++ {
			s += o.buf[f*o.channels+c]
		}
		o.mono = append(o.mono, sanitize(s*o.scale))
	}
	return n, nil
}

// opusPacketFrames is the number of 48 kHz frames packet p holds, from its TOC byte (RFC 6716
// §3.1), without decoding it; ok is false for a packet that cannot be valid.
func opusPacketFrames(p []byte) (int, bool) {
	if len(p) == 0 {
		return 0, false
	}
	cfg := int(p[0] >> 3)
	var size int // frame size in 48 kHz samples
	switch {
	case cfg < 12: // SILK: 10, 20, 40, 60 ms
		size = [4]int{480, 960, 1920, 2880}[cfg&3]
	case cfg < 16: // hybrid: 10, 20 ms
		size = [2]int{480, 960}[cfg&1]
	default: // CELT: 2.5, 5, 10, 20 ms
		size = [4]int{120, 240, 480, 960}[cfg&3]
	}
	count := 1
	switch p[0] & 3 {
	case 1, 2:
		count = 2
	case 3:
		if len(p) < 2 {
			return 0, false
		}
		count = int(p[1] & 0x3f)
	}
	n := size * count
	if count == 0 || n > opusMaxPacketFrames {
		return 0, false
	}
	return n, true
}
