package simimage

import (
	"context"
	"errors"
	"image"
	"image/color"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
)

func i64(v int64) *int64 { return &v }

// gen runs one request on r and returns its picture.
func gen(t *testing.T, r runners.Runner, req *runners.ImageRequest) *image.RGBA {
	t.Helper()
	out := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(), Request: req}})
	require.Len(t, out, 1)
	require.NoError(t, out[0].Err)
	res, ok := out[0].Value.(*runners.ImageResult)
	require.True(t, ok, "value is %T", out[0].Value)
	require.Len(t, res.Images, 1)
	img, ok := res.Images[0].(*image.RGBA)
	require.True(t, ok, "image is %T", res.Images[0])
	return img
}

// meanAbsDiff is the mean absolute difference of two pictures' RGB levels.
func meanAbsDiff(a, b *image.RGBA) float64 {
	var sum int
	for i := range a.Pix {
		if i%4 == 3 {
			continue
		}
		d := int(a.Pix[i]) - int(b.Pix[i])
		sum += max(d, -d)
	}
	return float64(sum) / float64(len(a.Pix)*3/4)
}

func baseRequest() *runners.ImageRequest {
	return &runners.ImageRequest{Prompt: "a lighthouse at dusk", Seed: i64(42), GuidanceScale: 5, NumInferenceSteps: 20}
}

func TestImageSizeAndDeterminism(t *testing.T) {
	for _, model := range []string{catalogue.RunnerSDXL, catalogue.RunnerSD35} {
		t.Run(model, func(t *testing.T) {
			r := New(model, 200, simdev.Latency{})
			a := gen(t, r, baseRequest())
			require.Equal(t, image.Rect(0, 0, 200, 200), a.Bounds())
			opaque := true
			for i := 3; i < len(a.Pix); i += 4 {
				opaque = opaque && a.Pix[i] == 255
			}
			require.True(t, opaque)
			// Identical request, fresh runner: identical bytes.
			b := gen(t, New(model, 200, simdev.Latency{}), baseRequest())
			require.Equal(t, a.Pix, b.Pix)
		})
	}
	r := New(catalogue.RunnerSDXL, 0, simdev.Latency{})
	require.Equal(t, 1024, gen(t, r, baseRequest()).Bounds().Dx(), "size 0 means the model's 1024")
	require.Equal(t, 96, gen(t, New(catalogue.RunnerSDXL, 96, simdev.Latency{}), baseRequest()).Bounds().Dx())
}

func TestImageDependsOnRequest(t *testing.T) {
	const size = 128
	tests := []struct {
		model   string
		name    string
		change  func(r *runners.ImageRequest)
		visible bool // a change in the whole picture, not only its grain
	}{
		{catalogue.RunnerSDXL, "prompt", func(r *runners.ImageRequest) { r.Prompt = "a lighthouse at noon" }, true},
		{catalogue.RunnerSDXL, "seed", func(r *runners.ImageRequest) { r.Seed = i64(43) }, true},
		{catalogue.RunnerSDXL, "negative prompt", func(r *runners.ImageRequest) { r.NegativePrompt = "blurry" }, true},
		{catalogue.RunnerSDXL, "prompt_2", func(r *runners.ImageRequest) { r.Prompt2 = "oil painting" }, true},
		{catalogue.RunnerSDXL, "negative prompt_2", func(r *runners.ImageRequest) { r.NegativePrompt2 = "text" }, true},
		{catalogue.RunnerSDXL, "steps", func(r *runners.ImageRequest) { r.NumInferenceSteps = 30 }, false},
		{catalogue.RunnerSDXL, "guidance", func(r *runners.ImageRequest) { r.GuidanceScale = 12 }, true},
		{catalogue.RunnerSDXL, "guidance rescale", func(r *runners.ImageRequest) { r.GuidanceRescale = 0.7 }, false},
		{catalogue.RunnerSDXL, "crop", func(r *runners.ImageRequest) { r.CropCoordsTopLeft = [2]float64{0, 64} }, false},
		{catalogue.RunnerSDXL, "timesteps", func(r *runners.ImageRequest) { r.Timesteps = []float64{999, 500, 1} }, false},
		{catalogue.RunnerSD35, "prompt", func(r *runners.ImageRequest) { r.Prompt = "a lighthouse at noon" }, true},
		{catalogue.RunnerSD35, "seed", func(r *runners.ImageRequest) { r.Seed = i64(43) }, true},
		{catalogue.RunnerSD35, "negative prompt", func(r *runners.ImageRequest) { r.NegativePrompt = "blurry" }, true},
		{catalogue.RunnerSD35, "steps", func(r *runners.ImageRequest) { r.NumInferenceSteps = 28 }, false},
	}
	for _, tc := range tests {
		t.Run(tc.model+"/"+tc.name, func(t *testing.T) {
			r := New(tc.model, size, simdev.Latency{})
			base := gen(t, r, baseRequest())
			req := baseRequest()
			tc.change(req)
			changed := gen(t, r, req)
			require.NotEqual(t, base.Pix, changed.Pix)
			if tc.visible {
				require.Greater(t, meanAbsDiff(base, changed), 8.0, "mean level difference")
			}
		})
	}
}

