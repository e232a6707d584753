package server

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/tests/e2e"
)

// headYOLOX runs HEAD's REAL ForgeRunner._postprocess_model_output and _format_response
// (tt_model_runners/forge_runners/forge_runner.py; torch and torch_xla, which they do not use,
// stubbed)
// over a loader whose output_postprocess is tt-forge-models' YOLOX one at HEAD's
// FORGE_MODELS_SHA 2e59f9b5 (yolox/pytorch/loader.py: detections best first, probabilities
// f"{score * 100:.4f}%", boxes and numeric scores), then wraps the result in HEAD's real
// ImageSearchResponse as its CNN route does, and hands it to our worker's cnn_result (what the
// Python road carries to the server). Each line in is a case, each line out
// {"head": HEAD's answer, "wire": the worker's carry}.
const headYOLOX = `import json, logging, sys, types
for name in ("torch", "torch_xla", "torch_xla.core", "torch_xla.core.xla_model", "torch_xla.runtime"):
    sys.modules[name] = types.ModuleType(name)
sys.modules["torch_xla"].core = sys.modules["torch_xla.core"]
sys.modules["torch_xla"].runtime = sys.modules["torch_xla.runtime"]
sys.modules["torch_xla.core"].xla_model = sys.modules["torch_xla.core.xla_model"]
from tt_model_runners.forge_runners.forge_runner import ForgeRunner
from domain.image_search_response import ImageSearchResponse
import tt_worker_cnn

class YoloxLoader:
    def __init__(self, detections):
        self.detections = detections
    def output_postprocess(self, output, top_k=None, score_thr=0.01):
        d = self.detections if top_k is None else self.detections[:top_k]
        return {"labels": [x["class_name"] for x in d],
                "probabilities": [f"{x['score'] * 100:.4f}%" for x in d],
                "indices": [x["cls_ind"] for x in d],
                "boxes": [list(x["bbox"]) for x in d],
                "scores": [float(x["score"]) for x in d]}

for line in sys.stdin:
    case = json.loads(line)
    runner = ForgeRunner.__new__(ForgeRunner)
    runner.logger = logging.getLogger("head")
    runner.loader = YoloxLoader(case["detections"])
    preds, label, prob = runner._postprocess_model_output(None, top_k=case["top_k"], min_confidence=case["min_confidence"])
    result = runner._format_response(preds, case["response_format"], label, prob)
    head = json.loads(ImageSearchResponse(image_data=[result]).model_dump_json())
    wire = tt_worker_cnn.cnn_result(None, [result]) if case["response_format"] == "json" else None
    print(json.dumps({"head": head, "wire": wire}))`

// wireCNN is the worker's carry of a CNN answer (tt_worker_cnn.cnn_result), as procrunner reads it.
type wireCNN struct {
	CNN struct {
		Top []struct {
			Label       string  `json:"label"`
			Index       int     `json:"index"`
			Probability float64 `json:"probability"`
		} `json:"top"`
		Detections []struct {
			Label string     `json:"label"`
			Index int        `json:"index"`
			Score float64    `json:"score"`
			Box   [4]float64 `json:"box"`
		} `json:"detections"`
	} `json:"cnn"`
}

func (w wireCNN) result() *runners.CNNResult {
	r := &runners.CNNResult{}
	for _, c := range w.CNN.Top {
		r.Top = append(r.Top, runners.Classification{Label: c.Label, Index: c.Index, Probability: c.Probability})
	}
	for _, d := range w.CNN.Detections {
		r.Detections = append(r.Detections, runners.Detection{Label: d.Label, Index: d.Index, Score: d.Score, Box: d.Box})
	}
	return r
}

// YOLOX-Nano's answer is HEAD's, value for value, on both roads: the Go road's runner hands the
// server every detection; the Python road's worker carries what HEAD's runner answered, which
// has no boxes when min_confidence keeps no detection, so the top-1 (the loader's best
// detection, which HEAD reports whatever min_confidence says) comes as a class. Both are
// written by cnnAnswer and must equal what HEAD's real classes answer.
func TestYOLOXAnswerIsHEADsWhenNoDetectionIsKept(t *testing.T) {
	root := filepath.Join("..")
	road := e2e.HeadRoad(t, root)
	head, err := filepath.Abs(e2e.HeadDir(root))
	require.NoError(t, err)
	worker, err := filepath.Abs(filepath.Join(root, "workers", "python"))
	require.NoError(t, err)

	type det struct {
		Label string     `json:"class_name"`
		Score float64    `json:"score"`
		Index int        `json:"cls_ind"`
		Box   [4]float64 `json:"bbox"`
	}
	two := []det{{"car", 0.655, 2, [4]float64{10.5, 20, 110.25, 90}}, {"person", 0.412345, 0, [4]float64{0, 5, 30, 60}}}
	tests := []struct {
		name          string
		detections    []det
		topK          int
		minConfidence float64
		format        string
	}{
		{"none kept", two, 3, 70, "json"},
		{"none kept, verbose", two, 3, 70, "verbose_json"},
		{"one kept", two, 3, 50, "json"},
		{"both kept", two, 3, 0, "json"},
		{"top_k 1, none kept", two, 1, 90, "json"},
		{"kept at HEAD's rounding", []det{{"dog", 0.69999996, 16, [4]float64{1, 2, 3, 4}}}, 3, 70, "json"},
	}
	var in bytes.Buffer
	for _, tc := range tests {
		line, err := json.Marshal(map[string]any{"detections": tc.detections, "top_k": tc.topK,
			"min_confidence": tc.minConfidence, "response_format": tc.format})
		require.NoError(t, err)
		in.Write(append(line, '\n'))
	}
	cmd := exec.CommandContext(t.Context(), road.Exe, "-c", headYOLOX)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+head+string(os.PathListSeparator)+worker+string(os.PathListSeparator)+road.PythonPath)
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "HEAD's ForgeRunner: %s", stderr.String())
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	require.Len(t, lines, len(tests))

	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got struct {
				Head struct {
					ImageData []json.RawMessage `json:"image_data"`
				} `json:"head"`
				Wire *wireCNN `json:"wire"`
			}
			require.NoError(t, json.Unmarshal(lines[i], &got))
			require.Len(t, got.Head.ImageData, 1)
			want := string(got.Head.ImageData[0])
			up := &cnnUpload{topK: tc.topK, minConfidence: tc.minConfidence, responseFormat: tc.format}

			// The Go road: the runner's detections, best first, cut at top_k as the loader does.
			goRoad := &runners.CNNResult{}
			for _, d := range tc.detections[:min(tc.topK, len(tc.detections))] {
				goRoad.Detections = append(goRoad.Detections, runners.Detection{Label: d.Label, Index: d.Index, Score: d.Score, Box: d.Box})
			}
			roads := map[string]*runners.CNNResult{"go": goRoad}
			if got.Wire != nil { // the worker always asks HEAD's runner for json
				roads["python"] = got.Wire.result()
			}
			for name, res := range roads {
				answer, err := cnnAnswer(catalogue.OutputLabelBoxes, res, up)
				require.NoError(t, err, name)
				ours, err := json.Marshal(answer)
				require.NoError(t, err)
				require.JSONEq(t, want, string(ours), "%s road", name)
			}
		})
	}
}
