package families_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/families"
)

// HEAD's image runners this server had not served: each is listed in /v1/models under HEAD's
// model name and, in mock-device mode, served on /v1/images/generations by the simulated twin
// at the model's size, with HEAD's step policy (Flux from 4, z-image-turbo without the runner
// floor, the others from 12).
func TestHEADImageRunnersServedInMockMode(t *testing.T) {
	tests := []struct {
		runner, model string
		steps         int
		status        int
	}{
		{catalogue.RunnerFlux1Dev, "FLUX.1-dev", 4, http.StatusOK},
		{catalogue.RunnerFlux1Schnell, "FLUX.1-schnell", 4, http.StatusOK},
		{catalogue.RunnerMotifImage6B, "Motif-Image-6B-Preview", 4, http.StatusUnprocessableEntity},
		{catalogue.RunnerMotifImage6B, "Motif-Image-6B-Preview", 12, http.StatusOK},
		{catalogue.RunnerQwenImage, "Qwen-Image", 12, http.StatusOK},
		{catalogue.RunnerQwenImage2512, "Qwen-Image-2512", 11, http.StatusUnprocessableEntity},
		{catalogue.RunnerZImageTurbo, "Z-Image-Turbo", 5, http.StatusOK},
		{catalogue.RunnerXLASDXL, "SDXL-512", 11, http.StatusUnprocessableEntity},
		{catalogue.RunnerXLASDXL, "SDXL-512", 12, http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.runner, func(t *testing.T) {
			do := serve(t, families.NewRegistry(), map[string]string{"MODEL_RUNNER": tc.runner})
			status, models := do(http.MethodGet, "/v1/models", nil)
			require.Equal(t, http.StatusOK, status)
			require.Equal(t, tc.model, models["data"].([]any)[0].(map[string]any)["id"])

			body, err := json.Marshal(map[string]any{"prompt": "a lighthouse", "num_inference_steps": tc.steps, "seed": 1})
			require.NoError(t, err)
			status, answer := do(http.MethodPost, "/v1/images/generations", body)
			require.Equal(t, tc.status, status, "answer: %v", answer)
			if tc.status != http.StatusOK {
				require.Contains(t, answer["detail"].([]any)[0].(map[string]any)["loc"], "num_inference_steps")
				return
			}
			images := answer["images"].([]any)
			require.Len(t, images, 1)
			data, err := base64.StdEncoding.DecodeString(images[0].(string))
			require.NoError(t, err)
			cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
			require.NoError(t, err)
			m, _ := catalogue.Lookup(tc.runner)
			require.Equal(t, [2]int{m.Image.Size, m.Image.Size}, [2]int{cfg.Width, cfg.Height})
		})
	}
}

// HEAD's EfficientNet and ViT classifiers answer ImageNet labels on /v1/cnn/search-image.
func TestHEADClassifiersServedInMockMode(t *testing.T) {
	for _, runner := range []string{catalogue.RunnerEfficientNet, catalogue.RunnerViT} {
		t.Run(runner, func(t *testing.T) {
			do := serve(t, families.NewRegistry(), map[string]string{"MODEL_RUNNER": runner, "MOCK_CNN_SECONDS": "0"})
			var pic bytes.Buffer
			require.NoError(t, png.Encode(&pic, image.NewRGBA(image.Rect(0, 0, 32, 32))))
			body, err := json.Marshal(map[string]any{"prompt": base64.StdEncoding.EncodeToString(pic.Bytes()), "top_k": 3, "min_confidence": 0})
			require.NoError(t, err)
			status, answer := do(http.MethodPost, "/v1/cnn/search-image", body)
			require.Equal(t, http.StatusOK, status, "answer: %v", answer)
			out := answer["image_data"].([]any)[0].(map[string]any)["output"].(map[string]any)
			require.Len(t, out["labels"], 3)
		})
	}
}

// OpenAI's size follows the model's own: Z-Image-Turbo renders 512x512 (its compiled
// latents), so "512x512" is served and "1024x1024" refused naming size; a tt-dit model's is
// 1024x1024.
func TestHEADImageSizesOpenAIDialect(t *testing.T) {
	tests := []struct {
		runner, size string
		status       int
	}{
		{catalogue.RunnerZImageTurbo, "512x512", http.StatusOK},
		{catalogue.RunnerZImageTurbo, "1024x1024", http.StatusBadRequest},
		{catalogue.RunnerQwenImage, "1024x1024", http.StatusOK},
		{catalogue.RunnerQwenImage, "512x512", http.StatusBadRequest},
		{catalogue.RunnerXLASDXL, "512x512", http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.runner+"/"+tc.size, func(t *testing.T) {
			do := serve(t, families.NewRegistry(), map[string]string{"MODEL_RUNNER": tc.runner})
			body, err := json.Marshal(map[string]any{"prompt": "a lighthouse", "size": tc.size, "model": "gpt-image-1"})
			require.NoError(t, err)
			status, answer := do(http.MethodPost, "/v1/images/generations", body)
			require.Equal(t, tc.status, status, "answer: %v", answer)
			if tc.status != http.StatusOK {
				require.Equal(t, "size", answer["error"].(map[string]any)["param"])
				return
			}
			data, err := base64.StdEncoding.DecodeString(answer["data"].([]any)[0].(map[string]any)["b64_json"].(string))
			require.NoError(t, err)
			cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
			require.NoError(t, err)
			require.Equal(t, tc.size, fmt.Sprintf("%dx%d", cfg.Width, cfg.Height))
		})
	}
}
