package server

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
)

// The CNN route's answers beyond labels, each as HEAD's runner for the model formats it
// (catalogue.CNNOutput): YOLOv4's detections, a Forge detector's (YOLOX) classification result
// with boxes and scores, and U-Net's mask.

// HEAD's ImageSearchRequest defaults (open_ai_api/cnn.py), which HEAD's YOLOv4 runner does not
// read: any other value is refused for it.
const (
	cnnDefaultTopK          = 3
	cnnDefaultMinConfidence = 70
)

// checkCNNFields refuses the fields a model's HEAD runner does not read: YOLOv4's
// TTYolov4Runner takes only the image (no top_k, min_confidence or response_format); U-Net's
// mask has no place in verbose_json's CSV line.
func checkCNNFields(out catalogue.CNNOutput, up *cnnUpload) error {
	switch out {
	case catalogue.OutputBoxes:
		if up.topK != cnnDefaultTopK {
			return invalidParam("top_k", "top_k: YOLOv4 answers every detection over its 0.3 confidence threshold and takes no top_k (got %d)", up.topK)
		}
		if up.minConfidence != cnnDefaultMinConfidence {
			return invalidParam("min_confidence", "min_confidence: YOLOv4 answers every detection over its 0.3 confidence threshold and takes no min_confidence (got %v)", up.minConfidence)
		}
		if up.responseFormat != "json" {
			return invalidParam("response_format", "response_format: YOLOv4 answers JSON detections only (got %q)", up.responseFormat)
		}
	case catalogue.OutputMask:
		if up.responseFormat != "json" {
			return invalidParam("response_format", "response_format: a segmentation mask is answered as JSON only (got %q)", up.responseFormat)
		}
	}
	return nil
}

// yolov4Box and yolov4Detection are one detection of HEAD's TTYolov4Runner._format_detections.
type yolov4Box struct {
	X1 float64 `json:"x1"`
	Y1 float64 `json:"y1"`
	X2 float64 `json:"x2"`
	Y2 float64 `json:"y2"`
}

type yolov4Detection struct {
	BBox       yolov4Box `json:"bbox"`
	Confidence float64   `json:"confidence"`
	ClassID    int       `json:"class_id"`
	ClassName  string    `json:"class_name"`
}

// forgeResult is HEAD's ImageClassificationResult as ForgeRunner._format_response fills it.
type forgeResult struct {
	Top1Label       string      `json:"top1_class_label"`
	Top1Probability string      `json:"top1_class_probability"`
	Output          forgeOutput `json:"output"`
}

// forgeOutput is its output dict: boxes and scores only when a kept prediction has a box (a
// detector's, HEAD's `if any("box" in p ...)`), mask and mask_shape only for a mask.
type forgeOutput struct {
	Labels        []string     `json:"labels"`
	Probabilities []string     `json:"probabilities"`
	Indices       []int        `json:"indices"`
	Boxes         [][4]float64 `json:"boxes,omitempty"`
	Scores        []float64    `json:"scores,omitempty"`
	Mask          [][]int      `json:"mask,omitempty"`
	MaskShape     []int        `json:"mask_shape,omitempty"`
}

