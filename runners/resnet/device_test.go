package resnet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/scheduler"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

func TestParseSimFunc(t *testing.T) {
	shipped, err := loadSimFunc()
	require.NoError(t, err)
	require.Equal(t, 16, shipped.batch)
	require.Equal(t, 3404*time.Microsecond, shipped.batchLatency)
	require.LessOrEqual(t, shipped.traceBytes, int(TraceRegionSize), "the batch's trace fits the demo's region")
	m := shipped.manifestFor(ttnn.MeshShape{Rows: 1, Cols: 2})
	require.True(t, strings.HasPrefix(m, "ttb-sim-program 1\n"), m)
	for _, want := range []string{"name resnet50\nmesh 1 2\n", "func forward\n", "input pixel_values bf16 1 3 224 224\n",
		"output logits f32 1 1000\n", "latency_ms 0.21275\n", "trace_bytes 87500\n"} {
		require.Contains(t, m, want)
	}

	const head = "ttb-sim-program 1\nname resnet50\nfunc forward\nlatency_ms 3.2\ntrace_bytes 1000\n"
	tests := []struct {
		name, src, err string
	}{
		{"batch 8", head + "input x bf16 8 3 224 224\noutput y f32 8 1000\n", ""},
		{"two functions", head + "input x bf16 8 3 224 224\noutput y f32 8 1000\nfunc other\n", "more than one function"},
		{"f32 input", head + "input x f32 8 3 224 224\noutput y f32 8 1000\n", "not a ResNet-50 forward"},
		{"batches differ", head + "input x bf16 8 3 224 224\noutput y f32 4 1000\n", "not a ResNet-50 forward"},
		{"wrong classes", head + "input x bf16 8 3 224 224\noutput y f32 8 10\n", "not a ResNet-50 forward"},
		{"no output", head + "input x bf16 8 3 224 224\n", "one input and one output"},
		{"bad dtype", head + "input x u64 8 3 224 224\noutput y f32 8 1000\n", "dtype u64"},
		{"no latency", "ttb-sim-program 1\nname r\nfunc f\ntrace_bytes 9\ninput x bf16 8 3 224 224\noutput y f32 8 1000\n", "latency"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := parseSimFunc(tt.src)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, 8, f.batch)
			require.Contains(t, f.manifestFor(ttnn.MeshShape{Rows: 1, Cols: 1}), "latency_ms 0.4\n")
		})
	}
}

// preprocessed returns the network inputs of testImage(first..first+n-1) as one device batch of
// size (zero padded).
func preprocessed(t testing.TB, first, n, size int) []float32 {
	t.Helper()
	batch := make([]float32, size*ImageElems)
	for i := range n {
		require.NoError(t, PreprocessInto(batch[i*ImageElems:(i+1)*ImageElems], testImage(first+i), PILBilinear))
	}
	return batch
}

func TestFakeDevice(t *testing.T) {
	f, err := NewFakeDevice(30 * time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, 16, f.BatchSize())
	batch := preprocessed(t, 0, 2, 16)

	start := time.Now()
	got, err := f.Run(context.Background(), batch, 2)
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond, "a device batch takes its latency")
	require.Len(t, got, 2*NumClasses)
	a := append([]float32(nil), got[:NumClasses]...)
	require.NotEqual(t, a, got[NumClasses:], "different images, different logits")
	for _, v := range got {
		require.True(t, v >= -1 && v < 1, "%v outside [-1, 1)", v)
	}

	// The same image alone in a batch: the same logits (no dependence on the neighbours).
	alone := preprocessed(t, 0, 1, 16)
	got, err = f.Run(context.Background(), alone, 1)
	require.NoError(t, err)
	require.Equal(t, a, got)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	_, err = f.Run(ctx, batch, 2)
	require.ErrorIs(t, err, context.DeadlineExceeded, "the device time ends with the context")

	for _, bad := range []struct {
		batch []float32
		n     int
	}{{batch[:ImageElems], 1}, {batch, 17}, {batch, -1}} {
		_, err = f.Run(context.Background(), bad.batch, bad.n)
		require.Error(t, err)
	}
}

