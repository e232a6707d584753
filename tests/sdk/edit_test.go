package sdk_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// editInputs are the image (48x48), its mask (transparent centre) and a 10x10 mask.
func editInputs(t *testing.T) (src, mask, small []byte) {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 48, 48))
	m := image.NewNRGBA(image.Rect(0, 0, 48, 48))
	for y := range 48 {
		for x := range 48 {
			img.Set(x, y, color.NRGBA{uint8(5 * x), uint8(5 * y), 120, 255})
			a := uint8(255)
			if x >= 12 && x < 36 && y >= 12 && y < 36 {
				a = 0 // transparent: repaint here
			}
			m.Set(x, y, color.NRGBA{0, 0, 0, a})
		}
	}
	return editPNG(t, img), editPNG(t, m), editPNG(t, image.NewGray(image.Rect(0, 0, 10, 10)))
}

func startEditServer(t *testing.T) *proc {
	t.Helper()
	p := launch(t, "edit server", map[string]string{"MODEL_RUNNER": "tt-sdxl-edit", "MOCK_WARMUP_SECONDS": "0", "MOCK_STEP_SECONDS": "0"})
	p.waitLiveness(t, http.StatusOK, 20*time.Second)
	return p
}

// TestNodeSDKImageEdit runs image_edit.cjs: the official npm package's images.edit against
// tt-sdxl-edit (multipart image and mask, n, size, response_format) and its BadRequestError.
func TestNodeSDKImageEdit(t *testing.T) {
	t.Parallel()
	node, modules := nodeSDK(t)
	dir := t.TempDir()
	src, mask, small := editInputs(t)
	paths := map[string][]byte{"in.png": src, "mask.png": mask, "small.png": small}
	for name, data := range paths {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o600))
	}
	p := startEditServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "image_edit.cjs")
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "TT_EDIT_URL="+p.V1(), "TT_API_KEY="+apiKey,
		"TT_IMAGE_PNG="+filepath.Join(dir, "in.png"), "TT_MASK_PNG="+filepath.Join(dir, "mask.png"),
		"TT_SMALL_MASK_PNG="+filepath.Join(dir, "small.png"))
	out, err := cmd.CombinedOutput()
	t.Logf("node %s:\n%s", mustVersion(node), out)
	require.NoError(t, err, "image_edit.cjs failed")
	require.NotContains(t, string(out), "FAIL")
	require.Equal(t, 2, strings.Count(string(out), "ok "), "every check ran")
}

// TestGoSDKImageEdit: openai-go's Images.Edit (multipart image, mask, prompt, n, size,
// response_format) against MODEL_RUNNER=tt-sdxl-edit, and its typed error for a mask of the
// wrong size.
func TestGoSDKImageEdit(t *testing.T) {
	t.Parallel()
	p := startEditServer(t)
	client := openai.NewClient(option.WithBaseURL(p.V1()), option.WithAPIKey(apiKey), option.WithMaxRetries(0))
	ctx := t.Context()

	src, mask, small := editInputs(t)
	res, err := client.Images.Edit(ctx, openai.ImageEditParams{
		Image:  openai.ImageEditParamsImageUnion{OfFile: bytes.NewReader(src)},
		Mask:   bytes.NewReader(mask),
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
		Image:  openai.ImageEditParamsImageUnion{OfFile: bytes.NewReader(src)},
		Mask:   bytes.NewReader(small),
		Prompt: "x",
	})
	var apiErr *openai.Error
	require.True(t, errors.As(err, &apiErr), "%v", err)
	require.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
	require.Equal(t, "mask", apiErr.Param)
	require.Contains(t, apiErr.Message, "mask is 10x10 but image is 48x48")
}
