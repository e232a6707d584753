package resnet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// The device adapters: DeviceFuncs for the runner that stand in for ResNet-50 on a TT chip.
//
// SimDevice runs the C simulator's resnet50 program through ttnn with the demo's device options
// (l1_small_size 32768, trace region 1,470,464 B, 2 command queues), traces the device batch at
// warm-up and replays it per batch: the bf16 batch goes in on command queue 1, the replay runs
// on queue 0 after an event, the logits come back as float32. The simulator allows one open
// mesh per process, so a worker process (WORKER_ISOLATION=process) opens its own device and
// an in-process worker the submesh of its chips (SimConfig.DeviceIDs) in the server's shared
// parent mesh (SimConfig.Parent). FakeDevice is its pure-Go twin for workers without a device
// (in process without a parent mesh): the same logits bit for bit (the simulator's output
// generator, reproduced and checked against the C code in the tests) and the same time per
// batch. Both derive each image's logits from that image's bf16 tensor alone, so an answer
// never depends on the other images of the batch, and both charge a whole device batch's time
// for a padded batch, as a traced batch-16 program does on hardware.

// SimConfig configures a SimDevice.
type SimConfig struct {
	// Mesh is the mesh the device opens and the program is compiled for (default 1×1).
	Mesh ttnn.MeshShape
	// DeviceIDs are the chips of the mesh (ttnn.Options.DeviceIDs): under a shared parent
	// mesh they select the submesh; nil in a worker process (TT_VISIBLE_DEVICES chooses).
	DeviceIDs []int
	// Parent, when not nil, is the server's parent mesh: Open opens the submesh of DeviceIDs.
	Parent *ttnn.Device
	// TraceRegionSize overrides the demo's TraceRegionSize when > 0.
	TraceRegionSize uint64
	// BatchLatency is the device time of one batch. When > 0, the device's simulator latency
	// scale (ttnn.Options.SimLatencyScale) is chosen so that a batch takes this long, unless
	// TTB_SIM_LATENCY_SCALE is set in the environment: then a batch takes the program's
	// 3.404 ms times that scale.
	BatchLatency time.Duration
	// NoLatency gives the device no time at all (BatchLatency is then ignored): a zero
	// MOCK_CNN_SECONDS, where BatchLatency 0 would mean the program's own latency.
	NoLatency bool
}

// SimDevice is ResNet-50 on the C simulator (see the adapters' description above). Use it
// from one goroutine at a time; Run's result is valid until the next Run.
type SimDevice struct {
	cfg    SimConfig
	fn     *simFunc
	dev    *ttnn.Device
	prog   *ttnn.Program
	dir    string
	ins    []*ttnn.Tensor // one persistent input per batch slot
	outs   []*ttnn.Tensor // the trace's outputs, one per slot
	trace  *ttnn.Trace
	dirty  []bool // slot holds a non-zero image from an earlier batch
	inb    []byte
	outb   []byte
	logits []float32
}

// NewSimDevice reads the simulator's resnet50 program; it does not open the device (Open does).
func NewSimDevice(cfg SimConfig) (*SimDevice, error) {
	fn, err := loadSimFunc()
	if err != nil {
		return nil, fmt.Errorf("resnet: %w", err)
	}
	if cfg.Mesh.Chips() == 0 {
		cfg.Mesh = ttnn.MeshShape{Rows: 1, Cols: 1}
	}
	return &SimDevice{
		cfg: cfg, fn: fn,
		dirty:  make([]bool, fn.batch),
		inb:    make([]byte, fn.in.Bytes()),
		outb:   make([]byte, fn.out.Bytes()),
		logits: make([]float32, fn.batch*NumClasses),
	}, nil
}

// BatchSize is the device batch (the program's, 16): the runner's Config.BatchSize.
func (d *SimDevice) BatchSize() int { return d.fn.batch }

