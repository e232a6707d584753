package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/tenstorrent/tt-media-server-go/media/imaging"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
)

// maxImagePixels refuses decompression bombs before their pixels are decoded.
const maxImagePixels = 40_000_000

// cnnDraftShortSide is fast mode's (CNN_FAST_PREPROCESS) least shorter side of a scaled JPEG
// decode: twice the classifier's resize target (runners/resnet.ResizeSize, 256).
const cnnDraftShortSide = 2 * 256

// cnnUpload is a parsed POST /cnn/search-image request.
type cnnUpload struct {
	image          []byte
	topK           int
	minConfidence  float64
	responseFormat string
}

// cnnFields are the fields of HEAD's ImageSearchRequest (domain/image_search_request.py):
// the JSON body's, with the image base64 in prompt. The multipart form (open_ai_api/cnn.py)
// has file instead of prompt. Any other key or form field is a 422 naming it (pydantic and
// FastAPI's forms would ignore it).
var (
	cnnFields          = []string{"prompt", "top_k", "response_format", "min_confidence"}
	cnnMultipartFields = []string{"file", "top_k", "response_format", "min_confidence"}
)

// parseCNNUpload reads JSON {"prompt": base64 image, "top_k", "min_confidence",
// "response_format"} or multipart with a "file" part and the same fields (the newer Python
// server's ImageSearchRequest).
func parseCNNUpload(in *request) (*cnnUpload, error) {
	up := &cnnUpload{topK: 3, minConfidence: 70, responseFormat: "json"}
	if in.contentType == "multipart/form-data" {
		return up, parseCNNMultipart(in, up)
	}
	data := in.data
	// The base64 image is most of the body: cut it out before the generic parser sees it.
	reduced, long, cut := cutLongString(data, "prompt")
	if cut {
		data = reduced
	}
	b, err := parseBody(data)
	if err != nil {
		return nil, err
	}
	prompt, ok := b.str("prompt", true)
	if cut {
		prompt = string(long)
	}
	if v := b.int("top_k"); v != nil && b.rangeCheck("top_k", float64(*v), 1, 1000, false, rawInput(b, "top_k")) {
		up.topK = int(*v)
	}
	if v := b.float("min_confidence", false); v != nil && b.rangeCheck("min_confidence", *v, 0, 100, true, rawInput(b, "min_confidence")) {
		up.minConfidence = *v
	}
	if f, ok := b.str("response_format", false); ok {
		up.responseFormat = f
	}
	if ok {
		img, err := decodeBase64(prompt)
		if err != nil {
			b.add("value_error", []any{"prompt"}, "Value error, Invalid base64 image: "+err.Error(), shorten(prompt), nil)
		}
		up.image = img
	}
	checkResponseFormat(b, up.responseFormat)
	b.forbidExtra(cnnFields)
	if err := b.err(); err != nil {
		return nil, err
	}
	return up, nil
}

func checkResponseFormat(b *body, f string) {
	if f != "json" && f != "verbose_json" {
		b.add("enum", []any{"response_format"}, "Input should be 'json' or 'verbose_json'", f, map[string]any{"expected": "'json' or 'verbose_json'"})
	}
}

