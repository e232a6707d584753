package audio

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
)

// WAV format tags this reader knows.
const (
	wavTagPCM        = 0x0001
	wavTagFloat      = 0x0003
	wavTagALaw       = 0x0006
	wavTagMuLaw      = 0x0007
	wavTagExtensible = 0xFFFE
	wavSizeUnknown   = 0xFFFFFFFF // streaming writers: "runs to end of file"
	ctxCheckFrames   = 1 << 16    // frames decoded between context checks
)

var wavTagNames = map[uint16]string{
	0x0002: "Microsoft ADPCM",
	0x0011: "IMA ADPCM",
	0x0031: "GSM 6.10",
	0x0050: "MPEG audio",
	0x0055: "MPEG Layer III",
	0x0092: "Dolby AC3",
	0x1610: "AAC",
}

// wavFormat is the parsed fmt chunk.
type wavFormat struct {
	tag        uint16 // effective tag (the sub-format for EXTENSIBLE)
	channels   int
	rate       int
	blockAlign int
	bits       int
}

// decodeWAV parses a RIFF/WAVE file held in memory. It never allocates by a size a header
// claims: every chunk size is checked against the bytes that actually follow.
func decodeWAV(ctx context.Context, data []byte, lim Limits) (*pcm, error) {
	if len(data) < 12 || string(data[0:4]) != "RIFF" || string(data[8:12]) != "WAVE" {
		return nil, fmt.Errorf("%w: not a RIFF/WAVE file", ErrInvalidAudio)
	}
	riffStreaming := binary.LittleEndian.Uint32(data[4:8]) == wavSizeUnknown
	var (
		f         *wavFormat
		body      []byte
		haveData  bool
		off       = 12
		n         = len(data)
		chunkSeen = 0
	)
	for !(f != nil && haveData) {
		if n-off < 8 {
			break
		}
		id := data[off : off+4]
		size := binary.LittleEndian.Uint32(data[off+4 : off+8])
		start := off + 8
		remain := n - start
		chunkSeen++
		switch string(id) {
		case "fmt ":
			if f != nil {
				return nil, fmt.Errorf("%w: WAV has two fmt chunks", ErrInvalidAudio)
			}
			if int64(size) > int64(remain) {
				return nil, fmt.Errorf("%w: WAV fmt chunk claims %d bytes but only %d follow", ErrInvalidAudio, size, remain)
			}
			var err error
			if f, err = parseWAVFormat(data[start : start+int(size)]); err != nil {
				return nil, err
			}
		case "data":
			if haveData {
				return nil, fmt.Errorf("%w: WAV has two data chunks", ErrInvalidAudio)
			}
			switch {
			case size == wavSizeUnknown, riffStreaming && (size == 0 || int64(size) > int64(remain)):
				body = data[start:] // streaming writer: data runs to end of file
			case int64(size) > int64(remain):
				return nil, fmt.Errorf("%w: WAV data chunk claims %d bytes but only %d follow (truncated file)", ErrInvalidAudio, size, remain)
			default:
				body = data[start : start+int(size)]
			}
			haveData = true
			if len(body) == len(data[start:]) && f == nil {
				return nil, fmt.Errorf("%w: WAV fmt chunk missing (no fmt chunk before the data chunk that runs to the end of the file)", ErrInvalidAudio)
			}
		default:
			if int64(size) > int64(remain) {
				return nil, fmt.Errorf("%w: WAV chunk %q at offset %d claims %d bytes but only %d follow", ErrInvalidAudio, printable(id), off, size, remain)
			}
		}
		next := int64(start) + int64(size) + int64(size&1) // chunks are padded to even sizes
		if next > int64(n) {
			next = int64(n)
		}
		off = int(next)
	}
	switch {
	case f == nil && !haveData:
		return nil, fmt.Errorf("%w: WAV has no fmt and no data chunk (%d chunks read)", ErrInvalidAudio, chunkSeen)
	case f == nil:
		return nil, fmt.Errorf("%w: WAV fmt chunk missing", ErrInvalidAudio)
	case !haveData:
		return nil, fmt.Errorf("%w: WAV data chunk missing", ErrInvalidAudio)
	}

	frames := len(body) / f.blockAlign // a trailing partial frame is dropped
	if frames == 0 {
		return nil, fmt.Errorf("%w: WAV data chunk holds %d bytes: no complete %d-byte frame", ErrInvalidAudio, len(body), f.blockAlign)
	}
	if err := checkDuration(int64(frames), f.rate, lim); err != nil {
		return nil, err
	}
	out := make([]float32, frames)
	read := sampleReader(f)
	bps := f.bits / 8
	inv := 1 / float32(f.channels)
	for b := 0; b < frames; b += ctxCheckFrames {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		e := min(frames, b+ctxCheckFrames)
		if f.channels == 1 {
			for i := b; i < e; i++ {
				out[i] = read(body[i*bps:])
			}
			continue
		}
		for i := b; i < e; i++ {
			fr := body[i*f.blockAlign:]
			var s float32
			for c := 0; c < f.channels; c++ {
				s += read(fr[c*bps:])
			}
			out[i] = s * inv
		}
	}
	return &pcm{mono: out, rate: f.rate, channels: f.channels}, nil
}