// Options are the device open options: the demo's, on the configured mesh.
func (d *SimDevice) Options() ttnn.Options {
	o := demoOptions(d.cfg.Mesh, d.cfg.DeviceIDs, d.cfg.TraceRegionSize)
	switch {
	case d.cfg.NoLatency:
		o.SimLatencyScale = ttnn.SimNoLatency
	case d.cfg.BatchLatency > 0:
		o.SimLatencyScale = ttnn.SimScale(d.cfg.BatchLatency.Seconds(), d.fn.batchLatency.Seconds())
	}
	return o
}

// demoOptions are the ResNet-50 demo's device options on mesh (both backends): L1 small size,
// trace region (traceRegion when > 0), two command queues, the program cache, and ethernet
// dispatch on a multi-chip mesh (two command queues there need it).
func demoOptions(mesh ttnn.MeshShape, ids []int, traceRegion uint64) ttnn.Options {
	o := ttnn.Options{Mesh: mesh, DeviceIDs: append([]int(nil), ids...), L1SmallSize: L1SmallSize,
		TraceRegionSize: TraceRegionSize, CommandQueues: CommandQueues, ProgramCache: true}
	if traceRegion > 0 {
		o.TraceRegionSize = traceRegion
	}
	if o.Mesh.Chips() > 1 {
		o.Dispatch = ttnn.DispatchEth
	}
	return o
}

// Info describes the open device; ok is false when it is not open (or d is nil).
func (d *SimDevice) Info() (info ttnn.DeviceInfo, ok bool) {
	if d == nil || d.dev == nil {
		return ttnn.DeviceInfo{}, false
	}
	return d.dev.Info(), true
}

// Open opens the simulated device, loads the program compiled for the mesh, allocates the
// persistent inputs, runs the program once (the compile run) and captures the batch's trace.
// Failures name the step; a lost device or a dispatch timeout matches runners.ErrDeviceLost.
func (d *SimDevice) Open(ctx context.Context) (err error) {
	if d.dev != nil {
		return nil
	}
	if err := ttnn.Init("sim"); err != nil {
		return fmt.Errorf("simulator: %w", err)
	}
	opts := d.Options()
	dev, err := simdev.OpenDevice(ctx, d.cfg.Parent, opts)
	if err != nil {
		return fmt.Errorf("open device (mesh %v, l1_small_size %d, trace_region_size %d, %d CQ): %w",
			opts.Mesh, opts.L1SmallSize, opts.TraceRegionSize, opts.CommandQueues, simdev.DeviceErr(err))
	}
	d.dev = dev
	defer func() {
		if err != nil {
			_ = d.Close()
		}
	}()
	if d.dir, err = os.MkdirTemp("", "ttb-resnet-"); err != nil {
		return fmt.Errorf("program directory: %w", err)
	}
	path := filepath.Join(d.dir, SimProgram+".ttbsim")
	if err := os.WriteFile(path, []byte(d.fn.manifestFor(dev.Info().Mesh)), 0o600); err != nil {
		return fmt.Errorf("program %s: %w", SimProgram, err)
	}
	if d.prog, err = dev.LoadProgram(ctx, path); err != nil {
		return fmt.Errorf("load program %s: %w", SimProgram, simdev.DeviceErr(err))
	}
	for i := range d.fn.batch {
		t, err := dev.Alloc(ctx, d.fn.in, ttnn.TensorOptions{Placement: ttnn.DRAM, Layout: ttnn.Tile, Retain: true})
		if err != nil {
			return fmt.Errorf("allocate input %d: %w", i, simdev.DeviceErr(err))
		}
		d.ins = append(d.ins, t)
		if err := t.Write(ctx, 1, make([]byte, d.fn.in.Bytes())); err != nil {
			return fmt.Errorf("clear input %d: %w", i, simdev.DeviceErr(err))
		}
	}
	outs, err := d.prog.Run(ctx, 0, d.fn.fn, d.ins[0])
	for _, o := range outs {
		_ = o.Free()
	}
	if err != nil {
		return fmt.Errorf("compile run of %s: %w", SimProgram, simdev.DeviceErr(err))
	}
	if err := d.capture(ctx); err != nil {
		return fmt.Errorf("capture trace of %s (trace_region_size %d): %w", SimProgram, opts.TraceRegionSize, err)
	}
	return nil
}

