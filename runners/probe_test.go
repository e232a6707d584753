package runners

import (
	"image"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
)

func TestProbeRequest(t *testing.T) {
	tests := []struct {
		runner string
		svc    Service
		good   Result
	}{
		{catalogue.RunnerSDXL, ServiceImage, &ImageResult{Images: []image.Image{image.NewRGBA(image.Rect(0, 0, 8, 8))}}},
		{catalogue.RunnerSDXLEdit, ServiceImage, &ImageResult{Images: []image.Image{image.NewRGBA(image.Rect(0, 0, 8, 8))}}},
		{"tt-whisper", ServiceAudio, &TranscriptionResult{Text: ""}},
		{"tt-xla-resnet", ServiceCNN, &CNNResult{Top: []Classification{{Label: "x", Probability: 0.5}}}},
	}
	for _, tc := range tests {
		for _, deep := range []bool{false, true} {
			req, check := ProbeRequest(tc.runner, tc.svc, deep)
			require.NotNil(t, req)
			require.NoError(t, check(tc.good), "%s deep=%v", tc.runner, deep)
			require.Error(t, check(nil))
			require.Error(t, check(&otherResult{}))
		}
	}
	shallow, _ := ProbeRequest(catalogue.RunnerSDXL, ServiceImage, false)
	deep, _ := ProbeRequest(catalogue.RunnerSDXL, ServiceImage, true)
	require.Equal(t, 1, shallow.(*ImageRequest).NumInferenceSteps)
	require.Equal(t, 20, deep.(*ImageRequest).NumInferenceSteps)
	require.Equal(t, 5.0, shallow.(*ImageRequest).GuidanceScale)
	sd35, _ := ProbeRequest(catalogue.RunnerSD35, ServiceImage, false)
	require.Equal(t, 3.5, sd35.(*ImageRequest).GuidanceScale, "the model's default guidance")
	edit, _ := ProbeRequest(catalogue.RunnerSDXLEdit, ServiceImage, false)
	require.NotNil(t, edit.(*ImageRequest).Mask, "an inpainting runner's probe carries a mask")
	a, _ := ProbeRequest("tt-whisper", ServiceAudio, true)
	require.Len(t, a.(*AudioRequest).Samples, 160000)
	_, check := ProbeRequest("x", ServiceCNN, false)
	require.Error(t, check(&CNNResult{Top: []Classification{{Probability: 2}}}))
	_, check = ProbeRequest("x", "video", false)
	require.Error(t, check(nil))
}

// otherResult is a result of no route's type.
type otherResult struct{}

func (*otherResult) Service() Service { return "" }
