package resnet

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/programs"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// MetalDevice is ResNet-50 compiled by tt-mlir on the metal backend (DEVICE_BACKEND=metal in a
// `ttnn` build): the program resnet50 from <MODEL_WEIGHTS_PATH>/resnet50.ttnn, checked against
// its declaration in runners/programs when loaded (a mismatch fails start-up with one line
// naming the program, the tensor and the difference), with the demo's device options. The
// batch goes in as bf16 to one persistent input; each run returns new logits (tt-mlir captures
// the program's trace on the first run and replays it after). UNVERIFIED ON HARDWARE: CI runs
// it over the fake tt::runtime (ttnn/fakert), whose logits are not a model's.
type MetalDevice struct {
	cfg    MetalConfig
	spec   ttnn.ProgramSpec
	path   string
	dev    *ttnn.Device
	prog   *ttnn.Program
	in     *ttnn.Tensor
	bf     []uint16
	inb    []byte
	outb   []byte
	logits []float32
}

// MetalConfig configures a MetalDevice.
type MetalConfig struct {
	// Weights is MODEL_WEIGHTS_PATH: the directory holding resnet50.ttnn.
	Weights string
	// Mesh and DeviceIDs choose the device as for SimConfig.
	Mesh      ttnn.MeshShape
	DeviceIDs []int
	// TraceRegionSize overrides the demo's when > 0.
	TraceRegionSize uint64
}

// NewMetalDevice checks that MODEL_WEIGHTS_PATH holds the program; Open opens the device.
func NewMetalDevice(cfg MetalConfig) (*MetalDevice, error) {
	spec, ok := programs.Lookup(SimProgram)
	if !ok {
		return nil, fmt.Errorf("resnet: program %s is not declared", SimProgram)
	}
	if cfg.Weights == "" {
		return nil, fmt.Errorf("resnet on metal: MODEL_WEIGHTS_PATH is not set (it must hold %s.ttnn, see docs/DEVICE-PROGRAMS.md)", SimProgram)
	}
	path := programs.MetalPath(cfg.Weights, SimProgram)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("resnet on metal: MODEL_WEIGHTS_PATH has no %s.ttnn (docs/DEVICE-PROGRAMS.md): %w", SimProgram, err)
	}
	if cfg.Mesh.Chips() == 0 {
		cfg.Mesh = spec.Mesh
	}
	f := spec.Functions[0]
	in, out := f.Inputs[0].TensorDesc, f.Outputs[0].TensorDesc
	return &MetalDevice{cfg: cfg, spec: spec, path: path,
		bf: make([]uint16, ImageElems), inb: make([]byte, in.Bytes()), outb: make([]byte, out.Bytes()),
		logits: make([]float32, spec.Batch*NumClasses)}, nil
}

// BatchSize is the batch the program is compiled for.
func (d *MetalDevice) BatchSize() int { return d.spec.Batch }

// Options are the device open options: the demo's, on the configured mesh.
func (d *MetalDevice) Options() ttnn.Options {
	return demoOptions(d.cfg.Mesh, d.cfg.DeviceIDs, d.cfg.TraceRegionSize)
}

// Info describes the open device; ok is false when it is not open.
func (d *MetalDevice) Info() (ttnn.DeviceInfo, bool) {
	if d == nil || d.dev == nil {
		return ttnn.DeviceInfo{}, false
	}
	return d.dev.Info(), true
}

