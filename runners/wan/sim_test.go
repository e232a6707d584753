package wan

import (
	"bytes"
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
)

func newSim(t *testing.T, model string, step time.Duration) runners.Runner {
	t.Helper()
	r, err := Factory(model)(runners.WorkerSpec{Settings: &config.Settings{MockStepLatency: step}})
	require.NoError(t, err)
	require.NoError(t, r.Warmup(context.Background()))
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func run(t *testing.T, r runners.Runner, req *runners.VideoRequest) *runners.VideoResult {
	t.Helper()
	out := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(), Request: req}})
	require.NoError(t, out[0].Err)
	v, ok := runners.ResultAs[*runners.VideoResult](out[0].Value)
	require.True(t, ok)
	return v
}

// TestPictureDependsOnPromptAndSeed: the same request gives the same clip; another seed or
// prompt another one; the picture moves from frame to frame.
func TestPictureDependsOnPromptAndSeed(t *testing.T) {
	r := newSim(t, catalogue.RunnerWan22, 0)
	base := runners.VideoRequest{Prompt: "a fox", Steps: 2, Seed: 7, Width: 64, Height: 32, Frames: 9}
	a := run(t, r, &base)
	require.Equal(t, 16, a.FPS)
	require.Len(t, a.Frames, 9)
	require.Len(t, a.Frames[0], 64*32*3)
	b := run(t, r, &base)
	require.Equal(t, a.Frames, b.Frames, "deterministic")
	other := base
	other.Seed = 8
	require.NotEqual(t, a.Frames, run(t, r, &other).Frames, "the seed moves the picture")
	other = base
	other.Prompt = "a hen"
	require.NotEqual(t, a.Frames[0], run(t, r, &other).Frames[0], "the prompt colours it")
	require.False(t, bytes.Equal(a.Frames[0], a.Frames[8]), "it moves")
}

// TestI2VFrameIsTheImage: the conditioning image is the frame at its position.
func TestI2VFrameIsTheImage(t *testing.T) {
	r := newSim(t, catalogue.RunnerWan22I2V, 0)
	img := image.NewRGBA(image.Rect(0, 0, 8, 8))
	for y := range 8 {
		for x := range 8 {
			img.Set(x, y, color.RGBA{200, 200, 200, 255})
		}
	}
	v := run(t, r, &runners.VideoRequest{Prompt: "x", Steps: 1, Width: 16, Height: 16, Frames: 20,
		Images: []runners.VideoImage{{Image: img, FramePos: 10}}})
	for _, px := range v.Frames[10] {
		require.Equal(t, byte(200), px)
	}
	require.NotEqual(t, v.Frames[10], v.Frames[0])
}

// TestProgressAndCancel: progress is emitted from step 0, and a cancelled task stops at its
// next step.
func TestProgressAndCancel(t *testing.T) {
	r := newSim(t, catalogue.RunnerWan22, 20*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	var seen []int
	emit := func(c runners.Chunk) error {
		p, _ := runners.ChunkAs[runners.VideoProgress](c)
		seen = append(seen, p.Done)
		if p.Done == 2 {
			cancel()
		}
		return nil
	}
	start := time.Now()
	out := r.Run(ctx, []runners.Task{{Ctx: ctx, Request: &runners.VideoRequest{Prompt: "x", Steps: 50, Width: 8, Height: 8, Frames: 2}, Emit: emit}})
	require.True(t, errors.Is(out[0].Err, context.Canceled), "%v", out[0].Err)
	require.Equal(t, []int{0, 1, 2}, seen)
	require.Less(t, time.Since(start), 2*time.Second)
}

func TestMiniMaxFrames(t *testing.T) {
	m, ok := catalogue.Lookup(catalogue.RunnerMiniMaxH3T2VA)
	require.True(t, ok)
	for secs, want := range map[int]int{8: 192, 5: 124, 13: 328, 4: 107} {
		got := m.Video.DurationFrames(secs)
		require.Equal(t, want, got, "%d s", secs)
		require.Equal(t, 5, (got-5)%17+5, "17n+5")
		require.GreaterOrEqual(t, got, secs*24)
	}
	w, h := m.Video.AspectSize([2]int{16, 9})
	require.Equal(t, []int{1360, 768}, []int{w, h})
}
