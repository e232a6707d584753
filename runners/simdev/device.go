package simdev

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// Config says how a simulated runner drives the simulated device.
type Config struct {
	// Opts are the device options; Opts.SimLatencyScale is chosen so that the sim's time
	// matches the MOCK_* latency settings (an explicit TTB_SIM_LATENCY_SCALE in the
	// environment wins).
	Opts     ttnn.Options
	Programs []string // loaded and run once at warm-up (the compile run)
	Traced   string   // one of Programs, captured in a trace at warm-up and replayed after
	// Shared: in process, the device is a submesh of the process's parent mesh (Parent, opened
	// by the server), chosen by Opts.DeviceIDs.
	Shared bool
	// Parent is the worker's WorkerSpec.Parent; nil in process means no device (Go sleeps).
	Parent *ttnn.Device
}

// ConfigFor returns the device configuration of a simulated runner (nil without settings or
// for an unknown service). In a worker process (WORKER_ISOLATION=process) the runner opens
// its own device over the chips TT_VISIBLE_DEVICES shows it; in process it opens the submesh
// of its group's chips in the shared parent mesh — the simulator, like TT-Metal, has one open
// mesh per process. Without a shared parent (a runner built outside the server, or a build
// without cgo) an in-process runner keeps its time with Go sleeps.
func ConfigFor(model string, spec runners.WorkerSpec) *Config {
	s := spec.Settings
	if s == nil {
		return nil
	}
	mesh := ttnn.MeshShape{Rows: spec.Mesh.Rows, Cols: spec.Mesh.Cols}
	if mesh.Chips() == 0 {
		mesh = ttnn.MeshShape{Rows: 1, Cols: 1}
	}
	c, ok := modelOptions(model, s, mesh)
	if !ok {
		return nil
	}
	if s.WorkerIsolation != config.IsolationProcess {
		c.Shared, c.Parent = true, spec.Parent
		if len(spec.Devices) >= mesh.Chips() { // "" (all chips) gives none: the whole parent
			c.Opts.DeviceIDs = append([]int(nil), spec.Devices[:mesh.Chips()]...)
		}
	}
	return c
}

// DeviceOptions are the device open options of the named runner (MODEL_RUNNER; "mock"
// follows MODEL_SERVICE) on mesh, with the settings' TRACE_REGION_SIZE: what the server opens
// the shared parent mesh with in process. ok is false for a runner this package does not know.
func DeviceOptions(model string, s *config.Settings, mesh config.MeshShape) (opts ttnn.Options, ok bool) {
	m := ttnn.MeshShape{Rows: mesh.Rows, Cols: mesh.Cols}
	if m.Chips() == 0 {
		m = ttnn.MeshShape{Rows: 1, Cols: 1}
	}
	c, ok := modelOptions(model, s, m)
	if !ok {
		return ttnn.Options{}, false
	}
	c.Opts.SimLatencyScale = 0
	return c.Opts, true
}

// modelOptions is the model's device configuration on mesh, from the runners' catalogue.
func modelOptions(model string, s *config.Settings, mesh ttnn.MeshShape) (*Config, bool) {
	m, ok := runners.Lookup(model, s)
	if !ok {
		return nil, false
	}
	c := &Config{Opts: Options(m, s, mesh), Programs: m.Sim.Programs, Traced: m.Sim.Traced}
	c.Opts.SimLatencyScale = ttnn.SimScale(runners.MockLatency(m, s).Seconds(), m.Sim.UnitSeconds)
	return c, true
}

