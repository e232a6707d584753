package mock

import (
	"context"
	"fmt"
	"image"
	"image/color"
	"math"
	"math/rand/v2"
	"sort"
	"sync/atomic"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// defaultTopK is the Python server's top_k default.
const defaultTopK = 3

// cnnRunner is the mock ImageNet classifier device.
type cnnRunner struct {
	model  string
	lat    Latency
	weight []float64 // numClasses × numFeatures, row-major
	// dev is the simulated device in a worker process; without one, time is Go sleeps.
	dev    stepper
	closed atomic.Bool
}

// NewCNN returns the mock ResNet-50 / VoVNet / MobileNetV2 (and YOLOv4) runner. It classifies
// an image into the ImageNet-1k classes from real measurements of the picture (mean colour in
// HSV, hue and brightness histograms, colourfulness, edge density and direction, a 4×4 colour
// layout, aspect ratio), projected on the 1000 classes by fixed pseudo-random weights and
// turned into probabilities by a softmax: the same image always gets the same answer, images
// that look alike get similar answers, and different images usually get different labels.
//
// The result lists up to TopK classes (default 3), best first, leaving out classes below
// MinConfidence percent, except the top-1 class, which is always reported.
func NewCNN(model string, lat Latency) runners.Runner {
	// One fixed projection for every model name: the real networks mostly agree on top-1.
	rng := rand.New(rand.NewPCG(0x5eed_c1a5_5e5_0001, 0x1000))
	w := make([]float64, len(imagenetLabels)*numFeatures)
	for c := range len(imagenetLabels) {
		row := w[c*numFeatures : (c+1)*numFeatures]
		var norm float64
		for i := range row {
			row[i] = rng.NormFloat64()
			norm += row[i] * row[i]
		}
		// Rows of equal length (that of a typical row): no class wins by having larger weights.
		norm = math.Sqrt(norm)
		for i := range row {
			row[i] *= math.Sqrt(numFeatures) / norm
		}
	}
	return &cnnRunner{model: model, lat: lat, weight: w}
}

// Warmup simulates loading the model, then classifies a white 224×224 image as the Python
// runners do.
func (r *cnnRunner) Warmup(ctx context.Context) error {
	if r.closed.Load() {
		return ErrClosed
	}
	if err := sleep(ctx, r.lat.Warmup); err != nil {
		return fmt.Errorf("%s warm-up: %w", r.model, err)
	}
	if err := r.dev.open(ctx); err != nil {
		return fmt.Errorf("%s warm-up: %w", r.model, err)
	}
	white := image.NewUniform(color.White)
	blank := &boundedImage{Image: white, rect: image.Rect(0, 0, 224, 224)}
	if _, err := r.classify(ctx, &runners.CNNRequest{Image: blank, TopK: 1}); err != nil {
		return fmt.Errorf("%s warm-up inference: %w", r.model, err)
	}
	return nil
}

// boundedImage gives an unbounded image (image.Uniform) finite bounds.
type boundedImage struct {
	image.Image
	rect image.Rectangle
}

func (b *boundedImage) Bounds() image.Rectangle { return b.rect }

// Run classifies each task's image.
func (r *cnnRunner) Run(ctx context.Context, tasks []runners.Task) []runners.Outcome {
	if r.closed.Load() {
		return closedOutcomes(len(tasks))
	}
	return runBatch(ctx, tasks, func(ctx context.Context, t runners.Task) (any, error) {
		req, ok := t.Request.(*runners.CNNRequest)
		if !ok || req == nil {
			return nil, fmt.Errorf("%s: request is %T, not *runners.CNNRequest", r.model, t.Request)
		}
		return r.classify(ctx, req)
	})
}

// Close marks the runner closed and closes its device; it is idempotent.
func (r *cnnRunner) Close() error {
	r.closed.Store(true)
	return r.dev.close()
}

// softmaxScale sharpens the unit-variance logits so that a typical top-1 class gets a
// probability of roughly 0.3-0.9, like a trained network on an in-distribution image.
const softmaxScale = 6.5

func (r *cnnRunner) classify(ctx context.Context, req *runners.CNNRequest) (*runners.CNNResult, error) {
	if req.Image == nil || req.Image.Bounds().Empty() {
		return nil, &badRequest{msg: "image is empty"}
	}
	if err := r.dev.run(ctx, progResNet, 1, r.lat.PerImage); err != nil {
		return nil, fmt.Errorf("%s: forward: %w", r.model, err)
	}
	f := features(req.Image)
	n := len(imagenetLabels)
	logits := make([]float64, n)
	maxLogit := math.Inf(-1)
	for c := range n {
		row := r.weight[c*numFeatures : (c+1)*numFeatures]
		var z float64
		for i, v := range f {
			z += row[i] * v
		}
		logits[c] = z * softmaxScale
		maxLogit = max(maxLogit, logits[c])
	}
	var sum float64
	for c := range logits {
		logits[c] = math.Exp(logits[c] - maxLogit)
		sum += logits[c]
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return logits[order[a]] > logits[order[b]] })

	k := req.TopK
	if k <= 0 {
		k = defaultTopK
	}
	k = min(k, n)
	res := &runners.CNNResult{Top: make([]runners.Classification, 0, k)}
	for i, c := range order[:k] {
		p := logits[c] / sum
		if i > 0 && p*100 < req.MinConfidence {
			break // sorted: every later class is below it too
		}
		res.Top = append(res.Top, runners.Classification{Label: imagenetLabels[c], Index: c, Probability: p})
	}
	return res, nil
}

