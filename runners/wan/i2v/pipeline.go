package i2v

import (
	"context"
	"fmt"

	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/wan/t2v"
	"github.com/tenstorrent/tt-media-server-go/runners/wan/umt5"
)

// Device runs Wan2.2 I2V's programs: t2v.Device's, whose Transformer takes InputChannels
// channels ([latents, mask, condition]), and the VAE encoder.
type Device interface {
	t2v.Device
	// EncodeVideo runs the VAE encoder over the conditioning video [3, Frames, Height, Width]
	// in [-1, 1]; it returns the latent distribution's mode (retrieve_latents' "argmax")
	// [16, LatentFrames, LatentHeight, LatentWidth].
	EncodeVideo(ctx context.Context, video []float32) ([]float32, error)
}

// Wan22Config is Wan2.2-I2V-A14B as HEAD's device code runs it: tt-metal's WanPipelineI2V
// inherits WanPipeline's sampling, so it is T2V's (catalogue.Wan22Sampling: flow_shift 12.0,
// boundary_ratio 0.875, guidance 4.0/3.0, the 2-step rule, Wan's default negative prompt) —
// not the I2V checkpoint's diffusers configuration (sample_shift 5.0, boundary_ratio 0.9).
func Wan22Config() t2v.Config {
	return t2v.SamplingConfig(catalogue.Wan22Sampling)
}

// Request is one image-to-video request.
type Request struct {
	Prompt, NegativePrompt string
	Steps                  int
	Seed                   uint64
	// Guidance, when non-nil, replaces the configuration's scales (BoundaryRatio stays).
	Guidance *t2v.Guidance
	// Images are the conditioning images at distinct frame positions (at least one).
	Images []Image
}

// Pipeline is Wan2.2 I2V on a Device: the conditioning, then T2V's denoising loop with it.
type Pipeline struct {
	dev  Device
	loop *t2v.Pipeline
}

// New checks that the tokenizer and the device agree.
func New(dev Device, tok *umt5.Tokenizer, cfg t2v.Config) (*Pipeline, error) {
	loop, err := t2v.New(dev, tok, cfg)
	if err != nil {
		return nil, err
	}
	return &Pipeline{dev: dev, loop: loop}, nil
}

// Shape is the clip the device renders.
func (p *Pipeline) Shape() t2v.Shape { return p.loop.Shape() }

// Generate renders one clip: the condition (Condition), then the prompt encodings, seeded
// latents and the guided UniPC loop with [latents, condition] as each step's transformer
// input, un-normalisation and the VAE decoder, as WanImageToVideoPipeline.__call__ does. It
// returns the RGB24 frames.
func (p *Pipeline) Generate(ctx context.Context, req Request, hooks t2v.Hooks) ([][]byte, error) {
	cond, err := p.Condition(ctx, req.Images)
	if err != nil {
		return nil, err
	}
	return p.loop.Generate(ctx, t2v.Request{Prompt: req.Prompt, NegativePrompt: req.NegativePrompt, Steps: req.Steps,
		Seed: req.Seed, Guidance: req.Guidance, Condition: cond}, hooks)
}

// Condition is prepare_latents' condition [20, LatentFrames, LatentHeight, LatentWidth]: the
// images preprocessed to the clip's size and placed at their frames of an otherwise zero video,
// encoded by the VAE, normalised with latents_mean/std, after the mask.
func (p *Pipeline) Condition(ctx context.Context, images []Image) ([]float32, error) {
	sh := p.Shape()
	pos := make([]int, len(images))
	for i, im := range images {
		pos[i] = im.FramePos
	}
	if err := CheckPositions(pos, sh.Frames); err != nil {
		return nil, err
	}
	pix := make([][]float32, len(images))
	for i, im := range images {
		var err error
		if pix[i], err = Preprocess(im.Image, sh.Height, sh.Width); err != nil {
			return nil, err
		}
	}
	video, err := VideoCondition(pix, pos, sh.Frames, sh.Height, sh.Width)
	if err != nil {
		return nil, err
	}
	lat, err := p.dev.EncodeVideo(ctx, video)
	if err != nil {
		return nil, fmt.Errorf("wan2.2 VAE encoder: %w", err)
	}
	if len(lat) != sh.Elems() {
		return nil, fmt.Errorf("wan2.2 VAE encoder: %d values, not %dx%dx%dx%d", len(lat), t2v.LatentChannels, sh.LatentFrames, sh.LatentHeight, sh.LatentWidth)
	}
	Normalize(lat)
	mask, err := Mask(pos, sh.Frames, sh.LatentHeight, sh.LatentWidth)
	if err != nil {
		return nil, err
	}
	return Condition(mask, lat)
}
