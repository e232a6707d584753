package tests

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	_ "image/jpeg" // the answers' pictures
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/tests/e2e"
)

// pythonTableRoad is the road TestPythonEveryRunner hosts the fakes on: the plain stand-ins in
// go test ./... (a worker on HEAD's road imports torch: seconds of CPU each, ~30 of them),
// HEAD's real classes when TT_TEST_PYTHON_ROAD=head (scripts/test-python-backend.sh, in CI).
func pythonTableRoad(t *testing.T) e2e.PythonRoad {
	if os.Getenv("TT_TEST_PYTHON_ROAD") == "head" {
		return e2e.HeadRoad(t, repoRoot)
	}
	return e2e.PlainRoad(t, repoRoot)
}

// pythonTableModels are the names TestPythonEveryRunner serves: every catalogued name on
// HEAD's road (scripts/test-python-backend.sh runs that sweep in CI) or with
// TT_TEST_PYTHON_SWEEP=full; otherwise (go test ./..., the plain road) the first name of each
// kind (pythonKind), about half the names and server starts.
func pythonTableModels(road e2e.PythonRoad) []catalogue.Model {
	all := catalogue.Models()
	if road.Name == "head" || os.Getenv("TT_TEST_PYTHON_SWEEP") == "full" {
		return all
	}
	seen := map[string]bool{}
	var sample []catalogue.Model
	for _, m := range all {
		if k := pythonKind(m); !seen[k] {
			seen[k] = true
			sample = append(sample, m)
		}
	}
	return sample
}

// pythonKind is what distinguishes one name's path through the Python road from another's: its
// service, the module of its fake (names of one module share its code, e.g. dit_runners' table
// of DiT classes) and its answer's shape (an image model's input, a CNN's output, a video
// model's image prompt, frame rate and whether its frame count is fixed: MiniMax's is not; at
// 24 fps LTX-2.3, which encodes its MP4 itself).
func pythonKind(m catalogue.Model) string {
	k := string(m.Service) + " " + m.PythonClass[:strings.LastIndex(m.PythonClass, ".")]
	switch m.Service {
	case catalogue.ServiceImage:
		k += fmt.Sprintf(" input %d", m.Image.Input)
	case catalogue.ServiceCNN:
		k += fmt.Sprintf(" output %d", m.CNN.Output)
	case catalogue.ServiceVideo:
		k += fmt.Sprintf(" i2v %t fps %d fixed %t", m.Video.I2V, m.Video.FPS, m.Video.Frames > 0)
	}
	return k
}

// TestPythonEveryRunner: for every runner name of the catalogue (HEAD's ModelRunners),
// DEVICE_BACKEND=python MODEL_RUNNER=<name> hosts the fake of HEAD's class for that name (one
// RUNNERS entry in tt_worker.py, the fake at HEAD's module path) and serves the name's route
// with the output of its shape: pictures of the model's size, class labels, a transcript,
// speech, an MP4 of the model's frame count; a detector's boxes, a segmenter's mask. Runners
// of different services share a server (MODEL_POOLS, one pool each), so a round of up to five
// names costs one server start. go test ./... serves one name of each kind on the plain road
// (pythonTableModels); scripts/test-python-backend.sh serves every name on HEAD's.
func TestPythonEveryRunner(t *testing.T) {
	t.Parallel()
	needFFmpeg(t)
	road := pythonTableRoad(t)
	bySvc := map[catalogue.Service][]catalogue.Model{}
	for _, m := range pythonTableModels(road) {
		bySvc[m.Service] = append(bySvc[m.Service], m)
	}
	for round := 0; ; round++ {
		var models []catalogue.Model
		for _, svc := range catalogue.Services() {
			if round < len(bySvc[svc]) {
				models = append(models, bySvc[svc][round])
			}
		}
		if len(models) == 0 {
			break
		}
		names := make([]string, len(models))
		for i, m := range models {
			names[i] = m.Name
		}
		t.Run(strings.Join(names, "+"), func(t *testing.T) {
			t.Parallel()
			pools := make([]string, len(models))
			for i, m := range models {
				pools[i] = m.Name + ":(" + strconv.Itoa(i) + ")"
			}
			dir := t.TempDir()
			s := startPython(t, road, map[string]string{"MODEL_POOLS": strings.Join(pools, ";"),
				"MOCK_STEP_SECONDS": "0.001", "MOCK_CNN_SECONDS": "0.001", "MOCK_AUDIO_SECONDS_PER_SECOND": "0.001",
				"MOCK_TTS_STEP_SECONDS": "0", "MOCK_VIDEO_SCALE": "8", "TT_VIDEO_OUTPUT_DIR": filepath.Join(dir, "out"),
				"JOB_DATABASE_PATH": filepath.Join(dir, "jobs.db"), "CANARY_ENABLED": "false"})
			for _, m := range models {
				t.Run(m.Name, func(t *testing.T) {
					cls := m.PythonClass[strings.LastIndex(m.PythonClass, ".")+1:]
					require.Contains(t, s.stderr.String(), "runner "+m.Name+": "+m.PythonClass[:strings.LastIndex(m.PythonClass, ".")]+"."+cls)
					servePythonRunner(t, s, m)
				})
			}
		})
	}
}

