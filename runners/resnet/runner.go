package resnet

import (
	"context"
	"errors"
	"fmt"
	"image"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// DefaultBatchSize is ResNet-50's device batch on one TT chip (tt-metal's demo traces 16).
const DefaultBatchSize = 16

// ErrClosed is returned by a runner used after Close.
var ErrClosed = errors.New("resnet runner closed")

// ErrDevice wraps failures of the device function that are not already a runners sentinel.
var ErrDevice = errors.New("resnet device")

// DeviceFunc runs the network on one device batch. batch holds BatchSize NCHW float32 images
// of ImageElems values each; only the first n are real, the rest are zero padding. It returns
// at least n*NumClasses logits, image after image. It is called from one goroutine at a time.
type DeviceFunc func(ctx context.Context, batch []float32, n int) (logits []float32, err error)

// BF16DeviceFunc is DeviceFunc for a device that takes the batch as the device dtype:
// BatchSize images of 2*ImageElems bytes each, little-endian bfloat16 (ToBF16 of the NCHW
// float32 tensor), the padding zero. The runner then preprocesses straight into bf16.
type BF16DeviceFunc func(ctx context.Context, batch []byte, n int) (logits []float32, err error)

// Config builds a ResNet-50 runner.
type Config struct {
	// BatchSize is the device batch; every device call gets exactly this many images, the
	// tail padded with zeros. Default DefaultBatchSize.
	BatchSize int
	// Device runs one batch of float32 images; DeviceBF16 one batch of bf16 images (one of
	// them is required; DeviceBF16 wins: no float32 tensor is written at all).
	Device     DeviceFunc
	DeviceBF16 BF16DeviceFunc
	// Open, when set, is called by Warmup before the warm-up batch: open the device, load
	// the weights (and capture the trace on the warm-up batch that follows).
	Open func(ctx context.Context) error
	// Close, when set, releases the device; called once by Runner.Close.
	Close func() error
	// Labels are the class names (index = class id); nil uses the packaged ImageNet-1k list.
	Labels []string
	// Interp is the resize of the preprocessing (default PILBilinear, the reference).
	Interp Interp
	// Workers is how many goroutines preprocess a batch's images (default GOMAXPROCS).
	Workers int
	// Logger, when set, gets a DEBUG record per device batch (images, padding, device time).
	Logger *slog.Logger
}

// Runner is the ResNet-50 classifier on one device group: it preprocesses each request's
// image, runs the requests of a scheduler batch in device batches of BatchSize (padding the
// last), and answers every request with its own ranked classes.
type Runner struct {
	cfg Config
	cls *Classifier
	buf []float32 // one device batch, reused (Device)
	bf  []byte    // one device batch of bf16, reused (DeviceBF16)
	// used is how many leading slots of buf may hold an earlier batch's images: the padding
	// after a batch of n is cleared only up to there, not all 16 slots every time.
	used   int
	closed atomic.Bool
	once   sync.Once
}

var _ runners.Runner = (*Runner)(nil)

// New checks cfg and builds a runner; it does not touch the device (Warmup does).
func New(cfg Config) (*Runner, error) {
	if cfg.Device == nil && cfg.DeviceBF16 == nil {
		return nil, errors.New("resnet: Config.Device or Config.DeviceBF16 is required")
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.BatchSize < 1 {
		return nil, fmt.Errorf("resnet: batch size %d", cfg.BatchSize)
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.Interp != PILBilinear && cfg.Interp != TorchBilinear {
		return nil, fmt.Errorf("resnet: unknown interpolation %d", cfg.Interp)
	}
	cls, err := NewClassifier(cfg.Labels)
	if err != nil {
		return nil, fmt.Errorf("resnet: %w", err)
	}
	r := &Runner{cfg: cfg, cls: cls}
	if cfg.DeviceBF16 != nil {
		r.bf = make([]byte, cfg.BatchSize*2*ImageElems)
	} else {
		r.buf = make([]float32, cfg.BatchSize*ImageElems)
	}
	return r, nil
}

// BatchSize is the device batch of this runner (what MAX_BATCH_SIZE should be set to).
func (r *Runner) BatchSize() int { return r.cfg.BatchSize }

// Warmup opens the device (Config.Open) and runs one full batch of white 224×224 images, as
// the Python runners warm up and as tt-metal captures the batch's trace.
func (r *Runner) Warmup(ctx context.Context) error {
	if r.closed.Load() {
		return ErrClosed
	}
	if r.cfg.Open != nil {
		if err := r.cfg.Open(ctx); err != nil {
			return fmt.Errorf("resnet warm-up: open device: %w", err)
		}
	}
	img := image.NewNRGBA(image.Rect(0, 0, InputSize, InputSize))
	for i := range img.Pix {
		img.Pix[i] = 0xFF
	}
	reqs := make([]*runners.CNNRequest, r.cfg.BatchSize)
	for i := range reqs {
		reqs[i] = &runners.CNNRequest{Image: img, TopK: 1}
	}
	outs := r.runChunk(ctx, reqs)
	for _, o := range outs {
		if o.Err != nil {
			return fmt.Errorf("resnet warm-up inference: %w", o.Err)
		}
	}
	return nil
}

// Run classifies each task's image. Tasks are run in device batches of BatchSize in order;
// a task whose context is already done, or whose request is not a usable *CNNRequest, gets its
// error without taking a batch slot. A device failure fails the tasks of that device batch.
func (r *Runner) Run(ctx context.Context, tasks []runners.Task) []runners.Outcome {
	outs := make([]runners.Outcome, len(tasks))
	if r.closed.Load() {
		for i := range outs {
			outs[i].Err = fmt.Errorf("%w: %w", runners.ErrDeviceLost, ErrClosed)
		}
		return outs
	}
	var live []int
	for i, t := range tasks {
		req, err := runners.RequestAs[*runners.CNNRequest](t)
		switch {
		case err != nil || req == nil:
			outs[i].Err = fmt.Errorf("resnet: request is %T, not *runners.CNNRequest", t.Request)
		case req.Image == nil || req.Image.Bounds().Empty():
			outs[i].Err = fmt.Errorf("%w: %w", runners.ErrBadRequest, ErrEmptyImage)
		case t.Ctx != nil && t.Ctx.Err() != nil:
			outs[i].Err = context.Cause(t.Ctx)
		default:
			live = append(live, i)
		}
	}
	for start := 0; start < len(live); start += r.cfg.BatchSize {
		idx := live[start:min(start+r.cfg.BatchSize, len(live))]
		reqs := make([]*runners.CNNRequest, len(idx))
		for j, i := range idx {
			reqs[j], _ = runners.RequestAs[*runners.CNNRequest](tasks[i]) // checked above
		}
		for j, o := range r.runChunk(ctx, reqs) {
			outs[idx[j]] = o
		}
	}
	return outs
}

// runChunk runs up to BatchSize requests as one padded device batch.
func (r *Runner) runChunk(ctx context.Context, reqs []*runners.CNNRequest) []runners.Outcome {
	outs := make([]runners.Outcome, len(reqs))
	n := len(reqs)
	for i, err := range r.preprocess(reqs) {
		if err != nil {
			// The slot is cleared (never left holding an earlier batch's image, whose classes
			// would be this request's answer) and the request fails alone.
			r.clearSlots(i, i+1)
			outs[i].Err = err
		}
	}
	if r.used > n {
		r.clearSlots(n, r.used) // padding left by a larger batch
	}
	r.used = n
	start := time.Now()
	var logits []float32
	var err error
	if r.cfg.DeviceBF16 != nil {
		logits, err = r.cfg.DeviceBF16(ctx, r.bf, n)
	} else {
		logits, err = r.cfg.Device(ctx, r.buf, n)
	}
	if r.cfg.Logger != nil {
		r.cfg.Logger.Debug("resnet device batch", "images", n, "padding", r.cfg.BatchSize-n,
			"device_ms", float64(time.Since(start).Microseconds())/1000, "ok", err == nil)
	}
	var per [][]float32
	if err == nil {
		per, err = SplitLogits(logits, n, r.cls.NumClasses())
	}
	if err != nil {
		if !errors.Is(err, runners.ErrDeviceLost) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w: %w", ErrDevice, err)
		}
		for i := range outs {
			if outs[i].Err == nil {
				outs[i].Err = err
			}
		}
		return outs
	}
	for i, req := range reqs {
		if outs[i].Err != nil {
			continue
		}
		res, err := r.cls.Postprocess(per[i], req.TopK, req.MinConfidence)
		if err != nil {
			outs[i].Err = fmt.Errorf("%w: image %d of the batch: %w", ErrDevice, i, err)
			continue
		}
		outs[i].Value = &res
	}
	return outs
}

// clearSlots zeroes batch slots from..to-1.
func (r *Runner) clearSlots(from, to int) {
	if r.bf != nil {
		clear(r.bf[from*2*ImageElems : to*2*ImageElems])
		return
	}
	clear(r.buf[from*ImageElems : to*ImageElems])
}

// preprocessSlot writes image i's tensor into its slot of the batch buffer.
func (r *Runner) preprocessSlot(i int, img image.Image) error {
	if r.bf != nil {
		return PreprocessBF16Into(r.bf[i*2*ImageElems:(i+1)*2*ImageElems], img, r.cfg.Interp)
	}
	return PreprocessInto(r.buf[i*ImageElems:(i+1)*ImageElems], img, r.cfg.Interp)
}

// preprocess writes each request's tensor into its slot of the batch buffer, spreading the
// images over Workers goroutines, and returns each one's error (nil when its slot was written).
func (r *Runner) preprocess(reqs []*runners.CNNRequest) []error {
	errs := make([]error, len(reqs))
	workers := min(r.cfg.Workers, len(reqs))
	if workers <= 1 {
		for i, req := range reqs {
			errs[i] = r.preprocessSlot(i, req.Image)
		}
		return errs
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(reqs) {
					return
				}
				errs[i] = r.preprocessSlot(i, reqs[i].Image)
			}
		})
	}
	wg.Wait()
	return errs
}

