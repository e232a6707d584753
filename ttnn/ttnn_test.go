//go:build cgo

package ttnn

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const tiny = "testdata/tiny.ttbsim"

var bg = context.Background()

func f32s(vals ...float32) []byte {
	b := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

func requireNoLive(t *testing.T) {
	t.Helper()
	c, err := Counts()
	require.NoError(t, err)
	require.Equal(t, LiveCounts{}, c, "live handles left")
}

func openDev(t *testing.T, opts Options) *Device {
	t.Helper()
	d, err := Open(bg, opts)
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, d.Close())
		requireNoLive(t)
	})
	return d
}

func upload(t *testing.T, d *Device, desc TensorDesc, data []byte, retain bool) *Tensor {
	t.Helper()
	tt, err := d.Upload(bg, 0, desc, TensorOptions{Retain: retain}, data)
	require.NoError(t, err)
	return tt
}

func read(t *testing.T, tt *Tensor) []byte {
	t.Helper()
	b := make([]byte, tt.Desc().Bytes())
	require.NoError(t, tt.Read(bg, 0, b))
	return b
}

var f23 = TensorDesc{DType: F32, Shape: []int{2, 3}}

func TestParseVisibleDevices(t *testing.T) {
	tests := []struct {
		name  string
		value string
		set   bool
		total int
		want  []int
		err   string
	}{
		{name: "unset means all", set: false, total: 5, want: []int{0, 1, 2, 3, 4}},
		{name: "empty means none", value: "", set: true, total: 5, want: []int{}},
		{name: "list", value: "0,2", set: true, total: 5, want: []int{0, 2}},
		{name: "spaces", value: " 3 , 1", set: true, total: 5, want: []int{3, 1}},
		{name: "out of range", value: "5", set: true, total: 5, err: "chip 5 does not exist"},
		{name: "duplicate", value: "1,1", set: true, total: 5, err: "listed twice"},
		{name: "not a number", value: "a", set: true, total: 5, err: "not a chip index"},
		{name: "trailing comma", value: "1,", set: true, total: 5, err: "not a chip index"},
		{name: "negative", value: "-1", set: true, total: 5, err: "not a chip index"},
		{name: "garbage after", value: "1;2", set: true, total: 5, err: "unexpected ';'"},
		{name: "no chips present", set: false, total: 0, want: []int{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseVisibleDevices(tc.value, tc.set, tc.total)
			if tc.err != "" {
				require.ErrorIs(t, err, ErrInvalidArgument)
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// runChild re-executes the test binary to run one Child* test with env, and returns its
// combined output and error.
func runChild(t *testing.T, test string, env ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	// atexit_sleep_ms=0: a race-enabled child would otherwise linger 1 s at exit.
	cmd.Env = append(os.Environ(), append([]string{childEnv + "=" + test, "GORACE=atexit_sleep_ms=0"}, env...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func childOnly(t *testing.T) {
	if os.Getenv(childEnv) != t.Name() {
		t.Skip("runs only as a child process")
	}
}

func TestVisibleDevicesAtInit(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want string
	}{
		{name: "unset, default count", env: []string{"MOCK_DEVICES_COUNT="}, want: "chips=5"},
		{name: "unset, 8 mock chips", env: []string{"MOCK_DEVICES_COUNT=8"}, want: "chips=8"},
		{name: "empty", env: []string{"MOCK_DEVICES_COUNT=4", "TT_VISIBLE_DEVICES="}, want: "chips=0 open=invalid argument: no chips are visible"},
		{name: "two", env: []string{"MOCK_DEVICES_COUNT=4", "TT_VISIBLE_DEVICES=3,1"}, want: "chips=2 ids=[3 1]"},
		{name: "invalid", env: []string{"MOCK_DEVICES_COUNT=4", "TT_VISIBLE_DEVICES=0,x"}, want: "init=ttnn: runtime init: invalid argument: TT_VISIBLE_DEVICES=\"0,x\""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := tc.env
			if !strings.Contains(strings.Join(env, " "), "TT_VISIBLE_DEVICES") {
				env = append(env, "TT_VISIBLE_DEVICES=__unset__")
			}
			out, err := runChild(t, "TestChildVisible", env...)
			require.NoError(t, err, out)
			require.Contains(t, out, tc.want)
		})
	}
}

func TestChildVisible(t *testing.T) {
	childOnly(t)
	if err := Init("sim"); err != nil {
		t.Logf("init=%v", err)
		return
	}
	n, err := VisibleChips()
	require.NoError(t, err)
	d, err := Open(bg, Options{})
	if err != nil {
		var e *Error
		require.ErrorAs(t, err, &e)
		t.Logf("chips=%d open=%v", n, errors.Unwrap(err).Error()+": "+e.Msg)
		return
	}
	t.Logf("chips=%d ids=%v", n, d.Info().DeviceIDs)
	require.NoError(t, d.Close())
}

func TestOpenOptions(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		kind error
		msg  string
	}{
		{name: "mesh too large", opts: Options{Mesh: MeshShape{2, 4}}, kind: ErrInvalidArgument, msg: "mesh 2x4 needs 8 chips but only 5 are visible"},
		{name: "half a mesh", opts: Options{Mesh: MeshShape{1, 0}}, kind: ErrInvalidArgument, msg: "give both rows and cols"},
		{name: "three queues", opts: Options{CommandQueues: 3}, kind: ErrInvalidArgument, msg: "1 or 2"},
		{name: "2 CQs need eth dispatch", opts: Options{Mesh: MeshShape{1, 2}, CommandQueues: 2, Dispatch: DispatchWorker}, kind: ErrInvalidArgument, msg: "ethernet dispatch"},
		{name: "ids count", opts: Options{Mesh: MeshShape{1, 2}, DeviceIDs: []int{0}}, kind: ErrInvalidArgument, msg: "1 device ids given for a 1x2 mesh"},
		{name: "id not visible", opts: Options{Mesh: MeshShape{1, 1}, DeviceIDs: []int{7}}, kind: ErrInvalidArgument, msg: "device id 7 is not visible"},
		{name: "l1 small too big", opts: Options{L1SmallSize: 2 << 20}, kind: ErrInvalidArgument, msg: "exceeds L1 per core"},
		{name: "trace region too big", opts: Options{TraceRegionSize: 13 << 30}, kind: ErrOutOfMemory, msg: "does not fit in DRAM"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(bg, tc.opts)
			require.ErrorIs(t, err, tc.kind)
			require.ErrorContains(t, err, tc.msg)
		})
	}
	requireNoLive(t)
}

func TestOpenInfoAndSecondOpenBusy(t *testing.T) {
	d := openDev(t, Options{Mesh: MeshShape{1, 2}, DeviceIDs: []int{3, 1}, L1SmallSize: 32768, TraceRegionSize: 1 << 20, CommandQueues: 2})
	info := d.Info()
	require.Equal(t, "sim", info.Backend)
	require.Equal(t, MeshShape{1, 2}, info.Mesh)
	require.Equal(t, []int{3, 1}, info.DeviceIDs)
	require.Equal(t, 2, info.CommandQueues)
	require.Equal(t, uint64(1<<20), info.TraceRegionSize)

	_, err := Open(bg, Options{Mesh: MeshShape{1, 1}})
	require.ErrorIs(t, err, ErrBusy)
	require.ErrorContains(t, err, "already open")

	ms, err := d.MemoryStats(bg, MemTrace)
	require.NoError(t, err)
	require.Equal(t, MemStats{Total: 1 << 20, LargestFree: 1 << 20}, ms)
	before, err := d.MemoryStats(bg, MemDRAM)
	require.NoError(t, err)
	tt := upload(t, d, f23, make([]byte, 24), true)
	after, err := d.MemoryStats(bg, MemDRAM)
	require.NoError(t, err)
	require.Equal(t, before.Allocated+24, after.Allocated)
	require.NoError(t, tt.Free())
	require.NoError(t, tt.Free(), "Free is idempotent")
	require.ErrorIs(t, tt.Read(bg, 0, make([]byte, 24)), ErrClosed)
	require.ErrorIs(t, d.Synchronize(bg, 2), ErrInvalidArgument)
	require.NoError(t, d.Synchronize(bg, 1))
}

func TestProgramManifest(t *testing.T) {
	d := openDev(t, Options{})
	p, err := d.LoadProgram(bg, tiny)
	require.NoError(t, err)
	fns := p.Functions()
	require.Len(t, fns, 2)
	require.Equal(t, Function{Index: 0, Name: "add",
		Inputs:  []TensorDesc{{Name: "a", DType: F32, Shape: []int{2, 3}}, {Name: "b", DType: F32, Shape: []int{2, 3}}},
		Outputs: []TensorDesc{{Name: "sum", DType: F32, Shape: []int{2, 3}}}}, fns[0])
	require.Equal(t, []TensorDesc{{Name: "y", DType: BF16, Shape: []int{4}}, {Name: "z", DType: U8, Shape: []int{3}}}, fns[1].Outputs)
	_, err = p.Function("nope")
	require.ErrorIs(t, err, ErrNotFound)

	for _, tc := range []struct {
		path string
		kind error
		msg  string
	}{
		{"testdata/missing.ttbsim", ErrNotFound, "No such file"},
		{"testdata/bad-dtype.ttbsim", ErrInvalidArgument, `bad-dtype.ttbsim:4: unknown dtype "f64"`},
		{"testdata/bad-header.ttbsim", ErrInvalidArgument, `first line must be "ttb-sim-program 1"`},
		{"testdata/bad-outside.ttbsim", ErrInvalidArgument, "outside a func block"},
	} {
		_, err := d.LoadProgram(bg, tc.path)
		require.ErrorIs(t, err, tc.kind, tc.path)
		require.ErrorContains(t, err, tc.msg)
	}
	require.NoError(t, p.Close())
}

func TestExampleManifests(t *testing.T) {
	d := openDev(t, Options{Mesh: MeshShape{1, 1}})
	want := map[string]string{"sdxl-unet": "forward", "sdxl-vae": "decode", "whisper-encoder": "encode",
		"whisper-decoder-step": "step", "resnet50": "forward"}
	for name, fn := range want {
		p, err := d.LoadProgram(bg, filepath.Join("programs", name+".ttbsim"))
		require.NoError(t, err, name)
		f, err := p.Function(fn)
		require.NoError(t, err)
		var ins []*Tensor
		for _, desc := range f.Inputs {
			ins = append(ins, upload(t, d, desc, make([]byte, desc.Bytes()), true))
		}
		outs, err := p.Run(bg, 0, fn, ins...)
		require.NoError(t, err, name)
		require.Len(t, outs, len(f.Outputs))
		for _, o := range append(outs, ins...) {
			require.NoError(t, o.Free())
		}
		require.NoError(t, p.Close())
	}
}

func TestRunDeterministic(t *testing.T) {
	d := openDev(t, Options{})
	p, err := d.LoadProgram(bg, tiny)
	require.NoError(t, err)
	x := f32s(1, 2, 3, 4, 5, 6)
	y := f32s(1, 2, 3, 4, 5, 7)
	run := func(a, b []byte) []byte {
		ta, tb := upload(t, d, f23, a, true), upload(t, d, f23, b, true)
		outs, err := p.Run(bg, 0, "add", ta, tb)
		require.NoError(t, err)
		require.Len(t, outs, 1)
		require.Equal(t, TensorDesc{Name: "sum", DType: F32, Shape: []int{2, 3}}, outs[0].Desc())
		got := read(t, outs[0])
		for _, tt := range []*Tensor{ta, tb, outs[0]} {
			require.NoError(t, tt.Free())
		}
		return got
	}
	first := run(x, x)
	require.Equal(t, first, run(x, x), "same input, same output")
	require.NotEqual(t, first, run(x, y), "different input, different output")
	for i := 0; i < 6; i++ {
		v := math.Float32frombits(binary.LittleEndian.Uint32(first[4*i:]))
		require.True(t, v >= -1 && v < 1, "float outputs are finite values in [-1,1), got %v", v)
	}

	// Another function of the same program on the same input gives other data.
	tx := upload(t, d, TensorDesc{DType: BF16, Shape: []int{4}}, make([]byte, 8), true)
	outs, err := p.Run(bg, 0, "scale", tx)
	require.NoError(t, err)
	require.Len(t, outs, 2)
	require.Len(t, read(t, outs[1]), 3)

	// Wrong shapes and counts are refused with the program's own description.
	_, err = p.Run(bg, 0, "add", tx, tx)
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.ErrorContains(t, err, "tiny.add input 0 (a): got bf16[4], want f32[2,3]")
	_, err = p.Run(bg, 0, "add", tx)
	require.ErrorContains(t, err, "takes 2 inputs, got 1")
	_, err = p.Run(bg, 1, "scale", tx)
	require.ErrorContains(t, err, "command queue 1 does not exist")
	_, err = d.Upload(bg, 0, f23, TensorOptions{}, make([]byte, 5))
	require.ErrorContains(t, err, "upload of 5 B for a tensor of 24 B")
}

func TestRetainSemantics(t *testing.T) {
	d := openDev(t, Options{})
	p, err := d.LoadProgram(bg, tiny)
	require.NoError(t, err)
	a := upload(t, d, f23, f32s(1, 2, 3, 4, 5, 6), false)
	b := upload(t, d, f23, f32s(1, 2, 3, 4, 5, 6), true)
	outs, err := p.Run(bg, 0, "add", a, b)
	require.NoError(t, err)
	require.NoError(t, outs[0].Free())
	err = a.Read(bg, 0, make([]byte, 24))
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.ErrorContains(t, err, "deallocated by program tiny.add")
	require.NoError(t, b.Read(bg, 0, make([]byte, 24)), "retained input survives")
	// Tensors left alive here are freed by Close (checked by openDev's cleanup).
}

func TestTraceRules(t *testing.T) {
	d := openDev(t, Options{TraceRegionSize: 10000})
	p, err := d.LoadProgram(bg, tiny)
	require.NoError(t, err)
	in := f32s(1, 2, 3, 4, 5, 6)
	a, err := d.Alloc(bg, f23, TensorOptions{})
	require.NoError(t, err)
	require.NoError(t, a.Write(bg, 0, in))
	b := upload(t, d, f23, in, true)

	// Capturing a program that never ran fails: its ops are not compiled.
	tr, err := d.BeginTrace(bg, 0)
	require.NoError(t, err)
	_, err = p.Run(bg, 0, "add", a, b)
	require.ErrorIs(t, err, ErrBusy)
	require.ErrorContains(t, err, "has not run on this device before the trace capture")
	// Reads and writes are refused during a capture.
	require.ErrorIs(t, a.Read(bg, 0, make([]byte, 24)), ErrBusy)
	require.ErrorIs(t, a.Write(bg, 0, in), ErrBusy)
	_, err = d.BeginTrace(bg, 0)
	require.ErrorIs(t, err, ErrBusy, "one capture at a time")
	require.NoError(t, tr.End(bg))
	require.NoError(t, tr.Release())

	// Compile run, then capture.
	warm, err := p.Run(bg, 0, "add", a, b)
	require.NoError(t, err)
	want := read(t, warm[0])
	require.NoError(t, warm[0].Free())

	tr, err = d.BeginTrace(bg, 0)
	require.NoError(t, err)
	outs, err := p.Run(bg, 0, "add", a, b)
	require.NoError(t, err)
	require.NoError(t, tr.End(bg))
	ms, err := d.MemoryStats(bg, MemTrace)
	require.NoError(t, err)
	require.Equal(t, uint64(4096), ms.Allocated)

	require.NoError(t, tr.Replay(bg, true))
	require.Equal(t, want, read(t, outs[0]), "replay computes what the run did")
	require.NoError(t, a.Write(bg, 0, f32s(9, 9, 9, 9, 9, 9)))
	require.NoError(t, tr.Replay(bg, true))
	require.NotEqual(t, want, read(t, outs[0]), "replay reads the current inputs")
	// A replay with unchanged inputs skips the computation (the memo) but must notice any
	// write: back to the first inputs, and a host write over the output itself.
	changed := read(t, outs[0])
	require.NoError(t, tr.Replay(bg, true))
	require.Equal(t, changed, read(t, outs[0]), "unchanged inputs, unchanged output")
	require.NoError(t, a.Write(bg, 0, in))
	require.NoError(t, tr.Replay(bg, true))
	require.Equal(t, want, read(t, outs[0]), "a written input is seen by the next replay")
	require.NoError(t, outs[0].Write(bg, 0, make([]byte, len(want))))
	require.NoError(t, tr.Replay(bg, true))
	require.Equal(t, want, read(t, outs[0]), "an overwritten output is computed again")
	// Outputs are generated lazily: an output used as the next run's input is generated first,
	// so chaining gives what reading in between gives.
	chained, err := p.Run(bg, 0, "add", outs[0], b)
	require.NoError(t, err)
	viaRead, err := p.Run(bg, 0, "add", upload(t, d, f23, read(t, outs[0]), true), b)
	require.NoError(t, err)
	require.Equal(t, read(t, viaRead[0]), read(t, chained[0]))
	require.ErrorIs(t, outs[0].Free(), ErrBusy, "trace output is pinned by the trace")

	// A second capture of 2 runs (8192 B) does not fit next to the first (4096 B of 10000 B).
	tr2, err := d.BeginTrace(bg, 0)
	require.NoError(t, err)
	o1, err := p.Run(bg, 0, "add", a, b)
	require.NoError(t, err)
	o2, err := p.Run(bg, 0, "add", a, b)
	require.NoError(t, err)
	err = tr2.End(bg)
	require.ErrorIs(t, err, ErrOutOfMemory)
	require.ErrorContains(t, err, "creating trace buffers of 8192 B, but only 5904 B of the trace region is free")
	require.ErrorIs(t, tr2.Replay(bg, true), ErrClosed, "a trace that did not fit is gone")
	require.NoError(t, o1[0].Free())
	require.NoError(t, o2[0].Free())

	// Non-retained inputs cannot be captured.
	loose := upload(t, d, f23, in, false)
	tr3, err := d.BeginTrace(bg, 0)
	require.NoError(t, err)
	_, err = p.Run(bg, 0, "add", loose, b)
	require.ErrorContains(t, err, "must be persistent")
	require.NoError(t, tr3.End(bg))
	require.NoError(t, tr3.Release())

	require.ErrorIs(t, p.Close(), ErrBusy, "program used by a live trace")
	require.NoError(t, tr.Release())
	require.NoError(t, tr.Release(), "Release is idempotent")
	require.NoError(t, outs[0].Free())
	require.NoError(t, p.Close())
}

func TestEvents(t *testing.T) {
	d := openDev(t, Options{CommandQueues: 2})
	ev, err := d.RecordEvent(bg, 1)
	require.NoError(t, err)
	require.NoError(t, d.WaitEvent(bg, 0, ev))
	require.NoError(t, d.SynchronizeEvent(bg, ev))
	require.ErrorIs(t, d.WaitEvent(bg, 0, ev+1), ErrNotFound)
	_, err = d.RecordEvent(bg, 2)
	require.ErrorIs(t, err, ErrInvalidArgument)
}

func TestLatencyModel(t *testing.T) {
	t.Setenv("TTB_SIM_LATENCY_SCALE", "0.05")
	d := openDev(t, Options{Mesh: MeshShape{1, 1}})
	p, err := d.LoadProgram(bg, "programs/sdxl-unet.ttbsim")
	require.NoError(t, err)
	f, err := p.Function("forward")
	require.NoError(t, err)
	var ins []*Tensor
	for _, desc := range f.Inputs {
		ins = append(ins, upload(t, d, desc, make([]byte, desc.Bytes()), true))
	}
	start := time.Now()
	outs, err := p.Run(bg, 0, "forward", ins...)
	el := time.Since(start)
	require.NoError(t, err)
	require.GreaterOrEqual(t, el, 9*time.Millisecond, "190.3 ms x 0.05")
	require.NoError(t, outs[0].Free())
	t.Logf("sdxl-unet step at scale 0.05: %v", el)
}

func TestFailProbability(t *testing.T) {
	t.Setenv("TTB_SIM_FAIL_PROB", "1")
	d := openDev(t, Options{})
	p, err := d.LoadProgram(bg, tiny)
	require.NoError(t, err)
	a := upload(t, d, f23, make([]byte, 24), true)
	_, err = p.Run(bg, 0, "add", a, a)
	require.ErrorIs(t, err, ErrInternal)
	require.ErrorContains(t, err, "injected failure in tiny.add (TTB_SIM_FAIL_PROB=1)")
	require.NoError(t, a.Read(bg, 0, make([]byte, 24)), "an injected error does not poison the device")
}

func TestFailProbabilityIsAProbability(t *testing.T) {
	t.Setenv("TTB_SIM_FAIL_PROB", "0.25")
	t.Setenv("TTB_SIM_SEED", "7")
	d := openDev(t, Options{})
	p, err := d.LoadProgram(bg, tiny)
	require.NoError(t, err)
	x := upload(t, d, TensorDesc{DType: BF16, Shape: []int{4}}, make([]byte, 8), true)
	failed := 0
	for i := 0; i < 400; i++ {
		outs, err := p.Run(bg, 0, "scale", x)
		if err != nil {
			require.ErrorIs(t, err, ErrInternal)
			failed++
			continue
		}
		for _, o := range outs {
			require.NoError(t, o.Free())
		}
	}
	require.InDelta(t, 100, failed, 40, "about a quarter of 400 runs fail")
}

func TestConcurrentCallers(t *testing.T) {
	d := openDev(t, Options{})
	p, err := d.LoadProgram(bg, tiny)
	require.NoError(t, err)
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			errs <- func() error {
				in := f32s(float32(g), 1, 2, 3, 4, 5)
				var want []byte
				for i := 0; i < 50; i++ {
					a, err := d.Upload(bg, 0, f23, TensorOptions{Retain: true}, in)
					if err != nil {
						return err
					}
					outs, err := p.Run(bg, 0, "add", a, a)
					if err != nil {
						return err
					}
					got := make([]byte, 24)
					if err := outs[0].Read(bg, 0, got); err != nil {
						return err
					}
					if want == nil {
						want = got
					} else if !bytes.Equal(want, got) {
						return errors.New("output changed between identical runs")
					}
					if err := errors.Join(a.Free(), outs[0].Free()); err != nil {
						return err
					}
				}
				return nil
			}()
		}()
	}
	for g := 0; g < 8; g++ {
		require.NoError(t, <-errs)
	}
}

func TestBadFaultSetting(t *testing.T) {
	t.Setenv("TTB_SIM_FAIL_PROB", "lots")
	_, err := Open(bg, Options{})
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.ErrorContains(t, err, `TTB_SIM_FAIL_PROB="lots"`)
}

func TestHangHonoursContext(t *testing.T) {
	// The hang is long next to a loaded machine's scheduling delays, so that "released at its
	// deadline" and "after the hang" cannot meet.
	t.Setenv("TTB_SIM_HANG_SECONDS", "1.5")
	d := openDev(t, Options{})
	p, err := d.LoadProgram(bg, tiny)
	require.NoError(t, err)
	a := upload(t, d, f23, make([]byte, 24), true)
	ctx, cancel := context.WithTimeout(bg, 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = p.Run(ctx, 0, "add", a, a)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), time.Second, "caller is released at its deadline, not after the 1.5 s hang")
	// The hung call completes in the background; the device then serves the next call.
	outs, err := p.Run(bg, 0, "add", a, a)
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(start), 1500*time.Millisecond)
	require.NoError(t, outs[0].Free())
}