func TestImageModelQuirks(t *testing.T) {
	sd35 := New(catalogue.RunnerSD35, 64, simdev.Latency{})
	base := gen(t, sd35, baseRequest())

	t.Run("SD3.5 honours guidance, prompt_2 and custom schedules", func(t *testing.T) {
		for name, change := range map[string]func(*runners.ImageRequest){
			"guidance_scale":    func(r *runners.ImageRequest) { r.GuidanceScale = 17 },
			"prompt_2":          func(r *runners.ImageRequest) { r.Prompt2 = "something else" },
			"negative_prompt_2": func(r *runners.ImageRequest) { r.NegativePrompt2 = "and more" },
			"timesteps":         func(r *runners.ImageRequest) { r.Timesteps = []float64{900, 100} },
			"sigmas":            func(r *runners.ImageRequest) { r.Sigmas = []float64{1, 0.5} },
		} {
			req := baseRequest()
			change(req)
			require.NotEqualf(t, base.Pix, gen(t, sd35, req).Pix, "%s does not change the image", name)
		}
		both := baseRequest()
		both.Timesteps, both.Sigmas = []float64{900, 100}, []float64{1, 0.5}
		out := sd35.Run(context.Background(), []runners.Task{{Ctx: context.Background(), Request: both}})
		require.ErrorContains(t, out[0].Err, "timesteps and sigmas", "timesteps and sigmas together")
	})
	t.Run("SD3.5 without guidance_scale uses 3.5, SDXL 5.0", func(t *testing.T) {
		unset, explicit, five := baseRequest(), baseRequest(), baseRequest()
		unset.GuidanceScale, explicit.GuidanceScale = 0, 3.5
		require.Equal(t, gen(t, sd35, explicit).Pix, gen(t, sd35, unset).Pix)
		require.NotEqual(t, gen(t, sd35, five).Pix, gen(t, sd35, unset).Pix)
		sdxl := New(catalogue.RunnerSDXL, 64, simdev.Latency{})
		require.Equal(t, gen(t, sdxl, five).Pix, gen(t, sdxl, unset).Pix)
	})
	t.Run("SD3.5 treats a missing seed as 0", func(t *testing.T) {
		nilSeed, zero := baseRequest(), baseRequest()
		nilSeed.Seed, zero.Seed = nil, i64(0)
		require.Equal(t, gen(t, sd35, zero).Pix, gen(t, sd35, nilSeed).Pix)
	})
	t.Run("SDXL draws a random seed when none is given", func(t *testing.T) {
		sdxl := New(catalogue.RunnerSDXL, 64, simdev.Latency{})
		req := baseRequest()
		req.Seed = nil
		require.NotEqual(t, gen(t, sdxl, req).Pix, gen(t, sdxl, req).Pix)
	})
	t.Run("default steps", func(t *testing.T) {
		for _, model := range []string{catalogue.RunnerSDXL, catalogue.RunnerSD35} {
			r := New(model, 64, simdev.Latency{})
			explicit, unset := baseRequest(), baseRequest()
			unset.NumInferenceSteps = 0
			require.Equal(t, gen(t, r, explicit).Pix, gen(t, r, unset).Pix, model)
		}
	})
	t.Run("SDXL custom timesteps set the step count", func(t *testing.T) {
		r := New(catalogue.RunnerSDXL, 32, simdev.Latency{PerStep: 10 * time.Millisecond})
		req := baseRequest()
		req.NumInferenceSteps = 1
		req.Timesteps = []float64{999, 750, 500, 250, 1}
		start := time.Now()
		gen(t, r, req)
		require.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)
	})
}

