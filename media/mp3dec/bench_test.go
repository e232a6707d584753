package mp3dec

import (
	"bytes"
	"io"
	"testing"

	"github.com/hajimehoshi/go-mp3"
)

// BenchmarkDecode: the 18.8 s 44.1 kHz stereo test MP3 (CBR 128 kbit/s), one frame at a time,
// at full and half rate, against go-mp3 on the same frames (int16 stereo out, read into a
// reused buffer). x_realtime is seconds of audio per second of wall time on one goroutine.
func BenchmarkDecode(b *testing.B) {
	fs := frames(b, testAudio(b, "speech_b_44k1_cbr128_stereo_id3.mp3"))
	h, _ := ParseHeader(fs[0])
	seconds := float64(len(fs)*h.Samples) / float64(h.Rate)
	for _, mode := range []struct {
		name string
		dec  func() *Decoder
	}{{"full", New}, {"half", func() *Decoder { return NewHalfRate(0) }}} {
		b.Run(mode.name, func(b *testing.B) {
			out := make([]float32, 0, len(fs)*h.Samples)
			for b.Loop() {
				d := mode.dec()
				out = out[:0]
				for _, f := range fs {
					var err error
					if out, err = d.Decode(f, out); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(seconds*float64(b.N)/b.Elapsed().Seconds(), "x_realtime")
		})
	}
	b.Run("go-mp3", func(b *testing.B) {
		stream := bytes.Join(fs, nil)
		buf := make([]byte, 4*1152*32)
		for b.Loop() {
			dec, err := mp3.NewDecoder(struct{ io.Reader }{bytes.NewReader(stream)})
			if err != nil {
				b.Fatal(err)
			}
			for {
				if _, err := io.ReadFull(dec, buf); err != nil {
					break
				}
			}
		}
		b.ReportMetric(seconds*float64(b.N)/b.Elapsed().Seconds(), "x_realtime")
	})
}