// capture records one forward per batch slot in one trace.
func (d *SimDevice) capture(ctx context.Context) error {
	tr, outs, err := simdev.Capture(ctx, d.dev, func(ctx context.Context) ([]*ttnn.Tensor, error) {
		var outs []*ttnn.Tensor
		for _, in := range d.ins {
			o, err := d.prog.Run(ctx, 0, d.fn.fn, in)
			outs = append(outs, o...)
			if err != nil {
				return outs, err
			}
		}
		return outs, nil
	})
	if err != nil {
		return simdev.DeviceErr(err)
	}
	d.trace, d.outs = tr, outs
	return nil
}

// Run is the DeviceFunc: it writes the batch (BatchSize images, the first n real) as bf16,
// replays the trace and returns the n images' logits. Like a real device call it cannot be
// interrupted: ctx is checked before the call only.
func (d *SimDevice) Run(ctx context.Context, batch []float32, n int) ([]float32, error) {
	if err := checkBatch(batch, n, d.fn.batch); err != nil {
		return nil, err
	}
	return d.run(ctx, n, func(i int) []byte {
		bf16LE(d.inb, batch[i*ImageElems:(i+1)*ImageElems])
		return d.inb
	})
}

// RunBF16 is the BF16DeviceFunc: Run with the batch already in the device dtype, written to
// the device as it is.
func (d *SimDevice) RunBF16(ctx context.Context, batch []byte, n int) ([]float32, error) {
	if err := checkBatchBF16(batch, n, d.fn.batch); err != nil {
		return nil, err
	}
	return d.run(ctx, n, func(i int) []byte { return batch[i*2*ImageElems : (i+1)*2*ImageElems] })
}

