package sdk_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"image/jpeg"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"
)

// Servers of the image-streaming checks: short denoising steps so that previews are spaced
// in time, and a slow one whose 1 s inference timeout ends a stream after its first preview.
var (
	streamEnv     = map[string]string{"MODEL_RUNNER": "tt-sdxl-trace", "MOCK_WARMUP_SECONDS": "0", "MOCK_STEP_SECONDS": "0.005"}
	streamSlowEnv = map[string]string{"MODEL_RUNNER": "tt-sdxl-trace", "MOCK_WARMUP_SECONDS": "0",
		"MOCK_STEP_SECONDS": "0.1", "DEFAULT_INFERENCE_TIMEOUT_SECONDS": "1"}
)

// TestImageStreamSDKs streams /v1/images/generations of the real binary through both
// official SDKs: openai-go's Images.GenerateStreaming here, and the npm package's
// images.generate({stream: true}) in image_stream.cjs.
func TestImageStreamSDKs(t *testing.T) {
	t.Parallel()
	fast, slow := launch(t, "image stream server", streamEnv), launch(t, "slow image stream server", streamSlowEnv)
	fast.waitLiveness(t, http.StatusOK, 20*time.Second)
	slow.waitLiveness(t, http.StatusOK, 20*time.Second)
	ctx := t.Context()

	t.Run("go GenerateStreaming", func(t *testing.T) {
		client := openai.NewClient(option.WithBaseURL(fast.V1()), option.WithAPIKey(apiKey), option.WithMaxRetries(0))
		stream := client.Images.GenerateStreaming(ctx, openai.ImageGenerateParams{
			Prompt: "a lighthouse at dusk", Model: openai.ImageModelGPTImage1, PartialImages: openai.Int(2),
			OutputFormat: openai.ImageGenerateParamsOutputFormatJPEG, Quality: openai.ImageGenerateParamsQualityHigh,
		})
		var types []string
		var partials []int64
		var final []byte
		for stream.Next() {
			ev := stream.Current()
			types = append(types, ev.Type)
			raw, err := base64.StdEncoding.DecodeString(ev.B64JSON)
			require.NoError(t, err)
			cfg, err := jpeg.DecodeConfig(bytes.NewReader(raw))
			require.NoError(t, err)
			require.Equal(t, "jpeg", ev.OutputFormat)
			require.Equal(t, "high", ev.Quality)
			require.Equal(t, "1024x1024", ev.Size)
			switch ev.Type {
			case "image_generation.partial_image":
				partials = append(partials, ev.AsImageGenerationPartialImage().PartialImageIndex)
				require.Equal(t, 256, cfg.Width)
			case "image_generation.completed":
				require.Equal(t, 1024, cfg.Width)
				require.True(t, ev.JSON.Usage.Valid(), "completed carries usage")
				final = raw
			}
		}
		require.NoError(t, stream.Err())
		require.NoError(t, stream.Close())
		require.Equal(t, []string{"image_generation.partial_image", "image_generation.partial_image", "image_generation.completed"}, types)
		require.Equal(t, []int64{0, 1}, partials)
		require.NotEmpty(t, final)
	})

	t.Run("go GenerateStreaming error event", func(t *testing.T) {
		client := openai.NewClient(option.WithBaseURL(slow.V1()), option.WithAPIKey(apiKey), option.WithMaxRetries(0))
		stream := client.Images.GenerateStreaming(ctx, openai.ImageGenerateParams{
			Prompt: "x", PartialImages: openai.Int(3), OutputFormat: openai.ImageGenerateParamsOutputFormatJPEG,
		})
		n := 0
		for stream.Next() {
			require.Equal(t, "image_generation.partial_image", stream.Current().Type)
			n++
		}
		require.Positive(t, n, "a preview before the timeout")
		require.Error(t, stream.Err())
		require.Contains(t, stream.Err().Error(), "timeout")
		require.NoError(t, stream.Close())
	})

	t.Run("node images.generate stream", func(t *testing.T) {
		node, modules := nodeSDK(t)
		ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, "image_stream.cjs")
		cmd.Env = append(os.Environ(), "NODE_PATH="+modules,
			"TT_IMAGE_URL="+fast.V1(), "TT_SLOW_URL="+slow.V1(), "TT_API_KEY="+apiKey)
		out, err := cmd.CombinedOutput()
		t.Logf("node %s:\n%s", mustVersion(node), out)
		require.NoError(t, err, "image_stream.cjs failed")
		require.NotContains(t, string(out), "FAIL")
		require.Equal(t, 6, strings.Count("\n"+string(out), "\nok "), "every check ran")
	})
}
