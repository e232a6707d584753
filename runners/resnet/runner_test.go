package resnet

import (
	"context"
	"errors"
	"fmt"
	"image"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// fakeDevice is a deterministic stand-in for ResNet-50 on a chip: it average-pools each image
// of the batch (every other pixel, to stay cheap under -race) to 3×8×8 features and applies a fixed random linear layer to 1000 classes, so
// the logits are a function of the input image alone. It records every call.
type fakeDevice struct {
	weight []float32 // NumClasses × features
	delay  time.Duration
	err    error // returned by every call when set

	mu      sync.Mutex
	calls   []int // n of each call
	lens    []int // len(batch) of each call
	padding []bool
}

const (
	poolSide     = 8
	poolFeatures = Channels * poolSide * poolSide
)

func newFakeDevice() *fakeDevice {
	rng := rand.New(rand.NewPCG(1, 2))
	w := make([]float32, NumClasses*poolFeatures)
	for i := range w {
		w[i] = float32(rng.NormFloat64())
	}
	return &fakeDevice{weight: w}
}

// logits of one preprocessed image.
func (d *fakeDevice) logits(img []float32) []float32 {
	var feat [poolFeatures]float32
	cell := InputSize / poolSide
	for c := range Channels {
		for y := 0; y < InputSize; y += 2 {
			for x := 0; x < InputSize; x += 2 {
				feat[(c*poolSide+y/cell)*poolSide+x/cell] += img[(c*InputSize+y)*InputSize+x]
			}
		}
	}
	out := make([]float32, NumClasses)
	for k := range out {
		row := d.weight[k*poolFeatures : (k+1)*poolFeatures]
		var z float32
		for i, f := range feat {
			z += row[i] * f
		}
		out[k] = z / float32(cell*cell/4) * 2 // sharpen: a trained net is confident
	}
	return out
}

func (d *fakeDevice) run(ctx context.Context, batch []float32, n int) ([]float32, error) {
	pad := true
	for _, v := range batch[n*ImageElems:] {
		if v != 0 {
			pad = false
			break
		}
	}
	d.mu.Lock()
	d.calls = append(d.calls, n)
	d.lens = append(d.lens, len(batch))
	d.padding = append(d.padding, pad)
	d.mu.Unlock()
	if d.err != nil {
		return nil, d.err
	}
	if d.delay > 0 {
		select {
		case <-time.After(d.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	out := make([]float32, 0, n*NumClasses) // padding images' logits are never read
	for i := range n {
		out = append(out, d.logits(batch[i*ImageElems:(i+1)*ImageElems])...)
	}
	return out, nil
}

func (d *fakeDevice) recorded() (calls, lens []int, padding []bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]int(nil), d.calls...), append([]int(nil), d.lens...), append([]bool(nil), d.padding...)
}

// testImage i is a small picture distinct from every other i: a gradient whose direction,
// colours and stripe period depend on i.
func testImage(i int) *image.NRGBA {
	w, h := 64+i%7*9, 48+i%5*11
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			p := img.PixOffset(x, y)
			img.Pix[p] = uint8((x*(i%11+1) + y*(i/11)) * 3)
			img.Pix[p+1] = uint8((y*(i%13+1) + 17*i) * 2)
			img.Pix[p+2] = uint8(((x/(i%4+2))%2)*200 + i)
			img.Pix[p+3] = 0xFF
		}
	}
	return img
}

// expected is the pipeline computed directly for one request: Preprocess, the fake network,
// Postprocess.
func expected(t testing.TB, d *fakeDevice, req *runners.CNNRequest) *runners.CNNResult {
	t.Helper()
	x, err := Preprocess(req.Image)
	require.NoError(t, err)
	res, err := Postprocess(d.logits(x), req.TopK, req.MinConfidence)
	require.NoError(t, err)
	return &res
}

func TestNewValidates(t *testing.T) {
	_, err := New(Config{})
	require.Error(t, err)
	_, err = New(Config{Device: newFakeDevice().run, BatchSize: -1})
	require.Error(t, err)
	_, err = New(Config{Device: newFakeDevice().run, Interp: Interp(7)})
	require.Error(t, err)
	r, err := New(Config{Device: newFakeDevice().run})
	require.NoError(t, err)
	require.Equal(t, DefaultBatchSize, r.BatchSize())
}

