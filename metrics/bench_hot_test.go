package metrics

// Benchmarks of the observations made per request and per job.
//
//	go test -run '^$' -bench . -benchmem ./metrics/

import (
	"testing"
	"time"
)

func BenchmarkObserve(b *testing.B) {
	m := New()
	b.Run("request", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.Request("/image/generations", "POST", 200, 120*time.Millisecond)
		}
	})
	b.Run("client_request", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.ClientRequest("api_key", 429)
		}
	})
	b.Run("job_done", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.JobDone("tt-sdxl-trace", "0", 10*time.Millisecond, 100*time.Millisecond, "ok")
		}
	})
	b.Run("images", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.Images("tt-sdxl-trace", 2, 20)
		}
	})
	b.Run("transcribed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.Transcribed("tt-whisper", 5, 500*time.Millisecond)
		}
	})
	b.Run("request_parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				m.Request("/audio/transcriptions", "POST", 200, 120*time.Millisecond)
			}
		})
	})
}
