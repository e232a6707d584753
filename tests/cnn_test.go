package tests

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/media/turbojpeg"
)

const cnnPath = "/cnn/search-image"

// drawPicture draws a w×h test picture: a diagonal gradient with a disc whose colour is c.
func drawPicture(w, h int, c color.RGBA) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	cx, cy, r := w/2, h/2, min(w, h)/3
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			dx, dy := x-cx, y-cy
			if dx*dx+dy*dy < r*r {
				img.SetRGBA(x, y, c)
				continue
			}
			img.SetRGBA(x, y, color.RGBA{uint8(255 * x / w), uint8(255 * y / h), 90, 255})
		}
	}
	return img
}

func encodePNG(t *testing.T, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

func encodeJPEG(t *testing.T, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, jpeg.Encode(&b, img, &jpeg.Options{Quality: 90}))
	return b.Bytes()
}

var probability = regexp.MustCompile(`^[0-9]{1,3}\.[0-9]{4}%$`)

// cnnAnswer is the classification answer's shape.
type cnnAnswer struct {
	ImageData []struct {
		Label       string         `json:"top1_class_label"`
		Probability string         `json:"top1_class_probability"`
		Output      map[string]any `json:"output"`
	} `json:"image_data"`
	Status string `json:"status"`
}

// requireClassification checks a 200 classification answer and returns its top-1 label.
func requireClassification(t *testing.T, r reply, labels map[string]bool) string {
	t.Helper()
	require.Equalf(t, http.StatusOK, r.Status, "%s", r)
	var a cnnAnswer
	r.JSON(t, &a)
	require.Equal(t, "success", a.Status)
	require.Len(t, a.ImageData, 1)
	it := a.ImageData[0]
	require.NotEmpty(t, it.Label)
	require.Regexp(t, probability, it.Probability)
	p, err := strconv.ParseFloat(strings.TrimSuffix(it.Probability, "%"), 64)
	require.NoError(t, err)
	require.True(t, p > 0 && p <= 100, "probability %v%% outside (0, 100]", p)
	require.NotEmpty(t, it.Output, "output is empty")
	if labels != nil {
		require.Truef(t, labels[it.Label], "label %q is not an ImageNet-1k class", it.Label)
	}
	return it.Label
}

// imagenetLabels reads the ImageNet-1k class list from the shared test data, or nil if absent.
func imagenetLabels(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "..", "shared", "testdata", "resnet", "imagenet_classes.json"))
	if err != nil {
		t.Logf("imagenet_classes.json absent (%v): labels are not checked against the class list", err)
		return nil
	}
	var list []string
	require.NoError(t, json.Unmarshal(data, &list))
	require.Len(t, list, 1000)
	set := make(map[string]bool, len(list))
	for _, l := range list {
		set[l] = true
	}
	// torchvision's list (which the server embeds) renames the two duplicate ILSVRC names.
	set["crane bird"], set["maillot tank suit"] = true, true
	return set
}

