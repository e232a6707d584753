package wan

import (
	"context"
	"image"
	"io/fs"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/wan/i2v"
	"github.com/tenstorrent/tt-media-server-go/runners/wan/t2v"
)

// i2vSet is the image-to-video program set for a mesh: 1280x720 on a Galaxy-class one.
func i2vSet(large bool) (fs.FS, string) {
	if large {
		return t2v.Programs(), i2v.Prefix720
	}
	return t2v.Programs(), i2v.Prefix480
}

// warmI2V builds the Wan2.2 I2V pipeline on the loaded set and renders HEAD's I2V warm-up clip:
// a black 64x64 image at frame 0, "Sunrise on a beach", 2 steps. The caller holds r.mu.
func (r *PipelineRunner) warmI2V(ctx context.Context) (err error) {
	if r.ipipe, err = i2v.New(r.td, r.tok, i2v.Wan22Config()); err != nil {
		return err
	}
	black := image.NewNRGBA(image.Rect(0, 0, 64, 64))
	for i := 3; i < len(black.Pix); i += 4 {
		black.Pix[i] = 255
	}
	_, err = r.ipipe.Generate(ctx, i2v.Request{Prompt: "Sunrise on a beach", Steps: 2,
		Images: []i2v.Image{{Image: black, FramePos: 0}}}, t2v.Hooks{})
	return err
}

// generateI2V renders one image-to-video clip. HEAD's frame positions count the request's
// frames; a program set built for fewer frames (a test's shrunk set) gets them scaled in
// proportion. The caller holds r.mu.
func (r *PipelineRunner) generateI2V(ctx context.Context, req *runners.VideoRequest, steps int, hooks t2v.Hooks) ([][]byte, t2v.Shape, error) {
	sh := r.ipipe.Shape()
	pos := make([]int, len(req.Images))
	for i, im := range req.Images {
		pos[i] = im.FramePos
	}
	if err := i2v.CheckPositions(pos, max(req.Frames, sh.Frames)); err != nil {
		return nil, sh, err
	}
	images := make([]i2v.Image, len(req.Images))
	for i, im := range req.Images {
		pos := im.FramePos
		if req.Frames > 1 && req.Frames != sh.Frames {
			pos = (pos*(sh.Frames-1) + (req.Frames-1)/2) / (req.Frames - 1)
		}
		images[i] = i2v.Image{Image: im.Image, FramePos: pos}
	}
	frames, err := r.ipipe.Generate(ctx, i2v.Request{Prompt: req.Prompt, NegativePrompt: req.NegativePrompt, Steps: steps,
		Seed: uint64(req.Seed), Images: images}, hooks)
	return frames, sh, err
}
