package audioenc

import (
	"encoding/binary"
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
	buf  []int16
}

func (s *wholeWAV) Write(x []float32) error {
	s.buf = append(s.buf, int16s(s.rs.apply(x))...)
	return nil
}

func (s *wholeWAV) Close() error {
	b, err := WAVFile(s.rate, s.buf)
	if err != nil {
		return err
	}
	_, err = s.w.Write(b)
	return err
}

// WAVFile is samples as a whole mono 16-bit PCM WAV file at rate Hz, written by go-audio/wav:
// a canonical 44-byte header with exact sizes, then the samples little-endian. It is what
// Encode writes for WAV (after the float to 16-bit conversion), and what tests upload
// (internal/wavtest).
func WAVFile(rate int, samples []int16) ([]byte, error) {
	data := make([]int, len(samples))
	for i, v := range samples {
		data[i] = int(v)
	}
	var ws seekBuffer
	enc := wav.NewEncoder(&ws, rate, 16, 1, 1)
	buf := &goaudio.IntBuffer{Format: &goaudio.Format{NumChannels: 1, SampleRate: rate}, Data: data, SourceBitDepth: 16}
	if err := enc.Write(buf); err != nil {
		return nil, fmt.Errorf("wav: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("wav: %w", err)
	}
	return ws.buf, nil
}
