//go:build cgo

package ttnn

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// closeAll closes every device in order and then checks nothing is left.
func closeAll(t *testing.T, devs ...*Device) {
	t.Helper()
	for _, d := range devs {
		require.NoError(t, d.Close())
	}
	requireNoLive(t)
}

func TestSubmeshFit(t *testing.T) {
	parent, err := Open(bg, Options{Mesh: MeshShape{2, 2}, L1SmallSize: 1024, TraceRegionSize: 1 << 20, CommandQueues: 2})
	require.NoError(t, err)
	defer closeAll(t, parent)
	tests := []struct {
		name    string
		mesh    MeshShape
		off     MeshCoord
		wantErr error
		msg     string
		ids     []int
	}{
		{"one chip", MeshShape{1, 1}, MeshCoord{1, 1}, nil, "", []int{3}},
		{"a row", MeshShape{1, 2}, MeshCoord{1, 0}, nil, "", []int{2, 3}},
		{"a column", MeshShape{2, 1}, MeshCoord{0, 1}, nil, "", []int{1, 3}},
		{"the whole mesh", MeshShape{2, 2}, MeshCoord{}, nil, "", []int{0, 1, 2, 3}},
		{"too many rows", MeshShape{3, 1}, MeshCoord{}, ErrInvalidArgument, "submesh 3x1 at offset (0,0) does not fit the 2x2 parent mesh", nil},
		{"offset past the edge", MeshShape{1, 2}, MeshCoord{0, 1}, ErrInvalidArgument, "submesh 1x2 at offset (0,1) does not fit the 2x2 parent mesh", nil},
		{"empty", MeshShape{0, 1}, MeshCoord{}, ErrInvalidArgument, "out of range", nil},
		{"negative offset", MeshShape{1, 1}, MeshCoord{-1, 0}, ErrInvalidArgument, "out of range", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := parent.Submesh(bg, tt.mesh, tt.off)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				require.ErrorContains(t, err, tt.msg)
				return
			}
			require.NoError(t, err)
			info := s.Info()
			require.True(t, info.Submesh)
			require.Equal(t, tt.off, info.Offset)
			require.Equal(t, tt.mesh, info.Mesh)
			require.Equal(t, tt.ids, info.DeviceIDs)
			require.Equal(t, uint64(1024), info.L1SmallSize, "the parent's options")
			require.Equal(t, uint64(1<<20), info.TraceRegionSize)
			require.Equal(t, 2, info.CommandQueues)
			m, err := s.MemoryStats(bg, MemDRAM)
			require.NoError(t, err)
			pm, err := parent.MemoryStats(bg, MemDRAM)
			require.NoError(t, err)
			require.Equal(t, pm.Total/4*uint64(tt.mesh.Chips()), m.Total, "memory of the submesh's chips")
			require.NoError(t, s.Close())
		})
	}
}

