package resnet

import (
	"context"
	"errors"
	"image"
	"image/color"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/imagenet"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

func solid(w, h int, r, g, b uint8) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = r, g, b, 255
	}
	return img
}

// testImages are pictures that differ in colour, texture and layout.
func testImages() map[string]image.Image {
	checker := image.NewRGBA(image.Rect(0, 0, 200, 200))
	gradient := image.NewNRGBA(image.Rect(0, 0, 320, 240))
	stripes := image.NewGray(image.Rect(0, 0, 256, 256))
	sky := image.NewRGBA(image.Rect(0, 0, 300, 200))
	for y := 0; y < 256; y++ {
		for x := 0; x < 320; x++ {
			if x < 200 && y < 200 {
				v := uint8(0)
				if (x/25+y/25)%2 == 0 {
					v = 255
				}
				checker.SetRGBA(x, y, color.RGBA{v, v, v, 255})
			}
			if y < 240 {
				gradient.SetNRGBA(x, y, color.NRGBA{uint8(x * 255 / 320), uint8(y * 255 / 240), 90, 255})
			}
			if x < 256 {
				stripes.SetGray(x, y, color.Gray{uint8(128 + 127*math.Sin(float64(x)/3))})
			}
			if x < 300 && y < 200 {
				c := color.RGBA{90, 150, 235, 255}
				if y > 120 {
					c = color.RGBA{30, 120, 40, 255}
				}
				sky.SetRGBA(x, y, c)
			}
		}
	}
	return map[string]image.Image{
		"red":      solid(64, 64, 220, 30, 30),
		"green":    solid(64, 64, 30, 200, 40),
		"blue":     solid(100, 50, 20, 40, 210),
		"white":    solid(224, 224, 255, 255, 255),
		"black":    solid(224, 224, 0, 0, 0),
		"checker":  checker,
		"gradient": gradient,
		"stripes":  stripes,
		"sky":      sky,
	}
}

func classifyOne(t *testing.T, r runners.Runner, req *runners.CNNRequest) *runners.CNNResult {
	t.Helper()
	out := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(), Request: req}})
	require.Len(t, out, 1)
	require.NoError(t, out[0].Err)
	res, ok := out[0].Value.(*runners.CNNResult)
	require.True(t, ok, "value is %T", out[0].Value)
	return res
}

// TestCNNDeterministicAndImageDependent: every CNN name runs the same ResNet-50 pipeline; the
// same image always gets the same answer, different images get different ones, and the answer
// is the pipeline's (preprocess, simulated device, postprocess) computed by hand.
func TestCNNDeterministicAndImageDependent(t *testing.T) {
	r := NewSim(catalogue.RunnerResNet, simdev.Latency{})
	imgs := testImages()
	top1 := map[string]bool{}
	labels := imagenet.Labels()
	for name, img := range imgs {
		a := classifyOne(t, r, &runners.CNNRequest{Image: img, TopK: 5})
		b := classifyOne(t, NewSim(catalogue.RunnerVoVNet, simdev.Latency{}), &runners.CNNRequest{Image: img, TopK: 5})
		require.Equal(t, a, b, name)
		require.Len(t, a.Top, 5)
		best := a.Top[0]
		require.Equal(t, labels[best.Index], best.Label)
		require.Greater(t, best.Probability, 0.0)
		require.LessOrEqual(t, best.Probability, 1.0)
		top1[best.Label] = true
	}
	require.Len(t, top1, len(imgs), "different images, different labels: %v", top1)

	// By hand: the device's logits for the preprocessed image, then softmax top-k.
	dev, err := NewFakeDevice(0)
	require.NoError(t, err)
	batch := make([]float32, dev.BatchSize()*ImageElems)
	require.NoError(t, PreprocessInto(batch, imgs["sky"], PILBilinear))
	logits, err := dev.Run(context.Background(), batch, 1)
	require.NoError(t, err)
	want, err := Postprocess(logits, 3, 0)
	require.NoError(t, err)
	require.Equal(t, &want, classifyOne(t, r, &runners.CNNRequest{Image: imgs["sky"], TopK: 3}))

	// The same picture in another pixel format gets the same answer.
	red := imgs["red"].(*image.RGBA)
	nrgba := image.NewNRGBA(red.Bounds())
	copy(nrgba.Pix, red.Pix)
	require.Equal(t, classifyOne(t, r, &runners.CNNRequest{Image: red}), classifyOne(t, r, &runners.CNNRequest{Image: nrgba}))

	// An image whose bounds do not start at the origin (a GIF frame) works too.
	sub := imgs["sky"].(*image.RGBA).SubImage(image.Rect(10, 10, 200, 150))
	require.NotEmpty(t, classifyOne(t, r, &runners.CNNRequest{Image: sub}).Top)
}

