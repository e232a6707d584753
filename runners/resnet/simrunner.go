package resnet

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// The CNN runners (ResNet-50, and the VoVNet, MobileNetV2, EfficientNet, ViT, SegFormer names) are the real ResNet-50 host
// pipeline of runners/resnet — torchvision preprocessing, bf16 device batches of 16 filled
// across requests and padded, softmax top-k with the ImageNet labels — on a simulated device:
// the C simulator's resnet50 program through ttnn (SimDevice) — in a worker process
// (WORKER_ISOLATION=process) on its own device, in process on its group's submesh of the
// server's shared parent mesh — or, where no device is available (in process without a shared
// parent), its Go twin (FakeDevice), which returns the same logits bit for bit. The logits are the simulator's deterministic function of each image's
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

// cnnDevice is what the CNN runner drives: SimDevice or FakeDevice.
type cnnDevice interface {
	BatchSize() int
	RunBF16(ctx context.Context, batch []byte, n int) ([]float32, error)
}

// cnnRunner is a CNN model's runner: the ResNet-50 pipeline and the simulated device it
// drives.
type cnnRunner struct {
	*Runner
	sim   *SimDevice   // nil on the Go twin
	fake  *FakeDevice  // nil on the simulator
	metal *MetalDevice // DEVICE_BACKEND=metal only
}

// newMetalCNN builds the runner on the metal backend: resnet50.ttnn from MODEL_WEIGHTS_PATH.
func newMetalCNN(model string, cfg MetalConfig, log *slog.Logger) (runners.Runner, error) {
	dev, err := NewMetalDevice(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", model, err)
	}
	r, err := New(Config{BatchSize: dev.BatchSize(), DeviceBF16: dev.RunBF16, Open: dev.Open, Close: dev.Close, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", model, err)
	}
	return &cnnRunner{Runner: r, metal: dev}, nil
}

// NewSim returns the in-process CNN runner of the named model: the ResNet-50 pipeline on the
// Go twin of the simulated device, with lat's Warmup and PerImage latencies.
func NewSim(model string, lat simdev.Latency) runners.Runner {
	return newCNN(model, lat, nil, nil)
}

// newCNN builds the runner on the simulator (sim != nil) or on the Go twin.
func newCNN(model string, lat simdev.Latency, sim *SimDevice, log *slog.Logger) runners.Runner {
	var dev cnnDevice
	var open func(context.Context) error
	var closeDev func() error
	var fake *FakeDevice
	if sim != nil {
		dev, open, closeDev = sim, sim.Open, sim.Close
	} else {
		var err error
		if fake, err = NewFakeDevice(batchLatency(lat)); err != nil {
			return &simdev.FailedRunner{Err: fmt.Errorf("%s: %w", model, err)}
		}
		dev = fake
	}
	r, err := New(Config{
		BatchSize:  dev.BatchSize(),
		DeviceBF16: dev.RunBF16,
		Open: func(ctx context.Context) error {
			if err := simdev.Sleep(ctx, lat.Warmup); err != nil { // loading the weights
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
		return &simdev.FailedRunner{Err: fmt.Errorf("%s: %w", model, err)}
	}
	return &cnnRunner{Runner: r, sim: sim, fake: fake}
}

// batchLatency is the time of one device batch: MOCK_CNN_SECONDS per image of a full batch.
func batchLatency(lat simdev.Latency) time.Duration {
	return time.Duration(DefaultBatchSize) * lat.PerImage
}

// SimFactory is the registry factory of a CNN model name: the pipeline on the simulated
// device of the worker, or on its Go twin where no device is available.
func SimFactory(model string) runners.Factory {
	return func(spec runners.WorkerSpec) (runners.Runner, error) {
		lat := simdev.LatencyFrom(spec.Settings)
		c := simdev.ConfigFor(model, spec)
		if s := spec.Settings; s != nil && s.DeviceBackend == config.BackendMetal && !s.Mock {
			mc := MetalConfig{Weights: s.ModelWeightsPath}
			if c != nil {
				mc.Mesh = ttnn.MeshShape{Rows: c.Opts.Mesh.Rows, Cols: c.Opts.Mesh.Cols}
				mc.DeviceIDs, mc.TraceRegionSize = c.Opts.DeviceIDs, c.Opts.TraceRegionSize
			}
			return newMetalCNN(model, mc, slog.Default())
		}
		if c == nil || (c.Shared && c.Parent == nil) { // no device: the Go twin
			return newCNN(model, lat, nil, slog.Default()), nil
		}
		sim, err := NewSimDevice(SimConfig{
			Mesh:            ttnn.MeshShape{Rows: c.Opts.Mesh.Rows, Cols: c.Opts.Mesh.Cols},
			DeviceIDs:       c.Opts.DeviceIDs,
			Parent:          c.Parent,
			TraceRegionSize: c.Opts.TraceRegionSize,
			BatchLatency:    batchLatency(lat),
			NoLatency:       batchLatency(lat) == 0,
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", model, err)
		}
		return newCNN(model, lat, sim, slog.Default()), nil
	}
}

// Register attaches the catalogue's label-answering CNN models to reg: ResNet-50, and the
// VoVNet, MobileNetV2, EfficientNet, ViT and SegFormer names, which run the ResNet-50 pipeline too. With DEVICE_BACKEND=metal (a `ttnn` build) the
// factory runs it on MetalDevice (resnet50.ttnn from MODEL_WEIGHTS_PATH, checked against its
// declaration); otherwise on the simulator, so the factory and the simulated fallback are the same.
func Register(reg *runners.Registry) {
	for _, m := range catalogue.Models() {
		if m.Service == catalogue.ServiceCNN && m.CNN.Output == catalogue.OutputLabels {
			f := SimFactory(m.Name)
			reg.Register(m.Name, f, f)
		}
	}
}

// DeviceInfo describes the runner's simulated device; ok is false on the Go twin.
func (c *cnnRunner) DeviceInfo() (ttnn.DeviceInfo, bool) {
	if c.metal != nil {
		return c.metal.Info()
	}
	return c.sim.Info()
}
