//go:build cgo

package ttnn

/*
#cgo CFLAGS: -std=c11 -O2 -Wall
#cgo LDFLAGS: -lm -lpthread
#include <stdlib.h>
#include "include/ttbridge.h"
*/
import "C"

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unsafe"
)

var statusErr = map[C.ttb_status]error{
	C.TTB_INVALID_ARGUMENT: ErrInvalidArgument,
	C.TTB_OUT_OF_MEMORY:    ErrOutOfMemory,
	C.TTB_TIMEOUT:          ErrTimeout,
	C.TTB_DEVICE_LOST:      ErrDeviceLost,
	C.TTB_BUSY:             ErrBusy,
	C.TTB_INTERNAL:         ErrInternal,
	C.TTB_NOT_FOUND:        ErrNotFound,
	C.TTB_UNSUPPORTED:      ErrUnsupported,
}

// check turns a status into an error. It must run on the OS thread that made the call,
// because the message is thread-local.
func check(op string, st C.ttb_status) error {
	if st == C.TTB_OK {
		return nil
	}
	kind, ok := statusErr[st]
	if !ok {
		kind = ErrInternal
	}
	return &Error{Op: op, Msg: C.GoString(C.ttb_last_error()), Kind: kind}
}

// onThread runs a process-level call with the goroutine pinned, so the status and the
// thread-local message come from the same thread.
func onThread(op string, f func() C.ttb_status) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return check(op, f())
}

func invalid(op, format string, args ...any) error {
	return &Error{Op: op, Msg: fmt.Sprintf(format, args...), Kind: ErrInvalidArgument}
}

var (
	initMu      sync.Mutex
	initBackend string
)

// Init selects the backend ("sim" or "metal"; "" means "sim") and initialises its runtime.
// It must precede Open; calling it again with the same backend is a no-op, with another one
// ErrBusy. The runtime reads TT_VISIBLE_DEVICES (and the sim MOCK_DEVICES_COUNT) once, here.
func Init(backend string) error {
	if backend == "" {
		backend = "sim"
	}
	initMu.Lock()
	defer initMu.Unlock()
	if initBackend == backend {
		return nil
	}
	name := C.CString(backend)
	defer C.free(unsafe.Pointer(name))
	if err := onThread("select backend", func() C.ttb_status { return C.ttb_select_backend(name) }); err != nil {
		return err
	}
	if err := onThread("runtime init", func() C.ttb_status { return C.ttb_runtime_init() }); err != nil {
		return err
	}
	initBackend = backend
	return nil
}

func needInit(op string) error {
	initMu.Lock()
	defer initMu.Unlock()
	if initBackend == "" {
		return invalid(op, "ttnn.Init has not been called")
	}
	return nil
}

// Backends lists the backends compiled into this binary.
func Backends() []string { return strings.Split(C.GoString(C.ttb_backends_available()), ",") }

// VisibleChips is the number of chips this process may open (after TT_VISIBLE_DEVICES).
func VisibleChips() (int, error) {
	if err := needInit("visible chips"); err != nil {
		return 0, err
	}
	var n C.uint32_t
	err := onThread("visible chips", func() C.ttb_status { return C.ttb_num_visible_chips(&n) })
	return int(n), err
}

// Counts returns the backend's live handle counters (leak accounting).
func Counts() (LiveCounts, error) {
	if err := needInit("live counts"); err != nil {
		return LiveCounts{}, err
	}
	var c C.ttb_live_counts
	err := onThread("live counts", func() C.ttb_status { return C.ttb_live_counts_get(&c) })
	return LiveCounts{Devices: uint64(c.devices), Programs: uint64(c.programs), Tensors: uint64(c.tensors),
		Traces: uint64(c.traces), TensorBytes: uint64(c.tensor_bytes)}, err
}

// parseVisibleDevices applies the backend's TT_VISIBLE_DEVICES rules to value.
func parseVisibleDevices(value string, set bool, total int) ([]int, error) {
	v := C.CString(value)
	defer C.free(unsafe.Pointer(v))
	var ids [C.TTB_MAX_CHIPS]C.int32_t
	var n C.uint32_t
	isSet := C.int(0)
	if set {
		isSet = 1
	}
	if total < 0 || total > C.TTB_MAX_CHIPS {
		return nil, invalid("parse TT_VISIBLE_DEVICES", "total %d out of range", total)
	}
	err := onThread("parse TT_VISIBLE_DEVICES", func() C.ttb_status {
		return C.ttb_parse_visible_devices(v, isSet, C.uint32_t(total), &ids[0], C.TTB_MAX_CHIPS, &n)
	})
	if err != nil {
		return nil, err
	}
	out := make([]int, int(n))
	for i := range out {
		out[i] = int(ids[i])
	}
	return out, nil
}