func TestImageBothSchedules(t *testing.T) {
	r := New(catalogue.RunnerSDXL, 64, simdev.Latency{PerStep: time.Hour})
	req := baseRequest()
	req.Timesteps = []float64{}
	req.Sigmas = []float64{1.0}
	out := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(), Request: req}})
	require.ErrorIs(t, out[0].Err, runners.ErrBadRequest)
	require.EqualError(t, out[0].Err, "Cannot pass both timesteps and sigmas. Choose one.")
	require.Nil(t, out[0].Value)
}

func TestImageCancellation(t *testing.T) {
	lat := simdev.Latency{PerStep: 20 * time.Millisecond}
	t.Run("mid-steps", func(t *testing.T) {
		// Steps long next to a loaded machine's delays: the cancel lands in step 1 or 2.
		r := New(catalogue.RunnerSDXL, 64, simdev.Latency{PerStep: 500 * time.Millisecond})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		start := time.Now()
		out := r.Run(context.Background(), []runners.Task{{Ctx: ctx, Request: baseRequest()}}) // 20 steps: 10 s
		require.Less(t, time.Since(start), 5*time.Second, "20 steps would take 10 s")
		require.ErrorIs(t, out[0].Err, context.Canceled)
		require.ErrorContains(t, out[0].Err, "step")
	})
	t.Run("deadline", func(t *testing.T) {
		r := New(catalogue.RunnerSD35, 64, lat)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		out := r.Run(context.Background(), []runners.Task{{Ctx: ctx, Request: baseRequest()}})
		require.ErrorIs(t, out[0].Err, context.DeadlineExceeded)
	})
	t.Run("latency is steps times PerStep", func(t *testing.T) {
		r := New(catalogue.RunnerSDXL, 64, simdev.Latency{PerStep: 5 * time.Millisecond})
		req := baseRequest()
		req.NumInferenceSteps = 8
		start := time.Now()
		gen(t, r, req)
		require.GreaterOrEqual(t, time.Since(start), 40*time.Millisecond)
	})
}

func TestImageBatch(t *testing.T) {
	const size = 48
	r := New(catalogue.RunnerSDXL, size, simdev.Latency{PerStep: 5 * time.Millisecond})
	prompts := []string{"red", "green", "blue", "yellow", "cyan"}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	midway, cancelMid := context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancelMid)
	tasks := make([]runners.Task, len(prompts))
	for i, p := range prompts {
		req := baseRequest()
		req.Prompt = p
		tasks[i] = runners.Task{Ctx: context.Background(), Request: req}
	}
	tasks[1].Ctx = cancelled
	tasks[3].Ctx = midway
	tasks = append(tasks, runners.Task{Ctx: context.Background(), Request: &runners.AudioRequest{}}) // another family's request
	out := r.Run(context.Background(), tasks)
	require.Len(t, out, len(tasks))
	require.ErrorIs(t, out[1].Err, context.Canceled)
	require.ErrorIs(t, out[3].Err, context.Canceled)
	require.ErrorContains(t, out[5].Err, "*runners.AudioRequest")
	single := New(catalogue.RunnerSDXL, size, simdev.Latency{})
	for _, i := range []int{0, 2, 4} {
		require.NoError(t, out[i].Err, "task %d", i)
		got := out[i].Value.(*runners.ImageResult).Images[0].(*image.RGBA)
		require.Equal(t, gen(t, single, tasks[i].Request.(*runners.ImageRequest)).Pix, got.Pix, "task %d in order", i)
	}

	t.Run("batch context stops all", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		out := r.Run(ctx, []runners.Task{tasks[0], tasks[2], tasks[4]})
		for _, o := range out {
			require.ErrorIs(t, o.Err, context.DeadlineExceeded)
		}
	})
}