func parseCNNMultipart(in *request, up *cnnUpload) error {
	if in.boundary == "" {
		return httpErr(http.StatusBadRequest, "multipart/form-data without a boundary")
	}
	b := &body{raw: map[string]json.RawMessage{}, input: map[string]any{}}
	gotFile := false
	err := readForm(bytes.NewReader(in.data), in.boundary, pythonFormSpec(maxFormFieldBytes), func(name string, v []byte) error {
		if name == "file" {
			up.image, gotFile = v, true
			return nil
		}
		val := strings.TrimSpace(string(v[:min(len(v), maxFormFieldBytes)]))
		switch name {
		case "top_k":
			if k, ok := b.toInt([]any{"top_k"}, val); ok && b.rangeCheck("top_k", float64(k), 1, 1000, false, val) {
				up.topK = int(k)
			}
		case "min_confidence":
			if m, ok := b.toFloat([]any{"min_confidence"}, val); ok && b.rangeCheck("min_confidence", m, 0, 100, true, val) {
				up.minConfidence = m
			}
		case "response_format":
			up.responseFormat = val
		default: // not a field of the form: refused below, by name
			raw, _ := json.Marshal(val)
			b.raw[name] = raw
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !gotFile {
		b.add("missing", []any{"file"}, "Field required", nil, nil)
	}
	checkResponseFormat(b, up.responseFormat)
	b.forbidExtra(cnnMultipartFields)
	return b.err()
}

// handleCNN serves POST /cnn/search-image.
func (s *Server) handleCNN(c *gin.Context, in *request) {
	up, err := parseCNNUpload(in)
	if err != nil {
		s.fail(c, dialectPython, err)
		return
	}
	pool := s.pool(runners.ServiceCNN)
	m, _ := catalogue.Resolve(pool.Runner, catalogue.ServiceCNN)
	if err := checkCNNFields(m.CNN.Output, up); err != nil {
		s.fail(c, dialectPython, err)
		return
	}
	opts := imaging.DecodeOptions{MaxPixels: maxImagePixels}
	if s.cfg.CNNFastPreprocess {
		// Fast mode: a JPEG is decoded at the smallest DCT scale that keeps the shorter side at
		// twice the resize target (Image.draft); the resize then has less to average.
		opts.DraftShortSide = cnnDraftShortSide
	}
	// The decode's memory is reserved from IMAGE_MEMORY_BUDGET_BYTES, measured from the header,
	// before any pixel is decoded, and held until the answer (the image waits in the queue).
	cost, err := imaging.DecodeCost(up.image)
	if err != nil {
		s.fail(c, dialectPython, err)
		return
	}
	if cost > s.imageMem.total {
		s.fail(c, dialectPython, httpErr(http.StatusRequestEntityTooLarge,
			"%v: decoding its pixels would take %d MiB of memory, over IMAGE_MEMORY_BUDGET_BYTES (%d MiB)", imaging.ErrTooLarge, cost>>20, s.imageMem.total>>20))
		return
	}
	release, err := s.imageMem.acquire(c.Request.Context(), cost)
	if err != nil {
		s.fail(c, dialectPython, err)
		return
	}
	defer release()
	img, _, err := imaging.DecodeRGBWith(up.image, opts)
	if err != nil {
		s.fail(c, dialectPython, err)
		return
	}
	v, err := pool.Sched.Submit(c.Request.Context(), &runners.CNNRequest{Image: img, TopK: up.topK, MinConfidence: up.minConfidence}, nil)
	if err != nil {
		s.fail(c, dialectPython, err)
		return
	}
	// Answered: the runner has read the pixels (its Run returned), so the next decode may
	// reuse their storage. On an error the runner may still hold the image: not recycled.
	imaging.RecycleRGB(img)
	res, ok := runners.ResultAs[*runners.CNNResult](v)
	if !ok {
		s.fail(c, dialectPython, fmt.Errorf("runner returned %T instead of a classification", v))
		return
	}
	item, err := cnnAnswer(m.CNN.Output, res, up)
	if err != nil {
		s.fail(c, dialectPython, err)
		return
	}
	writeJSON(c, http.StatusOK, gin.H{"image_data": []any{item}, "status": "success"})
}

// percent formats a probability in [0,1] as the Python server's "xx.xxxx%" (×100, which its
// ResNet runner forgot).
func percent(p float64) string { return strconv.FormatFloat(p*100, 'f', 4, 64) + "%" }

// cnnItem is one image's answer: for "json" the top-1 class plus the full ranked output; for
// "verbose_json" HEAD's ForgeRunner CSV line "label,prob,label1,prob1,index1,...", where the
// top-1's probability is its "xx.xxxx%" string and each ranked one's is a percentage with one
// decimal and no sign (forge_runner.py _format_response: f"{p['probability']:.1f}").
func cnnItem(res *runners.CNNResult, format string) any {
	top := res.Top[0]
	if format == "verbose_json" {
		parts := []string{csvField(top.Label), percent(top.Probability)}
		for _, c := range res.Top {
			parts = append(parts, csvField(c.Label), strconv.FormatFloat(c.Probability*100, 'f', 1, 64), strconv.Itoa(c.Index))
		}
		return strings.Join(parts, ",")
	}
	labels := make([]string, len(res.Top))
	probs := make([]string, len(res.Top))
	idx := make([]int, len(res.Top))
	for i, c := range res.Top {
		labels[i], probs[i], idx[i] = c.Label, percent(c.Probability), c.Index
	}
	return gin.H{
		"top1_class_label":       top.Label,
		"top1_class_probability": percent(top.Probability),
		"output":                 gin.H{"labels": labels, "probabilities": probs, "indices": idx},
	}
}

func csvField(s string) string {
	if strings.ContainsAny(s, ",\"\n") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}
