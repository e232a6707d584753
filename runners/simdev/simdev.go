// Package simdev is the simulated device every model family's simulated runner shares: the
// device configuration from the runners' catalogue, opening the C simulator through ttnn
// (its own device in a worker process, a submesh of the server's shared parent mesh in
// process), loading the sim programs, the compile run and trace capture, the mapping of a lost
// or timed-out device to runners.ErrDeviceLost, and the Go-sleep fallback where no device is
// available; plus the batch helpers of the simulated runners (RunBatch, BadRequest, Sleep).
//
// A simulated runner keeps the timing shape of the real one (warm-up, per-step,
// per-second-of-audio and per-image latency, cancellation at step boundaries, streaming): on
// the device every step is a program run or trace replay, with the simulator's latency scaled
// to the MOCK_* settings and its fault injection (TTB_SIM_*) in effect. Only where no device
// is available (in process without a shared parent, e.g. a build without cgo) is the time Go
// sleeps. The content clients see is computed in Go either way, so it is the same in both modes.
package simdev

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
)

// ErrClosed is returned by a runner used after Close.
var ErrClosed = errors.New("simulated runner closed")

// Latency is the simulated device's latency model (the MOCK_* settings).
type Latency struct {
	Warmup      time.Duration // once, in Warmup
	PerStep     time.Duration // per denoising step (image)
	PerAudioSec time.Duration // per second of audio (whisper)
	PerImage    time.Duration // per classified image (cnn)
}

// LatencyFrom reads the latency model from the MOCK_* settings; nil settings give no latency.
func LatencyFrom(s *config.Settings) Latency {
	if s == nil {
		return Latency{}
	}
	return Latency{
		Warmup:      s.MockWarmup,
		PerStep:     s.MockStepLatency,
		PerAudioSec: s.MockAudioLatency,
		PerImage:    s.MockImageLatency,
	}
}

// Sleep waits d, or until ctx is done; it reports ctx's error in that case.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// BadRequest is a request rejected by a runner: its text is the message for the client, and
// it matches runners.ErrBadRequest.
type BadRequest struct{ Msg string }

func (e *BadRequest) Error() string        { return e.Msg }
func (e *BadRequest) Is(target error) bool { return target == runners.ErrBadRequest }

// RunBatch runs do for every task concurrently, as a device runs a batch together, and returns
// the outcomes in order. Each task runs under its own context, which is also cancelled when the
// batch context is; a failing, cancelled or panicking task does not affect the others.
func RunBatch(ctx context.Context, tasks []runners.Task, do func(ctx context.Context, t runners.Task) (runners.Result, error)) []runners.Outcome {
	out := make([]runners.Outcome, len(tasks))
	one := func(i int) {
		defer func() {
			if r := recover(); r != nil {
				out[i] = runners.Outcome{Err: fmt.Errorf("simulated runner panic: %v", r)}
			}
		}()
		parent := tasks[i].Ctx
		if parent == nil {
			parent = context.Background()
		}
		inner, cancel := context.WithCancel(parent)
		defer cancel()
		stop := context.AfterFunc(ctx, cancel)
		defer stop()
		v, err := do(&taskContext{Context: inner, task: parent, batch: ctx}, tasks[i])
		out[i] = runners.Outcome{Value: v, Err: err}
	}
	if len(tasks) == 1 {
		one(0)
		return out
	}
	var wg sync.WaitGroup
	for i := range tasks {
		wg.Go(func() { one(i) })
	}
	wg.Wait()
	return out
}

// taskContext is a task's context, also done when the batch context is; its Err is the error
// of whichever of the two ended it (so a batch deadline reads as context.DeadlineExceeded).
type taskContext struct {
	context.Context
	task, batch context.Context
}

func (c *taskContext) Err() error {
	if err := c.task.Err(); err != nil {
		return err
	}
	if err := c.batch.Err(); err != nil {
		return err
	}
	return c.Context.Err()
}

// ClosedOutcomes fails every task with ErrClosed.
func ClosedOutcomes(n int) []runners.Outcome {
	out := make([]runners.Outcome, n)
	for i := range out {
		out[i].Err = ErrClosed
	}
	return out
}

// FailedRunner reports a construction error from Warmup and Run.
type FailedRunner struct{ Err error }

// Warmup returns the construction error.
func (f *FailedRunner) Warmup(context.Context) error { return f.Err }

// Run fails every task with the construction error.
func (f *FailedRunner) Run(_ context.Context, tasks []runners.Task) []runners.Outcome {
	out := make([]runners.Outcome, len(tasks))
	for i := range out {
		out[i].Err = f.Err
	}
	return out
}

// Close has nothing to release.
func (f *FailedRunner) Close() error { return nil }