func TestImageLifecycle(t *testing.T) {
	r := New(catalogue.RunnerSDXL, 32, simdev.Latency{Warmup: 30 * time.Millisecond, PerStep: time.Millisecond})
	start := time.Now()
	require.NoError(t, r.Warmup(context.Background()))
	require.GreaterOrEqual(t, time.Since(start), 31*time.Millisecond)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, New(catalogue.RunnerSD35, 32, simdev.Latency{Warmup: time.Hour}).Warmup(ctx), context.Canceled)

	require.NoError(t, r.Close())
	require.NoError(t, r.Close())
	require.ErrorIs(t, r.Warmup(context.Background()), simdev.ErrClosed)
	out := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(), Request: baseRequest()}, {Ctx: context.Background(), Request: baseRequest()}})
	require.Len(t, out, 2)
	for _, o := range out {
		require.True(t, errors.Is(o.Err, simdev.ErrClosed))
	}
}

func BenchmarkImageRender1024(b *testing.B) {
	r := newImage(catalogue.RunnerSDXL, 1024, simdev.Latency{})
	p := r.params(baseRequest())
	b.ReportAllocs()
	for b.Loop() {
		render(p, 1024)
	}
}

// TestSolidImage: MOCK_IMAGE=solid answers every request with the Python mock's solid
// 1024² picture (120, 60, 200), previews included.
func TestSolidImage(t *testing.T) {
	r, err := Factory(catalogue.RunnerSDXL)(runners.WorkerSpec{Settings: &config.Settings{MockImage: "solid"}})
	require.NoError(t, err)
	var previews []image.Image
	out := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(), Request: &runners.ImageRequest{Prompt: "x", GuidanceScale: 5, NumInferenceSteps: 4, PartialImages: 1},
		Emit: func(v runners.Chunk) error { previews = append(previews, v.(*runners.ImagePartial).Image); return nil }}})
	require.NoError(t, out[0].Err)
	img := out[0].Value.(*runners.ImageResult).Images[0].(*image.RGBA)
	require.Equal(t, image.Rect(0, 0, 1024, 1024), img.Bounds())
	for i := 0; i < len(img.Pix); i += 4 {
		require.Equal(t, []uint8{120, 60, 200, 255}, img.Pix[i:i+4])
	}
	require.Len(t, previews, 1)
	require.Equal(t, color.RGBA{120, 60, 200, 255}, previews[0].At(3, 3))
}

// TestRenderCache: a repeated request reuses the picture; any change renders a new one, equal
// to a fresh runner's.
func TestRenderCache(t *testing.T) {
	r := New(catalogue.RunnerSDXL, 128, simdev.Latency{})
	a := gen(t, r, baseRequest())
	require.Same(t, a, gen(t, r, baseRequest()), "same request, cached picture")
	other := baseRequest()
	other.Seed = i64(43)
	b := gen(t, r, other)
	require.NotSame(t, a, b)
	require.Equal(t, gen(t, New(catalogue.RunnerSDXL, 128, simdev.Latency{}), other).Pix, b.Pix)
	// More distinct requests than the cache holds: the first is rendered again, identically.
	for s := range int64(renderCacheSize + 1) {
		req := baseRequest()
		req.Seed = i64(100 + s)
		gen(t, r, req)
	}
	again := gen(t, r, baseRequest())
	require.NotSame(t, a, again)
	require.Equal(t, a.Pix, again.Pix)
}