func TestSubmeshLifecycle(t *testing.T) {
	parent, err := Open(bg, Options{Mesh: MeshShape{2, 2}})
	require.NoError(t, err)
	top, err := parent.Submesh(bg, MeshShape{1, 2}, MeshCoord{0, 0})
	require.NoError(t, err)

	_, err = parent.Submesh(bg, MeshShape{2, 1}, MeshCoord{0, 1})
	require.ErrorIs(t, err, ErrBusy)
	require.ErrorContains(t, err, "overlaps the live submesh 1x2 at (0,0)")

	// Nested: a chip of the top row; it takes the ids of its place.
	leaf, err := top.Submesh(bg, MeshShape{1, 1}, MeshCoord{0, 1})
	require.NoError(t, err)
	require.Equal(t, []int{1}, leaf.Info().DeviceIDs)

	// A device with live submeshes stays open and usable.
	require.ErrorIs(t, parent.Close(), ErrBusy)
	require.ErrorIs(t, top.Close(), ErrBusy)
	require.NoError(t, top.Synchronize(bg, 0))
	require.NoError(t, parent.Synchronize(bg, 0))

	// Tensors and programs belong to their own device.
	p, err := leaf.LoadProgram(bg, tiny)
	require.NoError(t, err)
	a := upload(t, leaf, f23, f32s(1, 2, 3, 4, 5, 6), true)
	b := upload(t, top, f23, f32s(1, 2, 3, 4, 5, 6), true)
	_, err = p.Run(bg, 0, "add", a, b)
	require.ErrorIs(t, err, ErrInvalidArgument)
	out, err := p.Run(bg, 0, "add", a, a)
	require.NoError(t, err)
	require.Len(t, out, 1)
	c, err := Counts()
	require.NoError(t, err)
	require.Equal(t, LiveCounts{Devices: 3, Programs: 1, Tensors: 3, TensorBytes: 72}, c)

	require.NoError(t, leaf.Close(), "releases its tensors and program")
	require.NoError(t, leaf.Close(), "idempotent")
	require.ErrorIs(t, a.Read(bg, 0, make([]byte, 24)), ErrClosed)
	c, err = Counts()
	require.NoError(t, err)
	require.Equal(t, LiveCounts{Devices: 2, Tensors: 1, TensorBytes: 24}, c)

	_, err = leaf.Submesh(bg, MeshShape{1, 1}, MeshCoord{})
	require.ErrorIs(t, err, ErrClosed)
	closeAll(t, top, parent)
}

// TestSharedParentServesWorkers: a parent mesh (OpenParent) gives each worker its group's
// submesh; the workers run programs at once, each on its own thread, and get the same
// deterministic results.
func TestSharedParentServesWorkers(t *testing.T) {
	parent, err := OpenParent(bg, Options{Mesh: MeshShape{4, 1}, DeviceIDs: []int{4, 3, 2, 1}, L1SmallSize: 32768,
		TraceRegionSize: 1 << 20, CommandQueues: 2})
	require.NoError(t, err)
	_, err = Open(bg, Options{Mesh: MeshShape{1, 1}})
	require.ErrorIs(t, err, ErrBusy, "the parent holds the simulator's chips")
	_, err = (&Device{}).OpenSubmesh(bg, Options{Mesh: MeshShape{1, 1}})
	require.ErrorIs(t, err, ErrInvalidArgument, "only a parent mesh opens submeshes")

	const workers, runs = 4, 20
	in := f32s(1, 2, 3, 4, 5, 6)
	results := make([][]byte, workers)
	devs := make([]*Device, workers)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- func() error {
				d, err := parent.OpenSubmesh(bg, Options{Mesh: MeshShape{1, 1}, DeviceIDs: []int{4 - i}, L1SmallSize: 1024, CommandQueues: 2,
					TraceRegionSize: 1 << 16})
				if err != nil {
					return err
				}
				devs[i] = d
				if got := d.Info(); !got.Submesh || got.Offset != (MeshCoord{Row: i}) || got.L1SmallSize != 32768 {
					return fmt.Errorf("worker %d: info %+v", i, got)
				}
				p, err := d.LoadProgram(bg, tiny)
				if err != nil {
					return err
				}
				a, err := d.Upload(bg, 1, f23, TensorOptions{Retain: true}, in)
				if err != nil {
					return err
				}
				for range runs {
					outs, err := p.Run(bg, 0, "add", a, a)
					if err != nil {
						return err
					}
					buf := make([]byte, 24)
					if err := outs[0].Read(bg, 0, buf); err != nil {
						return err
					}
					if results[i] != nil && !bytes.Equal(buf, results[i]) {
						return fmt.Errorf("worker %d: output changed", i)
					}
					results[i] = buf
					if err := outs[0].Free(); err != nil {
						return err
					}
				}
				return nil
			}()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for i := 1; i < workers; i++ {
		require.Equal(t, results[0], results[i], "same program and input on any chip, same output")
	}
	c, err := Counts()
	require.NoError(t, err)
	require.Equal(t, uint64(1+workers), c.Devices)

	tests := []struct {
		name string
		opts Options
		err  error
		msg  string
	}{
		{"chip already served", Options{Mesh: MeshShape{1, 1}, DeviceIDs: []int{2}}, ErrBusy, "overlaps the live submesh"},
		{"not a rectangle", Options{Mesh: MeshShape{2, 1}, DeviceIDs: []int{4, 2}}, ErrInvalidArgument, "chips [4 2] are not a 2x1 rectangle of the 4x1 parent mesh (chips [4 3 2 1], row-major)"},
		{"chip outside the parent", Options{Mesh: MeshShape{1, 1}, DeviceIDs: []int{0}}, ErrInvalidArgument, "chip 0 is not in the shared parent mesh"},
		{"past the edge", Options{Mesh: MeshShape{2, 1}, DeviceIDs: []int{1, 0}}, ErrInvalidArgument, "not a 2x1 rectangle"},
		{"wrong id count", Options{Mesh: MeshShape{2, 1}, DeviceIDs: []int{1}}, ErrInvalidArgument, "1 device ids for a 2x1 mesh"},
		{"no ids for a part", Options{Mesh: MeshShape{2, 1}}, ErrInvalidArgument, "needs DeviceIDs to say where it lies"},
		{"larger options", Options{Mesh: MeshShape{1, 1}, DeviceIDs: []int{4}, L1SmallSize: 65536, TraceRegionSize: 2 << 20, Fabric: Fabric1D},
			ErrInvalidArgument, "l1_small_size 65536 > 32768, trace_region_size 2097152 > 1048576, fabric 1, parent has 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parent.OpenSubmesh(bg, tt.opts)
			require.ErrorIs(t, err, tt.err)
			require.ErrorContains(t, err, tt.msg)
		})
	}
	require.ErrorIs(t, parent.Close(), ErrBusy)
	closeAll(t, append(devs, parent)...)
}