func TestRunnerRun(t *testing.T) {
	dev := newFakeDevice()
	var opened, closed int
	r, err := New(Config{BatchSize: 4, Device: dev.run,
		Open:  func(context.Context) error { opened++; return nil },
		Close: func() error { closed++; return nil }})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, r.Warmup(ctx))
	require.Equal(t, 1, opened)
	calls, lens, _ := dev.recorded()
	require.Equal(t, []int{4}, calls, "warm-up runs one full batch")
	require.Equal(t, []int{4 * ImageElems}, lens)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	var tasks []runners.Task
	var reqs []*runners.CNNRequest
	for i := range 9 {
		req := &runners.CNNRequest{Image: testImage(i), TopK: 1 + i%5, MinConfidence: float64(i % 3 * 10)}
		reqs = append(reqs, req)
		tasks = append(tasks, runners.Task{Ctx: ctx, Request: req})
	}
	// Three that never reach the device.
	tasks = append(tasks,
		runners.Task{Ctx: ctx, Request: &runners.CNNRequest{Image: image.NewNRGBA(image.Rect(0, 0, 0, 0))}},
		runners.Task{Ctx: ctx, Request: &runners.AudioRequest{}}, // not a CNN request
		runners.Task{Ctx: cancelled, Request: &runners.CNNRequest{Image: testImage(3)}})
	outs := r.Run(ctx, tasks)
	require.Len(t, outs, len(tasks))
	for i, req := range reqs {
		require.NoError(t, outs[i].Err, i)
		require.Equal(t, expected(t, dev, req), outs[i].Value, "task %d", i)
	}
	require.ErrorIs(t, outs[9].Err, runners.ErrBadRequest)
	require.ErrorIs(t, outs[9].Err, ErrEmptyImage)
	require.Error(t, outs[10].Err)
	require.ErrorIs(t, outs[11].Err, context.Canceled)
	calls, lens, padding := dev.recorded()
	require.Equal(t, []int{4, 4, 4, 1}, calls, "9 live tasks: two full device batches and one padded")
	for i := range lens {
		require.Equal(t, 4*ImageElems, lens[i])
		require.True(t, padding[i], "call %d: padding not zero", i)
	}

	require.NoError(t, r.Close())
	require.NoError(t, r.Close())
	require.Equal(t, 1, closed)
	outs = r.Run(ctx, tasks[:1])
	require.ErrorIs(t, outs[0].Err, ErrClosed)
	require.ErrorIs(t, r.Warmup(ctx), ErrClosed)
}

func TestRunnerDeviceErrors(t *testing.T) {
	img := testImage(1)
	tests := []struct {
		name   string
		err    error
		wantIs []error
	}{
		{"device lost keeps its sentinel", fmt.Errorf("chip 0: %w", runners.ErrDeviceLost), []error{runners.ErrDeviceLost}},
		{"other failures are device errors", errors.New("DMA timeout"), []error{ErrDevice}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dev := newFakeDevice()
			dev.err = tc.err
			r, err := New(Config{BatchSize: 2, Device: dev.run})
			require.NoError(t, err)
			tasks := []runners.Task{
				{Ctx: context.Background(), Request: &runners.CNNRequest{Image: img}},
				{Ctx: context.Background(), Request: &runners.CNNRequest{Image: img}},
				{Ctx: context.Background(), Request: &runners.CNNRequest{Image: img}},
			}
			outs := r.Run(context.Background(), tasks)
			for _, o := range outs {
				for _, target := range tc.wantIs {
					require.ErrorIs(t, o.Err, target)
				}
			}
			require.Error(t, r.Warmup(context.Background()))
		})
	}
	t.Run("short logits", func(t *testing.T) {
		r, err := New(Config{BatchSize: 2, Device: func(context.Context, []float32, int) ([]float32, error) {
			return make([]float32, NumClasses), nil
		}})
		require.NoError(t, err)
		outs := r.Run(context.Background(), []runners.Task{
			{Ctx: context.Background(), Request: &runners.CNNRequest{Image: img}},
			{Ctx: context.Background(), Request: &runners.CNNRequest{Image: img}},
		})
		require.ErrorIs(t, outs[1].Err, ErrBadLogits)
	})
}

func BenchmarkRunnerBatch16(b *testing.B) {
	r, err := New(Config{BatchSize: 16, Device: func(_ context.Context, batch []float32, n int) ([]float32, error) {
		return make([]float32, n*NumClasses), nil // device time excluded: host side only
	}})
	require.NoError(b, err)
	tasks := make([]runners.Task, 16)
	for i := range tasks {
		tasks[i] = runners.Task{Ctx: context.Background(), Request: &runners.CNNRequest{Image: checker(640, 480), TopK: 3}}
	}
	b.ReportAllocs()
	cpu0 := processCPUTime()
	for b.Loop() {
		for _, o := range r.Run(context.Background(), tasks) {
			if o.Err != nil {
				b.Fatal(o.Err)
			}
		}
	}
	b.ReportMetric(float64(16*b.N)/b.Elapsed().Seconds(), "images/s")
	reportCPU(b, cpu0, 16)
}

// TestFailedPreprocessLeavesNoStaleImage: the batch buffer is reused between batches, so a
// request whose preprocessing failed must fail, with its slot cleared, and never be answered
// with the classes of the image an earlier batch left in that slot (issue 30's audit of reused
// state). The only failure reachable through Run is an interpolation New refuses; the test
// sets it after New to make one batch fail.
func TestFailedPreprocessLeavesNoStaleImage(t *testing.T) {
	dev := newFakeDevice()
	r, err := New(Config{BatchSize: 2, Workers: 1, Device: dev.run})
	require.NoError(t, err)
	ctx := context.Background()
	first := r.Run(ctx, []runners.Task{{Ctx: ctx, Request: &runners.CNNRequest{Image: testImage(1), TopK: 1}}})
	require.NoError(t, first[0].Err)

	r.cfg.Interp = Interp(7)
	outs := r.Run(ctx, []runners.Task{{Ctx: ctx, Request: &runners.CNNRequest{Image: testImage(2), TopK: 1}}})
	require.Error(t, outs[0].Err)
	require.Contains(t, outs[0].Err.Error(), "unknown interpolation")
	require.Nil(t, outs[0].Value, "a failed preprocess must not be answered with the stale slot's classes")
	for i, v := range r.buf[:ImageElems] {
		require.Zero(t, v, "slot value %d left from the earlier batch", i)
	}
}
