package t2v

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
)

// ConditionChannels are the image-to-video condition's channels after the latents in the
// transformer's input (runners/wan/i2v: a mask of TemporalFactor channels and the 16 encoded
// latent channels), so an I2V expert takes 36 channels.
const ConditionChannels = TemporalFactor + LatentChannels

// VAEEncoderName is the VAE encoder's program in an image-to-video set (prefix wan22-i2v...):
// present beside ProgramNames, it makes TTNNDevice an I2V device (EncodeVideo; the experts
// take ConditionChannels more channels).
func VAEEncoderName(prefix string) string { return prefix + "-vae-encoder" }

// loadEncoder loads the set's VAE encoder when it has one.
func (d *TTNNDevice) loadEncoder(ctx context.Context, set fs.FS, prefix string) error {
	name := VAEEncoderName(prefix)
	if _, err := fs.Stat(set, name+".ttbsim"); err != nil {
		return nil // a text-to-video set
	}
	p, err := d.load(ctx, set, name)
	if p != nil {
		d.progs[name] = p
		d.enc = name
	}
	return err
}

// checkEncoder checks the VAE encoder against the decoder: it takes the video the decoder makes
// and returns the latents.
func (d *TTNNDevice) checkEncoder(video, lat []int) error {
	if d.enc == "" {
		return nil
	}
	p := d.progs[d.enc]
	if len(p.fn.Inputs) != 1 || len(p.fn.Outputs) != 1 || p.fn.Inputs[0].Name != "video" || p.fn.Outputs[0].Name != "latents" {
		return fmt.Errorf("wan2.2: program %s must take video and return latents", d.enc)
	}
	if !slices.Equal(p.fn.Inputs[0].Shape, video) || !slices.Equal(p.fn.Outputs[0].Shape, lat) {
		return fmt.Errorf("wan2.2: VAE encoder %v -> %v, want %v -> %v", p.fn.Inputs[0].Shape, p.fn.Outputs[0].Shape, video, lat)
	}
	return nil
}

// EncodeVideo runs the VAE encoder over the conditioning video [3, Frames, Height, Width] and
// returns the latent distribution's mode [16, LatentFrames, LatentHeight, LatentWidth]
// (runners/wan/i2v's Device).
func (d *TTNNDevice) EncodeVideo(ctx context.Context, video []float32) ([]float32, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.enc == "" {
		return nil, fmt.Errorf("wan2.2: the program set has no VAE encoder (text-to-video)")
	}
	sh := d.spec.Shape
	if n := 3 * sh.Frames * sh.Height * sh.Width; len(video) != n {
		return nil, fmt.Errorf("wan2.2 VAE encoder: %d values, the program takes %d", len(video), n)
	}
	out, err := d.run(ctx, d.progs[d.enc], bf16Bytes(video))
	if err == nil {
		d.stats.VAEEncodes++
	}
	return out, err
}