// Feature layout.
const (
	thumbN      = 32 // the image is measured on a thumbN×thumbN grid of cell means
	numHueBins  = 8
	numLumaBins = 4
	layoutN     = 4
	numFeatures = 3 + 3 + numHueBins + numLumaBins + 4 + layoutN*layoutN*3 + 1
)

// features measures img and returns a unit-length feature vector. Each group of features is
// centred on a typical value and weighted so that no group dominates the projection.
func features(img image.Image) []float64 {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	// Cell means of the thumbnail, each from up to 4×4 samples.
	var th [thumbN * thumbN][3]float64
	for ty := 0; ty < thumbN; ty++ {
		for tx := 0; tx < thumbN; tx++ {
			var sr, sg, sb float64
			for sy := 0; sy < 4; sy++ {
				y := b.Min.Y + ((ty*4+sy)*2+1)*h/(thumbN*8)
				for sx := 0; sx < 4; sx++ {
					x := b.Min.X + ((tx*4+sx)*2+1)*w/(thumbN*8)
					cr, cg, cb, _ := img.At(x, y).RGBA()
					sr += float64(cr)
					sg += float64(cg)
					sb += float64(cb)
				}
			}
			th[ty*thumbN+tx] = [3]float64{sr / (16 * 65535), sg / (16 * 65535), sb / (16 * 65535)}
		}
	}

	f := make([]float64, 0, numFeatures)
	group := func(weight, centre float64, vals ...float64) {
		s := weight / math.Sqrt(float64(len(vals)))
		for _, v := range vals {
			f = append(f, (v-centre)*s)
		}
	}

	var mr, mg, mb, ms, mv, mv2 float64
	var hue [numHueBins]float64
	var luma [numLumaBins]float64
	var rg, yb, rg2, yb2 float64
	lum := make([]float64, len(th))
	for i, c := range th {
		mr += c[0]
		mg += c[1]
		mb += c[2]
		hh, s, v := toHSV(c[0], c[1], c[2])
		ms += s
		mv += v
		mv2 += v * v
		hue[int(hh*numHueBins)%numHueBins] += s * v
		l := 0.299*c[0] + 0.587*c[1] + 0.114*c[2]
		lum[i] = l
		luma[min(numLumaBins-1, int(l*numLumaBins))]++
		a, bb := c[0]-c[1], 0.5*(c[0]+c[1])-c[2]
		rg += a
		yb += bb
		rg2 += a * a
		yb2 += bb * bb
	}
	n := float64(len(th))
	mr, mg, mb, ms, mv = mr/n, mg/n, mb/n, ms/n, mv/n
	stdV := math.Sqrt(math.Max(0, mv2/n-mv*mv))
	// Hasler & Süsstrunk colourfulness.
	rg, yb = rg/n, yb/n
	colourful := math.Sqrt(math.Max(0, rg2/n-rg*rg)+math.Max(0, yb2/n-yb*yb)) + 0.3*math.Hypot(rg, yb)
	var hueSum float64
	for _, v := range hue {
		hueSum += v
	}
	for i := range hue {
		if hueSum > 0 {
			hue[i] /= hueSum
		}
	}
	for i := range luma {
		luma[i] /= n
	}
	// Edges on the luminance thumbnail.
	var gx, gy, strong float64
	for y := 0; y < thumbN-1; y++ {
		for x := 0; x < thumbN-1; x++ {
			dx := math.Abs(lum[y*thumbN+x+1] - lum[y*thumbN+x])
			dy := math.Abs(lum[(y+1)*thumbN+x] - lum[y*thumbN+x])
			gx += dx
			gy += dy
			if dx+dy > 0.1 {
				strong++
			}
		}
	}
	m := float64((thumbN - 1) * (thumbN - 1))
	gx, gy, strong = gx/m, gy/m, strong/m

	group(1.0, 0.45, mr, mg, mb)
	group(1.2, 0.4, ms, mv, 2*stdV)
	group(1.2, 1.0/numHueBins, hue[:]...)
	group(0.8, 1.0/numLumaBins, luma[:]...)
	group(1.2, 0.15, 3*gx, 3*gy, strong, colourful)
	var cells []float64
	for cy := 0; cy < layoutN; cy++ {
		for cx := 0; cx < layoutN; cx++ {
			var s [3]float64
			for y := cy * thumbN / layoutN; y < (cy+1)*thumbN/layoutN; y++ {
				for x := cx * thumbN / layoutN; x < (cx+1)*thumbN/layoutN; x++ {
					for c := range 3 {
						s[c] += th[y*thumbN+x][c]
					}
				}
			}
			per := float64(thumbN * thumbN / (layoutN * layoutN))
			cells = append(cells, s[0]/per, s[1]/per, s[2]/per)
		}
	}
	group(1.4, 0.45, cells...)
	group(0.5, 0, math.Log(float64(w)/float64(h)))

	var norm float64
	for _, v := range f {
		norm += v * v
	}
	norm = math.Sqrt(norm)
	if norm == 0 {
		norm = 1
	}
	for i := range f {
		f[i] /= norm
	}
	return f
}

// toHSV converts r, g, b in [0,1] to hue in [0,1), saturation and value.
func toHSV(r, g, b float64) (h, s, v float64) {
	v = max(r, g, b)
	d := v - min(r, g, b)
	if v > 0 {
		s = d / v
	}
	if d == 0 {
		return 0, s, v
	}
	switch v {
	case r:
		h = (g - b) / d
	case g:
		h = 2 + (b-r)/d
	default:
		h = 4 + (r-g)/d
	}
	h /= 6
	if h < 0 {
		h++
	}
	if h >= 1 {
		h = 0
	}
	return h, s, v
}