// TestSubmeshTraceRegion: the trace region is per chip, so each submesh has its own.
func TestSubmeshTraceRegion(t *testing.T) {
	parent, err := Open(bg, Options{Mesh: MeshShape{1, 2}, TraceRegionSize: 8192})
	require.NoError(t, err)
	capture := func(d *Device) error {
		p, err := d.LoadProgram(bg, tiny)
		require.NoError(t, err)
		a := upload(t, d, f23, make([]byte, 24), true)
		_, err = p.Run(bg, 0, "add", a, a) // the compile run
		require.NoError(t, err)
		tr, err := d.BeginTrace(bg, 0)
		require.NoError(t, err)
		_, err = p.Run(bg, 0, "add", a, a) // 4096 B of trace
		require.NoError(t, err)
		return tr.End(bg)
	}
	left, err := parent.Submesh(bg, MeshShape{1, 1}, MeshCoord{0, 0})
	require.NoError(t, err)
	right, err := parent.Submesh(bg, MeshShape{1, 1}, MeshCoord{0, 1})
	require.NoError(t, err)
	require.NoError(t, capture(left))
	require.NoError(t, capture(left))
	err = capture(left)
	require.ErrorIs(t, err, ErrOutOfMemory)
	require.ErrorContains(t, err, "only 0 B of the trace region is free (trace_region_size=8192)")
	require.NoError(t, capture(right), "the other submesh's region is untouched")
	m, err := right.MemoryStats(bg, MemTrace)
	require.NoError(t, err)
	require.Equal(t, MemStats{Total: 8192, Allocated: 4096, LargestFree: 4096}, m)
	closeAll(t, left, right, parent)
}