func TestChildDeviceLost(t *testing.T) {
	childOnly(t)
	d, err := Open(bg, Options{})
	require.NoError(t, err)
	p, err := d.LoadProgram(bg, tiny)
	require.NoError(t, err)
	a, err := d.Upload(bg, 0, f23, TensorOptions{Retain: true}, make([]byte, 24))
	require.NoError(t, err)
	outs, err := p.Run(bg, 0, "add", a, a)
	require.NoError(t, err, "run 1 is fine")
	_, err = p.Run(bg, 0, "add", a, a)
	require.ErrorIs(t, err, ErrDeviceLost)
	require.ErrorContains(t, err, "injected device loss on run 2")
	_, err = p.Run(bg, 0, "add", a, a)
	require.ErrorIs(t, err, ErrDeviceLost, "the handle is poisoned")
	require.ErrorIs(t, outs[0].Read(bg, 0, make([]byte, 24)), ErrDeviceLost)
	_, err = d.Upload(bg, 0, f23, TensorOptions{}, make([]byte, 24))
	require.ErrorIs(t, err, ErrDeviceLost)
	require.ErrorIs(t, d.Close(), ErrDeviceLost, "close reports the loss")
	c, err := Counts()
	require.NoError(t, err)
	require.Equal(t, LiveCounts{}, c, "host resources are freed anyway")
	_, err = Open(bg, Options{})
	require.ErrorIs(t, err, ErrDeviceLost, "the process must exit")
	t.Log("CHILD-OK")
}