// parseWAVFormat validates a fmt chunk body.
func parseWAVFormat(b []byte) (*wavFormat, error) {
	if len(b) < 16 {
		return nil, fmt.Errorf("%w: WAV fmt chunk is %d bytes; it needs at least 16", ErrInvalidAudio, len(b))
	}
	le := binary.LittleEndian
	tag := le.Uint16(b[0:])
	f := &wavFormat{
		tag:        tag,
		channels:   int(le.Uint16(b[2:])),
		rate:       int(le.Uint32(b[4:])),
		blockAlign: int(le.Uint16(b[12:])),
		bits:       int(le.Uint16(b[14:])),
	}
	if tag == wavTagExtensible {
		if len(b) < 40 {
			return nil, fmt.Errorf("%w: WAVE_FORMAT_EXTENSIBLE fmt chunk is %d bytes; it needs 40", ErrInvalidAudio, len(b))
		}
		if cb := le.Uint16(b[16:]); cb < 22 {
			return nil, fmt.Errorf("%w: WAVE_FORMAT_EXTENSIBLE cbSize is %d; it needs 22", ErrInvalidAudio, cb)
		}
		if valid := int(le.Uint16(b[18:])); valid > f.bits {
			return nil, fmt.Errorf("%w: WAV valid bits per sample %d exceeds the container's %d", ErrInvalidAudio, valid, f.bits)
		}
		f.tag = le.Uint16(b[24:]) // first two bytes of the sub-format GUID
	}
	switch f.tag {
	case wavTagPCM:
		if f.bits != 8 && f.bits != 16 && f.bits != 24 && f.bits != 32 {
			return nil, fmt.Errorf("%w: %d-bit PCM WAV is not supported (8, 16, 24 or 32 bits)", ErrInvalidAudio, f.bits)
		}
	case wavTagFloat:
		if f.bits != 32 && f.bits != 64 {
			return nil, fmt.Errorf("%w: %d-bit IEEE float WAV is not supported (32 or 64 bits)", ErrInvalidAudio, f.bits)
		}
	case wavTagALaw, wavTagMuLaw:
		if f.bits != 8 {
			return nil, fmt.Errorf("%w: G.711 WAV must have 8 bits per sample, not %d", ErrInvalidAudio, f.bits)
		}
	default:
		name := wavTagNames[f.tag]
		if name == "" {
			name = "unknown encoding"
		}
		return nil, fmt.Errorf("%w: WAV encoding %s (format tag 0x%04X) is not supported; send PCM or IEEE float WAV, or MP3", ErrUnsupportedFormat, name, f.tag)
	}
	if f.channels == 0 {
		return nil, fmt.Errorf("%w: WAV header says 0 channels", ErrInvalidAudio)
	}
	if f.rate < MinSampleRate || f.rate > MaxSampleRate {
		return nil, fmt.Errorf("%w: WAV sample rate %d Hz is outside %d..%d Hz", ErrInvalidAudio, f.rate, MinSampleRate, MaxSampleRate)
	}
	if want := f.channels * f.bits / 8; f.blockAlign != want {
		return nil, fmt.Errorf("%w: WAV block align is %d but %d channels of %d bits need %d", ErrInvalidAudio, f.blockAlign, f.channels, f.bits, want)
	}
	return f, nil
}

// sampleReader returns a function that decodes one sample at the start of b to [-1, 1).
func sampleReader(f *wavFormat) func(b []byte) float32 {
	le := binary.LittleEndian
	switch {
	case f.tag == wavTagFloat && f.bits == 32:
		return func(b []byte) float32 { return sanitize(math.Float32frombits(le.Uint32(b))) }
	case f.tag == wavTagFloat:
		return func(b []byte) float32 { return sanitize(float32(math.Float64frombits(le.Uint64(b)))) }
	case f.tag == wavTagMuLaw:
		return func(b []byte) float32 { return float32(muLaw(b[0])) / 32768 }
	case f.tag == wavTagALaw:
		return func(b []byte) float32 { return float32(aLaw(b[0])) / 32768 }
	case f.bits == 8:
		return func(b []byte) float32 { return (float32(b[0]) - 128) / 128 }
	case f.bits == 16:
		return func(b []byte) float32 { return float32(int16(le.Uint16(b))) / 32768 }
	case f.bits == 24:
		return func(b []byte) float32 {
			v := int32(uint32(b[0])<<8|uint32(b[1])<<16|uint32(b[2])<<24) >> 8
			return float32(v) / 8388608
		}
	default: // 32-bit PCM
		return func(b []byte) float32 { return float32(int32(le.Uint32(b))) / 2147483648 }
	}
}

// muLaw decodes one G.711 μ-law byte to a 16-bit linear value.
func muLaw(u byte) int16 {
	u = ^u
	t := (int(u&0x0F) << 3) + 0x84
	t <<= (u & 0x70) >> 4
	if u&0x80 != 0 {
		return int16(0x84 - t)
	}
	return int16(t - 0x84)
}

// aLaw decodes one G.711 A-law byte to a 16-bit linear value.
func aLaw(a byte) int16 {
	a ^= 0x55
	t := int(a&0x0F) << 4
	seg := (a & 0x70) >> 4
	switch seg {
	case 0:
		t += 8
	case 1:
		t += 0x108
	default:
		t += 0x108
		t <<= seg - 1
	}
	if a&0x80 != 0 {
		return int16(t)
	}
	return int16(-t)
}

// printable renders a chunk id for an error message.
func printable(id []byte) string {
	out := make([]byte, len(id))
	for i, c := range id {
		if c < 0x20 || c > 0x7E {
			c = '?'
		}
		out[i] = c
	}
	return string(out)
}