// TestSubmeshLatencyScale: each submesh has its own simulator latency scale.
func TestSubmeshLatencyScale(t *testing.T) {
	t.Setenv("TTB_SIM_LATENCY_SCALE", "")
	require.NoError(t, os.Unsetenv("TTB_SIM_LATENCY_SCALE"))
	parent, err := OpenParent(bg, Options{Mesh: MeshShape{1, 2}, SimLatencyScale: 0.001})
	require.NoError(t, err)
	slow, err := parent.OpenSubmesh(bg, Options{Mesh: MeshShape{1, 1}, DeviceIDs: []int{0}, SimLatencyScale: 3})
	require.NoError(t, err)
	inherit, err := parent.OpenSubmesh(bg, Options{Mesh: MeshShape{1, 1}, DeviceIDs: []int{1}})
	require.NoError(t, err)
	took := func(d *Device) time.Duration {
		p, err := d.LoadProgram(bg, tiny)
		require.NoError(t, err)
		a := upload(t, d, f23, make([]byte, 24), true)
		start := time.Now()
		_, err = p.Run(bg, 0, "add", a, a)
		require.NoError(t, err)
		return time.Since(start)
	}
	require.GreaterOrEqual(t, took(slow), 30*time.Millisecond, "10 ms x 3")
	t.Logf("tiny.add at the parent's scale 0.001: %v", took(inherit))
	_, err = parent.OpenSubmesh(bg, Options{Mesh: MeshShape{1, 1}, DeviceIDs: []int{1}, SimLatencyScale: -1})
	require.ErrorIs(t, err, ErrInvalidArgument)
	closeAll(t, slow, inherit, parent)
}

func TestSubmeshNoLeaks(t *testing.T) {
	parent, err := OpenParent(bg, Options{Mesh: MeshShape{2, 1}, TraceRegionSize: 1 << 16})
	require.NoError(t, err)
	buf := bytes.Repeat([]byte{1}, 24)
	for i := range 100 {
		d, err := parent.OpenSubmesh(bg, Options{Mesh: MeshShape{1, 1}, DeviceIDs: []int{i % 2}})
		require.NoError(t, err)
		p, err := d.LoadProgram(bg, tiny)
		require.NoError(t, err)
		a := upload(t, d, f23, buf, true)
		_, err = p.Run(bg, 0, "add", a, a) // output left for Close to free
		require.NoError(t, err)
		tr, err := d.BeginTrace(bg, 0)
		require.NoError(t, err)
		_, err = p.Run(bg, 0, "add", a, a)
		require.NoError(t, err)
		require.NoError(t, tr.End(bg)) // trace left for Close to release
		require.NoError(t, d.Close())
	}
	c, err := Counts()
	require.NoError(t, err)
	require.Equal(t, LiveCounts{Devices: 1}, c, "only the parent")
	closeAll(t, parent)
}

