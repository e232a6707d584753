//go:build unix

package audio

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/hajimehoshi/go-mp3"
)

// BenchmarkMP3Stages splits the MP3 path's CPU time (issue 5, item 3): go-mp3 alone (its int16
// stereo stream read into a reused buffer), go-mp3 plus our downmix to float (runMP3Decoder),
// and the whole Decode to 16 kHz (scan, decode, trim, resample).
func BenchmarkMP3Stages(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join(sharedAudioDir(b), slowMP3))
	if err != nil {
		b.Fatal(err)
	}
	first, err := locateMP3(raw)
	if err != nil {
		b.Fatal(err)
	}
	info, err := scanMP3(raw, first)
	if err != nil {
		b.Fatal(err)
	}
	dur := float64(info.totalSamples) / float64(info.first.rate)
	ctx := context.Background()
	report := func(b *testing.B, cpu0 float64) {
		cpu := (cpuSeconds() - cpu0) / float64(b.N)
		b.ReportMetric(cpu*1e3, "cpu_ms/op")
		b.ReportMetric(dur/cpu, "x_realtime_per_cpu")
	}
	b.Run("go-mp3", func(b *testing.B) {
		buf := make([]byte, 4*1152*32)
		cpu0 := cpuSeconds()
		for b.Loop() {
			dec, err := mp3.NewDecoder(struct{ io.Reader }{bytes.NewReader(info.stream)})
			if err != nil {
				b.Fatal(err)
			}
			for {
				if _, err := io.ReadFull(dec, buf); err != nil {
					break
				}
			}
		}
		report(b, cpu0)
	})
	b.Run("go-mp3+downmix", func(b *testing.B) {
		cpu0 := cpuSeconds()
		for b.Loop() {
			if _, err := runMP3Decoder(ctx, info.stream, info.frames*info.first.spf); err != nil {
				b.Fatal(err)
			}
		}
		report(b, cpu0)
	})
	b.Run("decode16k", func(b *testing.B) {
		cpu0 := cpuSeconds()
		for b.Loop() {
			if _, err := Decode(ctx, raw, 16000, Limits{}); err != nil {
				b.Fatal(err)
			}
		}
		report(b, cpu0)
	})
}
