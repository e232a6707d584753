package sdk_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"
)

func editPNG(t *testing.T, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

// TestGoSDKImageEdit: openai-go's Images.Edit (multipart image, mask, prompt, n, size,
// response_format) against MODEL_RUNNER=tt-sdxl-edit, and its typed error for a mask of the
// wrong size.
func TestGoSDKImageEdit(t *testing.T) {
	t.Parallel()
	p := launch(t, "edit server", map[string]string{"MODEL_RUNNER": "tt-sdxl-edit", "MOCK_WARMUP_SECONDS": "0", "MOCK_STEP_SECONDS": "0"})
	p.waitLiveness(t, http.StatusOK, 20*time.Second)
	client := openai.NewClient(option.WithBaseURL(p.V1()), option.WithAPIKey(apiKey), option.WithMaxRetries(0))
	ctx := t.Context()

	src := image.NewNRGBA(image.Rect(0, 0, 48, 48))
	mask := image.NewNRGBA(image.Rect(0, 0, 48, 48))
	for y := range 48 {
		for x := range 48 {
			src.Set(x, y, color.NRGBA{uint8(5 * x), uint8(5 * y), 120, 255})
			a := uint8(255)
			if x >= 12 && x < 36 && y >= 12 && y < 36 {
				a = 0 // transparent: repaint here
			}
			mask.Set(x, y, color.NRGBA{0, 0, 0, a})
		}
	}
	res, err := client.Images.Edit(ctx, openai.ImageEditParams{
		Image:  openai.ImageEditParamsImageUnion{OfFile: bytes.NewReader(editPNG(t, src))},
		Mask:   bytes.NewReader(editPNG(t, mask)),
		Prompt: "a red square", N: openai.Int(2), Size: openai.ImageEditParamsSize1024x1024,
		ResponseFormat: openai.ImageEditParamsResponseFormatB64JSON,
	})
	require.NoError(t, err)
	require.Len(t, res.Data, 2)
	for _, d := range res.Data {
		raw, err := base64.StdEncoding.DecodeString(d.B64JSON)
		require.NoError(t, err)
		_, _, err = image.Decode(bytes.NewReader(raw))
		require.NoError(t, err)
	}

	_, err = client.Images.Edit(ctx, openai.ImageEditParams{
		Image:  openai.ImageEditParamsImageUnion{OfFile: bytes.NewReader(editPNG(t, src))},
		Mask:   bytes.NewReader(editPNG(t, image.NewGray(image.Rect(0, 0, 10, 10)))),
		Prompt: "x",
	})
	var apiErr *openai.Error
	require.True(t, errors.As(err, &apiErr), "%v", err)
	require.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
	require.Equal(t, "mask", apiErr.Param)
	require.Contains(t, apiErr.Message, "mask is 10x10 but image is 48x48")
}
