// Package wavtest writes the WAV files tests upload: mono 16-bit PCM, encoded by
// github.com/go-audio/wav (the WAV package the server itself writes with), so that no test
// hand-writes RIFF headers. Tests that build malformed or unusual WAV files on purpose (the
// decoder's own tests in media/audio) keep their own byte-level writers.
package wavtest

import (
	"errors"
	"fmt"
	"io"
	"math"

	goaudio "github.com/go-audio/audio"
	"github.com/go-audio/wav"
)

// PCM16 is samples as a mono 16-bit PCM WAV file at rate Hz (a canonical 44-byte header, then
// the samples). It panics on an encoder error, which only a bad rate can cause: tests call it
// with constants.
func PCM16(rate int, samples []int16) []byte {
	var f memFile
	enc := wav.NewEncoder(&f, rate, 16, 1, 1)
	data := make([]int, len(samples))
	for i, v := range samples {
		data[i] = int(v)
	}
	buf := &goaudio.IntBuffer{Format: &goaudio.Format{NumChannels: 1, SampleRate: rate}, Data: data, SourceBitDepth: 16}
	if err := enc.Write(buf); err != nil {
		panic(fmt.Sprintf("wavtest: %v", err))
	}
	if err := enc.Close(); err != nil {
		panic(fmt.Sprintf("wavtest: %v", err))
	}
	return f.b
}

// Tone is seconds of a sine of freq Hz at rate Hz, peak amplitude amp (0..1 of full scale).
func Tone(rate int, seconds, freq, amp float64) []int16 {
	n := int(math.Round(seconds * float64(rate)))
	out := make([]int16, n)
	for i := range out {
		out[i] = int16(math.Round(amp * 32767 * math.Sin(2*math.Pi*freq*float64(i)/float64(rate))))
	}
	return out
}

// memFile is an in-memory io.WriteSeeker: go-audio/wav seeks back to write the chunk sizes.
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
		return 0, errors.New("wavtest: bad whence")
	}
	n := base + off
	if n < 0 {
		return 0, errors.New("wavtest: negative offset")
	}
	m.off = int(n)
	return n, nil
}
