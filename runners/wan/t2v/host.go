// Package t2v is the host side of Wan2.2 text-to-video (diffusers' WanPipeline): the latent
// shapes, the two-expert switch by timestep (boundary_ratio) with its two guidance scales,
// classifier-free guidance, the VAE's latent un-normalisation, and the pipeline that drives a
// Device's programs (UMT5 encoder, the two transformer experts, the VAE decoder) through the
// UniPC sampler (runners/wan/sampler) with the UMT5 tokenizer (runners/wan/umt5).
package t2v

import (
	"errors"
	"fmt"
	"math"
)

// ErrRequest means a request the pipeline refuses (the message names the field).
var ErrRequest = errors.New("wan2.2 t2v")

// The VAE's factors and the transformer's patch (AutoencoderKLWan's scale_factor_temporal and
// scale_factor_spatial, WanTransformer3DModel's patch_size (1, 2, 2)), and the latent channels
// (z_dim 16).
const (
	TemporalFactor = 4
	SpatialFactor  = 8
	Patch          = 2
	LatentChannels = 16
)

// Shape is a clip's size in pixels and frames and its latents' size.
type Shape struct {
	// Frames, Height and Width are what the pipeline renders: num_frames rounded so that
	// Frames-1 is a multiple of 4, height and width rounded down to multiples of 16.
	Frames, Height, Width int
	// LatentFrames, LatentHeight and LatentWidth are the latents' size ((Frames-1)/4+1,
	// Height/8, Width/8), with LatentChannels channels.
	LatentFrames, LatentHeight, LatentWidth int
}

// Elems is the number of values of one clip's latents.
func (s Shape) Elems() int { return LatentChannels * s.LatentFrames * s.LatentHeight * s.LatentWidth }

// ShapeFor is WanPipeline.__call__'s rounding and prepare_latents' shape: num_frames -> n//4*4+1
// when n-1 is not a multiple of 4 (at least 1), height and width down to multiples of 8*2.
// 81 frames at 832x480 give latents 16x21x60x104; at 1280x720 16x21x90x160.
func ShapeFor(frames, height, width int) (Shape, error) {
	if frames < 1 || height < 1 || width < 1 {
		return Shape{}, fmt.Errorf("%w: num_frames %d, height %d and width %d must be positive", ErrRequest, frames, height, width)
	}
	if frames%TemporalFactor != 1 {
		frames = frames/TemporalFactor*TemporalFactor + 1
	}
	frames = max(frames, 1)
	m := SpatialFactor * Patch
	h, w := height/m*m, width/m*m
	if h == 0 || w == 0 {
		return Shape{}, fmt.Errorf("%w: height %d and width %d must be at least %d", ErrRequest, height, width, m)
	}
	return Shape{Frames: frames, Height: h, Width: w,
		LatentFrames: (frames-1)/TemporalFactor + 1, LatentHeight: h / SpatialFactor, LatentWidth: w / SpatialFactor}, nil
}

// Guidance is Wan2.2's two-expert schedule: the high-noise expert (transformer) with
// Scale for timesteps >= BoundaryRatio*1000, the low-noise expert (transformer_2) with Scale2
// below. BoundaryRatio 0 means one expert (Wan2.1) for every step.
type Guidance struct {
	Scale, Scale2 float64
	BoundaryRatio float64
}

// Expert numbers: 1 is the high-noise transformer, 2 the low-noise transformer_2.
const (
	HighNoise = 1
	LowNoise  = 2
)

// Pick is the expert and guidance scale at timestep t (num_train_timesteps trainSteps), as
// WanPipeline.__call__ chooses them.
func (g Guidance) Pick(t int64, trainSteps int) (expert int, scale float64) {
	if g.BoundaryRatio == 0 || float64(t) >= g.BoundaryRatio*float64(trainSteps) {
		return HighNoise, g.Scale
	}
	return LowNoise, g.Scale2
}

// CFG combines the two predictions in place: cond = uncond + scale*(cond - uncond), each torch
// operation rounded to float32 (scale too).
func CFG(cond, uncond []float32, scale float64) {
	s := float32(scale)
	for i := range cond {
		cond[i] = uncond[i] + float32(s*(cond[i]-uncond[i]))
	}
}

// LatentsMean and LatentsStd are AutoencoderKLWan's per-channel latent statistics (its
// config defaults, which the Wan2.1/2.2 VAE checkpoints keep).
var (
	LatentsMean = [LatentChannels]float32{-0.7571, -0.7089, -0.9113, 0.1075, -0.1745, 0.9653, -0.1517, 1.5508,
		0.4134, -0.0715, 0.5517, -0.3632, -0.1922, -0.9497, 0.2503, -0.2921}
	LatentsStd = [LatentChannels]float32{2.8184, 1.4541, 2.3275, 2.6558, 1.2196, 1.7708, 2.6052, 2.0743,
		3.2687, 2.1526, 2.8652, 1.5579, 1.6382, 1.1253, 2.8251, 1.916}
)

// Unnormalize undoes the latent normalisation in place before decoding, as WanPipeline does in
// float32: latents / (1/std) + mean per channel (latents [16, F, H, W]).
func Unnormalize(latents []float32) {
	per := len(latents) / LatentChannels
	for c := range LatentChannels {
		inv := 1 / LatentsStd[c]
		for i := c * per; i < (c+1)*per; i++ {
			latents[i] = latents[i]/inv + LatentsMean[c]
		}
	}
}

// ToFrames converts the VAE's output [3, F, H, W] (nominally in [-1, 1]) to F RGB24 frames as
// diffusers' postprocess does: (x/2 + 0.5) clamped to [0, 1], times 255, rounded half to even (numpy's round).
func ToFrames(video []float32, frames, height, width int) ([][]byte, error) {
	plane := height * width
	if len(video) != 3*frames*plane {
		return nil, fmt.Errorf("%w: the VAE returned %d values, not 3x%dx%dx%d", ErrRequest, len(video), frames, height, width)
	}
	out := make([][]byte, frames)
	for f := range frames {
		fr := make([]byte, 3*plane)
		for c := range 3 {
			src := video[(c*frames+f)*plane : (c*frames+f+1)*plane]
			for p, v := range src {
				x := float32(v/2) + 0.5
				x = min(max(x, 0), 1)
				fr[p*3+c] = byte(math.RoundToEven(float64(float32(x * 255))))
			}
		}
		out[f] = fr
	}
	return out, nil
}
