// Package cnnsim is the simulated twin of HEAD's detection and segmentation CNN runners
// (YOLOv4, YOLOX-Nano, U-Net), which this server has no host pipeline for: in mock-device
// mode they answer boxes and masks of the shape HEAD's runners return, computed from the
// image itself — its salient regions (colour far from the image's mean, grouped by
// connectivity) become boxes, its pixels' colours become mask classes — so the answer is a
// deterministic function of the image, not a fixed one. The classes are a colour table's,
// not a network's: the twin is simulated, and says so in docs/ARCHITECTURE.md. Device time
// is the ResNet-50 simulator program the catalogue names for the model (MOCK_CNN_SECONDS per
// image of a batch of 16, as the ResNet twin).
package cnnsim

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
)

// batchImages is the simulator program's batch: a device run serves up to 16 images.
const batchImages = 16

// yolov4Confidence is HEAD's YOLOv4 post-processing threshold (DEFAULT_CONFIDENCE_THRESHOLD).
const yolov4Confidence = 0.3

// Register adds every catalogued CNN model that answers boxes or a mask, each served by the
// twin (in mock-device mode and, having no real pipeline, as its factory too).
func Register(reg *runners.Registry) {
	for _, m := range runners.Models() {
		if m.Service == runners.ServiceCNN && m.CNN.Output != catalogue.OutputLabels {
			f := Factory(m.Name)
			reg.Register(m.Name, f, f)
		}
	}
}

// Factory returns the twin of a catalogued detection or segmentation model.
func Factory(model string) runners.Factory {
	return func(spec runners.WorkerSpec) (runners.Runner, error) {
		m, ok := runners.Lookup(model, spec.Settings)
		if !ok || m.Service != runners.ServiceCNN || m.CNN.Output == catalogue.OutputLabels {
			return nil, fmt.Errorf("%w %q: not a detection or segmentation model", runners.ErrUnknownRunner, model)
		}
		return &Runner{model: m.Name, output: m.CNN.Output, program: m.Sim.Traced,
			lat: simdev.LatencyFrom(spec.Settings), step: simdev.Stepper{Cfg: simdev.ConfigFor(model, spec)}}, nil
	}
}

// Runner is the twin of one model.
type Runner struct {
	model   string
	output  catalogue.CNNOutput
	program string
	lat     simdev.Latency
	step    simdev.Stepper
	closed  atomic.Bool
}

// Warmup spends MOCK_WARMUP_SECONDS (loading the weights), opens the simulated device and
// runs the program once.
func (r *Runner) Warmup(ctx context.Context) error {
	if r.closed.Load() {
		return simdev.ErrClosed
	}
	if err := simdev.Sleep(ctx, r.lat.Warmup); err != nil {
		return fmt.Errorf("%s warm-up: %w", r.model, err)
	}
	if err := r.step.Open(ctx); err != nil {
		return fmt.Errorf("%s warm-up: %w", r.model, simdev.DeviceErr(err))
	}
	if err := r.step.Run(ctx, r.program, 1, 0); err != nil {
		return fmt.Errorf("%s warm-up: %w", r.model, simdev.DeviceErr(err))
	}
	return nil
}

// Close releases the simulated device.
func (r *Runner) Close() error {
	r.closed.Store(true)
	return r.step.Close()
}

// Run spends one device batch per 16 images, then answers each task from its image.
func (r *Runner) Run(ctx context.Context, tasks []runners.Task) []runners.Outcome {
	if r.closed.Load() {
		return simdev.ClosedOutcomes(len(tasks))
	}
	batches := (len(tasks) + batchImages - 1) / batchImages
	if err := r.step.Run(ctx, r.program, batches, r.lat.PerImage*time.Duration(batchImages*batches)); err != nil {
		out := make([]runners.Outcome, len(tasks))
		for i := range out {
			out[i].Err = fmt.Errorf("%s: %w", r.model, simdev.DeviceErr(err))
		}
		return out
	}
	return simdev.RunBatch(ctx, tasks, func(_ context.Context, t runners.Task) (runners.Result, error) {
		req, err := runners.RequestAs[*runners.CNNRequest](t)
		if err != nil || req == nil || req.Image == nil {
			return nil, fmt.Errorf("%s: request is %T, not a *runners.CNNRequest with an image", r.model, t.Request)
		}
		return r.answer(req), nil
	})
}

// answer is one image's result, cut as HEAD's runner cuts it: YOLOv4 keeps the detections
// over its confidence threshold (it reads no top_k); YOLOX keeps the top_k best (its
// loader's detections[:top_k]); U-Net's mask is whole and its class list the top_k largest.
// min_confidence filters the lists where the route writes them (server), since HEAD's top-1
// is taken before it.
func (r *Runner) answer(req *runners.CNNRequest) *runners.CNNResult {
	res := &runners.CNNResult{}
	switch r.output {
	case catalogue.OutputBoxes:
		for _, d := range Detect(req.Image, Fractions) {
			if d.Score >= yolov4Confidence {
				res.Detections = append(res.Detections, d)
			}
		}
	case catalogue.OutputLabelBoxes:
		res.Detections = Detect(req.Image, Pixels)
		if req.TopK > 0 && len(res.Detections) > req.TopK {
			res.Detections = res.Detections[:req.TopK]
		}
		for _, d := range res.Detections {
			res.Top = append(res.Top, runners.Classification{Label: d.Label, Index: d.Index, Probability: d.Score})
		}
	case catalogue.OutputMask:
		res.Mask, res.Top = Segment(req.Image)
		if req.TopK > 0 && len(res.Top) > req.TopK {
			res.Top = res.Top[:req.TopK]
		}
	}
	return res
}
