//go:build cgo

package ttnn_test

// The C ABI conformance suite: one table of cases run against every backend compiled in —
// sim, and (with -tags ttnn, under scripts/check-metal.sh) metal over the fake tt::runtime.
// Each backend runs in a child process (one backend and one open mesh per process). Where a
// backend differs by design, the case says why and checks the designed behaviour instead.

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/ttnn"
	"github.com/tenstorrent/tt-media-server-go/ttnn/ttnnfile"
)

var ctx = context.Background()

type confEnv struct {
	backend string
	dir     string
	n       int
}

// confDiff is how a backend differs from the ABI's common behaviour by design, and the check
// of what it does instead.
type confDiff struct {
	why   string
	check func(t *testing.T, e *confEnv)
}

type confCase struct {
	name    string
	run     func(t *testing.T, e *confEnv)
	differs map[string]confDiff
}

func f32bytes(vals ...float32) []byte {
	b := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

var (
	f23  = ttnn.TensorDesc{DType: ttnn.F32, Shape: []int{2, 3}}
	bf4  = ttnn.TensorDesc{DType: ttnn.BF16, Shape: []int{4}}
	spec = func(mesh ttnn.MeshShape) ttnn.ProgramSpec {
		ts := func(name string, d ttnn.TensorDesc, l ttnn.Layout) ttnn.TensorSpec {
			d.Name = name
			return ttnn.TensorSpec{TensorDesc: d, Layout: l}
		}
		return ttnn.ProgramSpec{Name: "conf", Mesh: mesh, Functions: []ttnn.FunctionSpec{
			{Name: "add", Inputs: []ttnn.TensorSpec{ts("a", f23, ttnn.Tile), ts("b", f23, ttnn.RowMajor)},
				Outputs: []ttnn.TensorSpec{ts("sum", f23, ttnn.Tile)}},
			{Name: "scale", Inputs: []ttnn.TensorSpec{ts("x", bf4, ttnn.Tile)},
				Outputs: []ttnn.TensorSpec{ts("y", bf4, ttnn.Tile), ts("z", ttnn.TensorDesc{DType: ttnn.U8, Shape: []int{3}}, ttnn.RowMajor)}},
		}}
	}
)

// program writes the suite's program, compiled for mesh, in the backend's file format (a
// simulator manifest or a .ttnn flatbuffer) from the one declaration above.
func (e *confEnv) program(t *testing.T, mesh ttnn.MeshShape, traced bool) string {
	t.Helper()
	e.n++
	s := spec(mesh)
	if e.backend == "metal" {
		path := filepath.Join(e.dir, fmt.Sprintf("conf%d.ttnn", e.n))
		progs := ttnnfile.FromSpec(s)
		for i := range progs {
			progs[i].Traced, progs[i].Ops = traced, 3
		}
		require.NoError(t, ttnnfile.Write(ctx, ttnnfile.SDKDir(), path, progs))
		return path
	}
	m, err := ttnnfile.SimManifest(s, 1, 4096)
	require.NoError(t, err)
	path := filepath.Join(e.dir, fmt.Sprintf("conf%d.ttbsim", e.n))
	require.NoError(t, os.WriteFile(path, []byte(m), 0o644))
	return path
}

func (e *confEnv) open(t *testing.T, opts ttnn.Options) *ttnn.Device {
	t.Helper()
	d, err := ttnn.Open(ctx, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	return d
}

func up(t *testing.T, d *ttnn.Device, desc ttnn.TensorDesc, data []byte, retain bool) *ttnn.Tensor {
	t.Helper()
	x, err := d.Upload(ctx, 0, desc, ttnn.TensorOptions{Retain: retain}, data)
	require.NoError(t, err)
	return x
}

func readAll(t *testing.T, x *ttnn.Tensor) []byte {
	t.Helper()
	b := make([]byte, x.Desc().Bytes())
	require.NoError(t, x.Read(ctx, 0, b))
	return b
}

func noLive(t *testing.T) {
	t.Helper()
	c, err := ttnn.Counts()
	require.NoError(t, err)
	require.Equal(t, ttnn.LiveCounts{}, c, "live handles left")
	if s, ok := ttnn.FakeRuntime(); ok {
		require.Zero(t, s.DeviceBuffers, "fake runtime: device buffers left")
		require.Zero(t, s.MeshesOpen+s.SubmeshesOpen, "fake runtime: meshes left open")
		require.Zero(t, s.Traces, "fake runtime: traces left")
		require.Zero(t, s.HostTensors, "fake runtime: host tensors left")
	}
}

var one = ttnn.MeshShape{Rows: 1, Cols: 1}

// runAdd uploads a and b, runs conf.add and returns its output's bytes.
func runAdd(t *testing.T, d *ttnn.Device, p *ttnn.Program, a, b []byte) []byte {
	t.Helper()
	ta, tb := up(t, d, f23, a, true), up(t, d, f23, b, true)
	outs, err := p.Run(ctx, 0, "add", ta, tb)
	require.NoError(t, err)
	require.Len(t, outs, 1)
	got := readAll(t, outs[0])
	for _, x := range []*ttnn.Tensor{ta, tb, outs[0]} {
		require.NoError(t, x.Free())
	}
	return got
}

var conformance = []confCase{
	{name: "open/info reflects the options", run: func(t *testing.T, e *confEnv) {
		d := e.open(t, ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 2}, DeviceIDs: []int{3, 1}, L1SmallSize: 32768,
			TraceRegionSize: 1 << 20, CommandQueues: 2, Dispatch: ttnn.DispatchEth, ProgramCache: true})
		info := d.Info()
		require.Equal(t, e.backend, info.Backend)
		require.Equal(t, ttnn.MeshShape{Rows: 1, Cols: 2}, info.Mesh)
		require.Equal(t, []int{3, 1}, info.DeviceIDs)
		require.Equal(t, 2, info.CommandQueues)
		require.Equal(t, uint64(32768), info.L1SmallSize)
		require.Equal(t, uint64(1<<20), info.TraceRegionSize)
		if s, ok := ttnn.FakeRuntime(); ok && e.backend == "metal" { // what the runtime was asked for
			require.Equal(t, ttnn.MeshShape{Rows: 1, Cols: 2}, s.LastMesh)
			require.Equal(t, []int{3, 1}, s.LastDeviceIDs)
			require.Equal(t, 2, s.LastCQs)
			require.Equal(t, 2, s.LastDispatch, "ethernet")
			require.True(t, s.LastProgramCache)
			require.Equal(t, uint64(32768), s.LastL1Small)
			require.Equal(t, uint64(1<<20), s.LastTraceRegion)
		}
	}},
	{name: "open/mesh larger than the visible chips", run: func(t *testing.T, e *confEnv) {
		_, err := ttnn.Open(ctx, ttnn.Options{Mesh: ttnn.MeshShape{Rows: 2, Cols: 4}})
		require.ErrorIs(t, err, ttnn.ErrInvalidArgument)
		require.ErrorContains(t, err, "5 are visible")
	}},
	{name: "open/device ids must match the mesh and be visible", run: func(t *testing.T, e *confEnv) {
		for _, tc := range []struct {
			opts ttnn.Options
			msg  string
		}{
			{ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 2}, DeviceIDs: []int{0}}, "1 device ids given for a 1x2 mesh"},
			{ttnn.Options{Mesh: one, DeviceIDs: []int{7}}, "device id 7 is not visible"},
		} {
			_, err := ttnn.Open(ctx, tc.opts)
			require.ErrorIs(t, err, ttnn.ErrInvalidArgument)
			require.ErrorContains(t, err, tc.msg)
		}
	}},
	{name: "open/L1 small size and trace region must fit the chip", run: func(t *testing.T, e *confEnv) {
		_, err := ttnn.Open(ctx, ttnn.Options{L1SmallSize: 2 << 20})
		require.ErrorIs(t, err, ttnn.ErrInvalidArgument)
		require.ErrorContains(t, err, "exceeds L1 per core")
		_, err = ttnn.Open(ctx, ttnn.Options{TraceRegionSize: 13 << 30})
		require.ErrorIs(t, err, ttnn.ErrOutOfMemory)
	}, differs: map[string]confDiff{"metal": {
		why: "the chip's L1 and DRAM sizes are known only to the runtime, which refuses the open (TTB_INTERNAL with its message)",
		check: func(t *testing.T, e *confEnv) {
			_, err := ttnn.Open(ctx, ttnn.Options{L1SmallSize: 2 << 20})
			require.ErrorIs(t, err, ttnn.ErrInternal)
			require.ErrorContains(t, err, "l1_small_size")
			_, err = ttnn.Open(ctx, ttnn.Options{TraceRegionSize: 13 << 30})
			require.ErrorIs(t, err, ttnn.ErrInternal)
			require.ErrorContains(t, err, "trace_region_size")
			e.open(t, ttnn.Options{Mesh: one}) // nothing was left open
		}}}},
	{name: "open/three command queues", run: func(t *testing.T, e *confEnv) {
		_, err := ttnn.Open(ctx, ttnn.Options{CommandQueues: 3})
		require.ErrorIs(t, err, ttnn.ErrInvalidArgument)
		require.ErrorContains(t, err, "1 or 2")
	}},
	{name: "open/second open is busy", run: func(t *testing.T, e *confEnv) {
		e.open(t, ttnn.Options{Mesh: one})
		_, err := ttnn.Open(ctx, ttnn.Options{Mesh: one})
		require.ErrorIs(t, err, ttnn.ErrBusy)
		require.ErrorContains(t, err, "already open")
	}},
	{name: "submesh/outside the parent", run: func(t *testing.T, e *confEnv) {
		d := e.open(t, ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 4}})
		_, err := d.Submesh(ctx, ttnn.MeshShape{Rows: 1, Cols: 2}, ttnn.MeshCoord{Col: 3})
		require.ErrorIs(t, err, ttnn.ErrInvalidArgument)
		require.ErrorContains(t, err, "does not fit")
	}},
	{name: "submesh/overlap is busy", run: func(t *testing.T, e *confEnv) {
		d := e.open(t, ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 4}})
		s, err := d.Submesh(ctx, ttnn.MeshShape{Rows: 1, Cols: 2}, ttnn.MeshCoord{})
		require.NoError(t, err)
		_, err = d.Submesh(ctx, ttnn.MeshShape{Rows: 1, Cols: 2}, ttnn.MeshCoord{Col: 1})
		require.ErrorIs(t, err, ttnn.ErrBusy)
		require.ErrorContains(t, err, "overlaps")
		s2, err := d.Submesh(ctx, ttnn.MeshShape{Rows: 1, Cols: 2}, ttnn.MeshCoord{Col: 2})
		require.NoError(t, err, "a disjoint sibling is fine")
		require.NoError(t, s.Close())
		require.NoError(t, s2.Close())
	}},
	{name: "submesh/chip ids, info, parent busy while it lives", run: func(t *testing.T, e *confEnv) {
		d := e.open(t, ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 4}, L1SmallSize: 16384})
		s, err := d.Submesh(ctx, ttnn.MeshShape{Rows: 1, Cols: 2}, ttnn.MeshCoord{Col: 2})
		require.NoError(t, err)
		info := s.Info()
		require.True(t, info.Submesh)
		require.Equal(t, ttnn.MeshCoord{Col: 2}, info.Offset)
		require.Equal(t, []int{2, 3}, info.DeviceIDs)
		require.Equal(t, uint64(16384), info.L1SmallSize, "a submesh shares its parent's options")
		require.ErrorIs(t, d.Close(), ttnn.ErrBusy)
		require.NoError(t, s.Close())
		require.NoError(t, d.Close())
	}},
	{name: "program/functions and signatures", run: func(t *testing.T, e *confEnv) {
		d := e.open(t, ttnn.Options{Mesh: one})
		p, err := d.LoadProgram(ctx, e.program(t, one, false))
		require.NoError(t, err)
		fns := p.Functions()
		require.Len(t, fns, 2)
		require.Equal(t, "add", fns[0].Name)
		require.Equal(t, "scale", fns[1].Name)
		strip := func(ds []ttnn.TensorDesc) []ttnn.TensorDesc {
			for i := range ds {
				ds[i].Name = ""
			}
			return ds
		}
		require.Equal(t, []ttnn.TensorDesc{f23, f23}, strip(fns[0].Inputs))
		require.Equal(t, []ttnn.TensorDesc{bf4, {DType: ttnn.U8, Shape: []int{3}}}, strip(fns[1].Outputs))
		_, err = p.Function("nope")
		require.ErrorIs(t, err, ttnn.ErrNotFound)
		require.NoError(t, p.Close())
	}},
	{name: "program/tensor names", run: func(t *testing.T, e *confEnv) {
		d := e.open(t, ttnn.Options{Mesh: one})
		p, err := d.LoadProgram(ctx, e.program(t, one, false))
		require.NoError(t, err)
		require.Equal(t, "a", p.Functions()[0].Inputs[0].Name)
		require.Equal(t, "sum", p.Functions()[0].Outputs[0].Name)
	}, differs: map[string]confDiff{"metal": {
		why: "a .ttnn program's TensorRefs carry no names: inputs and outputs are positional",
		check: func(t *testing.T, e *confEnv) {
			d := e.open(t, ttnn.Options{Mesh: one})
			p, err := d.LoadProgram(ctx, e.program(t, one, false))
			require.NoError(t, err)
			require.Empty(t, p.Functions()[0].Inputs[0].Name)
			require.Empty(t, p.Functions()[0].Outputs[0].Name)
		}}}},
	{name: "program/missing file", run: func(t *testing.T, e *confEnv) {
		d := e.open(t, ttnn.Options{Mesh: one})
		_, err := d.LoadProgram(ctx, filepath.Join(e.dir, "missing.prog"))
		require.ErrorIs(t, err, ttnn.ErrNotFound)
	}},
	{name: "program/not a program file", run: func(t *testing.T, e *confEnv) {
		d := e.open(t, ttnn.Options{Mesh: one})
		path := filepath.Join(e.dir, "garbage.prog")
		require.NoError(t, os.WriteFile(path, []byte("this is not a program file at all\n"), 0o644))
		_, err := d.LoadProgram(ctx, path)
		require.ErrorIs(t, err, ttnn.ErrInvalidArgument)
	}},
	{name: "run/deterministic outputs of the declared shape", run: func(t *testing.T, e *confEnv) {
		d := e.open(t, ttnn.Options{Mesh: one})
		p, err := d.LoadProgram(ctx, e.program(t, one, false))
		require.NoError(t, err)
		x, y := f32bytes(1, 2, 3, 4, 5, 6), f32bytes(1, 2, 3, 4, 5, 7)
		first := runAdd(t, d, p, x, x)
		require.Len(t, first, 24)
		require.Equal(t, first, runAdd(t, d, p, x, x), "same input, same output")
		require.NotEqual(t, first, runAdd(t, d, p, x, y), "different input, different output")
		for i := range 6 {
			v := math.Float32frombits(binary.LittleEndian.Uint32(first[4*i:]))
			require.True(t, v >= -1 && v < 1, "float outputs in [-1,1), got %v", v)
		}
	}},
	{name: "run/wrong input shape", run: func(t *testing.T, e *confEnv) {
		d := e.open(t, ttnn.Options{Mesh: one})
		p, err := d.LoadProgram(ctx, e.program(t, one, false))
		require.NoError(t, err)
		x := up(t, d, bf4, make([]byte, 8), true)
		_, err = p.Run(ctx, 0, "add", x, x)
		require.ErrorIs(t, err, ttnn.ErrInvalidArgument)
		require.ErrorContains(t, err, "input 0")
	}},
	{name: "run/wrong input count", run: func(t *testing.T, e *confEnv) {
		d := e.open(t, ttnn.Options{Mesh: one})
		p, err := d.LoadProgram(ctx, e.program(t, one, false))
		require.NoError(t, err)
		x := up(t, d, f23, make([]byte, 24), true)
		_, err = p.Run(ctx, 0, "add", x)
		require.ErrorIs(t, err, ttnn.ErrInvalidArgument)
		require.ErrorContains(t, err, "takes 2 inputs, got 1")
	}},
	{name: "run/program compiled for another mesh", run: func(t *testing.T, e *confEnv) {
		d := e.open(t, ttnn.Options{Mesh: one})
		p, err := d.LoadProgram(ctx, e.program(t, ttnn.MeshShape{Rows: 1, Cols: 2}, false))
		require.NoError(t, err)
		x := up(t, d, f23, make([]byte, 24), true)
		_, err = p.Run(ctx, 0, "add", x, x)
		require.ErrorIs(t, err, ttnn.ErrInvalidArgument)
		require.ErrorContains(t, err, "1x2")
	}},
	{name: "run/a non-retained input is consumed, a retained one survives", run: func(t *testing.T, e *confEnv) {
		d := e.open(t, ttnn.Options{Mesh: one})
		p, err := d.LoadProgram(ctx, e.program(t, one, false))
		require.NoError(t, err)
		a, b := up(t, d, f23, f32bytes(1, 2, 3, 4, 5, 6), false), up(t, d, f23, f32bytes(1, 2, 3, 4, 5, 6), true)
		outs, err := p.Run(ctx, 0, "add", a, b)
		require.NoError(t, err)
		require.NoError(t, outs[0].Free())
		err = a.Read(ctx, 0, make([]byte, 24))
		require.ErrorIs(t, err, ttnn.ErrInvalidArgument)
		require.ErrorContains(t, err, "deallocated by")
		require.Equal(t, f32bytes(1, 2, 3, 4, 5, 6), readAll(t, b))
		_, err = p.Run(ctx, 0, "add", a, b)
		require.ErrorIs(t, err, ttnn.ErrInvalidArgument, "a consumed input cannot run again")
	}},
	{name: "run/an output feeds another run", run: func(t *testing.T, e *confEnv) {
		d := e.open(t, ttnn.Options{Mesh: one})
		p, err := d.LoadProgram(ctx, e.program(t, one, false))
		require.NoError(t, err)
		a := up(t, d, f23, f32bytes(1, 2, 3, 4, 5, 6), true)
		o1, err := p.Run(ctx, 0, "add", a, a)
		require.NoError(t, err)
		o2, err := p.Run(ctx, 0, "add", o1[0], a)
		require.NoError(t, err)
		require.Len(t, readAll(t, o2[0]), 24)
		require.NotEqual(t, readAll(t, o1[0]), readAll(t, o2[0]))
	}},
	{name: "run/write changes the next run", run: func(t *testing.T, e *confEnv) {
		d := e.open(t, ttnn.Options{Mesh: one})
		p, err := d.LoadProgram(ctx, e.program(t, one, false))
		require.NoError(t, err)
		a := up(t, d, f23, f32bytes(1, 2, 3, 4, 5, 6), true)
		o1, err := p.Run(ctx, 0, "add", a, a)
		require.NoError(t, err)
		require.NoError(t, a.Write(ctx, 0, f32bytes(6, 5, 4, 3, 2, 1)))
		require.Equal(t, f32bytes(6, 5, 4, 3, 2, 1), readAll(t, a))
		o2, err := p.Run(ctx, 0, "add", a, a)
		require.NoError(t, err)
		require.NotEqual(t, readAll(t, o1[0]), readAll(t, o2[0]))
		require.ErrorIs(t, a.Write(ctx, 0, make([]byte, 5)), ttnn.ErrInvalidArgument)
	}},
	{name: "run/a tensor of another submesh", run: func(t *testing.T, e *confEnv) {
		d := e.open(t, ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 2}})
		s0, err := d.Submesh(ctx, one, ttnn.MeshCoord{})
		require.NoError(t, err)
		s1, err := d.Submesh(ctx, one, ttnn.MeshCoord{Col: 1})
		require.NoError(t, err)
		p, err := s0.LoadProgram(ctx, e.program(t, one, false))
		require.NoError(t, err)
		x := up(t, s1, f23, make([]byte, 24), true)
		_, err = p.Run(ctx, 0, "add", x, x)
		require.ErrorIs(t, err, ttnn.ErrInvalidArgument)
		require.ErrorContains(t, err, "another device")
		require.NoError(t, p.Close())
		require.NoError(t, s0.Close())
		require.NoError(t, s1.Close())
	}},
	{name: "trace/explicit capture and replay", run: func(t *testing.T, e *confEnv) {
		d := e.open(t, ttnn.Options{Mesh: one, TraceRegionSize: 1 << 20})
		p, err := d.LoadProgram(ctx, e.program(t, one, false))
		require.NoError(t, err)
		a := up(t, d, f23, f32bytes(1, 2, 3, 4, 5, 6), true)
		o, err := p.Run(ctx, 0, "add", a, a)
		require.NoError(t, err)
		require.NoError(t, o[0].Free())
		tr, err := d.BeginTrace(ctx, 0)
		require.NoError(t, err)
		o, err = p.Run(ctx, 0, "add", a, a)
		require.NoError(t, err)
		require.NoError(t, tr.End(ctx))
		require.NoError(t, tr.Replay(ctx, true))
		require.Len(t, readAll(t, o[0]), 24)
		require.NoError(t, tr.Release())
	}, differs: map[string]confDiff{"metal": {
		why: "tt-mlir compiles traces into the program (its first run captures, later runs replay): explicit trace calls are unsupported",
		check: func(t *testing.T, e *confEnv) {
			d := e.open(t, ttnn.Options{Mesh: one, TraceRegionSize: 1 << 20})
			_, err := d.BeginTrace(ctx, 0)
			require.ErrorIs(t, err, ttnn.ErrUnsupported)
			require.ErrorContains(t, err, "traces inside compiled programs")
		}}}},
	{name: "trace/compiled into the program", run: func(t *testing.T, e *confEnv) {
		// The simulator's programs carry no trace ops: runs of the same program are plain runs.
		d := e.open(t, ttnn.Options{Mesh: one, TraceRegionSize: 1 << 20})
		p, err := d.LoadProgram(ctx, e.program(t, one, true))
		require.NoError(t, err)
		x := f32bytes(1, 2, 3, 4, 5, 6)
		require.Equal(t, runAdd(t, d, p, x, x), runAdd(t, d, p, x, x))
		require.NoError(t, p.Close())
	}, differs: map[string]confDiff{"metal": {
		why: "a .ttnn program with CaptureOrExecuteTraceOp captures on its first run, replays after, and freeing the program releases the trace (releaseTrace)",
		check: func(t *testing.T, e *confEnv) {
			before, ok := ttnn.FakeRuntime()
			require.True(t, ok, "metal tests run over the fake runtime")
			d := e.open(t, ttnn.Options{Mesh: one, TraceRegionSize: 1 << 20})
			p, err := d.LoadProgram(ctx, e.program(t, one, true))
			require.NoError(t, err)
			x := f32bytes(1, 2, 3, 4, 5, 6)
			require.Equal(t, runAdd(t, d, p, x, x), runAdd(t, d, p, x, x))
			mid, _ := ttnn.FakeRuntime()
			require.Equal(t, before.TracesCaptured+1, mid.TracesCaptured)
			require.Equal(t, before.TracesReplayed+1, mid.TracesReplayed)
			ms, err := d.MemoryStats(ctx, ttnn.MemTrace)
			require.NoError(t, err)
			require.Equal(t, uint64(3*64<<10), ms.Allocated, "3 ops x 64 KiB of the trace region")
			require.NoError(t, p.Close())
			after, _ := ttnn.FakeRuntime()
			require.Equal(t, before.TracesReleased+1, after.TracesReleased, "add's trace released (scale never ran)")
			require.Zero(t, after.Traces)
		}}}},
	{name: "trace/too large for the trace region", run: func(t *testing.T, e *confEnv) {
		d := e.open(t, ttnn.Options{Mesh: one, TraceRegionSize: 1000})
		p, err := d.LoadProgram(ctx, e.program(t, one, false))
		require.NoError(t, err)
		a := up(t, d, f23, make([]byte, 24), true)
		o, err := p.Run(ctx, 0, "add", a, a)
		require.NoError(t, err)
		require.NoError(t, o[0].Free())
		tr, err := d.BeginTrace(ctx, 0)
		require.NoError(t, err)
		_, err = p.Run(ctx, 0, "add", a, a)
		require.NoError(t, err)
		require.ErrorIs(t, tr.End(ctx), ttnn.ErrOutOfMemory)
	}, differs: map[string]confDiff{"metal": {
		why: "the compiled-in capture of the first run fails when the trace region is too small",
		check: func(t *testing.T, e *confEnv) {
			d := e.open(t, ttnn.Options{Mesh: one, TraceRegionSize: 1000})
			p, err := d.LoadProgram(ctx, e.program(t, one, true))
			require.NoError(t, err)
			a := up(t, d, f23, make([]byte, 24), true)
			_, err = p.Run(ctx, 0, "add", a, a)
			require.ErrorIs(t, err, ttnn.ErrOutOfMemory)
			require.ErrorContains(t, err, "trace region")
		}}}},
	{name: "events/order two command queues", run: func(t *testing.T, e *confEnv) {
		d := e.open(t, ttnn.Options{Mesh: one, CommandQueues: 2})
		ev, err := d.RecordEvent(ctx, 1)
		require.NoError(t, err)
		require.NoError(t, d.WaitEvent(ctx, 0, ev))
		require.NoError(t, d.SynchronizeEvent(ctx, ev))
	}, differs: map[string]confDiff{"metal": {
		why: "the tt-mlir runtime API has no explicit events (tensors carry them); synchronize instead",
		check: func(t *testing.T, e *confEnv) {
			d := e.open(t, ttnn.Options{Mesh: one, CommandQueues: 2})
			_, err := d.RecordEvent(ctx, 1)
			require.ErrorIs(t, err, ttnn.ErrUnsupported)
			require.NoError(t, d.Synchronize(ctx, 1))
		}}}},
	{name: "memory/an upload is allocated on the device", run: func(t *testing.T, e *confEnv) {
		d := e.open(t, ttnn.Options{Mesh: one})
		before, err := d.MemoryStats(ctx, ttnn.MemDRAM)
		require.NoError(t, err)
		require.NotZero(t, before.Total)
		x := up(t, d, f23, make([]byte, 24), true)
		after, err := d.MemoryStats(ctx, ttnn.MemDRAM)
		require.NoError(t, err)
		require.Equal(t, before.Allocated+24, after.Allocated)
		require.NoError(t, x.Free())
	}, differs: map[string]confDiff{"metal": {
		why: "tensors stay on host until a program moves them to its input's layout (tile-padded on device)",
		check: func(t *testing.T, e *confEnv) {
			d := e.open(t, ttnn.Options{Mesh: one})
			before, err := d.MemoryStats(ctx, ttnn.MemDRAM)
			require.NoError(t, err)
			require.NotZero(t, before.Total)
			p, err := d.LoadProgram(ctx, e.program(t, one, false))
			require.NoError(t, err)
			x, y := up(t, d, f23, make([]byte, 24), true), up(t, d, f23, make([]byte, 24), true)
			after, err := d.MemoryStats(ctx, ttnn.MemDRAM)
			require.NoError(t, err)
			require.Equal(t, before.Allocated, after.Allocated, "upload: host only")
			o, err := p.Run(ctx, 0, "add", x, y)
			require.NoError(t, err)
			s, _ := ttnn.FakeRuntime()
			require.Equal(t, uint64(3), s.DeviceBuffers, "tile input a, row-major input b, tile output")
			require.Equal(t, uint64(32*32*4+24+32*32*4), s.DeviceBytes, "a [2,3] tile pads to one 32x32 tile")
			after, err = d.MemoryStats(ctx, ttnn.MemDRAM)
			require.NoError(t, err)
			require.InDelta(t, before.Allocated+s.DeviceBytes, after.Allocated, 12, "allocations are spread over 12 DRAM banks")
			require.NoError(t, o[0].Free())
			require.NoError(t, x.Free())
			require.NoError(t, y.Free())
			s, _ = ttnn.FakeRuntime()
			require.Zero(t, s.DeviceBuffers)
		}}}},
	{name: "close/frees every tensor, program and submesh handle", run: func(t *testing.T, e *confEnv) {
		d, err := ttnn.Open(ctx, ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 2}, TraceRegionSize: 1 << 20})
		require.NoError(t, err)
		s, err := d.Submesh(ctx, one, ttnn.MeshCoord{Col: 1})
		require.NoError(t, err)
		p, err := s.LoadProgram(ctx, e.program(t, one, e.backend == "metal"))
		require.NoError(t, err)
		a := up(t, s, f23, make([]byte, 24), true)
		_, err = p.Run(ctx, 0, "add", a, a)
		require.NoError(t, err)
		up(t, s, bf4, make([]byte, 8), false) // never used
		require.NoError(t, s.Close())         // tensors, outputs and program left to it
		require.NoError(t, d.Close())
		noLive(t)
		if st, ok := ttnn.FakeRuntime(); ok {
			require.Zero(t, st.BuffersLeakedAtClose, "the backend frees before it closes")
			require.Zero(t, st.TracesLeakedAtClose)
		}
	}},
	{name: "threads/submeshes driven in parallel", run: func(t *testing.T, e *confEnv) {
		d := e.open(t, ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 4}})
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		path := e.program(t, one, false)
		for c := range 4 {
			s, err := d.Submesh(ctx, one, ttnn.MeshCoord{Col: c})
			require.NoError(t, err)
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- func() error {
					defer s.Close()
					p, err := s.LoadProgram(ctx, path)
					if err != nil {
						return err
					}
					defer p.Close()
					a, err := s.Upload(ctx, 0, f23, ttnn.TensorOptions{Retain: true}, f32bytes(1, 2, 3, 4, 5, float32(c)))
					if err != nil {
						return err
					}
					for range 20 {
						o, err := p.Run(ctx, 0, "add", a, a)
						if err != nil {
							return err
						}
						if err := o[0].Read(ctx, 0, make([]byte, 24)); err != nil {
							return err
						}
						if err := o[0].Free(); err != nil {
							return err
						}
					}
					return a.Free()
				}()
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
	}},
	{name: "errors/use after close", run: func(t *testing.T, e *confEnv) {
		d, err := ttnn.Open(ctx, ttnn.Options{Mesh: one})
		require.NoError(t, err)
		p, err := d.LoadProgram(ctx, e.program(t, one, false))
		require.NoError(t, err)
		x := up(t, d, f23, make([]byte, 24), true)
		require.NoError(t, d.Close())
		require.ErrorIs(t, x.Read(ctx, 0, make([]byte, 24)), ttnn.ErrClosed)
		_, err = p.Run(ctx, 0, "add", x, x)
		require.ErrorIs(t, err, ttnn.ErrClosed)
		noLive(t)
	}},
}