// openSim opens the C simulator's device in this test process (one at a time per process).
func openSim(t *testing.T) *SimDevice {
	t.Helper()
	if err := ttnn.Init("sim"); errors.Is(err, ttnn.ErrUnsupported) {
		t.Skip("built without cgo: no simulator")
	}
	t.Setenv("TTB_SIM_LATENCY_SCALE", "0.001")
	d, err := NewSimDevice(SimConfig{})
	require.NoError(t, err)
	return d
}

// TestTwinMatchesSimulator: the C simulator, opened with the demo's options, returns for each
// image the logits FakeDevice computes in Go, bit for bit, independent of the batch's other
// images; a partial batch reads only its real images.
func TestTwinMatchesSimulator(t *testing.T) {
	sim := openSim(t)
	_, err := sim.Run(context.Background(), make([]float32, 16*ImageElems), 1)
	require.ErrorContains(t, err, "not open")
	_, ok := sim.Info()
	require.False(t, ok)
	require.NoError(t, sim.Open(context.Background()))
	defer func() {
		require.NoError(t, sim.Close())
		require.NoError(t, sim.Close(), "idempotent")
		c, err := ttnn.Counts()
		require.NoError(t, err)
		require.Equal(t, ttnn.LiveCounts{}, c, "nothing left behind")
	}()
	require.NoError(t, sim.Open(context.Background()), "open twice is a no-op")
	info, ok := sim.Info()
	require.True(t, ok)
	require.Equal(t, L1SmallSize, info.L1SmallSize)
	require.Equal(t, TraceRegionSize, info.TraceRegionSize)
	require.Equal(t, CommandQueues, info.CommandQueues)

	twin, err := NewFakeDevice(0)
	require.NoError(t, err)
	images := preprocessed(t, 0, 21, 21)
	for _, tc := range []struct{ first, n int }{{0, 16}, {16, 5}, {0, 1}, {3, 16}} {
		batch := make([]float32, 16*ImageElems)
		copy(batch, images[tc.first*ImageElems:(tc.first+tc.n)*ImageElems])
		got, err := sim.Run(context.Background(), batch, tc.n)
		require.NoError(t, err)
		got = append([]float32(nil), got...)
		want, err := twin.Run(context.Background(), batch, tc.n)
		require.NoError(t, err)
		require.Equal(t, want, got, "images %d..%d", tc.first, tc.first+tc.n-1)
	}
	_, err = sim.Run(context.Background(), make([]float32, ImageElems), 1)
	require.Error(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = sim.Run(ctx, make([]float32, 16*ImageElems), 1)
	require.ErrorIs(t, err, context.Canceled)
}

// countingDevice records the number of real images of every device call.
type countingDevice struct {
	run   DeviceFunc
	mu    sync.Mutex
	calls []int
}

func (c *countingDevice) Run(ctx context.Context, batch []float32, n int) ([]float32, error) {
	c.mu.Lock()
	c.calls = append(c.calls, n)
	c.mu.Unlock()
	return c.run(ctx, batch, n)
}

func (c *countingDevice) recorded() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int(nil), c.calls...)
}