func TestChildTimeout(t *testing.T) {
	childOnly(t)
	d, err := Open(bg, Options{})
	require.NoError(t, err)
	p, err := d.LoadProgram(bg, tiny)
	require.NoError(t, err)
	a, err := d.Upload(bg, 0, f23, TensorOptions{Retain: true}, make([]byte, 24))
	require.NoError(t, err)
	start := time.Now()
	_, err = p.Run(bg, 0, "add", a, a)
	require.ErrorIs(t, err, ErrTimeout)
	require.Less(t, time.Since(start), 5*time.Second)
	require.ErrorIs(t, a.Read(bg, 0, make([]byte, 24)), ErrDeviceLost)
	require.ErrorIs(t, d.Close(), ErrDeviceLost)
	t.Log("CHILD-OK")
}

func TestChildAbort(t *testing.T) {
	childOnly(t)
	d, err := Open(bg, Options{})
	require.NoError(t, err)
	p, err := d.LoadProgram(bg, tiny)
	require.NoError(t, err)
	a, err := d.Upload(bg, 0, f23, TensorOptions{Retain: true}, make([]byte, 24))
	require.NoError(t, err)
	_, err = p.Run(bg, 0, "add", a, a)
	require.NoError(t, err)
	t.Log("BEFORE-ABORT")
	_, _ = p.Run(bg, 0, "add", a, a)
	t.Log("NOT-REACHED")
}

