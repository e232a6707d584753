package simimage

import (
	"context"
	"errors"
	"image"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/preview"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
)

func TestPreviewSteps(t *testing.T) {
	tests := []struct {
		steps, k int
		want     []int
	}{
		{20, 0, nil},
		{20, 1, []int{10}},
		{20, 2, []int{6, 13}},
		{20, 3, []int{5, 10, 15}},
		{12, 3, []int{3, 6, 9}},
		{50, 3, []int{12, 25, 37}},
		{3, 3, []int{1, 2}}, // fewer steps than previews+1: one per step but the last
		{1, 3, nil},
		{20, -1, nil},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, preview.Steps(tc.steps, tc.k), "steps=%d k=%d", tc.steps, tc.k)
	}
}

// streamRun runs req on r as a streaming task and returns the emitted partials, the progress
// calls and the outcome.
func streamRun(ctx context.Context, r runners.Runner, req *runners.ImageRequest, emit func(runners.Chunk) error) ([]*runners.ImagePartial, [][2]int, runners.Outcome) {
	var parts []*runners.ImagePartial
	var progress [][2]int
	task := runners.Task{Ctx: ctx, Request: req,
		Progress: func(done, total int) { progress = append(progress, [2]int{done, total}) }}
	if emit != nil {
		task.Emit = func(ch runners.Chunk) error {
			if err := emit(ch); err != nil {
				return err
			}
			parts = append(parts, ch.(*runners.ImagePartial))
			return nil
		}
	}
	out := r.Run(ctx, []runners.Task{task})
	return parts, progress, out[0]
}

func TestImagePartialsAndProgress(t *testing.T) {
	const size = 128
	ok := func(runners.Chunk) error { return nil }
	tests := []struct {
		name      string
		partials  int
		emit      func(runners.Chunk) error
		wantSteps []int
	}{
		{"none asked", 0, ok, nil},
		{"one", 1, ok, []int{10}},
		{"two", 2, ok, []int{6, 13}},
		{"three", 3, ok, []int{5, 10, 15}},
		{"not streaming", 3, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := baseRequest()
			req.PartialImages = tc.partials
			r := New(catalogue.RunnerSDXL, size, simdev.Latency{})
			parts, progress, out := streamRun(context.Background(), r, req, tc.emit)
			require.NoError(t, out.Err)
			require.Len(t, progress, 20)
			for i, p := range progress {
				require.Equal(t, [2]int{i + 1, 20}, p)
			}
			require.Len(t, parts, len(tc.wantSteps))
			for i, p := range parts {
				require.Equal(t, i, p.Index)
				require.Equal(t, 0, p.ImageIndex)
				require.Equal(t, tc.wantSteps[i], p.Step)
				require.Equal(t, 20, p.Steps)
				require.Equal(t, image.Rect(0, 0, size/4, size/4), p.Image.Bounds())
			}
			// Previews do not change the final picture.
			require.Equal(t, gen(t, New(catalogue.RunnerSDXL, size, simdev.Latency{}), baseRequest()).Pix,
				out.Value.(*runners.ImageResult).Images[0].(*image.RGBA).Pix)
		})
	}
}

// downscale4 averages 4×4 blocks of a (its side a multiple of 4).
func downscale4(a *image.RGBA) *image.RGBA {
	n := a.Bounds().Dx() / 4
	out := image.NewRGBA(image.Rect(0, 0, n, n))
	for y := range n {
		for x := range n {
			for c := range 4 {
				sum := 0
				for dy := range 4 {
					for dx := range 4 {
						sum += int(a.Pix[(4*y+dy)*a.Stride+(4*x+dx)*4+c])
					}
				}
				out.Pix[y*out.Stride+x*4+c] = uint8(sum / 16)
			}
		}
	}
	return out
}

func TestImagePreviewsConvergeAndAreDeterministic(t *testing.T) {
	const size = 256
	req := baseRequest()
	req.PartialImages = 3
	ok := func(runners.Chunk) error { return nil }
	parts, _, out := streamRun(context.Background(), New(catalogue.RunnerSDXL, size, simdev.Latency{}), req, ok)
	require.NoError(t, out.Err)
	require.Len(t, parts, 3)
	final := downscale4(out.Value.(*runners.ImageResult).Images[0].(*image.RGBA))
	prev := 256.0
	for _, p := range parts {
		d := meanAbsDiff(p.Image.(*image.RGBA), final)
		t.Logf("step %d diff %.2f", p.Step, d)
		require.Less(t, d, prev, "preview after step %d is no closer to the final picture", p.Step)
		prev = d
	}
	require.Less(t, prev, 20.0, "the last preview resembles the final picture")

	again, _, _ := streamRun(context.Background(), New(catalogue.RunnerSDXL, size, simdev.Latency{}), req, ok)
	for i := range parts {
		require.Equal(t, parts[i].Image.(*image.RGBA).Pix, again[i].Image.(*image.RGBA).Pix)
	}
	other := baseRequest()
	other.PartialImages, other.Seed = 3, i64(7)
	moved, _, _ := streamRun(context.Background(), New(catalogue.RunnerSDXL, size, simdev.Latency{}), other, ok)
	require.Greater(t, meanAbsDiff(parts[2].Image.(*image.RGBA), moved[2].Image.(*image.RGBA)), 5.0,
		"another seed gives another preview")
}

func TestImageEmitFailure(t *testing.T) {
	req := baseRequest()
	req.PartialImages = 3

	// A live task whose stream cannot carry previews still gets its image, without previews.
	calls := 0
	refuse := func(runners.Chunk) error { calls++; return errors.New("chunk type cannot be sent") }
	parts, _, out := streamRun(context.Background(), New(catalogue.RunnerSDXL, 64, simdev.Latency{}), req, refuse)
	require.NoError(t, out.Err)
	require.Empty(t, parts)
	require.Equal(t, 1, calls, "no further previews after a refusal")

	// The client went away: the task stops at that step.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gone := func(runners.Chunk) error { cancel(); return context.Canceled }
	_, progress, out := streamRun(ctx, New(catalogue.RunnerSDXL, 64, simdev.Latency{}), req, gone)
	require.ErrorIs(t, out.Err, context.Canceled)
	require.Len(t, progress, 5, "stopped after the step of the first preview")
}

// BenchmarkRenderPreview1024 is the cost of one mock preview of a 1024² image (a 256² picture).
func BenchmarkRenderPreview1024(b *testing.B) {
	r := newImage(catalogue.RunnerSDXL, 1024, simdev.Latency{})
	p := r.params(baseRequest())
	for b.Loop() {
		renderPreview(p, 1024, 10)
	}
}