// cnnAnswer is one image's item of image_data for the model's output kind.
func cnnAnswer(out catalogue.CNNOutput, res *runners.CNNResult, up *cnnUpload) (any, error) {
	switch out {
	case catalogue.OutputBoxes:
		dets := make([]yolov4Detection, len(res.Detections))
		for i, d := range res.Detections {
			dets[i] = yolov4Detection{BBox: yolov4Box{d.Box[0], d.Box[1], d.Box[2], d.Box[3]},
				Confidence: d.Score, ClassID: d.Index, ClassName: d.Label}
		}
		return dets, nil
	case catalogue.OutputLabelBoxes:
		return forgeDetections(res, up), nil
	case catalogue.OutputMask:
		if res.Mask == nil || len(res.Top) == 0 || len(res.Mask.Class) != res.Mask.Width*res.Mask.Height {
			return nil, fmt.Errorf("runner returned no mask")
		}
		r := forgeResult{Top1Label: res.Top[0].Label, Top1Probability: percent(res.Top[0].Probability)}
		r.Output = forgeList(res.Top, up.minConfidence)
		m := res.Mask
		r.Output.Mask = make([][]int, m.Height)
		for y := range m.Height {
			row := make([]int, m.Width)
			for x, k := range m.Class[y*m.Width : (y+1)*m.Width] {
				row[x] = int(k)
			}
			r.Output.Mask[y] = row
		}
		r.Output.MaskShape = []int{m.Height, m.Width}
		return r, nil
	}
	if len(res.Top) == 0 {
		return nil, fmt.Errorf("runner returned %d classes", len(res.Top))
	}
	return cnnItem(res, up.responseFormat), nil
}

// forgeList is the output lists of the classes at or over minConfidence percent (HEAD's
// `prob >= min_confidence`).
func forgeList(top []runners.Classification, minConfidence float64) forgeOutput {
	o := forgeOutput{Labels: []string{}, Probabilities: []string{}, Indices: []int{}}
	for _, c := range top {
		if c.Probability*100 >= minConfidence {
			o.Labels = append(o.Labels, c.Label)
			o.Probabilities = append(o.Probabilities, percent(c.Probability))
			o.Indices = append(o.Indices, c.Index)
		}
	}
	return o
}

// forgeDetections is a Forge detector's answer (HEAD's ForgeRunner._postprocess_model_output
// and _format_response over its YOLOX loader's detections): the top-1 of all detections
// (before min_confidence, as HEAD takes it), the kept ones' labels, probabilities and indices,
// and their boxes and numeric scores, which are left out when none is kept. verbose_json is
// HEAD's CSV line "top1,top1_probability,label,probability(.1f),index,...".
//
// On the Python road the worker carries what HEAD's runner answered: its kept detections,
// and, when it kept none (its output then has no boxes), its top-1 as the one class of Top,
// which is then the answer's top-1. An image without any detection answers an empty top-1
// ("", "0.0000%"), where HEAD's runner fails on labels[0].
func forgeDetections(res *runners.CNNResult, up *cnnUpload) any {
	r := forgeResult{Top1Probability: percent(0)}
	switch {
	case len(res.Detections) > 0:
		r.Top1Label, r.Top1Probability = res.Detections[0].Label, percent(res.Detections[0].Score)
	case len(res.Top) > 0:
		r.Top1Label, r.Top1Probability = res.Top[0].Label, percent(res.Top[0].Probability)
	}
	var kept []runners.Detection
	for _, d := range res.Detections {
		// HEAD compares the loader's rounded percent string (f"{score * 100:.4f}%").
		if p, _ := strconv.ParseFloat(strconv.FormatFloat(d.Score*100, 'f', 4, 64), 64); p >= up.minConfidence {
			kept = append(kept, d)
		}
	}
	if up.responseFormat == "verbose_json" {
		parts := make([]string, 0, 3*len(kept))
		for _, d := range kept {
			parts = append(parts, d.Label, strconv.FormatFloat(d.Score*100, 'f', 1, 64), strconv.Itoa(d.Index))
		}
		return r.Top1Label + "," + r.Top1Probability + "," + strings.Join(parts, ",")
	}
	r.Output = forgeOutput{Labels: []string{}, Probabilities: []string{}, Indices: []int{}}
	for _, d := range kept {
		r.Output.Labels = append(r.Output.Labels, d.Label)
		r.Output.Probabilities = append(r.Output.Probabilities, percent(d.Score))
		r.Output.Indices = append(r.Output.Indices, d.Index)
		r.Output.Boxes = append(r.Output.Boxes, d.Box)
		r.Output.Scores = append(r.Output.Scores, d.Score)
	}
	return r
}
