package families

import (
	"context"
	"image"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRegister(t *testing.T) {
	reg := NewRegistry()
	tests := []struct {
		name    string
		service runners.Service
		request runners.Request
		result  any
	}{
		{catalogue.RunnerSDXL, runners.ServiceImage, &runners.ImageRequest{Prompt: "x", NumInferenceSteps: 1}, &runners.ImageResult{}},
		{catalogue.RunnerSD35, runners.ServiceImage, &runners.ImageRequest{Prompt: "x", NumInferenceSteps: 1}, &runners.ImageResult{}},
		{catalogue.RunnerSDXLImg2Img, runners.ServiceImage, &runners.ImageRequest{Prompt: "x", NumInferenceSteps: 2, Strength: 0.5,
			InitImage: solid(8, 8, 10, 20, 30)}, &runners.ImageResult{}},
		{catalogue.RunnerSDXLEdit, runners.ServiceImage, &runners.ImageRequest{Prompt: "x", NumInferenceSteps: 2, Strength: 0.5,
			InitImage: solid(8, 8, 10, 20, 30), Mask: image.NewGray(image.Rect(0, 0, 8, 8))}, &runners.ImageResult{}},
		{catalogue.RunnerWhisper, runners.ServiceAudio, &runners.AudioRequest{Samples: make([]float32, 160), SampleRate: 16000, Duration: 0.01}, &runners.TranscriptionResult{}},
		{catalogue.RunnerResNet, runners.ServiceCNN, &runners.CNNRequest{Image: solid(8, 8, 10, 20, 30)}, &runners.CNNResult{}},
		{catalogue.RunnerVoVNet, runners.ServiceCNN, &runners.CNNRequest{Image: solid(8, 8, 10, 20, 30)}, &runners.CNNResult{}},
		{catalogue.RunnerMobileNetV2, runners.ServiceCNN, &runners.CNNRequest{Image: solid(8, 8, 10, 20, 30)}, &runners.CNNResult{}},
		{catalogue.RunnerYOLOv4, runners.ServiceCNN, &runners.CNNRequest{Image: solid(8, 8, 10, 20, 30)}, &runners.CNNResult{}},
		{catalogue.RunnerSpeechT5, runners.ServiceTextToSpeech, &runners.SpeechRequest{Text: "Hi."}, &runners.SpeechResult{}},
		{catalogue.RunnerEfficientNet, runners.ServiceCNN, &runners.CNNRequest{Image: solid(8, 8, 10, 20, 30)}, &runners.CNNResult{}},
		{catalogue.RunnerViT, runners.ServiceCNN, &runners.CNNRequest{Image: solid(8, 8, 10, 20, 30)}, &runners.CNNResult{}},
		{catalogue.RunnerSegFormer, runners.ServiceCNN, &runners.CNNRequest{Image: solid(8, 8, 10, 20, 30)}, &runners.CNNResult{}},
		{catalogue.RunnerUNet, runners.ServiceCNN, &runners.CNNRequest{Image: solid(8, 8, 10, 20, 30)}, &runners.CNNResult{}},
		{catalogue.RunnerYOLOXNano, runners.ServiceCNN, &runners.CNNRequest{Image: solid(8, 8, 10, 20, 30)}, &runners.CNNResult{}},
	}
	// HEAD's tt-dit and Z-Image runners: the simulated twin in mock-device mode.
	for _, name := range []string{catalogue.RunnerFlux1Dev, catalogue.RunnerFlux1Schnell, catalogue.RunnerMotifImage6B,
		catalogue.RunnerQwenImage, catalogue.RunnerQwenImage2512, catalogue.RunnerZImageTurbo, catalogue.RunnerXLASDXL} {
		tests = append(tests, struct {
			name    string
			service runners.Service
			request runners.Request
			result  any
		}{name, runners.ServiceImage, &runners.ImageRequest{Prompt: "x", NumInferenceSteps: 1}, &runners.ImageResult{}})
	}
	for _, m := range runners.Models() {
		if m.Service == runners.ServiceVideo {
			tests = append(tests, struct {
				name    string
				service runners.Service
				request runners.Request
				result  any
			}{m.Name, runners.ServiceVideo, &runners.VideoRequest{Prompt: "x", Steps: 1, Width: 16, Height: 8, Frames: 3}, &runners.VideoResult{}})
		}
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
		svc, err := reg.Service(catalogue.RunnerMock)
		require.NoError(t, err)
		require.Equal(t, runners.Service(""), svc)
		for service, result := range map[string]any{"image": &runners.ImageResult{}, "audio": &runners.TranscriptionResult{}, "cnn": &runners.CNNResult{},
			"text_to_speech": &runners.SpeechResult{}} {
			r, err := reg.New(catalogue.RunnerMock, runners.WorkerSpec{Settings: &config.Settings{ModelService: service}})
			require.NoError(t, err)
			var req runners.Request
			switch service {
			case "image":
				req = &runners.ImageRequest{Prompt: "x", NumInferenceSteps: 1}
			case "audio":
				req = &runners.AudioRequest{Samples: make([]float32, 160), SampleRate: 16000, Duration: 0.01}
			case "text_to_speech":
				req = &runners.SpeechRequest{Text: "Hi."}
			default:
				req = &runners.CNNRequest{Image: solid(4, 4, 1, 2, 3)}
			}
			out := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(), Request: req}})
			require.NoError(t, out[0].Err)
			require.IsType(t, result, out[0].Value)
		}
		for _, s := range []*config.Settings{nil, {}, {ModelService: "llm"}} {
			_, err := reg.New(catalogue.RunnerMock, runners.WorkerSpec{Settings: s})
			require.ErrorContains(t, err, "MODEL_SERVICE")
		}
	})

	t.Run("image factory takes NUM_INFERENCE_STEPS", func(t *testing.T) {
		r, err := reg.New(catalogue.RunnerSDXL, runners.WorkerSpec{Settings: &config.Settings{NumInferenceSteps: 7, MockStepLatency: 2 * time.Millisecond}})
		require.NoError(t, err)
		start := time.Now()
		seed := int64(1)
		out := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(), Request: &runners.ImageRequest{Prompt: "x", Seed: &seed}}})
		require.NoError(t, out[0].Err)
		require.GreaterOrEqual(t, time.Since(start), 14*time.Millisecond)
	})
}

func solid(w, h int, r, g, b uint8) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = r, g, b, 255
	}
	return img
}
