package resnet

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/imagenet"
)

// DefaultTopK is the Python server's top_k default.
const DefaultTopK = 3

// ErrBadLogits is returned for a logits vector of the wrong length or with non-finite values.
var ErrBadLogits = errors.New("bad logits")

// Classifier turns logits into ranked, labelled classes.
type Classifier struct {
	labels []string
}

// NewClassifier returns a classifier over the given class names (index = class id). With no
// labels it uses the packaged ImageNet-1k list (torchvision's names, in model output order).
func NewClassifier(labels []string) (*Classifier, error) {
	if len(labels) == 0 {
		labels = imagenet.Labels()
	}
	return &Classifier{labels: slices.Clone(labels)}, nil
}

// NumClasses is how many logits one image has.
func (c *Classifier) NumClasses() int { return len(c.labels) }

// Labels returns a copy of the class names.
func (c *Classifier) Labels() []string { return slices.Clone(c.labels) }

var defaultClassifier, _ = NewClassifier(nil)

// Postprocess ranks one image's ImageNet logits with the packaged labels; see
// Classifier.Postprocess.
func Postprocess(logits []float32, topK int, minConfidence float64) (runners.CNNResult, error) {
	return defaultClassifier.Postprocess(logits, topK, minConfidence)
}

// Postprocess applies a softmax (in float64, max-subtracted) to one image's logits and returns
// up to topK classes (DefaultTopK when topK <= 0), best first; equal probabilities keep class
// order. Classes whose probability in percent is below minConfidence are left out, except the
// top-1 class, which is always reported, so a result is never empty.
func (c *Classifier) Postprocess(logits []float32, topK int, minConfidence float64) (runners.CNNResult, error) {
	n := len(c.labels)
	if len(logits) != n {
		return runners.CNNResult{}, fmt.Errorf("%w: %d values for %d classes", ErrBadLogits, len(logits), n)
	}
	maxLogit := math.Inf(-1)
	for i, z := range logits {
		if math.IsNaN(float64(z)) || math.IsInf(float64(z), 0) {
			return runners.CNNResult{}, fmt.Errorf("%w: logit %d is %v", ErrBadLogits, i, z)
		}
		maxLogit = max(maxLogit, float64(z))
	}
	var sum float64
	for _, z := range logits {
		sum += math.Exp(float64(z) - maxLogit)
	}
	k := topK
	if k <= 0 {
		k = DefaultTopK
	}
	k = min(k, n)
	// Partial selection: the k best indices, best first, lower index first on ties.
	top := make([]int, 0, k)
	better := func(a, b int) bool { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b) }
	for i := range logits {
		if len(top) == k && !better(i, top[k-1]) {
			continue
		}
		pos, _ := slices.BinarySearchFunc(top, i, func(e, t int) int {
			if better(e, t) {
				return -1
			}
			return 1
		})
		if len(top) < k {
			top = slices.Insert(top, pos, i)
		} else {
			copy(top[pos+1:], top[pos:k-1])
			top[pos] = i
		}
	}
	res := runners.CNNResult{Top: make([]runners.Classification, 0, k)}
	for rank, i := range top {
		p := math.Exp(float64(logits[i])-maxLogit) / sum
		if rank > 0 && p*100 < minConfidence {
			break // ranked: every later class is below it too
		}
		res.Top = append(res.Top, runners.Classification{Label: c.labels[i], Index: i, Probability: p})
	}
	return res, nil
}
