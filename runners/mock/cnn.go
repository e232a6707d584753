package mock

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/resnet"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// The CNN runners (ResNet-50, VoVNet, MobileNetV2, YOLOv4 names) are the real ResNet-50 host
// pipeline of runners/resnet — torchvision preprocessing, bf16 device batches of 16 filled
// across requests and padded, softmax top-k with the ImageNet labels — on a simulated device:
// the C simulator's resnet50 program through ttnn (resnet.SimDevice) — in a worker process
// (WORKER_ISOLATION=process) on its own device, in process on its group's submesh of the
// server's shared parent mesh — or, where no device is available (in process without a shared
// parent), its Go twin (resnet.FakeDevice), which returns the same logits bit for bit. The logits are the simulator's deterministic function of each image's
// own bf16 tensor (uniform in [-1, 1), so probabilities are flat, ~0.1-0.3 %): the same image
// always gets the same classes, whatever else shares its batch, and different images get
// different ones.
//
// Latency model: one device batch of 16 (the traced shape; a partial batch is padded and
// costs the same) takes 16 × MOCK_CNN_SECONDS, i.e. MOCK_CNN_SECONDS per image at full
// batches. MOCK_CNN_SECONDS = 0.0002128 is the simulator program's own 3.404 ms per batch
// (4,700 img/s per chip). Throughput therefore needs MAX_BATCH_SIZE=16 (or a multiple) and a
// MAX_BATCH_DELAY_MS that lets concurrent requests fill the batch; with MAX_BATCH_SIZE=1
// every request pays a whole device batch.

// cnnDevice is what the CNN runner drives: resnet.SimDevice or resnet.FakeDevice.
type cnnDevice interface {
	BatchSize() int
	Run(ctx context.Context, batch []float32, n int) ([]float32, error)
}

// cnnRunner is a CNN model's runner: the ResNet-50 pipeline and the simulated device it
// drives.
type cnnRunner struct {
	*resnet.Runner
	sim  *resnet.SimDevice  // nil on the Go twin
	fake *resnet.FakeDevice // nil on the simulator
}

// NewCNN returns the in-process CNN runner of the named model: the ResNet-50 pipeline on the
// Go twin of the simulated device, with lat's Warmup and PerImage latencies.
func NewCNN(model string, lat Latency) runners.Runner {
	return newCNN(model, lat, nil, nil)
}

// newCNN builds the runner on the simulator (sim != nil) or on the Go twin.
func newCNN(model string, lat Latency, sim *resnet.SimDevice, log *slog.Logger) runners.Runner {
	var dev cnnDevice
	var open func(context.Context) error
	var closeDev func() error
	var fake *resnet.FakeDevice
	if sim != nil {
		dev, open, closeDev = sim, sim.Open, sim.Close
	} else {
		var err error
		if fake, err = resnet.NewFakeDevice(batchLatency(lat)); err != nil {
			return &failedRunner{err: fmt.Errorf("%s: %w", model, err)}
		}
		dev = fake
	}
	r, err := resnet.New(resnet.Config{
		BatchSize: dev.BatchSize(),
		Device:    dev.Run,
		Open: func(ctx context.Context) error {
			if err := sleep(ctx, lat.Warmup); err != nil { // loading the weights
				return err
			}
			if open != nil {
				return open(ctx)
			}
			return nil
		},
		Close:  closeDev,
		Logger: log,
	})
	if err != nil {
		return &failedRunner{err: fmt.Errorf("%s: %w", model, err)}
	}
	return &cnnRunner{Runner: r, sim: sim, fake: fake}
}

// batchLatency is the time of one device batch: MOCK_CNN_SECONDS per image of a full batch.
func batchLatency(lat Latency) time.Duration {
	return time.Duration(resnet.DefaultBatchSize) * lat.PerImage
}

// cnnFactory is the registry factory of a CNN model name.
func cnnFactory(model string) runners.Factory {
	return func(spec runners.WorkerSpec) (runners.Runner, error) {
		lat := LatencyFrom(spec.Settings)
		c := simConfigFor(model, spec)
		if c == nil || (c.shared && ttnn.SharedParent() == nil) { // no device: the Go twin
			return newCNN(model, lat, nil, slog.Default()), nil
		}
		sim, err := resnet.NewSimDevice(resnet.SimConfig{
			Mesh:            ttnn.MeshShape{Rows: c.opts.Mesh.Rows, Cols: c.opts.Mesh.Cols},
			DeviceIDs:       c.opts.DeviceIDs,
			TraceRegionSize: c.opts.TraceRegionSize,
			BatchLatency:    batchLatency(lat),
			NoLatency:       batchLatency(lat) == 0,
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", model, err)
		}
		return newCNN(model, lat, sim, slog.Default()), nil
	}
}

// failedRunner reports a construction error from Warmup and Run.
type failedRunner struct{ err error }

func (f *failedRunner) Warmup(context.Context) error { return f.err }

func (f *failedRunner) Run(_ context.Context, tasks []runners.Task) []runners.Outcome {
	out := make([]runners.Outcome, len(tasks))
	for i := range out {
		out[i].Err = f.err
	}
	return out
}

func (f *failedRunner) Close() error { return nil }
