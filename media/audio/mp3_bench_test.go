//go:build unix

package audio

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkMP3Stages splits the MP3 path's CPU time (issue 5, item 5): mp3dec alone at full
// and at half rate (runMP3Decoder), and the whole Decode to 16 kHz (scan, half-rate decode,
// trim, resample). go-mp3 on the same frames is in media/mp3dec's BenchmarkDecode.
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
	dur := float64(info.totalSamples) / float64(info.first.Rate)
	ctx := context.Background()
	report := func(b *testing.B, cpu0 float64) {
		cpu := (cpuSeconds() - cpu0) / float64(b.N)
		b.ReportMetric(cpu*1e3, "cpu_ms/op")
		b.ReportMetric(dur/cpu, "x_realtime_per_cpu")
	}
	for _, m := range []struct {
		name string
		mode mp3Mode
	}{{"decode-full", mp3Mode{}}, {"decode-half", mp3Mode{half: true}}} {
		b.Run(m.name, func(b *testing.B) {
			cpu0 := cpuSeconds()
			for b.Loop() {
				if _, _, err := runMP3Decoder(ctx, info, m.mode); err != nil {
					b.Fatal(err)
				}
			}
			report(b, cpu0)
		})
	}
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