// Open opens the device, loads and checks the program, allocates the input and runs the
// program once (tt-mlir's compile run, which also captures its trace).
func (d *MetalDevice) Open(ctx context.Context) (err error) {
	if d.dev != nil {
		return nil
	}
	if err := ttnn.Init("metal"); err != nil {
		return fmt.Errorf("metal backend: %w", err)
	}
	opts := d.Options()
	if d.dev, err = ttnn.Open(ctx, opts); err != nil {
		return fmt.Errorf("open device (mesh %v, l1_small_size %d, trace_region_size %d, %d CQ): %w",
			opts.Mesh, opts.L1SmallSize, opts.TraceRegionSize, opts.CommandQueues, simdev.DeviceErr(err))
	}
	defer func() {
		if err != nil {
			_ = d.Close()
		}
	}()
	if d.prog, err = programs.Load(ctx, d.dev, SimProgram, d.path); err != nil {
		if errors.Is(err, ttnn.ErrContract) {
			return runners.Permanent(err)
		}
		return err
	}
	f := d.spec.Functions[0]
	if d.in, err = d.dev.Alloc(ctx, f.Inputs[0].TensorDesc, ttnn.TensorOptions{Placement: ttnn.DRAM, Layout: ttnn.Tile, Retain: true}); err != nil {
		return fmt.Errorf("allocate input: %w", simdev.DeviceErr(err))
	}
	if _, err := d.forward(ctx); err != nil {
		return fmt.Errorf("compile run of %s: %w", SimProgram, err)
	}
	return nil
}

// forward runs the program on the input tensor and reads the logits into outb.
func (d *MetalDevice) forward(ctx context.Context) ([]byte, error) {
	outs, err := d.prog.Run(ctx, 0, d.spec.Functions[0].Name, d.in)
	defer func() {
		for _, o := range outs {
			_ = o.Free()
		}
	}()
	if err != nil {
		return nil, simdev.DeviceErr(err)
	}
	if len(outs) != 1 {
		return nil, fmt.Errorf("%s returned %d outputs, want 1", SimProgram, len(outs))
	}
	if err := outs[0].Read(ctx, 0, d.outb); err != nil {
		return nil, fmt.Errorf("read logits: %w", simdev.DeviceErr(err))
	}
	return d.outb, nil
}

// Run is the DeviceFunc: the batch (BatchSize images, the first n real) goes in as bf16, the
// program runs, the n images' logits come back.
func (d *MetalDevice) Run(ctx context.Context, batch []float32, n int) ([]float32, error) {
	if d.prog == nil {
		return nil, fmt.Errorf("resnet on metal: device not open")
	}
	if err := checkBatch(batch, n, d.spec.Batch); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	per := ImageElems * 2
	for i := range d.spec.Batch {
		if i < n {
			ToBF16(d.bf, batch[i*ImageElems:(i+1)*ImageElems])
			bf16Bytes(d.inb[i*per:(i+1)*per], d.bf)
		} else {
			clear(d.inb[i*per : (i+1)*per])
		}
	}
	return d.run(ctx, n)
}

// RunBF16 is the BF16DeviceFunc: Run with the batch already in the device dtype.
func (d *MetalDevice) RunBF16(ctx context.Context, batch []byte, n int) ([]float32, error) {
	if d.prog == nil {
		return nil, fmt.Errorf("resnet on metal: device not open")
	}
	if err := checkBatchBF16(batch, n, d.spec.Batch); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	per := ImageElems * 2
	copy(d.inb, batch[:n*per])
	clear(d.inb[n*per:])
	return d.run(ctx, n)
}

// run writes the input batch d.inb, runs the program and returns the n images' logits.
func (d *MetalDevice) run(ctx context.Context, n int) ([]float32, error) {
	ctx = context.WithoutCancel(ctx)
	if err := d.in.Write(ctx, 0, d.inb); err != nil {
		return nil, fmt.Errorf("write input: %w", simdev.DeviceErr(err))
	}
	out, err := d.forward(ctx)
	if err != nil {
		return nil, err
	}
	f32FromBytes(d.logits, out)
	return d.logits[:n*NumClasses], nil
}

// Close frees the input and the program and closes the device; idempotent.
func (d *MetalDevice) Close() error {
	var errs []error
	if d.in != nil {
		errs = append(errs, d.in.Free())
	}
	if d.prog != nil {
		errs = append(errs, d.prog.Close())
	}
	if d.dev != nil {
		errs = append(errs, d.dev.Close())
	}
	d.in, d.prog, d.dev = nil, nil, nil
	err := errors.Join(errs...)
	if errors.Is(err, ttnn.ErrDeviceLost) || errors.Is(err, ttnn.ErrTimeout) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("close metal device: %w", err)
	}
	return nil
}