// solidPNG is a w×h picture of one colour, PNG-encoded.
func solidPNG(t *testing.T, w, h int, c color.RGBA) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Rect, image.NewUniform(c), image.Point{}, draw.Src)
	return encodePNG(t, img)
}

// servePythonRunner sends m's route one request and checks the answer's shape.
func servePythonRunner(t *testing.T, s *server, m catalogue.Model) {
	b64 := base64.StdEncoding.EncodeToString
	switch m.Service {
	case catalogue.ServiceImage:
		var r reply
		switch m.Image.Input {
		case catalogue.InputNone:
			r = s.postJSON(t, "/v1/images/generations", `{"prompt":"a lighthouse at dusk","n":1,"output_format":"png"}`)
		case catalogue.InputTransform:
			r = s.postJSON(t, m.Routes[0].V1, fmt.Sprintf(`{"prompt":"a lighthouse","image":%q,"seed":1}`, b64(solidPNG(t, 64, 64, color.RGBA{R: 200, A: 255}))))
		case catalogue.InputInpaint:
			r = s.postJSON(t, m.Routes[0].V1, fmt.Sprintf(`{"prompt":"a lighthouse","image":%q,"mask":%q,"seed":1}`,
				b64(solidPNG(t, 64, 64, color.RGBA{R: 200, A: 255})), b64(solidPNG(t, 64, 64, color.RGBA{R: 255, G: 255, B: 255, A: 255}))))
		}
		require.Equalf(t, http.StatusOK, r.Status, "%s", r)
		body := r.obj(t)
		var enc string
		if data, ok := body["data"].([]any); ok {
			enc = data[0].(map[string]any)["b64_json"].(string)
		} else {
			enc = body["images"].([]any)[0].(string)
		}
		raw, err := base64.StdEncoding.DecodeString(enc)
		require.NoError(t, err)
		img, _, err := image.Decode(bytes.NewReader(raw))
		require.NoError(t, err)
		size := m.Image.Size
		if size == 0 {
			size = 1024 // SDXL_IMAGE_RESOLUTION's default
		}
		require.Equal(t, []int{size, size}, []int{img.Bounds().Dx(), img.Bounds().Dy()}, "the model's picture size")
	case catalogue.ServiceCNN:
		servePythonCNN(t, s, m)
	case catalogue.ServiceAudio:
		r := s.postJSON(t, audioPath, fmt.Sprintf(`{"stream":false,"file":"%s"}`, b64(toneGapTone())))
		require.Equalf(t, http.StatusOK, r.Status, "%s", r)
		require.Contains(t, string(r.Body), "Python fake transcription")
	case catalogue.ServiceTextToSpeech:
		r := s.postJSON(t, "/v1/audio/speech", `{"text":"Every runner speaks."}`)
		require.Equalf(t, http.StatusOK, r.Status, "%s", r)
		d := decodeSpeech(t, r.Body)
		require.Len(t, d.Samples, int(fakeSpeechSeconds("Every runner speaks.")*16000+0.5))
	case catalogue.ServiceVideo:
		path, body := "/v1/videos/generations", `{"prompt":"a lighthouse at dusk","seed":5}`
		if m.Video.I2V {
			path, body = "/v1/videos/generations/i2v", fmt.Sprintf(`{"prompt":"a lighthouse","seed":5,"image_prompts":[{"image":%q,"frame_pos":0}]}`,
				b64(solidPNG(t, 64, 40, color.RGBA{R: 240, G: 200, B: 10, A: 255})))
		}
		r := s.postJSON(t, path, body)
		require.Equalf(t, http.StatusAccepted, r.Status, "%s", r)
		id := r.obj(t)["id"].(string)
		job := videoJob(t, s, id)
		require.Equal(t, "completed", job["status"], "%v", job)
		info := probeDownload(t, s, id)
		require.Equal(t, "h264", info.Codec)
		require.InDelta(t, m.Video.FPS, info.FPS, 1e-9, "the model's frame rate")
		if m.Video.Frames > 0 {
			require.Equal(t, m.Video.Frames, info.Frames, "the model's frame count")
		} else {
			require.Positive(t, info.Frames)
		}
	default:
		t.Fatalf("no route check for service %s", m.Service)
	}
}

