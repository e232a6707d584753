package mock

import (
	"context"
	"encoding/json"
	"image"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
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

func TestImageNetLabels(t *testing.T) {
	labels := ImageNetLabels()
	require.Len(t, labels, 1000)
	require.Equal(t, "tench", labels[0])
	require.Equal(t, "toilet tissue", labels[999])
	seen := map[string]bool{}
	for i, l := range labels {
		require.NotEmpty(t, l, "label %d", i)
		require.False(t, seen[l], "duplicate label %q", l)
		seen[l] = true
	}
	labels[0] = "changed"
	require.Equal(t, "tench", ImageNetLabels()[0], "a copy")
}

// TestImageNetLabelsMatchReference compares the embedded torchvision list with the shared
// reference list (pytorch/hub imagenet_classes.txt). torchvision renames the two duplicated
// ILSVRC names; every other entry must be identical.
func TestImageNetLabelsMatchReference(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	repoRoot := filepath.Join(filepath.Dir(file), "..", "..")
	path := filepath.Join(repoRoot, "..", "shared", "testdata", "resnet", "imagenet_classes.json")
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		t.Skipf("shared test data absent (%s); nothing to compare with", path)
	}
	require.NoError(t, err)
	var ref []string
	require.NoError(t, json.Unmarshal(data, &ref))
	require.Len(t, ref, 1000)
	renamed := map[int][2]string{134: {"crane", "crane bird"}, 639: {"maillot", "maillot tank suit"}}
	labels := ImageNetLabels()
	for i := range ref {
		if rn, ok := renamed[i]; ok {
			require.Equal(t, rn[0], ref[i], "reference %d", i)
			require.Equal(t, rn[1], labels[i], "embedded %d", i)
			continue
		}
		require.Equal(t, ref[i], labels[i], "class %d", i)
	}
}

func TestCNNDeterministicAndImageDependent(t *testing.T) {
	r := NewCNN(RunnerResNet, Latency{})
	imgs := testImages()
	top1 := map[string]bool{}
	for name, img := range imgs {
		a := classifyOne(t, r, &runners.CNNRequest{Image: img, TopK: 5})
		b := classifyOne(t, NewCNN(RunnerVoVNet, Latency{}), &runners.CNNRequest{Image: img, TopK: 5})
		require.Equal(t, a, b, name)
		require.NotEmpty(t, a.Top)
		best := a.Top[0]
		require.Equal(t, imagenetLabels[best.Index], best.Label)
		require.Greater(t, best.Probability, 0.05, "%s: a plausible top-1", name)
		require.LessOrEqual(t, best.Probability, 1.0)
		top1[best.Label] = true
	}
	require.GreaterOrEqual(t, len(top1), len(imgs)-3, "different images, mostly different labels: %v", top1)

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
	r := NewCNN(RunnerMobileNetV2, Latency{})
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

func TestCNNErrorsLatencyAndLifecycle(t *testing.T) {
	r := NewCNN(RunnerResNet, Latency{Warmup: 10 * time.Millisecond, PerImage: 30 * time.Millisecond})
	start := time.Now()
	require.NoError(t, r.Warmup(context.Background()))
	require.GreaterOrEqual(t, time.Since(start), 40*time.Millisecond)

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	start = time.Now()
	out := r.Run(context.Background(), []runners.Task{
		{Ctx: context.Background(), Request: &runners.CNNRequest{Image: solid(8, 8, 1, 2, 3)}},
		{Ctx: cancelled, Request: &runners.CNNRequest{Image: solid(8, 8, 1, 2, 3)}},
		{Ctx: context.Background(), Request: &runners.CNNRequest{}},
		{Ctx: context.Background(), Request: &runners.CNNRequest{Image: image.NewRGBA(image.Rect(0, 0, 0, 5))}},
		{Ctx: context.Background(), Request: &runners.CNNRequest{Image: solid(1, 1, 1, 2, 3)}},
	})
	elapsed := time.Since(start)
	require.Len(t, out, 5)
	require.NoError(t, out[0].Err)
	require.ErrorIs(t, out[1].Err, context.Canceled)
	require.ErrorIs(t, out[2].Err, runners.ErrBadRequest)
	require.ErrorIs(t, out[3].Err, runners.ErrBadRequest)
	require.NoError(t, out[4].Err)
	require.GreaterOrEqual(t, elapsed, 30*time.Millisecond)

	// A batch runs together: five images take about one PerImage, not five.
	batch := make([]runners.Task, 5)
	for i := range batch {
		batch[i] = runners.Task{Ctx: context.Background(), Request: &runners.CNNRequest{Image: solid(8, 8, uint8(i), 2, 3)}}
	}
	slow := NewCNN(RunnerResNet, Latency{PerImage: 100 * time.Millisecond})
	start = time.Now()
	for _, o := range slow.Run(context.Background(), batch) {
		require.NoError(t, o.Err)
	}
	require.Less(t, time.Since(start), 350*time.Millisecond, "a batch runs together (serially: 500 ms)")

	require.NoError(t, r.Close())
	require.NoError(t, r.Close())
	require.ErrorIs(t, r.Warmup(context.Background()), ErrClosed)
	require.ErrorIs(t, r.Run(context.Background(), []runners.Task{{Ctx: context.Background(), Request: &runners.CNNRequest{Image: solid(8, 8, 1, 2, 3)}}})[0].Err, ErrClosed)
}

func BenchmarkCNNClassify(b *testing.B) {
	r := NewCNN(RunnerResNet, Latency{}).(*cnnRunner)
	img := testImages()["gradient"]
	for b.Loop() {
		if _, err := r.classify(context.Background(), &runners.CNNRequest{Image: img}); err != nil {
			b.Fatal(err)
		}
	}
}