// Device is an open mesh, or a submesh of one. All its calls run on one goroutine locked to
// one OS thread; methods may be called from any goroutine. A call whose context ends while it
// waits to start is not made; one that already runs cannot be interrupted (a cgo call cannot
// be cancelled): the method returns ctx.Err() and the call completes in the background —
// tensors it creates are freed by Close. Close frees every tensor, trace and program of the
// device; a device with live submeshes cannot be closed (ErrBusy).
type Device struct {
	reqs chan func()
	done chan struct{}
	info DeviceInfo

	parent *Device // nil for a root device
	opts   Options // open options of a root device (the ones its submeshes share)
	ids    []int   // logical chip ids of a root device, row-major (shared parents only)

	closeMu  sync.Mutex
	closed   bool
	closeErr error

	// Only touched on the device goroutine.
	h        *C.ttb_device
	subs     int // live submeshes
	tensors  map[*Tensor]struct{}
	programs map[*Program]struct{}
	traces   map[*Trace]struct{}
}

func newDevice(parent *Device) *Device {
	return &Device{
		reqs:     make(chan func()),
		done:     make(chan struct{}),
		parent:   parent,
		tensors:  map[*Tensor]struct{}{},
		programs: map[*Program]struct{}{},
		traces:   map[*Trace]struct{}{},
	}
}

// shared is the parent mesh of ShareParent.
var shared struct {
	sync.Mutex
	dev *Device
}

// ShareParent opens opts as the process's parent mesh — the way TT-Metal lets several device
// groups live in one process: one mesh over the chips, carved into submeshes that share its
// open options. Until the returned device is closed, Open returns submeshes of it (see Open)
// and their Close releases them. The parent itself is closed with Close once every submesh is
// released (ErrBusy before). A second ShareParent while one is open fails with ErrBusy.
func ShareParent(ctx context.Context, opts Options) (*Device, error) {
	shared.Lock()
	defer shared.Unlock()
	if shared.dev != nil {
		return nil, &Error{Op: "share parent", Msg: fmt.Sprintf("a shared parent mesh (%v) is already open", shared.dev.info.Mesh), Kind: ErrBusy}
	}
	d, err := openRoot(ctx, opts)
	if err != nil {
		return nil, err
	}
	d.ids = append([]int(nil), opts.DeviceIDs...)
	if len(d.ids) == 0 { // the first chips of the visible ones, in order
		for i := range d.info.Chips {
			d.ids = append(d.ids, i)
		}
	}
	shared.dev = d
	return d, nil
}

// SharedParent is the device ShareParent opened, nil when none is open.
func SharedParent() *Device {
	shared.Lock()
	defer shared.Unlock()
	return shared.dev
}

// Open opens a device with opts on a new pinned goroutine.
//
// Under ShareParent it returns a submesh of the shared parent instead: opts.Mesh chips at the
// position of opts.DeviceIDs in the parent (the ids, row-major, must be an opts.Mesh-shaped
// rectangle of the parent's chips; without ids, opts.Mesh must be the parent's whole mesh; a
// zero Mesh means one row of the ids, or the whole parent). The parent's open options apply,
// so opts may not ask for more than it has — a larger L1SmallSize, TraceRegionSize (unless
// the parent's is 0, dynamic) or CommandQueues, or another Fabric than off or the parent's is
// ErrInvalidArgument; opts.SimLatencyScale is the submesh's own.
func Open(ctx context.Context, opts Options) (*Device, error) {
	if err := needInit("open"); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if p := SharedParent(); p != nil {
		return p.openShared(ctx, opts)
	}
	return openRoot(ctx, opts)
}

func openRoot(ctx context.Context, opts Options) (*Device, error) {
	if err := needInit("open"); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if opts.Mesh.Rows < 0 || opts.Mesh.Cols < 0 || opts.Mesh.Rows > C.TTB_MAX_CHIPS || opts.Mesh.Cols > C.TTB_MAX_CHIPS {
		return nil, invalid("open", "mesh %v out of range", opts.Mesh)
	}
	if len(opts.DeviceIDs) > C.TTB_MAX_CHIPS {
		return nil, invalid("open", "%d device ids, at most %d", len(opts.DeviceIDs), C.TTB_MAX_CHIPS)
	}
	if !(opts.SimLatencyScale >= 0 && opts.SimLatencyScale <= 1000) {
		return nil, invalid("open", "SimLatencyScale %g not in [0, 1000]", opts.SimLatencyScale)
	}
	d := newDevice(nil)
	d.opts = opts
	d.opts.DeviceIDs = append([]int(nil), opts.DeviceIDs...)
	if d.opts.CommandQueues == 0 {
		d.opts.CommandQueues = 1
	}
	opened := make(chan error, 1)
	go d.loop(func() error { return d.open(opts) }, opened)
	if err := <-opened; err != nil {
		return nil, err
	}
	return d, nil
}

