package mock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestLatencyFrom(t *testing.T) {
	require.Equal(t, Latency{}, LatencyFrom(nil))
	s := &config.Settings{MockWarmup: time.Second, MockStepLatency: 2 * time.Millisecond, MockAudioLatency: 3 * time.Millisecond, MockImageLatency: 4 * time.Millisecond}
	require.Equal(t, Latency{Warmup: time.Second, PerStep: 2 * time.Millisecond, PerAudioSec: 3 * time.Millisecond, PerImage: 4 * time.Millisecond}, LatencyFrom(s))
}

func TestRegister(t *testing.T) {
	reg := runners.NewRegistry()
	Register(reg)
	tests := []struct {
		name    string
		service runners.Service
		request any
		result  any
	}{
		{RunnerSDXL, runners.ServiceImage, &runners.ImageRequest{Prompt: "x", NumInferenceSteps: 1}, &runners.ImageResult{}},
		{RunnerSD35, runners.ServiceImage, &runners.ImageRequest{Prompt: "x", NumInferenceSteps: 1}, &runners.ImageResult{}},
		{RunnerWhisper, runners.ServiceAudio, &runners.AudioRequest{Samples: make([]float32, 160), SampleRate: 16000, Duration: 0.01}, &runners.TranscriptionResult{}},
		{RunnerResNet, runners.ServiceCNN, &runners.CNNRequest{Image: solid(8, 8, 10, 20, 30)}, &runners.CNNResult{}},
		{RunnerVoVNet, runners.ServiceCNN, &runners.CNNRequest{Image: solid(8, 8, 10, 20, 30)}, &runners.CNNResult{}},
		{RunnerMobileNetV2, runners.ServiceCNN, &runners.CNNRequest{Image: solid(8, 8, 10, 20, 30)}, &runners.CNNResult{}},
		{RunnerYOLOv4, runners.ServiceCNN, &runners.CNNRequest{Image: solid(8, 8, 10, 20, 30)}, &runners.CNNResult{}},
	}
	require.Len(t, reg.Names(), len(tests)+1)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svc, err := reg.Service(tc.name)
			require.NoError(t, err)
			require.Equal(t, tc.service, svc)
			r, err := reg.New(tc.name, runners.WorkerSpec{WorkerID: "0", Devices: []int{0}, Settings: &config.Settings{}})
			require.NoError(t, err)
			if tc.service != runners.ServiceImage { // image warm-up is tested in image_test.go
				require.NoError(t, r.Warmup(context.Background()))
			}
			out := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(), Request: tc.request}})
			require.Len(t, out, 1)
			require.NoError(t, out[0].Err)
			require.IsType(t, tc.result, out[0].Value)
			require.NoError(t, r.Close())
		})
	}

	t.Run("mock follows MODEL_SERVICE", func(t *testing.T) {
		svc, err := reg.Service(RunnerMock)
		require.NoError(t, err)
		require.Equal(t, runners.Service(""), svc)
		for service, result := range map[string]any{"image": &runners.ImageResult{}, "audio": &runners.TranscriptionResult{}, "cnn": &runners.CNNResult{}} {
			r, err := reg.New(RunnerMock, runners.WorkerSpec{Settings: &config.Settings{ModelService: service}})
			require.NoError(t, err)
			var req any
			switch service {
			case "image":
				req = &runners.ImageRequest{Prompt: "x", NumInferenceSteps: 1}
			case "audio":
				req = &runners.AudioRequest{Samples: make([]float32, 160), SampleRate: 16000, Duration: 0.01}
			default:
				req = &runners.CNNRequest{Image: solid(4, 4, 1, 2, 3)}
			}
			out := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(), Request: req}})
			require.NoError(t, out[0].Err)
			require.IsType(t, result, out[0].Value)
		}
		for _, s := range []*config.Settings{nil, {}, {ModelService: "video"}} {
			_, err := reg.New(RunnerMock, runners.WorkerSpec{Settings: s})
			require.ErrorContains(t, err, "MODEL_SERVICE")
		}
	})

	t.Run("image factory takes NUM_INFERENCE_STEPS", func(t *testing.T) {
		r, err := reg.New(RunnerSDXL, runners.WorkerSpec{Settings: &config.Settings{NumInferenceSteps: 7, MockStepLatency: 2 * time.Millisecond}})
		require.NoError(t, err)
		start := time.Now()
		seed := int64(1)
		out := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(), Request: &runners.ImageRequest{Prompt: "x", Seed: &seed}}})
		require.NoError(t, out[0].Err)
		require.GreaterOrEqual(t, time.Since(start), 14*time.Millisecond)
	})
}

func TestRunBatchIsolation(t *testing.T) {
	boom := errors.New("boom")
	tasks := []runners.Task{{Ctx: context.Background(), Request: 0}, {Request: 1}, {Ctx: context.Background(), Request: 2}}
	out := runBatch(context.Background(), tasks, func(ctx context.Context, task runners.Task) (any, error) {
		switch task.Request.(int) {
		case 0:
			panic("device on fire")
		case 1:
			return nil, boom
		}
		return "ok", ctx.Err()
	})
	require.Len(t, out, 3)
	require.ErrorContains(t, out[0].Err, "device on fire")
	require.ErrorIs(t, out[1].Err, boom)
	require.NoError(t, out[2].Err)
	require.Equal(t, "ok", out[2].Value)

	// The batch context reaches every task.
	batch, cancel := context.WithCancel(context.Background())
	cancel()
	out = runBatch(batch, tasks[2:], func(ctx context.Context, task runners.Task) (any, error) {
		return nil, ctx.Err()
	})
	require.ErrorIs(t, out[0].Err, context.Canceled)
}

func TestSleep(t *testing.T) {
	require.NoError(t, sleep(context.Background(), 0))
	require.NoError(t, sleep(context.Background(), time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	require.ErrorIs(t, sleep(ctx, time.Hour), context.Canceled)
	require.ErrorIs(t, sleep(ctx, 0), context.Canceled)
	require.Less(t, time.Since(start), time.Second)
}