const confChild = "TestChildConformance"

// TestChildConformance runs the suite in a child process whose backend TestMain selected
// (TTB_TEST_BACKEND).
func TestChildConformance(t *testing.T) {
	if os.Getenv("TTB_TEST_CHILD") != confChild {
		t.Skip("runs only as a child process (of TestConformance)")
	}
	backend := os.Getenv("TTB_TEST_BACKEND")
	if backend == "metal" {
		if err := ttnnfile.Available(ttnnfile.SDKDir()); err != nil {
			t.Fatalf("metal conformance needs .ttnn fixtures: %v", err)
		}
		if _, ok := ttnn.FakeRuntime(); !ok {
			t.Fatal("metal conformance runs over the fake tt::runtime (scripts/check-metal.sh), not a real one")
		}
	}
	for _, c := range conformance {
		e := &confEnv{backend: backend, dir: t.TempDir()}
		diff, differs := c.differs[backend]
		ok := t.Run(c.name, func(t *testing.T) {
			t.Cleanup(func() { noLive(t) }) // registered first: runs after the cases' own cleanups
			if differs {
				diff.check(t, e)
			} else {
				c.run(t, e)
			}
		})
		verdict := "same"
		if differs {
			verdict = "differs: " + diff.why
		}
		fmt.Printf("conformance backend=%s ok=%v case=%q %s\n", backend, ok, c.name, verdict)
	}
}