// TestSubmeshCreateHonoursContext: a cancelled context creates nothing.
func TestSubmeshCreateHonoursContext(t *testing.T) {
	parent, err := Open(bg, Options{Mesh: MeshShape{1, 1}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(bg)
	cancel()
	_, err = parent.Submesh(ctx, MeshShape{1, 1}, MeshCoord{})
	require.ErrorIs(t, err, context.Canceled)
	closeAll(t, parent)
}

func TestChildSubmeshLost(t *testing.T) {
	childOnly(t)
	parent, err := OpenParent(bg, Options{Mesh: MeshShape{2, 1}})
	require.NoError(t, err)
	lost, err := parent.OpenSubmesh(bg, Options{Mesh: MeshShape{1, 1}, DeviceIDs: []int{0}})
	require.NoError(t, err)
	other, err := parent.OpenSubmesh(bg, Options{Mesh: MeshShape{1, 1}, DeviceIDs: []int{1}})
	require.NoError(t, err)
	run := func(d *Device) error {
		p, err := d.LoadProgram(bg, tiny)
		require.NoError(t, err)
		a := upload(t, d, f23, make([]byte, 24), true)
		if _, err := p.Run(bg, 0, "add", a, a); err != nil {
			return err
		}
		_, err = p.Run(bg, 0, "add", a, a)
		return err
	}
	err = run(lost)
	require.ErrorIs(t, err, ErrDeviceLost)
	require.ErrorContains(t, err, "injected device loss on run 2")
	p, err := other.LoadProgram(bg, tiny)
	require.NoError(t, err)
	a := upload(t, other, f23, make([]byte, 24), true)
	_, err = p.Run(bg, 0, "add", a, a)
	require.NoError(t, err, "the sibling's run 1 is fine: faults count per submesh")
	require.ErrorIs(t, lost.Close(), ErrDeviceLost, "release reports the loss")
	_, err = parent.OpenSubmesh(bg, Options{Mesh: MeshShape{1, 1}, DeviceIDs: []int{0}})
	require.ErrorIs(t, err, ErrDeviceLost, "no new submesh after a loss: the process must exit")
	require.NoError(t, other.Close())
	require.NoError(t, parent.Close())
	requireNoLive(t)
	t.Log("CHILD-OK")
}

func TestSubmeshLossInChildProcess(t *testing.T) {
	out, err := runChild(t, "TestChildSubmeshLost", "TTB_SIM_DEVICE_LOST=2")
	require.NoError(t, err, out)
	require.Contains(t, out, "CHILD-OK")
}

// BenchmarkSubmeshCycle: carve a 1x1 submesh out of the shared parent and release it.
func BenchmarkSubmeshCycle(b *testing.B) {
	parent, err := OpenParent(bg, Options{Mesh: MeshShape{2, 1}})
	require.NoError(b, err)
	defer func() { require.NoError(b, parent.Close()) }()
	for b.Loop() {
		d, err := parent.OpenSubmesh(bg, Options{Mesh: MeshShape{1, 1}, DeviceIDs: []int{1}})
		require.NoError(b, err)
		require.NoError(b, d.Close())
	}
}

// BenchmarkSubmeshesInParallel: four submeshes run a 10 ms program (unscaled) at once; the
// time per iteration stays near one run when they do not serialise.
func BenchmarkSubmeshesInParallel(b *testing.B) {
	b.Setenv("TTB_SIM_LATENCY_SCALE", "1")
	parent, err := OpenParent(bg, Options{Mesh: MeshShape{4, 1}})
	require.NoError(b, err)
	defer func() { require.NoError(b, parent.Close()) }()
	type worker struct {
		d *Device
		p *Program
		a *Tensor
	}
	ws := make([]worker, 4)
	for i := range ws {
		d, err := parent.OpenSubmesh(bg, Options{Mesh: MeshShape{1, 1}, DeviceIDs: []int{i}})
		require.NoError(b, err)
		defer func() { require.NoError(b, d.Close()) }()
		p, err := d.LoadProgram(bg, tiny)
		require.NoError(b, err)
		a, err := d.Upload(bg, 0, f23, TensorOptions{Retain: true}, make([]byte, 24))
		require.NoError(b, err)
		ws[i] = worker{d, p, a}
	}
	for b.Loop() {
		var wg sync.WaitGroup
		for _, w := range ws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				outs, err := w.p.Run(bg, 0, "add", w.a, w.a)
				if err == nil {
					err = outs[0].Free()
				}
				if err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
	}
}

func TestSimScale(t *testing.T) {
	tests := []struct {
		name      string
		want, own float64
		scale     float64
	}{
		{"half the program's time", 0.05, 0.1, 0.5},
		{"no device time is the smallest positive scale, not 0 (= the program's own)", 0, 0.19, SimNoLatency},
		{"negative wants none", -1, 0.19, SimNoLatency},
		{"capped at 1000", 500, 0.1, 1000},
		{"no own latency leaves the default", 0.1, 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.scale, SimScale(tc.want, tc.own))
		})
	}
}