// openShared carves the submesh Open(opts) asks for out of the shared parent p.
func (p *Device) openShared(ctx context.Context, opts Options) (*Device, error) {
	po := p.opts
	cqs := max(opts.CommandQueues, 1)
	var errs []string
	if opts.L1SmallSize > po.L1SmallSize {
		errs = append(errs, fmt.Sprintf("l1_small_size %d > %d", opts.L1SmallSize, po.L1SmallSize))
	}
	if po.TraceRegionSize != 0 && opts.TraceRegionSize > po.TraceRegionSize {
		errs = append(errs, fmt.Sprintf("trace_region_size %d > %d", opts.TraceRegionSize, po.TraceRegionSize))
	}
	if cqs > po.CommandQueues {
		errs = append(errs, fmt.Sprintf("%d command queues > %d", cqs, po.CommandQueues))
	}
	if opts.Fabric != FabricOff && opts.Fabric != po.Fabric {
		errs = append(errs, fmt.Sprintf("fabric %d, parent has %d", opts.Fabric, po.Fabric))
	}
	if len(errs) > 0 {
		return nil, invalid("open submesh", "the device options of the shared parent mesh apply to every submesh (TT-Metal keeps one set per process), and this open needs more: %s; open the parent with the largest options",
			strings.Join(errs, ", "))
	}
	mesh, pm := opts.Mesh, p.info.Mesh
	if mesh.Chips() == 0 {
		mesh = pm
		if len(opts.DeviceIDs) > 0 {
			mesh = MeshShape{Rows: 1, Cols: len(opts.DeviceIDs)}
		}
	}
	var off MeshCoord
	if len(opts.DeviceIDs) == 0 {
		if mesh != pm {
			return nil, invalid("open submesh", "a %v submesh of the %v parent mesh needs DeviceIDs to say where it lies", mesh, pm)
		}
	} else {
		if len(opts.DeviceIDs) != mesh.Chips() {
			return nil, invalid("open submesh", "%d device ids for a %v mesh", len(opts.DeviceIDs), mesh)
		}
		first := slices.Index(p.ids, opts.DeviceIDs[0])
		if first < 0 {
			return nil, invalid("open submesh", "chip %d is not in the shared parent mesh (chips %v)", opts.DeviceIDs[0], p.ids)
		}
		off = MeshCoord{Row: first / pm.Cols, Col: first % pm.Cols}
		for i := range mesh.Rows {
			for j := range mesh.Cols {
				r, c := off.Row+i, off.Col+j
				if r >= pm.Rows || c >= pm.Cols || p.ids[r*pm.Cols+c] != opts.DeviceIDs[i*mesh.Cols+j] {
					return nil, invalid("open submesh", "chips %v are not a %v rectangle of the %v parent mesh (chips %v, row-major)",
						opts.DeviceIDs, mesh, pm, p.ids)
				}
			}
		}
	}
	return p.submesh(ctx, mesh, off, opts.SimLatencyScale)
}

// Submesh carves a mesh-shaped submesh at offset out of d: a Device of its own (own goroutine,
// tensors, programs, traces, memory and trace-region accounting for its chips) with d's device
// options. It must fit inside d (ErrInvalidArgument) and not overlap a live submesh of d
// (ErrBusy). Its Close releases it; d cannot be closed before (ErrBusy). Submeshes nest.
func (d *Device) Submesh(ctx context.Context, mesh MeshShape, offset MeshCoord) (*Device, error) {
	return d.submesh(ctx, mesh, offset, 0)
}