var confLine = regexp.MustCompile(`^conformance backend=(\S+) ok=(\S+) case="([^"]*)" (.*)$`)

// TestConformance runs the suite once per backend compiled in, each in its own process, and
// reports the case counts.
func TestConformance(t *testing.T) {
	backends := ttnn.Backends()
	sort.Strings(backends)
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			if b == "metal" {
				if _, ok := ttnn.FakeRuntime(); !ok {
					t.Skip("metal is linked against a real tt::runtime: the suite runs over the fake (scripts/check-metal.sh)")
				}
			}
			cmd := exec.Command(os.Args[0], "-test.run=^"+confChild+"$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), "TTB_TEST_CHILD="+confChild, "TTB_TEST_BACKEND="+b, "GORACE=atexit_sleep_ms=0")
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, string(out))
			same, differ, failed := 0, []string{}, 0
			sc := bufio.NewScanner(strings.NewReader(string(out)))
			for sc.Scan() {
				m := confLine.FindStringSubmatch(sc.Text())
				if m == nil || m[1] != b {
					continue
				}
				if m[2] != "true" {
					failed++
				}
				if strings.HasPrefix(m[4], "differs") {
					differ = append(differ, m[3])
				} else {
					same++
				}
			}
			require.Zero(t, failed, string(out))
			require.Equal(t, len(conformance), same+len(differ), "every case reported: %s", out)
			t.Logf("conformance %s: %d cases, %d as the ABI says, %d differ by design %v", b, len(conformance), same, len(differ), differ)
		})
	}
}