func TestCNNTopKAndMinConfidence(t *testing.T) {
	r := NewSim(catalogue.RunnerMobileNetV2, simdev.Latency{})
	img := testImages()["gradient"]
	all := classifyOne(t, r, &runners.CNNRequest{Image: img, TopK: 2000})
	require.Len(t, all.Top, 1000)
	var sum float64
	for i, c := range all.Top {
		require.GreaterOrEqual(t, c.Probability, 0.0)
		require.LessOrEqual(t, c.Probability, 1.0)
		if i > 0 {
			require.LessOrEqual(t, c.Probability, all.Top[i-1].Probability, "best first")
		}
		sum += c.Probability
	}
	require.InDelta(t, 1.0, sum, 1e-9)

	tests := []struct {
		name          string
		topK          int
		minConfidence float64
		want          int
	}{
		{"default top-k is 3", 0, 0, 3},
		{"top-k 1", 1, 0, 1},
		{"top-k 5", 5, 0, 5},
		{"top-1 kept below min confidence", 5, 100, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := classifyOne(t, r, &runners.CNNRequest{Image: img, TopK: tc.topK, MinConfidence: tc.minConfidence})
			require.Len(t, res.Top, tc.want)
			require.Equal(t, all.Top[:tc.want], res.Top)
		})
	}
	t.Run("min confidence between the 2nd and 3rd class", func(t *testing.T) {
		threshold := (all.Top[1].Probability + all.Top[2].Probability) / 2 * 100
		res := classifyOne(t, r, &runners.CNNRequest{Image: img, TopK: 5, MinConfidence: threshold})
		require.Equal(t, all.Top[:2], res.Top)
	})
}

// TestCNNErrorsLatencyAndLifecycle: bad and cancelled requests fail alone; a device batch of
// up to 16 images takes 16 × PerImage (padded or not); Close is final.
func TestCNNErrorsLatencyAndLifecycle(t *testing.T) {
	const perImage = 2 * time.Millisecond
	batchTime := 16 * perImage
	r := NewSim(catalogue.RunnerResNet, simdev.Latency{Warmup: 10 * time.Millisecond, PerImage: perImage})
	start := time.Now()
	require.NoError(t, r.Warmup(context.Background()))
	require.GreaterOrEqual(t, time.Since(start), 10*time.Millisecond+batchTime, "load, then one warm-up batch")

	fake := r.(*cnnRunner).fake
	runs := fake.Runs()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	start = time.Now()
	out := r.Run(context.Background(), []runners.Task{
		{Ctx: context.Background(), Request: &runners.CNNRequest{Image: solid(8, 8, 1, 2, 3)}},
		{Ctx: cancelled, Request: &runners.CNNRequest{Image: solid(8, 8, 1, 2, 3)}},
		{Ctx: context.Background(), Request: &runners.CNNRequest{}},
		{Ctx: context.Background(), Request: &runners.CNNRequest{Image: image.NewRGBA(image.Rect(0, 0, 0, 5))}},
		{Ctx: context.Background(), Request: &runners.CNNRequest{Image: solid(1, 1, 1, 2, 3)}},
		{Ctx: context.Background(), Request: &runners.ImageRequest{Prompt: "not a picture to classify"}},
	})
	elapsed := time.Since(start)
	require.Len(t, out, 6)
	require.NoError(t, out[0].Err)
	require.ErrorIs(t, out[1].Err, context.Canceled)
	require.ErrorIs(t, out[2].Err, runners.ErrBadRequest)
	require.ErrorIs(t, out[3].Err, runners.ErrBadRequest)
	require.NoError(t, out[4].Err)
	require.Error(t, out[5].Err)
	require.GreaterOrEqual(t, elapsed, batchTime, "two images: one padded device batch")
	require.Equal(t, runs+1, fake.Runs(), "two images: one device batch, not one per image")

	// 17 images: two device batches.
	batch := make([]runners.Task, 17)
	for i := range batch {
		batch[i] = runners.Task{Ctx: context.Background(), Request: &runners.CNNRequest{Image: solid(8, 8, uint8(i), 2, 3)}}
	}
	start = time.Now()
	for _, o := range r.Run(context.Background(), batch) {
		require.NoError(t, o.Err)
	}
	require.GreaterOrEqual(t, time.Since(start), 2*batchTime)
	require.Equal(t, runs+3, fake.Runs(), "17 images: two device batches")

	require.NoError(t, r.Close())
	require.NoError(t, r.Close())
	require.ErrorIs(t, r.Warmup(context.Background()), ErrClosed)
	got := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(), Request: &runners.CNNRequest{Image: solid(8, 8, 1, 2, 3)}}})
	require.ErrorIs(t, got[0].Err, ErrClosed)
}