func (d *Device) submesh(ctx context.Context, mesh MeshShape, offset MeshCoord, scale float64) (*Device, error) {
	if mesh.Rows <= 0 || mesh.Cols <= 0 || mesh.Rows > C.TTB_MAX_CHIPS || mesh.Cols > C.TTB_MAX_CHIPS ||
		offset.Row < 0 || offset.Col < 0 || offset.Row > C.TTB_MAX_CHIPS || offset.Col > C.TTB_MAX_CHIPS {
		return nil, invalid("create submesh", "submesh %v at %v out of range", mesh, offset)
	}
	if !(scale >= 0 && scale <= 1000) {
		return nil, invalid("create submesh", "SimLatencyScale %g not in [0, 1000]", scale)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s := newDevice(d)
	var h *C.ttb_device
	// Made on the parent's thread (serialised with its other calls); not abandoned half-way,
	// so that a created submesh is never leaked.
	err := d.do(context.WithoutCancel(ctx), "create submesh", func() error {
		var o C.ttb_submesh_options
		o.struct_size = C.uint32_t(unsafe.Sizeof(o))
		o.mesh_rows, o.mesh_cols = C.uint32_t(mesh.Rows), C.uint32_t(mesh.Cols)
		o.row_offset, o.col_offset = C.uint32_t(offset.Row), C.uint32_t(offset.Col)
		o.sim_latency_scale = C.double(scale)
		if err := check("create submesh", C.ttb_submesh_create(d.h, &o, &h)); err != nil {
			return err
		}
		d.subs++
		return nil
	})
	if err != nil {
		return nil, err
	}
	opened := make(chan error, 1)
	go s.loop(func() error {
		s.h = h
		if err := s.describe(); err != nil {
			s.release()
			return err
		}
		return nil
	}, opened)
	if err := <-opened; err != nil {
		return nil, err
	}
	return s, nil
}

// release releases the submesh on its parent's thread (where it was made); device goroutine only.
func (d *Device) release() error {
	h := d.h
	d.h = nil
	return d.parent.do(context.Background(), "release submesh", func() error {
		d.parent.subs--
		return check("release submesh", C.ttb_submesh_release(h))
	})
}

func (d *Device) loop(open func() error, opened chan<- error) {
	// The thread is never unlocked: it exits with this goroutine, taking any thread-local
	// state of the backend with it.
	runtime.LockOSThread()
	defer close(d.done)
	if err := open(); err != nil {
		opened <- err
		return
	}
	opened <- nil
	for f := range d.reqs {
		f()
		if d.h == nil {
			return
		}
	}
}

func (d *Device) open(opts Options) error {
	var o C.ttb_device_options
	o.struct_size = C.uint32_t(unsafe.Sizeof(o))
	o.mesh_rows = C.uint32_t(opts.Mesh.Rows)
	o.mesh_cols = C.uint32_t(opts.Mesh.Cols)
	if n := len(opts.DeviceIDs); n > 0 {
		ids := (*[C.TTB_MAX_CHIPS]C.int32_t)(C.malloc(C.size_t(C.TTB_MAX_CHIPS * 4)))
		defer C.free(unsafe.Pointer(ids))
		for i, id := range opts.DeviceIDs {
			ids[i] = C.int32_t(id)
		}
		o.device_ids = &ids[0]
		o.num_device_ids = C.uint32_t(n)
	}
	o.l1_small_size = C.uint64_t(opts.L1SmallSize)
	o.trace_region_size = C.uint64_t(opts.TraceRegionSize)
	o.num_command_queues = C.uint32_t(opts.CommandQueues)
	if opts.CommandQueues == 0 {
		o.num_command_queues = 1
	}
	o.dispatch = C.uint32_t(opts.Dispatch)
	o.fabric = C.uint32_t(opts.Fabric)
	if opts.ProgramCache {
		o.enable_program_cache = 1
	}
	o.sim_latency_scale = C.double(opts.SimLatencyScale)
	if err := check("open", C.ttb_device_open(&o, &d.h)); err != nil {
		d.h = nil
		return err
	}
	if err := d.describe(); err != nil {
		C.ttb_device_close(d.h)
		d.h = nil
		return err
	}
	return nil
}

// describe fills d.info from the backend; device goroutine only.
func (d *Device) describe() error {
	var ci C.ttb_device_info
	if err := check("device info", C.ttb_device_info_get(d.h, &ci)); err != nil {
		return err
	}
	d.info = DeviceInfo{
		Backend: C.GoString(&ci.backend[0]), Arch: C.GoString(&ci.arch[0]),
		Mesh:  MeshShape{Rows: int(ci.mesh_rows), Cols: int(ci.mesh_cols)},
		Chips: int(ci.num_chips), CommandQueues: int(ci.num_command_queues),
		L1SmallSize: uint64(ci.l1_small_size), TraceRegionSize: uint64(ci.trace_region_size),
		DRAMBytesPerChannel: uint64(ci.dram_bytes_per_channel), DRAMChannels: int(ci.dram_channels),
		L1BytesPerCore: uint64(ci.l1_bytes_per_core),
		Submesh:        ci.is_submesh != 0,
		Offset:         MeshCoord{Row: int(ci.row_offset), Col: int(ci.col_offset)},
	}
	for i := 0; i < int(ci.num_chips) && i < C.TTB_MAX_CHIPS; i++ {
		d.info.DeviceIDs = append(d.info.DeviceIDs, int(ci.device_ids[i]))
	}
	return nil
}

// do runs f on the device goroutine.
func (d *Device) do(ctx context.Context, op string, f func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	res := make(chan error, 1)
	call := func() {
		if d.h == nil {
			res <- &Error{Op: op, Msg: "device is closed", Kind: ErrClosed}
			return
		}
		res <- f()
	}
	select {
	case d.reqs <- call:
	case <-d.done:
		return &Error{Op: op, Msg: "device is closed", Kind: ErrClosed}
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-res:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Info describes the device (fixed at open).
func (d *Device) Info() DeviceInfo {
	info := d.info
	info.DeviceIDs = append([]int(nil), d.info.DeviceIDs...)
	return info
}

// Close frees everything the device owns and closes it (a submesh: releases it). After
// ErrDeviceLost the host resources are still freed, the error is reported again, and the
// process should exit. A device with live submeshes stays open and Close returns ErrBusy;
// otherwise Close is idempotent. It waits for a call in progress.
func (d *Device) Close() error {
	d.closeMu.Lock()
	defer d.closeMu.Unlock()
	if d.closed {
		return d.closeErr
	}
	busy := false
	err := d.do(context.Background(), "close", func() error {
		if d.subs > 0 {
			busy = true
			return &Error{Op: "close", Msg: fmt.Sprintf("device has %d live submeshes; close them first", d.subs), Kind: ErrBusy}
		}
		for tr := range d.traces {
			tr.released = true
		}
		for t := range d.tensors {
			t.h = nil
		}
		var err error
		if d.parent != nil {
			err = d.release()
		} else {
			err = check("close", C.ttb_device_close(d.h))
			d.h = nil
		}
		for p := range d.programs {
			if perr := check("free program", C.ttb_program_free(p.h)); perr != nil && err == nil {
				err = perr
			}
			p.h = nil
		}
		clear(d.traces)
		clear(d.tensors)
		clear(d.programs)
		return err
	})
	if busy {
		return err
	}
	<-d.done
	d.closed, d.closeErr = true, err
	shared.Lock()
	if shared.dev == d {
		shared.dev = nil
	}
	shared.Unlock()
	return err
}

// MemoryStats reports one memory pool.
func (d *Device) MemoryStats(ctx context.Context, kind MemoryKind) (MemStats, error) {
	var s C.ttb_mem_stats
	err := d.do(ctx, "memory stats", func() error { return check("memory stats", C.ttb_device_mem(d.h, C.uint32_t(kind), &s)) })
	return MemStats{Total: uint64(s.total), Allocated: uint64(s.allocated), LargestFree: uint64(s.largest_free)}, err
}

// Synchronize waits until command queue cq has drained.
func (d *Device) Synchronize(ctx context.Context, cq int) error {
	if cq < 0 {
		return invalid("synchronize", "command queue %d", cq)
	}
	return d.do(ctx, "synchronize", func() error { return check("synchronize", C.ttb_device_sync(d.h, C.uint32_t(cq))) })
}

// Program is a loaded program with its functions. It belongs to the device that loaded it.
type Program struct {
	dev  *Device
	h    *C.ttb_program // device goroutine only
	path string
	fns  []Function
}

// LoadProgram loads a program from a file (a sim manifest or, on metal, a .ttnn flatbuffer).
func (d *Device) LoadProgram(ctx context.Context, path string) (*Program, error) {
	p := &Program{dev: d, path: path}
	err := d.do(ctx, "load program", func() error {
		cpath := C.CString(path)
		defer C.free(unsafe.Pointer(cpath))
		var h *C.ttb_program
		if err := check("load program", C.ttb_program_load_file(cpath, &h)); err != nil {
			return err
		}
		fns, err := describe(h)
		if err != nil {
			C.ttb_program_free(h)
			return err
		}
		p.h, p.fns = h, fns
		d.programs[p] = struct{}{}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

func describe(h *C.ttb_program) ([]Function, error) {
	var n C.uint32_t
	if err := check("program functions", C.ttb_program_num_functions(h, &n)); err != nil {
		return nil, err
	}
	fns := make([]Function, int(n))
	var name [256]C.char
	for i := range fns {
		if err := check("program function name", C.ttb_program_function_name(h, C.uint32_t(i), &name[0], C.size_t(len(name)))); err != nil {
			return nil, err
		}
		fns[i] = Function{Index: i, Name: C.GoString(&name[0])}
		for _, out := range []bool{false, true} {
			isOut := C.int(0)
			if out {
				isOut = 1
			}
			var cnt C.uint32_t
			if err := check("program io", C.ttb_program_io(h, C.uint32_t(i), isOut, nil, 0, &cnt)); err != nil {
				return nil, err
			}
			if cnt == 0 {
				continue
			}
			descs := make([]C.ttb_tensor_desc, int(cnt))
			if err := check("program io", C.ttb_program_io(h, C.uint32_t(i), isOut, &descs[0], cnt, &cnt)); err != nil {
				return nil, err
			}
			for _, cd := range descs {
				if out {
					fns[i].Outputs = append(fns[i].Outputs, goDesc(&cd))
				} else {
					fns[i].Inputs = append(fns[i].Inputs, goDesc(&cd))
				}
			}
		}
	}
	return fns, nil
}

func goDesc(cd *C.ttb_tensor_desc) TensorDesc {
	d := TensorDesc{Name: C.GoString(&cd.name[0]), DType: DType(cd.dtype)}
	for i := 0; i < int(cd.rank) && i < C.TTB_MAX_RANK; i++ {
		d.Shape = append(d.Shape, int(cd.shape[i]))
	}
	return d
}

func cDesc(op string, d TensorDesc) (C.ttb_tensor_desc, error) {
	var cd C.ttb_tensor_desc
	if d.DType.Size() == 0 {
		return cd, invalid(op, "unknown dtype %v", d.DType)
	}
	if len(d.Shape) == 0 || len(d.Shape) > C.TTB_MAX_RANK {
		return cd, invalid(op, "rank %d not in 1..%d", len(d.Shape), C.TTB_MAX_RANK)
	}
	for i, s := range d.Shape {
		if s <= 0 || s > 1<<31 {
			return cd, invalid(op, "dimension %d is %d", i, s)
		}
		cd.shape[i] = C.uint32_t(s)
	}
	cd.rank = C.uint32_t(len(d.Shape))
	cd.dtype = C.uint32_t(d.DType)
	for i := 0; i < len(d.Name) && i < C.TTB_NAME_MAX-1; i++ {
		cd.name[i] = C.char(d.Name[i])
	}
	return cd, nil
}

// Path is the file the program was loaded from.
func (p *Program) Path() string { return p.path }

// Functions lists the program's functions.
func (p *Program) Functions() []Function { return append([]Function(nil), p.fns...) }

// Function finds a function by name.
func (p *Program) Function(name string) (Function, error) {
	for _, f := range p.fns {
		if f.Name == name {
			return f, nil
		}
	}
	names := make([]string, len(p.fns))
	for i, f := range p.fns {
		names[i] = f.Name
	}
	return Function{}, &Error{Op: "function", Msg: fmt.Sprintf("program %s has no function %q (has %s)", p.path, name, strings.Join(names, ", ")), Kind: ErrNotFound}
}

// Run executes a function on command queue cq and returns its outputs as new tensors, which
// the caller frees. Inside a trace capture the run is recorded, not executed.
func (p *Program) Run(ctx context.Context, cq int, function string, inputs ...*Tensor) ([]*Tensor, error) {
	f, err := p.Function(function)
	if err != nil {
		return nil, err
	}
	if cq < 0 {
		return nil, invalid("run", "command queue %d", cq)
	}
	for i, t := range inputs {
		if t == nil || t.dev != p.dev {
			return nil, invalid("run", "input %d is nil or belongs to another device", i)
		}
	}
	var outs []*Tensor
	err = p.dev.do(ctx, "run", func() error {
		if p.h == nil {
			return &Error{Op: "run", Msg: "program is closed", Kind: ErrClosed}
		}
		in := make([]*C.ttb_tensor, len(inputs)+1)
		for i, t := range inputs {
			if t.h == nil {
				return &Error{Op: "run", Msg: fmt.Sprintf("input %d is freed", i), Kind: ErrClosed}
			}
			in[i] = t.h
		}
		out := make([]*C.ttb_tensor, len(f.Outputs)+1)
		var n C.uint32_t
		if err := check("run "+function, C.ttb_program_run(p.dev.h, p.h, C.uint32_t(f.Index), &in[0], C.uint32_t(len(inputs)),
			C.uint32_t(cq), &out[0], C.uint32_t(len(f.Outputs)), &n)); err != nil {
			return err
		}
		for i := 0; i < int(n); i++ {
			desc := TensorDesc{}
			if i < len(f.Outputs) {
				desc = f.Outputs[i]
			}
			outs = append(outs, p.dev.adopt(out[i], desc, TensorOptions{Placement: DRAM, Layout: Tile, Retain: true}))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return outs, nil
}

// Close frees the program. A program used by a live trace cannot be freed (ErrBusy).
func (p *Program) Close() error {
	err := p.dev.do(context.Background(), "free program", func() error {
		if p.h == nil {
			return nil
		}
		if err := check("free program", C.ttb_program_free(p.h)); err != nil {
			return err
		}
		p.h = nil
		delete(p.dev.programs, p)
		return nil
	})
	if isClosed(err) {
		return nil // the device's Close freed it
	}
	return err
}

func isClosed(err error) bool {
	e, ok := err.(*Error)
	return ok && e.Kind == ErrClosed
}

// Tensor is a tensor owned by a device.
type Tensor struct {
	dev  *Device
	h    *C.ttb_tensor // device goroutine only
	desc TensorDesc
	opts TensorOptions
}

func (d *Device) adopt(h *C.ttb_tensor, desc TensorDesc, opts TensorOptions) *Tensor {
	t := &Tensor{dev: d, h: h, desc: desc, opts: opts}
	t.desc.Shape = append([]int(nil), desc.Shape...)
	d.tensors[t] = struct{}{}
	return t
}

func bytesPtr(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }

// Upload creates a device tensor from row-major host data on command queue cq.
func (d *Device) Upload(ctx context.Context, cq int, desc TensorDesc, opts TensorOptions, data []byte) (*Tensor, error) {
	cd, err := cDesc("upload", desc)
	if err != nil {
		return nil, err
	}
	if cq < 0 {
		return nil, invalid("upload", "command queue %d", cq)
	}
	var t *Tensor
	err = d.do(ctx, "upload", func() error {
		var h *C.ttb_tensor
		retain := C.int(0)
		if opts.Retain {
			retain = 1
		}
		if err := check("upload", C.ttb_tensor_upload(d.h, &cd, bytesPtr(data), C.size_t(len(data)), C.uint32_t(opts.Placement),
			C.uint32_t(opts.Layout), retain, C.uint32_t(cq), &h)); err != nil {
			return err
		}
		t = d.adopt(h, desc, opts)
		return nil
	})
	return t, err
}

// Alloc creates a persistent (retained) device tensor with unspecified contents, e.g. a trace
// input slot to fill with Write.
func (d *Device) Alloc(ctx context.Context, desc TensorDesc, opts TensorOptions) (*Tensor, error) {
	cd, err := cDesc("alloc", desc)
	if err != nil {
		return nil, err
	}
	opts.Retain = true
	var t *Tensor
	err = d.do(ctx, "alloc", func() error {
		var h *C.ttb_tensor
		if err := check("alloc", C.ttb_tensor_alloc(d.h, &cd, C.uint32_t(opts.Placement), C.uint32_t(opts.Layout), &h)); err != nil {
			return err
		}
		t = d.adopt(h, desc, opts)
		return nil
	})
	return t, err
}

// Desc is the tensor's descriptor.
func (t *Tensor) Desc() TensorDesc {
	d := t.desc
	d.Shape = append([]int(nil), t.desc.Shape...)
	return d
}

// Options are the placement options the tensor was made with.
func (t *Tensor) Options() TensorOptions { return t.opts }

// Write copies row-major host data into the tensor on command queue cq.
func (t *Tensor) Write(ctx context.Context, cq int, src []byte) error {
	if cq < 0 {
		return invalid("write", "command queue %d", cq)
	}
	return t.dev.do(ctx, "write", func() error {
		if t.h == nil {
			return &Error{Op: "write", Msg: "tensor is freed", Kind: ErrClosed}
		}
		return check("write", C.ttb_tensor_write(t.h, bytesPtr(src), C.size_t(len(src)), C.uint32_t(cq)))
	})
}

// Read copies the tensor (row-major, untilized) into dst, which must have Desc().Bytes() bytes.
func (t *Tensor) Read(ctx context.Context, cq int, dst []byte) error {
	if cq < 0 {
		return invalid("read", "command queue %d", cq)
	}
	return t.dev.do(ctx, "read", func() error {
		if t.h == nil {
			return &Error{Op: "read", Msg: "tensor is freed", Kind: ErrClosed}
		}
		return check("read", C.ttb_tensor_read(t.h, bytesPtr(dst), C.size_t(len(dst)), C.uint32_t(cq)))
	})
}

// Free releases the tensor. It is idempotent; a tensor used by a live trace cannot be freed
// (ErrBusy) until the trace is released.
func (t *Tensor) Free() error {
	err := t.dev.do(context.Background(), "free tensor", func() error {
		if t.h == nil {
			return nil
		}
		if err := check("free tensor", C.ttb_tensor_free(t.h)); err != nil {
			return err
		}
		t.h = nil
		delete(t.dev.tensors, t)
		return nil
	})
	if isClosed(err) {
		return nil
	}
	return err
}

// Trace is a captured sequence of program runs.
type Trace struct {
	dev      *Device
	id       C.ttb_trace_id
	cq       int
	ended    bool // device goroutine only
	released bool // device goroutine only
}

// BeginTrace starts capturing the program runs issued on the device until End. Every program
// run in a capture must have run before, and tensors may not be read or written meanwhile.
func (d *Device) BeginTrace(ctx context.Context, cq int) (*Trace, error) {
	if cq < 0 {
		return nil, invalid("begin trace", "command queue %d", cq)
	}
	var tr *Trace
	err := d.do(ctx, "begin trace", func() error {
		var id C.ttb_trace_id
		if err := check("begin trace", C.ttb_trace_begin(d.h, C.uint32_t(cq), &id)); err != nil {
			return err
		}
		tr = &Trace{dev: d, id: id, cq: cq}
		d.traces[tr] = struct{}{}
		return nil
	})
	return tr, err
}

// ID is the backend's trace id.
func (tr *Trace) ID() uint64 { return uint64(tr.id) }

// End finishes the capture. If the trace does not fit in the trace region it is discarded
// and End returns ErrOutOfMemory.
func (tr *Trace) End(ctx context.Context) error {
	return tr.dev.do(ctx, "end trace", func() error {
		if tr.released {
			return &Error{Op: "end trace", Msg: "trace is released", Kind: ErrClosed}
		}
		st := C.ttb_trace_end(tr.dev.h, tr.id, C.uint32_t(tr.cq))
		if st == C.TTB_OUT_OF_MEMORY {
			tr.released = true
			delete(tr.dev.traces, tr)
		}
		if err := check("end trace", st); err != nil {
			return err
		}
		tr.ended = true
		return nil
	})
}

// Replay executes the captured runs again on the trace's command queue, reading the current
// contents of the captured input tensors and overwriting the captured outputs.
func (tr *Trace) Replay(ctx context.Context, blocking bool) error {
	b := C.int(0)
	if blocking {
		b = 1
	}
	return tr.dev.do(ctx, "replay trace", func() error {
		if tr.released {
			return &Error{Op: "replay trace", Msg: "trace is released", Kind: ErrClosed}
		}
		return check("replay trace", C.ttb_trace_replay(tr.dev.h, tr.id, C.uint32_t(tr.cq), b))
	})
}

// Release frees the trace's buffers. It is idempotent.
func (tr *Trace) Release() error {
	err := tr.dev.do(context.Background(), "release trace", func() error {
		if tr.released {
			return nil
		}
		if err := check("release trace", C.ttb_trace_release(tr.dev.h, tr.id)); err != nil {
			return err
		}
		tr.released = true
		delete(tr.dev.traces, tr)
		return nil
	})
	if isClosed(err) {
		return nil
	}
	return err
}

// RecordEvent records an event on command queue cq.
func (d *Device) RecordEvent(ctx context.Context, cq int) (Event, error) {
	if cq < 0 {
		return 0, invalid("record event", "command queue %d", cq)
	}
	var ev C.ttb_event_id
	err := d.do(ctx, "record event", func() error { return check("record event", C.ttb_event_record(d.h, C.uint32_t(cq), &ev)) })
	return Event(ev), err
}

// WaitEvent makes command queue cq wait (on the device) for ev.
func (d *Device) WaitEvent(ctx context.Context, cq int, ev Event) error {
	if cq < 0 {
		return invalid("wait event", "command queue %d", cq)
	}
	return d.do(ctx, "wait event", func() error {
		return check("wait event", C.ttb_event_wait(d.h, C.uint32_t(cq), C.ttb_event_id(ev)))
	})
}

// SynchronizeEvent blocks the host until ev has completed.
func (d *Device) SynchronizeEvent(ctx context.Context, ev Event) error {
	return d.do(ctx, "synchronize event", func() error {
		return check("synchronize event", C.ttb_event_synchronize(d.h, C.ttb_event_id(ev)))
	})
}