// Close releases the device (Config.Close) once; later Runs fail with ErrClosed.
func (r *Runner) Close() error {
	r.closed.Store(true)
	var err error
	r.once.Do(func() {
		if r.cfg.Close != nil {
			err = r.cfg.Close()
		}
	})
	return err
}

// AssembleBatch copies images (each ImageElems values) into one device batch of batchSize
// images, zero-padding the unused slots, reusing dst's storage when it is large enough.
func AssembleBatch(dst []float32, images [][]float32, batchSize int) ([]float32, error) {
	if len(images) > batchSize {
		return nil, fmt.Errorf("resnet: %d images for a batch of %d", len(images), batchSize)
	}
	need := batchSize * ImageElems
	if cap(dst) < need {
		dst = make([]float32, need)
	}
	dst = dst[:need]
	for i, img := range images {
		if len(img) != ImageElems {
			return nil, fmt.Errorf("resnet: image %d has %d values, want %d", i, len(img), ImageElems)
		}
		copy(dst[i*ImageElems:], img)
	}
	clear(dst[len(images)*ImageElems:])
	return dst, nil
}

// SplitLogits cuts a device batch's output into the first n images' logits of numClasses
// values each (views into logits, not copies); padding images' logits are dropped.
func SplitLogits(logits []float32, n, numClasses int) ([][]float32, error) {
	if n < 0 || numClasses < 1 || len(logits) < n*numClasses {
		return nil, fmt.Errorf("%w: %d logits for %d images of %d classes", ErrBadLogits, len(logits), n, numClasses)
	}
	out := make([][]float32, n)
	for i := range out {
		out[i] = logits[i*numClasses : (i+1)*numClasses : (i+1)*numClasses]
	}
	return out, nil
}