// TestCNNFactory: the registry's label-answering CNN entries build the ResNet-50 pipeline at the device batch
// of 16, on the Go twin in process and on the simulator in a worker process.
func TestCNNFactory(t *testing.T) {
	reg := runners.NewRegistry()
	Register(reg)
	processSettings := func(mod func(*config.Settings)) *config.Settings {
		s := &config.Settings{WorkerIsolation: config.IsolationProcess, MockImageLatency: time.Millisecond}
		if mod != nil {
			mod(s)
		}
		return s
	}
	for _, name := range []string{catalogue.RunnerResNet, catalogue.RunnerVoVNet, catalogue.RunnerMobileNetV2, catalogue.RunnerEfficientNet, catalogue.RunnerViT, catalogue.RunnerSegFormer} {
		r, err := reg.New(name, runners.WorkerSpec{Settings: &config.Settings{}})
		require.NoError(t, err)
		c, ok := r.(*cnnRunner)
		require.True(t, ok, "%s is %T", name, r)
		require.Equal(t, DefaultBatchSize, c.BatchSize())
		require.Nil(t, c.sim, "in process: the Go twin")
	}
	r, err := reg.New(catalogue.RunnerResNet, runners.WorkerSpec{Mesh: config.MeshShape{Rows: 1, Cols: 2}, Settings: processSettings(nil)})
	require.NoError(t, err)
	c := r.(*cnnRunner)
	require.NotNil(t, c.sim)
	opts := c.sim.Options()
	require.Equal(t, ttnn.MeshShape{Rows: 1, Cols: 2}, opts.Mesh)
	require.Equal(t, L1SmallSize, opts.L1SmallSize)
	require.Equal(t, TraceRegionSize, opts.TraceRegionSize)
	require.Equal(t, CommandQueues, opts.CommandQueues)
	require.Equal(t, ttnn.DispatchEth, opts.Dispatch)

	r, err = reg.New(catalogue.RunnerResNet, runners.WorkerSpec{Settings: processSettings(func(s *config.Settings) { s.TraceRegionSize, s.TraceRegionSizeSet = 5000, true })})
	require.NoError(t, err)
	require.Equal(t, uint64(5000), r.(*cnnRunner).sim.Options().TraceRegionSize, "TRACE_REGION_SIZE overrides")
}

func TestFailedRunner(t *testing.T) {
	f := &simdev.FailedRunner{Err: errors.New("broken")}
	require.ErrorContains(t, f.Warmup(context.Background()), "broken")
	out := f.Run(context.Background(), make([]runners.Task, 2))
	require.Len(t, out, 2)
	require.ErrorContains(t, out[1].Err, "broken")
	require.NoError(t, f.Close())
}

func BenchmarkCNNClassify(b *testing.B) {
	r := NewSim(catalogue.RunnerResNet, simdev.Latency{})
	img := testImages()["gradient"]
	tasks := []runners.Task{{Ctx: context.Background(), Request: &runners.CNNRequest{Image: img}}}
	for b.Loop() {
		if out := r.Run(context.Background(), tasks); out[0].Err != nil {
			b.Fatal(out[0].Err)
		}
	}
}