func TestFaultsInChildProcess(t *testing.T) {
	out, err := runChild(t, "TestChildDeviceLost", "TTB_SIM_DEVICE_LOST=2")
	require.NoError(t, err, out)
	require.Contains(t, out, "CHILD-OK")

	out, err = runChild(t, "TestChildTimeout", "TTB_SIM_HANG_SECONDS=30", "TT_METAL_OPERATION_TIMEOUT_SECONDS=0.05")
	require.NoError(t, err, out)
	require.Contains(t, out, "CHILD-OK")

	out, err = runChild(t, "TestChildAbort", "TTB_SIM_ABORT=2")
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, out)
	ws, ok := ee.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	// The Go runtime catches SIGABRT raised in C, prints the stacks and exits with status 2.
	died := (ws.Signaled() && ws.Signal() == syscall.SIGABRT) || (ws.ExitStatus() == 2 && strings.Contains(out, "SIGABRT: abort"))
	require.True(t, died, "child must die of SIGABRT: %v\n%s", err, out)
	require.Contains(t, out, "BEFORE-ABORT")
	require.Contains(t, out, "TTB_SIM_ABORT=2: aborting in tiny.add")
	require.NotContains(t, out, "NOT-REACHED")
}

func TestNoLeaks(t *testing.T) {
	d, err := Open(bg, Options{})
	require.NoError(t, err)
	buf := bytes.Repeat([]byte{1}, 24)
	for i := 0; i < 1000; i++ {
		tt, err := d.Upload(bg, 0, f23, TensorOptions{}, buf)
		require.NoError(t, err)
		require.NoError(t, tt.Free())
	}
	c, err := Counts()
	require.NoError(t, err)
	require.Equal(t, LiveCounts{Devices: 1}, c)
	require.NoError(t, d.Close())
	require.ErrorIs(t, d.Synchronize(bg, 0), ErrClosed)
	require.NoError(t, d.Close(), "Close is idempotent")

	for i := 0; i < 100; i++ {
		d, err := Open(bg, Options{Mesh: MeshShape{1, 1}, TraceRegionSize: 1 << 16})
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
	requireNoLive(t)
}

func TestInitOtherBackend(t *testing.T) {
	require.NoError(t, Init("sim"), "same backend again is fine")
	err := Init("metal")
	if metalBuilt { // -tags ttnn: both backends are in, and the process has chosen sim
		require.Equal(t, []string{"sim", "metal"}, Backends())
		require.ErrorIs(t, err, ErrBusy)
		require.ErrorContains(t, err, "already selected")
	} else {
		require.Equal(t, []string{"sim"}, Backends())
		require.ErrorIs(t, err, ErrUnsupported)
		require.ErrorContains(t, err, "not compiled in")
	}
	require.ErrorIs(t, Init("tpu"), ErrInvalidArgument)
}

func TestBuildWithoutCgo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the package with CGO_ENABLED=0")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not in PATH")
	}
	cmd := exec.Command(gobin, "test", "-count=1", "-run=^TestNoCgoTwinFailsClearly$", ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), "ok")
}
