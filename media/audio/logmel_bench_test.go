//go:build unix

package audio

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// cpuSeconds is the user+system CPU time of the process so far. On a loaded machine CPU time
// per operation is the steadier "per core" figure; wall time counts time spent waiting for a
// core.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// Benchmarks of the audio front-end (issue item 5); scripts/bench-audio.sh runs them beside
// ffmpeg and torch. Run with -cpu 1 for per-core figures.

// BenchmarkDecode16k: Decode (container decode + downmix + resample to 16 kHz) of the shared
// 44.1 kHz stereo test files; x_realtime is audio seconds per wall-clock second.
func BenchmarkDecode16k(b *testing.B) {
	for _, name := range []string{"speech_a_44k1_s16_stereo.wav", "speech_b_44k1_cbr128_stereo_id3.mp3"} {
		b.Run(name, func(b *testing.B) {
			raw, err := os.ReadFile(filepath.Join(sharedAudioDir(b), name))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			d, err := Decode(ctx, raw, 16000, Limits{})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(raw)))
			start, cpu0 := time.Now(), cpuSeconds()
			for b.Loop() {
				if _, err := Decode(ctx, raw, 16000, Limits{}); err != nil {
					b.Fatal(err)
				}
			}
			wall, cpu := time.Since(start).Seconds()/float64(b.N), (cpuSeconds()-cpu0)/float64(b.N)
			b.ReportMetric(d.Duration/wall, "x_realtime")
			b.ReportMetric(d.Duration/cpu, "x_realtime_per_cpu")
			b.ReportMetric(cpu*1e3, "cpu_ms/op")
		})
	}
}

// BenchmarkLogMel: one 30 s window of speech (utterance b's 16 kHz waveform repeated, so no
// frame is silent) → n_mels×3000 features, with a reused output buffer.
func BenchmarkLogMel(b *testing.B) {
	wave := readF32(b, filepath.Join(sharedWhisperDir(b), "speech_b_16k_s16_mono.waveform.f32"))
	x := make([]float32, 0, WhisperNSamples)
	for len(x) < WhisperNSamples {
		x = append(x, wave[:min(len(wave), WhisperNSamples-len(x))]...)
	}
	for _, nMels := range []int{80, 128} {
		b.Run(map[int]string{80: "mel80", 128: "mel128"}[nMels], func(b *testing.B) {
			lm, err := WhisperLogMel(nMels)
			if err != nil {
				b.Fatal(err)
			}
			var dst []float32
			cpu0 := cpuSeconds()
			for b.Loop() {
				if dst, err = lm.Compute(context.Background(), x, dst); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N)*1e3, "cpu_ms/op")
		})
	}
}