// run writes image i's bf16 bytes (image(i)) for every slot that is real or held an earlier
// image, replays the trace and reads the n images' logits.
func (d *SimDevice) run(ctx context.Context, n int, image func(i int) []byte) ([]float32, error) {
	if d.trace == nil {
		return nil, fmt.Errorf("resnet sim: device not open")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ctx = context.WithoutCancel(ctx)
	for i, in := range d.ins {
		if i >= n && !d.dirty[i] {
			continue // padding already zero on the device
		}
		if i < n {
			if err := in.Write(ctx, 1, image(i)); err != nil {
				return nil, fmt.Errorf("write input %d: %w", i, simdev.DeviceErr(err))
			}
		} else {
			clear(d.inb)
			if err := in.Write(ctx, 1, d.inb); err != nil {
				return nil, fmt.Errorf("write input %d: %w", i, simdev.DeviceErr(err))
			}
		}
		d.dirty[i] = i < n
	}
	ev, err := d.dev.RecordEvent(ctx, 1)
	if err == nil {
		err = d.dev.WaitEvent(ctx, 0, ev)
	}
	if err != nil {
		return nil, fmt.Errorf("input event: %w", simdev.DeviceErr(err))
	}
	if err := d.trace.Replay(ctx, true); err != nil {
		return nil, fmt.Errorf("replay %s: %w", SimProgram, simdev.DeviceErr(err))
	}
	for i := range n {
		if err := d.outs[i].Read(ctx, 0, d.outb); err != nil {
			return nil, fmt.Errorf("read logits %d: %w", i, simdev.DeviceErr(err))
		}
		f32FromBytes(d.logits[i*NumClasses:(i+1)*NumClasses], d.outb)
	}
	return d.logits[:n*NumClasses], nil
}

// Close releases the trace, tensors and program and closes the device; it is idempotent and
// safe on a partly opened device.
func (d *SimDevice) Close() error {
	var errs []error
	if d.trace != nil {
		errs = append(errs, d.trace.Release())
	}
	for _, t := range append(d.outs, d.ins...) {
		errs = append(errs, t.Free())
	}
	if d.prog != nil {
		errs = append(errs, d.prog.Close())
	}
	if d.dev != nil {
		errs = append(errs, d.dev.Close())
	}
	if d.dir != "" {
		errs = append(errs, os.RemoveAll(d.dir))
	}
	d.trace, d.outs, d.ins, d.prog, d.dev, d.dir = nil, nil, nil, nil, nil, ""
	clear(d.dirty)
	err := errors.Join(errs...)
	if errors.Is(err, ttnn.ErrDeviceLost) || errors.Is(err, ttnn.ErrTimeout) {
		return nil // already reported by the call that lost the device; the host side is freed
	}
	if err != nil {
		return fmt.Errorf("close simulated device: %w", err)
	}
	return nil
}

// FakeDevice is SimDevice's pure-Go twin for in-process workers: the same logits, bit for bit,
// and the same device time per batch (a Go sleep that ends early when ctx does). Use it from
// one goroutine at a time; Run's result is valid until the next Run.
type FakeDevice struct {
	fn      *simFunc
	prefix  uint64
	latency time.Duration
	bf      []uint16
	logits  []float32
	runs    atomic.Int64
}

// NewFakeDevice returns the twin; batchLatency is the time of one device batch (0: none).
func NewFakeDevice(batchLatency time.Duration) (*FakeDevice, error) {
	fn, err := loadSimFunc()
	if err != nil {
		return nil, fmt.Errorf("resnet: %w", err)
	}
	return &FakeDevice{fn: fn, prefix: fn.prefix(), latency: batchLatency,
		bf: make([]uint16, ImageElems), logits: make([]float32, fn.batch*NumClasses)}, nil
}

// BatchSize is the device batch (the simulator program's, 16).
func (f *FakeDevice) BatchSize() int { return f.fn.batch }

// Runs counts the device batches Run started (safe to read from any goroutine).
func (f *FakeDevice) Runs() int64 { return f.runs.Load() }

// Run is the DeviceFunc: the simulator's logits for the first n images, after the batch's
// device time.
func (f *FakeDevice) Run(ctx context.Context, batch []float32, n int) ([]float32, error) {
	if err := checkBatch(batch, n, f.fn.batch); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return f.run(ctx, n, func(i int, dst []float32) {
		f.fn.logits(f.prefix, ToBF16(f.bf, batch[i*ImageElems:(i+1)*ImageElems]), dst)
	})
}

// RunBF16 is the BF16DeviceFunc: Run with the batch already in the device dtype.
func (f *FakeDevice) RunBF16(ctx context.Context, batch []byte, n int) ([]float32, error) {
	if err := checkBatchBF16(batch, n, f.fn.batch); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return f.run(ctx, n, func(i int, dst []float32) {
		f.fn.logitsLE(f.prefix, batch[i*2*ImageElems:(i+1)*2*ImageElems], dst)
	})
}

// run computes the n images' logits (logits(i, dst)) and waits out the batch's device time.
func (f *FakeDevice) run(ctx context.Context, n int, logits func(i int, dst []float32)) ([]float32, error) {
	f.runs.Add(1)
	start := time.Now()
	for i := range n {
		logits(i, f.logits[i*NumClasses:(i+1)*NumClasses])
	}
	if d := f.latency - time.Since(start); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err := ctx.Err(); err != nil { // the context ended while the logits were computed
		return nil, err
	}
	return f.logits[:n*NumClasses], nil
}

// checkBatchBF16 checks a BF16DeviceFunc's arguments against the device batch.
func checkBatchBF16(batch []byte, n, size int) error {
	if len(batch) != size*2*ImageElems || n < 0 || n > size {
		return fmt.Errorf("resnet device: %d bf16 bytes with %d images for a device batch of %d", len(batch), n, size)
	}
	return nil
}

// checkBatch checks a DeviceFunc's arguments against the device batch.
func checkBatch(batch []float32, n, size int) error {
	if len(batch) != size*ImageElems || n < 0 || n > size {
		return fmt.Errorf("resnet device: %d values with %d images for a device batch of %d", len(batch), n, size)
	}
	return nil
}
