package families_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/families"
	"github.com/tenstorrent/tt-media-server-go/tests/e2e"
)

// keys is the sorted key set of a JSON object.
func keys(v any) []string {
	return slices.Sorted(maps.Keys(v.(map[string]any)))
}

// HEAD's CNN runners beyond the classifiers, in mock-device mode: listed in /v1/models under
// HEAD's model name, served on both paths of the CNN route with the same answer, in the shape
// HEAD's runner gives: SegFormer labels (its loader is an ImageNet classifier), U-Net a mask,
// YOLOX-Nano ForgeRunner's result with boxes and scores, YOLOv4 its detection list. The boxes
// are where the picture's red rectangle is.
func TestHEADCNNRunnersServedInMockMode(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 320, 240))
	draw.Draw(img, img.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	draw.Draw(img, image.Rect(80, 60, 160, 120), image.NewUniform(color.RGBA{220, 20, 20, 255}), image.Point{}, draw.Src)
	var pic bytes.Buffer
	require.NoError(t, png.Encode(&pic, img))
	prompt := base64.StdEncoding.EncodeToString(pic.Bytes())

	tests := []struct {
		runner, model string
		fields        map[string]any
		check         func(t *testing.T, item any)
	}{
		{catalogue.RunnerSegFormer, "segformer", map[string]any{"min_confidence": 0}, func(t *testing.T, item any) {
			require.Equal(t, []string{"output", "top1_class_label", "top1_class_probability"}, keys(item))
			require.Equal(t, []string{"indices", "labels", "probabilities"}, keys(item.(map[string]any)["output"]))
		}},
		{catalogue.RunnerUNet, "unet", map[string]any{"min_confidence": 0}, func(t *testing.T, item any) {
			require.Equal(t, []string{"output", "top1_class_label", "top1_class_probability"}, keys(item))
			out := item.(map[string]any)["output"].(map[string]any)
			require.Equal(t, []string{"indices", "labels", "mask", "mask_shape", "probabilities"}, keys(out))
			require.Equal(t, []any{224.0, 224.0}, out["mask_shape"])
			mask := out["mask"].([]any)
			require.Len(t, mask, 224)
			require.Len(t, mask[0], 224)
			// White is grey-light (sky, 10); the red rectangle is car (13).
			require.Equal(t, 10.0, mask[10].([]any)[10])
			require.Equal(t, 13.0, mask[84].([]any)[84])
			require.Equal(t, "sky", item.(map[string]any)["top1_class_label"])
		}},
		{catalogue.RunnerYOLOXNano, "yolox_nano", map[string]any{"min_confidence": 0, "top_k": 5}, func(t *testing.T, item any) {
			require.Equal(t, []string{"output", "top1_class_label", "top1_class_probability"}, keys(item))
			out := item.(map[string]any)["output"].(map[string]any)
			require.Equal(t, []string{"boxes", "indices", "labels", "probabilities", "scores"}, keys(out))
			box := out["boxes"].([]any)[0].([]any)
			require.InDeltaSlice(t, []any{80.0, 60.0, 160.0, 120.0}, box, 5)
			require.Equal(t, out["labels"].([]any)[0], item.(map[string]any)["top1_class_label"])
		}},
		{catalogue.RunnerYOLOv4, "yolov4", nil, func(t *testing.T, item any) {
			dets := item.([]any)
			require.Len(t, dets, 1)
			require.Equal(t, []string{"bbox", "class_id", "class_name", "confidence"}, keys(dets[0]))
			bbox := dets[0].(map[string]any)["bbox"]
			require.Equal(t, []string{"x1", "x2", "y1", "y2"}, keys(bbox))
			b := bbox.(map[string]any)
			require.InDeltaSlice(t, []float64{0.25, 0.25, 0.5, 0.5}, []float64{b["x1"].(float64), b["y1"].(float64), b["x2"].(float64), b["y2"].(float64)}, 0.02)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.runner, func(t *testing.T) {
			do := serve(t, families.NewRegistry(), map[string]string{"MODEL_RUNNER": tc.runner, "MOCK_CNN_SECONDS": "0"})
			status, models := do(http.MethodGet, "/v1/models", nil)
			require.Equal(t, http.StatusOK, status)
			require.Equal(t, tc.model, models["data"].([]any)[0].(map[string]any)["id"])

			fields := map[string]any{"prompt": prompt}
			maps.Copy(fields, tc.fields)
			body, err := json.Marshal(fields)
			require.NoError(t, err)
			var answers []map[string]any
			for _, path := range []string{"/v1/cnn/search-image", "/cnn/search-image"} {
				status, answer := do(http.MethodPost, path, body)
				require.Equal(t, http.StatusOK, status, "%s: %v", path, answer)
				require.Equal(t, []string{"image_data", "status"}, keys(answer))
				require.Len(t, answer["image_data"], 1)
				tc.check(t, answer["image_data"].([]any)[0])
				answers = append(answers, answer)
			}
			require.Equal(t, answers[0], answers[1], "both paths answer alike")
		})
	}
}

// YOLOv4's runner reads only the image: top_k, min_confidence and verbose_json are refused
// by name; U-Net's mask has no verbose_json.
func TestHEADCNNRunnersRefuseUnreadFields(t *testing.T) {
	var pic bytes.Buffer
	require.NoError(t, png.Encode(&pic, image.NewRGBA(image.Rect(0, 0, 8, 8))))
	prompt := base64.StdEncoding.EncodeToString(pic.Bytes())
	tests := []struct {
		runner, field string
		value         any
	}{
		{catalogue.RunnerYOLOv4, "top_k", 5},
		{catalogue.RunnerYOLOv4, "min_confidence", 10},
		{catalogue.RunnerYOLOv4, "response_format", "verbose_json"},
		{catalogue.RunnerUNet, "response_format", "verbose_json"},
	}
	for _, tc := range tests {
		t.Run(tc.runner+"/"+tc.field, func(t *testing.T) {
			do := serve(t, families.NewRegistry(), map[string]string{"MODEL_RUNNER": tc.runner, "MOCK_CNN_SECONDS": "0"})
			body, err := json.Marshal(map[string]any{"prompt": prompt, tc.field: tc.value})
			require.NoError(t, err)
			status, answer := do(http.MethodPost, "/cnn/search-image", body)
			require.Equal(t, http.StatusBadRequest, status)
			require.Contains(t, answer["detail"], tc.field)
		})
	}
}

// The answers of HEAD's Forge CNN runners are what HEAD's own response model makes of them:
// each is parsed by HEAD's real ImageSearchResponse (domain/image_search_response.py, pydantic
// 2) and dumped back unchanged — no field missing, extra or retyped. YOLOv4's detection list
// is what HEAD's TTYolov4Runner formats, and HEAD's ImageSearchResponse rejects it (why HEAD's
// own tt-yolov4 answers no client: docs/API.md).
func TestHEADCNNAnswersAreHEADsResponseModel(t *testing.T) {
	road := e2e.HeadRoad(t, filepath.Join("..", ".."))
	head, err := filepath.Abs(e2e.HeadDir(filepath.Join("..", "..")))
	require.NoError(t, err)
	img := image.NewRGBA(image.Rect(0, 0, 96, 64))
	draw.Draw(img, img.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	draw.Draw(img, image.Rect(20, 10, 50, 40), image.NewUniform(color.RGBA{20, 40, 220, 255}), image.Point{}, draw.Src)
	var pic bytes.Buffer
	require.NoError(t, png.Encode(&pic, img))
	prompt := base64.StdEncoding.EncodeToString(pic.Bytes())
	// One interpreter for every answer (a Python start costs seconds on a loaded box): each
	// line in is an answer, each line out HEAD's dump of it or {"error": ...}.
	const roundTrip = `import json, sys
from domain.image_search_response import ImageSearchResponse
for line in sys.stdin:
    try:
        print(ImageSearchResponse(**json.loads(line)).model_dump_json())
    except Exception as e:
        print(json.dumps({"error": str(e)}))`
	tests := []struct {
		runner string
		fields map[string]any
		valid  bool
	}{
		{catalogue.RunnerSegFormer, map[string]any{"min_confidence": 0}, true},
		{catalogue.RunnerUNet, map[string]any{"min_confidence": 0}, true},
		{catalogue.RunnerYOLOXNano, map[string]any{"min_confidence": 0}, true},
		{catalogue.RunnerYOLOXNano, map[string]any{"response_format": "verbose_json", "min_confidence": 0}, true},
		{catalogue.RunnerYOLOv4, nil, false},
	}
	var answers [][]byte
	for _, tc := range tests {
		do := serve(t, families.NewRegistry(), map[string]string{"MODEL_RUNNER": tc.runner, "MOCK_CNN_SECONDS": "0"})
		fields := map[string]any{"prompt": prompt}
		maps.Copy(fields, tc.fields)
		body, err := json.Marshal(fields)
		require.NoError(t, err)
		status, answer := do(http.MethodPost, "/cnn/search-image", body)
		require.Equal(t, http.StatusOK, status, "%s: %v", tc.runner, answer)
		ours, err := json.Marshal(answer)
		require.NoError(t, err)
		answers = append(answers, ours)
	}
	cmd := exec.CommandContext(t.Context(), road.Exe, "-c", roundTrip)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+head+string(os.PathListSeparator)+road.PythonPath)
	cmd.Stdin = bytes.NewReader(append(bytes.Join(answers, []byte("\n")), '\n'))
	out, err := cmd.Output()
	require.NoError(t, err)
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	require.Len(t, lines, len(tests))
	for i, tc := range tests {
		var got map[string]any
		require.NoError(t, json.Unmarshal(lines[i], &got))
		if !tc.valid {
			require.Contains(t, got, "error", "HEAD's ImageSearchResponse took %s's answer", tc.runner)
			continue
		}
		require.NotContains(t, got, "error", "HEAD's ImageSearchResponse refused %s's answer %s", tc.runner, answers[i])
		require.JSONEq(t, string(answers[i]), string(lines[i]), tc.runner)
	}
}