// Options are the catalogued model's device open options on mesh (1x1 when empty), with the
// settings' TRACE_REGION_SIZE when it was set: FABRIC_1D on a multi-chip mesh for the models
// that ask for it, ethernet dispatch for two command queues on a multi-chip mesh.
func Options(m runners.Model, s *config.Settings, mesh ttnn.MeshShape) ttnn.Options {
	if mesh.Chips() == 0 {
		mesh = ttnn.MeshShape{Rows: 1, Cols: 1}
	}
	o := ttnn.Options{Mesh: mesh, ProgramCache: true, CommandQueues: m.Device.CommandQueues,
		L1SmallSize: m.Device.L1SmallSize, TraceRegionSize: runners.TraceRegion(m, s)}
	if m.Device.Fabric1D && mesh.Chips() > 1 {
		o.Fabric = ttnn.Fabric1D
	}
	if o.CommandQueues == 2 && mesh.Chips() > 1 {
		o.Dispatch = ttnn.DispatchEth // two CQs on a multi-chip mesh need ethernet dispatch
	}
	return o
}

// simDevice is an open simulated device with the runner's programs loaded.
type simDevice struct {
	dev   *ttnn.Device
	dir   string
	progs map[string]*simProgram
}

// simProgram is a loaded program's one function with persistent inputs, and its trace.
type simProgram struct {
	prog      *ttnn.Program
	fn        string
	inputs    []*ttnn.Tensor
	trace     *ttnn.Trace
	traceOuts []*ttnn.Tensor
}

// openSim opens the device with c's options (in process: the submesh of c.Opts.DeviceIDs in
// the shared parent mesh), loads the programs (compiled for the opened mesh), runs each once,
// and captures the traced one. Errors name the step; device loss and dispatch timeouts come
// wrapped in runners.ErrDeviceLost.
func openSim(ctx context.Context, c *Config) (_ *simDevice, err error) {
	if err := ttnn.Init("sim"); err != nil {
		return nil, fmt.Errorf("simulator: %w", err)
	}
	what := "device"
	if c.Shared {
		what = fmt.Sprintf("submesh of chips %v in the shared parent mesh", c.Opts.DeviceIDs)
	}
	dev, err := OpenDevice(ctx, c.Parent, c.Opts)
	if err != nil {
		return nil, fmt.Errorf("open %s (mesh %v, l1_small_size %d, trace_region_size %d, %d CQ): %w",
			what, c.Opts.Mesh, c.Opts.L1SmallSize, c.Opts.TraceRegionSize, c.Opts.CommandQueues, DeviceErr(err))
	}
	d := &simDevice{dev: dev, progs: map[string]*simProgram{}}
	defer func() {
		if err != nil {
			_ = d.close()
		}
	}()
	if d.dir, err = os.MkdirTemp("", "ttb-programs-"); err != nil {
		return nil, fmt.Errorf("program directory: %w", err)
	}
	mesh := dev.Info().Mesh
	for _, name := range c.Programs {
		p, err := d.load(ctx, name, mesh)
		if err != nil {
			return nil, err
		}
		d.progs[name] = p
		// The first run compiles the program (and must precede a trace capture).
		if err := d.runOnce(ctx, p); err != nil {
			return nil, fmt.Errorf("compile run of %s: %w", name, err)
		}
	}
	if c.Traced != "" {
		if err := d.capture(ctx, d.progs[c.Traced]); err != nil {
			return nil, fmt.Errorf("capture trace of %s (trace_region_size %d): %w", c.Traced, c.Opts.TraceRegionSize, err)
		}
	}
	return d, nil
}

// load writes the manifest (compiled for mesh) and loads it with persistent inputs.
func (d *simDevice) load(ctx context.Context, name string, mesh ttnn.MeshShape) (*simProgram, error) {
	path, err := WriteManifest(ttnn.SimPrograms(), d.dir, name, mesh)
	if err != nil {
		return nil, err
	}
	prog, err := d.dev.LoadProgram(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("load program %s: %w", name, DeviceErr(err))
	}
	fns := prog.Functions()
	if len(fns) == 0 {
		return nil, fmt.Errorf("program %s has no function", name)
	}
	p := &simProgram{prog: prog, fn: fns[0].Name}
	for _, in := range fns[0].Inputs {
		t, err := d.dev.Alloc(ctx, in, ttnn.TensorOptions{Placement: ttnn.DRAM, Layout: ttnn.Tile, Retain: true})
		if err != nil {
			return nil, fmt.Errorf("allocate %s input %s: %w", name, in, DeviceErr(err))
		}
		p.inputs = append(p.inputs, t)
	}
	return p, nil
}

