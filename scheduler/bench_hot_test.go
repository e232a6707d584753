package scheduler_test

// Benchmarks of the scheduler's hot path: Submit → queue → worker → runner → result, with a
// runner that answers at once, so the figures are the scheduler's own cost per job.
//
//	go test -run '^$' -bench . -benchmem ./scheduler/

import (
	"context"
	"testing"
	"time"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/scheduler"
)

// echoRunner answers each task with its request, emitting one chunk first when asked to.
type echoRunner struct{}

func (echoRunner) Warmup(context.Context) error { return nil }
func (echoRunner) Close() error                 { return nil }
func (echoRunner) Run(_ context.Context, tasks []runners.Task) []runners.Outcome {
	out := make([]runners.Outcome, len(tasks))
	for i, t := range tasks {
		if t.Emit != nil {
			if err := t.Emit(t.Request); err != nil {
				out[i] = runners.Outcome{Err: err}
				continue
			}
		}
		out[i] = runners.Outcome{Value: t.Request}
	}
	return out
}

// startEcho starts a scheduler of n echo workers and waits until all are ready.
func startEcho(b *testing.B, n, queue, batch int) *scheduler.Scheduler {
	b.Helper()
	groups := make([]config.DeviceGroup, n)
	for i := range groups {
		groups[i] = config.DeviceGroup{ID: string(rune('0' + i)), Devices: []int{i}}
	}
	s := scheduler.New(scheduler.Config{Groups: groups, QueueSize: queue, MaxBatchSize: batch, Timeout: time.Minute,
		OnJobDone: func(string, time.Duration, time.Duration, string) {}},
		func(config.DeviceGroup) (runners.Runner, error) { return echoRunner{}, nil })
	s.Start(context.Background())
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			b.Error(err)
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		ready := 0
		for _, w := range s.Workers() {
			if w.IsReady {
				ready++
			}
		}
		if ready == n {
			return s
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d workers ready after 10 s", ready, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func BenchmarkSubmitRoundTrip(b *testing.B) {
	ctx := scheduler.WithTiming(scheduler.WithClient(context.Background(), "api_key"), &scheduler.Timing{})
	req := &runners.ImageRequest{Prompt: "a", NumInferenceSteps: 20}
	b.Run("serial_1_worker", func(b *testing.B) {
		s := startEcho(b, 1, 64, 1)
		b.ReportAllocs()
		for b.Loop() {
			v, err := s.Submit(ctx, req, nil)
			if err != nil || v != req {
				b.Fatal(v, err)
			}
		}
	})
	b.Run("stream_1_chunk", func(b *testing.B) {
		s := startEcho(b, 1, 64, 1)
		emit := func(runners.Chunk) error { return nil }
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Submit(ctx, req, emit); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel_4_workers_batch_4", func(b *testing.B) {
		s := startEcho(b, 4, 1024, 4)
		b.ReportAllocs()
		b.SetParallelism(8) // 16 submitters on 2 cores: the queue stays non-empty
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := s.Submit(ctx, req, nil); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
