package audioenc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	goaudio "github.com/go-audio/audio"
	"github.com/go-audio/wav"
)

// pcmStream writes raw 16-bit little-endian samples.
type pcmStream struct {
	w  io.Writer
	rs *resampler
}

func (p *pcmStream) Write(x []float32) error {
	return binary.Write(p.w, binary.LittleEndian, int16s(p.rs.apply(x)))
}

func (p *pcmStream) Close() error { return nil }

// newWAV is 16-bit mono WAV: with a known length, a whole file written by go-audio/wav into
// memory and passed on at Close; without, a streamed header whose RIFF and data sizes are
// 0xFFFFFFFF (what players and ffmpeg read as "until the end"), then the samples as they come.
func newWAV(w io.Writer, o Options) (Stream, error) {
	rate := OutputRate(WAV, o)
	if o.Length > 0 {
		return &wholeWAV{w: w, rate: rate, rs: newResampler(o.Rate, o.OutRate)}, nil
	}
	var h [44]byte
	copy(h[0:], "RIFF")
	binary.LittleEndian.PutUint32(h[4:], 0xFFFFFFFF)
	copy(h[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(h[16:], 16)
	binary.LittleEndian.PutUint16(h[20:], 1) // PCM
	binary.LittleEndian.PutUint16(h[22:], 1) // mono
	binary.LittleEndian.PutUint32(h[24:], uint32(rate))
	binary.LittleEndian.PutUint32(h[28:], uint32(rate*2))
	binary.LittleEndian.PutUint16(h[32:], 2)
	binary.LittleEndian.PutUint16(h[34:], 16)
	copy(h[36:], "data")
	binary.LittleEndian.PutUint32(h[40:], 0xFFFFFFFF)
	if _, err := w.Write(h[:]); err != nil {
		return nil, err
	}
	return &pcmStream{w: w, rs: newResampler(o.Rate, o.OutRate)}, nil
}

type wholeWAV struct {
	w    io.Writer
	rate int
	rs   *resampler
	buf  []int
}

func (s *wholeWAV) Write(x []float32) error {
	for _, v := range int16s(s.rs.apply(x)) {
		s.buf = append(s.buf, int(v))
	}
	return nil
}

func (s *wholeWAV) Close() error {
	var ws memFile
	enc := wav.NewEncoder(&ws, s.rate, 16, 1, 1)
	buf := &goaudio.IntBuffer{Format: &goaudio.Format{NumChannels: 1, SampleRate: s.rate}, Data: s.buf, SourceBitDepth: 16}
	if err := enc.Write(buf); err != nil {
		return fmt.Errorf("wav: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("wav: %w", err)
	}
	_, err := s.w.Write(ws.b)
	return err
}

// memFile is an in-memory io.WriteSeeker (go-audio/wav seeks back to write the sizes).
type memFile struct {
	b   []byte
	off int
}

func (m *memFile) Write(p []byte) (int, error) {
	if need := m.off + len(p); need > len(m.b) {
		m.b = append(m.b, make([]byte, need-len(m.b))...)
	}
	copy(m.b[m.off:], p)
	m.off += len(p)
	return len(p), nil
}

func (m *memFile) Seek(off int64, whence int) (int64, error) {
	var base int64
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		base = int64(m.off)
	case io.SeekEnd:
		base = int64(len(m.b))
	default:
		return 0, errors.New("memFile: bad whence")
	}
	n := base + off
	if n < 0 {
		return 0, errors.New("memFile: negative offset")
	}
	m.off = int(n)
	return n, nil
}