func (d *simDevice) runOnce(ctx context.Context, p *simProgram) error {
	outs, err := p.prog.Run(ctx, 0, p.fn, p.inputs...)
	for _, o := range outs {
		_ = o.Free()
	}
	return DeviceErr(err)
}

func (d *simDevice) capture(ctx context.Context, p *simProgram) error {
	tr, outs, err := Capture(ctx, d.dev, func(ctx context.Context) ([]*ttnn.Tensor, error) {
		return p.prog.Run(ctx, 0, p.fn, p.inputs...)
	})
	if err != nil {
		return DeviceErr(err)
	}
	p.trace, p.traceOuts = tr, outs
	return nil
}

// run executes the named program once: a trace replay when it was captured. Like a real
// device call it cannot be interrupted: ctx is checked before the call only, and the call
// returns when the device does (a hung device hangs the runner, and the supervisor that
// owns the worker process kills it).
func (d *simDevice) run(ctx context.Context, name string) error {
	p := d.progs[name]
	if p == nil {
		return fmt.Errorf("program %s is not loaded", name)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ctx = context.WithoutCancel(ctx)
	if p.trace != nil {
		return DeviceErr(p.trace.Replay(ctx, true))
	}
	return d.runOnce(ctx, p)
}

// close releases everything and closes the device; it is safe on a partly opened device.
func (d *simDevice) close() error {
	var errs []error
	for _, p := range d.progs {
		if p.trace != nil {
			errs = append(errs, p.trace.Release())
		}
		for _, t := range append(p.traceOuts, p.inputs...) {
			errs = append(errs, t.Free())
		}
		errs = append(errs, p.prog.Close())
	}
	if d.dev != nil {
		errs = append(errs, d.dev.Close())
	}
	if d.dir != "" {
		errs = append(errs, os.RemoveAll(d.dir))
	}
	err := errors.Join(errs...)
	if errors.Is(err, ttnn.ErrDeviceLost) || errors.Is(err, ttnn.ErrTimeout) {
		// Already reported by the call that lost the device; the host side is freed.
		return nil
	}
	if err != nil {
		return fmt.Errorf("close simulated device: %w", err)
	}
	return nil
}

// Stepper is what the simulated runners spend device time with: the simulated device (its own in a
// worker process, a submesh of the shared parent in process), or Go sleeps of the MOCK_*
// latencies when no device is available (in process without a shared parent).
type Stepper struct {
	// Cfg is the device configuration (ConfigFor); nil: no device, time is Go sleeps.
	Cfg *Config
	dev *simDevice
}

// Open opens the device when the runner has a device configuration and a device is available.
func (s *Stepper) Open(ctx context.Context) error {
	if s.Cfg == nil || s.dev != nil || (s.Cfg.Shared && s.Cfg.Parent == nil) {
		return nil
	}
	dev, err := openSim(ctx, s.Cfg)
	if err != nil {
		return err
	}
	s.dev = dev
	return nil
}

// OnDevice reports whether device time comes from the simulator.
func (s *Stepper) OnDevice() bool { return s.dev != nil }

// Info describes the open device; ok is false without one.
func (s *Stepper) Info() (info ttnn.DeviceInfo, ok bool) {
	if s.dev == nil {
		return ttnn.DeviceInfo{}, false
	}
	return s.dev.dev.Info(), true
}

// Run executes program n times on the device, checking ctx between runs; without a device it
// sleeps fallback instead.
func (s *Stepper) Run(ctx context.Context, program string, n int, fallback time.Duration) error {
	if s.dev == nil {
		return Sleep(ctx, fallback)
	}
	for range n {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.dev.run(ctx, program); err != nil {
			return err
		}
	}
	return nil
}

// Close closes the device; it is idempotent.
func (s *Stepper) Close() error {
	if s.dev == nil {
		return nil
	}
	err := s.dev.close()
	s.dev = nil
	return err
}