// servePythonCNN sends m's CNN route a picture and checks the answer is the Go road's for
// m's output kind (server/cnn_answer.go): labels, YOLOv4's detections, a Forge detector's
// boxes and scores, or U-Net's mask.
func servePythonCNN(t *testing.T, s *server, m catalogue.Model) {
	pic := image.NewRGBA(image.Rect(0, 0, 96, 64))
	draw.Draw(pic, pic.Rect, image.NewUniform(color.RGBA{R: 30, G: 160, B: 90, A: 255}), image.Point{}, draw.Src)
	draw.Draw(pic, image.Rect(48, 0, 96, 32), image.NewUniform(color.RGBA{R: 250, G: 240, B: 230, A: 255}), image.Point{}, draw.Src)
	parts := []formPart{file("x.png", "image/png", encodePNG(t, pic))}
	if m.CNN.Output != catalogue.OutputBoxes { // YOLOv4 refuses top_k and min_confidence
		parts = append(parts, field("top_k", "3"), field("min_confidence", "0"))
	}
	r := s.postMultipart(t, "/v1"+cnnPath, parts...)
	require.Equalf(t, http.StatusOK, r.Status, "%s", r)
	data := r.obj(t)["image_data"].([]any)
	if m.CNN.Output == catalogue.OutputBoxes {
		dets := data[0].([]any)
		require.NotEmpty(t, dets, "%s", r)
		for _, d := range dets {
			det := d.(map[string]any)
			require.ElementsMatch(t, []string{"bbox", "confidence", "class_id", "class_name"}, keys(det))
			box := det["bbox"].(map[string]any)
			require.ElementsMatch(t, []string{"x1", "y1", "x2", "y2"}, keys(box))
			require.Less(t, box["x1"].(float64), box["x2"].(float64))
			require.LessOrEqual(t, box["x2"].(float64), 1.0, "YOLOv4's boxes are fractions of the image")
			require.GreaterOrEqual(t, det["confidence"].(float64), 0.3)
			require.NotEmpty(t, det["class_name"])
		}
		return
	}
	item := data[0].(map[string]any)
	require.NotEmpty(t, item["top1_class_label"])
	out := item["output"].(map[string]any)
	switch m.CNN.Output {
	case catalogue.OutputLabelBoxes:
		require.ElementsMatch(t, []string{"labels", "probabilities", "indices", "boxes", "scores"}, keys(out))
		require.NotEmpty(t, out["labels"])
		require.Len(t, out["boxes"], len(out["labels"].([]any)))
		require.Len(t, out["scores"], len(out["labels"].([]any)))
		box := out["boxes"].([]any)[0].([]any)
		require.Len(t, box, 4)
		require.Less(t, box[0].(float64), box[2].(float64))
		require.LessOrEqual(t, box[2].(float64), 96.0, "YOLOX's boxes are pixels of the image")
	case catalogue.OutputMask:
		require.ElementsMatch(t, []string{"labels", "probabilities", "indices", "mask", "mask_shape"}, keys(out))
		shape := out["mask_shape"].([]any)
		mask := out["mask"].([]any)
		require.Len(t, mask, int(shape[0].(float64)))
		require.Len(t, mask[0], int(shape[1].(float64)))
		seen := map[float64]bool{}
		for _, row := range mask {
			for _, k := range row.([]any) {
				seen[k.(float64)] = true
			}
		}
		require.Len(t, seen, 2, "the mask follows the picture's two colours")
	default:
		require.ElementsMatch(t, []string{"labels", "probabilities", "indices"}, keys(out))
		require.Len(t, out["labels"], 3)
	}
}

// keys is a JSON object's keys.
func keys(o map[string]any) []string {
	ks := make([]string, 0, len(o))
	for k := range o {
		ks = append(ks, k)
	}
	return ks
}
