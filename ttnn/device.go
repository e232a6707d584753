//go:build cgo

package ttnn

/*
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
	ids    []int   // logical chip ids of a root device, row-major (parent meshes only)

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

// OpenParent opens opts as a parent mesh — the way TT-Metal lets several device groups live in
// one process: one mesh over the chips, carved into submeshes (OpenSubmesh) that share its
// open options. The caller passes the parent to whoever opens the submeshes; the parent is
// closed with Close once every submesh is released (ErrBusy before).
func OpenParent(ctx context.Context, opts Options) (*Device, error) {
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
	return d, nil
}

// Open opens a device with opts on a new pinned goroutine. It always opens a device of its
// own; a submesh of a parent mesh is the parent's OpenSubmesh.
func Open(ctx context.Context, opts Options) (*Device, error) {
	if err := needInit("open"); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
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

// OpenSubmesh opens the submesh opts asks for out of the parent mesh p (OpenParent): opts.Mesh
// chips at the position of opts.DeviceIDs in the parent (the ids, row-major, must be an
// opts.Mesh-shaped rectangle of the parent's chips; without ids, opts.Mesh must be the parent's
// whole mesh; a zero Mesh means one row of the ids, or the whole parent). The parent's open
// options apply, so opts may not ask for more than it has — a larger L1SmallSize,
// TraceRegionSize (unless the parent's is 0, dynamic) or CommandQueues, or another Fabric than
// off or the parent's is ErrInvalidArgument; opts.SimLatencyScale is the submesh's own.
func (p *Device) OpenSubmesh(ctx context.Context, opts Options) (*Device, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if p.ids == nil {
		return nil, invalid("open submesh", "the device is not a parent mesh (OpenParent)")
	}
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
			_ = s.release() // the describe error is the one to report
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