// TestSimulatorCrossRequestBatching is the must-show on the C simulator: 64 concurrent
// requests on one worker (MAX_BATCH_SIZE 16, a max batch delay) run as 4 device batches of 16
// replayed by the simulator, then 5 more as one padded batch, and each caller gets the answer
// for its own image, computed independently from that image alone.
func TestSimulatorCrossRequestBatching(t *testing.T) {
	sim := openSim(t)
	dev := &countingDevice{run: sim.Run}
	s := scheduler.New(scheduler.Config{
		Groups:        []config.DeviceGroup{{ID: "0", Devices: []int{0}}},
		QueueSize:     128,
		MaxBatchSize:  16,
		MaxBatchDelay: time.Second, // generous: the first 16 must arrive within it even under -race
	}, func(config.DeviceGroup) (runners.Runner, error) {
		return New(Config{BatchSize: sim.BatchSize(), Device: dev.Run, Open: sim.Open, Close: sim.Close})
	})
	s.Start(context.Background())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, s.Stop(ctx))
	})
	deadline := time.Now().Add(10 * time.Second)
	for !s.Ready() {
		require.True(t, time.Now().Before(deadline), "scheduler not ready")
		time.Sleep(time.Millisecond)
	}
	require.Equal(t, []int{16}, dev.recorded(), "warm-up: one full batch")

	// Expected answers, one image at a time on the Go twin.
	twin, err := NewFakeDevice(0)
	require.NoError(t, err)
	alone, err := New(Config{BatchSize: twin.BatchSize(), Device: twin.Run, Workers: 1})
	require.NoError(t, err)
	reqs := make([]*runners.CNNRequest, 69)
	want := make([]any, len(reqs))
	seen := map[string]bool{}
	for i := range reqs {
		reqs[i] = &runners.CNNRequest{Image: testImage(i), TopK: 5, MinConfidence: 0}
		out := alone.Run(context.Background(), []runners.Task{{Ctx: context.Background(), Request: reqs[i]}})
		require.NoError(t, out[0].Err)
		want[i] = out[0].Value
		seen[fmt.Sprint(out[0].Value.(*runners.CNNResult).Top)] = true
	}
	require.Len(t, seen, len(reqs), "every image has its own answer, so a mix-up would show")

	send := func(first, n int) {
		t.Helper()
		got := make([]any, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				ctx := scheduler.WithClient(context.Background(), fmt.Sprintf("client-%d", first+i))
				got[i], errs[i] = s.Submit(ctx, reqs[first+i], nil)
			})
		}
		wg.Wait()
		for i := range n {
			require.NoError(t, errs[i], first+i)
			require.Equal(t, want[first+i], got[i], "request %d got another image's answer", first+i)
		}
	}
	send(0, 64)
	require.Equal(t, []int{16, 16, 16, 16, 16}, dev.recorded(), "warm-up, then 64 requests in 4 device batches of 16")
	send(64, 5)
	require.Equal(t, []int{16, 16, 16, 16, 16, 5}, dev.recorded(), "5 requests: one padded device batch")
}

// TestBF16DeviceMatchesFloat: a batch handed over as bf16 bytes (PreprocessBF16Into) gets the
// logits of the same batch handed over as float32, on the Go twin and on the C simulator, and
// a runner driving DeviceBF16 answers as one driving Device, across batches whose padding
// shrinks and grows.
func TestBF16DeviceMatchesFloat(t *testing.T) {
	ctx := context.Background()
	bf16Batch := func(first, n, size int) []byte {
		b := make([]byte, size*2*ImageElems)
		for i := range n {
			require.NoError(t, PreprocessBF16Into(b[i*2*ImageElems:(i+1)*2*ImageElems], testImage(first+i), PILBilinear))
		}
		return b
	}
	twin, err := NewFakeDevice(0)
	require.NoError(t, err)
	want, err := twin.Run(ctx, preprocessed(t, 3, 5, 16), 5)
	require.NoError(t, err)
	want = append([]float32(nil), want...)
	got, err := twin.RunBF16(ctx, bf16Batch(3, 5, 16), 5)
	require.NoError(t, err)
	require.Equal(t, want, got)
	_, err = twin.RunBF16(ctx, make([]byte, 2*ImageElems), 1)
	require.Error(t, err, "a short batch is refused")

	t.Run("runner", func(t *testing.T) {
		f, err := New(Config{BatchSize: 16, Device: twin.Run, Workers: 2})
		require.NoError(t, err)
		twinB, err := NewFakeDevice(0)
		require.NoError(t, err)
		b, err := New(Config{BatchSize: 16, DeviceBF16: twinB.RunBF16, Workers: 2})
		require.NoError(t, err)
		for _, n := range []int{16, 1, 3, 18} {
			tasks := make([]runners.Task, n)
			for i := range tasks {
				tasks[i] = runners.Task{Ctx: ctx, Request: &runners.CNNRequest{Image: testImage(10*n + i), TopK: 3}}
			}
			require.Equal(t, f.Run(ctx, tasks), b.Run(ctx, tasks), "batch of %d", n)
		}
	})

	t.Run("simulator", func(t *testing.T) {
		sim := openSim(t)
		require.NoError(t, sim.Open(ctx))
		defer func() { require.NoError(t, sim.Close()) }()
		got, err := sim.RunBF16(ctx, bf16Batch(3, 5, 16), 5)
		require.NoError(t, err)
		require.Equal(t, want, got)
		got, err = sim.RunBF16(ctx, bf16Batch(4, 2, 16), 2) // slots 2-4 go back to padding
		require.NoError(t, err)
		wantF, err := twin.Run(ctx, preprocessed(t, 4, 2, 16), 2)
		require.NoError(t, err)
		require.Equal(t, wantF, got)
	})
}
