// Package mock implements the mock-device runners: simulated SDXL/SD3.5, Whisper and
// ImageNet classifier devices that keep the timing shape of the real ones (warm-up, per-step,
// per-second-of-audio and per-image latency, cancellation at step boundaries, streaming) and
// return outputs a client developer can use: deterministic pictures that depend on the request,
// transcriptions that state facts about the audio, and ImageNet classes that the simulated
// ResNet-50 derives from each image (the CNN names run runners/resnet's real pipeline; cnn.go).
//
// A runner spends its device time in the C simulator through ttnn — on its own device in a
// worker process (WORKER_ISOLATION=process), on its group's submesh of the server's shared
// parent mesh in process: Warmup opens the device with the real model's options (L1 small
// size, trace region, command queues, fabric), loads the sim programs, runs each once and
// captures a trace; then every UNet step, VAE decode, Whisper encoder window and decoder step,
// and ResNet forward is a program run or trace replay, with the simulator's latency scaled to
// the MOCK_* settings and its fault injection (TTB_SIM_*) in effect. Only where no device is
// available (in process without a shared parent, e.g. a build without cgo) is the time Go
// sleeps.
// The content clients see is computed in Go either way, so it is the same in both modes.
package mock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
)

// ErrClosed is returned by a runner used after Close.
var ErrClosed = errors.New("mock runner closed")

// Latency is the mock device's latency model.
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

// MODEL_RUNNER names of the Python server.
const (
	RunnerSDXL        = "tt-sdxl-trace"
	RunnerSD35        = "tt-sd3.5"
	RunnerWhisper     = "tt-whisper"
	RunnerResNet      = "tt-xla-resnet"
	RunnerVoVNet      = "tt-xla-vovnet"
	RunnerMobileNetV2 = "tt-xla-mobilenetv2"
	RunnerYOLOv4      = "tt-yolov4"
	// RunnerMock serves the API family named by MODEL_SERVICE (SDXL, Whisper or ResNet-50).
	RunnerMock = "mock"
)

// imageSize is the resolution of SDXL base and SD3.5 Large.
const imageSize = 1024

// defaultSteps is NUM_INFERENCE_STEPS's default in the Python server.
const defaultSteps = 20

// Register adds every MODEL_RUNNER name of the Python server to reg, with its service and a
// mock-device factory. "mock" is registered with an empty Service: like the Python server, it
// serves the family named by MODEL_SERVICE (settings.ModelService), which its factory reads from
// the WorkerSpec; callers resolve the service of "mock" from the settings, not the registry.
func Register(reg *runners.Registry) {
	image := func(model string) runners.Factory {
		return func(spec runners.WorkerSpec) (runners.Runner, error) {
			r := newImage(model, imageSize, LatencyFrom(spec.Settings))
			if spec.Settings != nil && spec.Settings.NumInferenceSteps > 0 {
				r.defaultSteps = spec.Settings.NumInferenceSteps
			}
			r.dev.cfg = simConfigFor(model, spec)
			return r, nil
		}
	}
	audio := func(spec runners.WorkerSpec) (runners.Runner, error) {
		r := &audioRunner{lat: LatencyFrom(spec.Settings)}
		r.dev.cfg = simConfigFor(RunnerWhisper, spec)
		return r, nil
	}
	cnn := cnnFactory // the ResNet-50 pipeline of runners/resnet (cnn.go)
	reg.Register(RunnerSDXL, runners.ServiceImage, image(RunnerSDXL))
	reg.Register(RunnerSD35, runners.ServiceImage, image(RunnerSD35))
	reg.Register(RunnerWhisper, runners.ServiceAudio, audio)
	for _, name := range []string{RunnerResNet, RunnerVoVNet, RunnerMobileNetV2, RunnerYOLOv4} {
		reg.Register(name, runners.ServiceCNN, cnn(name))
	}
	reg.Register(RunnerMock, "", func(spec runners.WorkerSpec) (runners.Runner, error) {
		service := ""
		if spec.Settings != nil {
			service = spec.Settings.ModelService
		}
		switch runners.Service(strings.ToLower(service)) {
		case runners.ServiceImage:
			return image(RunnerSDXL)(spec)
		case runners.ServiceAudio:
			return audio(spec)
		case runners.ServiceCNN:
			return cnn(RunnerResNet)(spec)
		}
		return nil, fmt.Errorf("MODEL_RUNNER=mock needs MODEL_SERVICE=image|audio|cnn, got %q", service)
	})
}

// sleep waits d, or until ctx is done; it reports ctx's error in that case.
func sleep(ctx context.Context, d time.Duration) error {
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

// badRequest is a request rejected by a runner: its text is the message for the client, and
// it matches runners.ErrBadRequest.
type badRequest struct{ msg string }

func (e *badRequest) Error() string        { return e.msg }
func (e *badRequest) Is(target error) bool { return target == runners.ErrBadRequest }

// runBatch runs do for every task concurrently, as a device runs a batch together, and returns
// the outcomes in order. Each task runs under its own context, which is also cancelled when the
// batch context is; a failing, cancelled or panicking task does not affect the others.
func runBatch(ctx context.Context, tasks []runners.Task, do func(ctx context.Context, t runners.Task) (any, error)) []runners.Outcome {
	out := make([]runners.Outcome, len(tasks))
	one := func(i int) {
		defer func() {
			if r := recover(); r != nil {
				out[i] = runners.Outcome{Err: fmt.Errorf("mock runner panic: %v", r)}
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

// closedOutcomes fails every task with ErrClosed.
func closedOutcomes(n int) []runners.Outcome {
	out := make([]runners.Outcome, n)
	for i := range out {
		out[i].Err = ErrClosed
	}
	return out
}