func TestCNN(t *testing.T) {
	t.Parallel()
	s := startServer(t, map[string]string{"MODEL_RUNNER": "tt-xla-resnet"})
	labels := imagenetLabels(t)
	pngData := encodePNG(t, drawPicture(320, 240, color.RGBA{200, 30, 30, 255}))
	jpegData := encodeJPEG(t, drawPicture(224, 224, color.RGBA{20, 40, 220, 255}))
	promptBody := func(img []byte) string {
		return fmt.Sprintf(`{"prompt":"%s"}`, base64.StdEncoding.EncodeToString(img))
	}

	var pngAnswer []byte
	t.Run("JSON base64 PNG", func(t *testing.T) {
		r := s.postJSON(t, cnnPath, promptBody(pngData))
		requireClassification(t, r, labels)
		pngAnswer = r.Body
	})
	t.Run("JSON base64 JPEG", func(t *testing.T) {
		requireClassification(t, s.postJSON(t, cnnPath, promptBody(jpegData)), labels)
	})
	t.Run("same image gives the same answer", func(t *testing.T) {
		require.NotNil(t, pngAnswer)
		r := s.postJSON(t, cnnPath, promptBody(pngData))
		requireClassification(t, r, labels)
		require.Equal(t, string(pngAnswer), string(r.Body))
	})
	t.Run("data URL prefix", func(t *testing.T) {
		require.NotNil(t, pngAnswer)
		body := fmt.Sprintf(`{"prompt":"data:image/png;base64,%s"}`, base64.StdEncoding.EncodeToString(pngData))
		r := s.postJSON(t, cnnPath, body)
		requireClassification(t, r, labels)
		require.Equal(t, string(pngAnswer), string(r.Body))
	})
	t.Run("multipart upload", func(t *testing.T) {
		require.NotNil(t, pngAnswer)
		r := s.postMultipart(t, cnnPath, file("picture.png", "image/png", pngData))
		requireClassification(t, r, labels)
		require.Equal(t, string(pngAnswer), string(r.Body), "multipart and JSON answers differ for one image")
	})
	t.Run("invalid base64 is 422", func(t *testing.T) {
		it := validationItem(t, s.postJSON(t, cnnPath, `{"prompt":"this is %%% not base64!"}`))
		require.Equal(t, []any{"body", "prompt"}, it["loc"])
	})
	t.Run("missing prompt is 422", func(t *testing.T) {
		it := validationItem(t, s.postJSON(t, cnnPath, `{}`))
		require.Equal(t, "missing", it["type"])
		require.Equal(t, []any{"body", "prompt"}, it["loc"])
	})
	t.Run("not an image is 400", func(t *testing.T) {
		r := s.postJSON(t, cnnPath, promptBody([]byte("just some text, no pixels here")))
		require.Equalf(t, http.StatusBadRequest, r.Status, "%s", r)
		detail, ok := r.obj(t)["detail"].(string)
		require.True(t, ok)
		require.NotEmpty(t, detail)
	})
	t.Run("truncated PNG is 400", func(t *testing.T) {
		r := s.postJSON(t, cnnPath, promptBody(pngData[:len(pngData)/2]))
		require.Equalf(t, http.StatusBadRequest, r.Status, "%s", r)
	})
	t.Run("no credentials is 401", func(t *testing.T) {
		r := do(t, http.MethodPost, s.URL+cnnPath, []byte(promptBody(pngData)), "Content-Type", "application/json")
		require.Equalf(t, http.StatusUnauthorized, r.Status, "%s", r)
	})
}

// TestCodecPaths runs the binary on both codec paths (NATIVE_CODECS=auto, the default, and
// off) and in fast mode (CNN_FAST_PREPROCESS): each says at start-up and in /tt-liveness which
// JPEG/WebP codecs serve, classifies a JPEG and returns a WebP.
func TestCodecPaths(t *testing.T) {
	t.Parallel()
	nativeJPEG := turbojpeg.Load() == nil
	if os.Getenv("CI") == "true" {
		require.True(t, nativeJPEG, "CI installs libturbojpeg0 (scripts/install-codecs.sh): %v", turbojpeg.Load())
	}
	photo := encodeJPEG(t, drawPicture(1200, 900, color.RGBA{20, 40, 220, 255}))
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string // image_codecs.jpeg
	}{
		{"auto", map[string]string{}, map[bool]string{true: "native", false: "go"}[nativeJPEG]},
		{"off", map[string]string{"NATIVE_CODECS": "off"}, "go"},
		{"fast", map[string]string{"CNN_FAST_PREPROCESS": "true"}, map[bool]string{true: "native", false: "go"}[nativeJPEG]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"MODEL_RUNNER": "tt-xla-resnet"}
			for k, v := range tc.env {
				env[k] = v
			}
			s := startServer(t, env)
			r := s.get(t, "/tt-liveness")
			var raw struct {
				Codecs map[string]string `json:"image_codecs"`
			}
			r.JSON(t, &raw)
			require.Equal(t, tc.want, raw.Codecs["jpeg"], "%s", r)
			require.Contains(t, s.stderr.String(), "image codecs", "said once at start-up")
			require.Equal(t, 1, strings.Count(s.stderr.String(), "msg=\"image codecs\""))
			if tc.want == "go" {
				require.Contains(t, raw.Codecs["jpeg_detail"], "pure Go")
			}
			requireClassification(t, s.postJSON(t, cnnPath, fmt.Sprintf(`{"prompt":"%s"}`, base64.StdEncoding.EncodeToString(photo))), imagenetLabels(t))
		})
	}
}
