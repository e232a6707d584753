package diffusionpipeline

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"

	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// weightsWords is the length of the weights checksum tensor (u32), 256 bits.
const weightsWords = 8

// ErrNoLoRAProgram means a LoRA request on a device without the LoRA fuse program.
var ErrNoLoRAProgram = errors.New("pipeline: the device has no LoRA fuse program")

// weightsState is what the device's weights are: the base checkpoint's, or the base with one
// adapter fused (its key).
type weightsState struct {
	base, current [weightsWords]uint32
	key           string // "" = base
}

// initWeights writes the base weights' checksum into the programs that hold the weights (the
// UNet when it declares a weights input, the fuse program's input). The base checksum stands
// for the checkpoint's weights: a digest of the UNet program's name.
func (d *TTNNDevice) initWeights(ctx context.Context) error {
	sum := sha256.Sum256([]byte("weights of " + d.unet.name))
	for i := range weightsWords {
		d.weights.base[i] = binary.LittleEndian.Uint32(sum[4*i:])
	}
	return d.bindWeights(ctx, d.weights.base, "")
}

// bindWeights writes w as the weights of the UNet (when it takes them) and of the fuse
// program's next run.
func (d *TTNNDevice) bindWeights(ctx context.Context, w [weightsWords]uint32, key string) error {
	buf := make([]byte, 4*weightsWords)
	for i, v := range w {
		binary.LittleEndian.PutUint32(buf[4*i:], v)
	}
	for _, p := range []*program{d.unet, d.fuse} {
		if p == nil {
			continue
		}
		if t, _, err := p.input("weights"); err == nil {
			if err := t.Write(ctx, 0, buf); err != nil {
				return fmt.Errorf("pipeline: write %s weights: %w", p.name, simdev.DeviceErr(err))
			}
		}
	}
	d.weights.current, d.weights.key = w, key
	return nil
}

// checkFuse checks the LoRA fuse program's signature when it is loaded.
func (d *TTNNDevice) checkFuse() error {
	if d.fuse == nil {
		return nil
	}
	if len(d.fuse.fn.Inputs) != 3 {
		return fmt.Errorf("program %s has %d inputs, want weights, lora, scale", d.fuse.name, len(d.fuse.fn.Inputs))
	}
	_, w, err := d.fuse.input("weights")
	if err != nil {
		return err
	}
	if err := want(d.fuse, w, ttnn.U32, weightsWords); err != nil {
		return err
	}
	_, l, err := d.fuse.input("lora")
	if err != nil {
		return err
	}
	if l.DType != ttnn.BF16 || len(l.Shape) != 1 || l.Shape[0] < 1 {
		return fmt.Errorf("program %s: %s, want bf16[n]", d.fuse.name, l)
	}
	_, sc, err := d.fuse.input("scale")
	if err != nil {
		return err
	}
	if err := want(d.fuse, sc, ttnn.F32, 1); err != nil {
		return err
	}
	_, out, err := d.fuse.output("weights")
	if err != nil {
		return err
	}
	return want(d.fuse, out, ttnn.U32, weightsWords)
}

// LoRAKey says which adapter the device's weights hold ("" = the base weights).
func (d *TTNNDevice) LoRAKey() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.weights.key
}

// FuseLoRA fuses one adapter into the base weights (diffusers' fuse_lora, W += scale·up·down
// for every adapted module) with the fuse program: from the base weights, each chunk of the
// adapter's factors (bf16 values, as chunks yields them, padded with zeros to the program's
// chunk) is one run folding into the weights. key names the adapter and scale; fusing the key
// already fused does nothing. A failed fuse leaves the base weights in place.
func (d *TTNNDevice) FuseLoRA(ctx context.Context, key string, scale float32, chunks iter.Seq2[[]float32, error]) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fuse == nil {
		return ErrNoLoRAProgram
	}
	if key == "" {
		return errors.New("pipeline: empty LoRA key")
	}
	if d.weights.key == key {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ctx = context.WithoutCancel(ctx) // a started fusion is finished, then checked
	if err := d.bindWeights(ctx, d.weights.base, ""); err != nil {
		return err
	}
	wt, _, _ := d.fuse.input("weights")
	lt, ld, _ := d.fuse.input("lora")
	st, _, _ := d.fuse.input("scale")
	sbuf := make([]byte, 4)
	putF32(sbuf, []float32{scale})
	if err := st.Write(ctx, 0, sbuf); err != nil {
		return fmt.Errorf("pipeline: write LoRA scale: %w", simdev.DeviceErr(err))
	}
	k, od, _ := d.fuse.output("weights")
	n := ld.Shape[0]
	buf := make([]byte, 2*n)
	pad := make([]float32, n)
	cur := d.weights.base
	runs := 0
	for chunk, err := range chunks {
		if err != nil {
			return err
		}
		for len(chunk) > 0 {
			part := chunk[:min(n, len(chunk))]
			chunk = chunk[len(part):]
			copy(pad, part)
			clear(pad[len(part):])
			putBF16(buf, pad)
			if err := lt.Write(ctx, 0, buf); err != nil {
				return fmt.Errorf("pipeline: write LoRA chunk: %w", simdev.DeviceErr(err))
			}
			outs, err := d.fuse.prog.Run(ctx, 0, d.fuse.fn.Name, d.fuse.inputs...)
			if err != nil {
				freeAll(outs)
				return fmt.Errorf("pipeline: run %s: %w", d.fuse.name, simdev.DeviceErr(err))
			}
			if k >= len(outs) {
				freeAll(outs)
				return fmt.Errorf("pipeline: %s output weights missing", d.fuse.name)
			}
			wb := make([]byte, od.Bytes())
			err = outs[k].Read(ctx, 0, wb)
			freeAll(outs)
			if err != nil {
				return fmt.Errorf("pipeline: read fused weights: %w", simdev.DeviceErr(err))
			}
			if err := wt.Write(ctx, 0, wb); err != nil {
				return fmt.Errorf("pipeline: write fused weights: %w", simdev.DeviceErr(err))
			}
			for i := range cur {
				cur[i] = binary.LittleEndian.Uint32(wb[4*i:])
			}
			runs++
		}
	}
	if runs == 0 {
		return errors.New("pipeline: the LoRA adapter has no values")
	}
	if err := d.bindWeights(ctx, cur, key); err != nil {
		return err
	}
	d.stats.LoRAFuses++
	d.stats.LoRAChunks += runs
	return nil
}

// UnfuseLoRA restores the base weights (diffusers' unfuse_lora); a no-op on base weights.
func (d *TTNNDevice) UnfuseLoRA(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.weights.key == "" {
		return nil
	}
	if err := d.bindWeights(context.WithoutCancel(ctx), d.weights.base, ""); err != nil {
		return err
	}
	d.stats.WeightRestores++
	return nil
}

// WeightsChecksum reads the weights checksum back from the device (the UNet's weights input,
// or the fuse program's when the UNet takes none), hex.
func (d *TTNNDevice) WeightsChecksum(ctx context.Context) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range []*program{d.unet, d.fuse} {
		if p == nil {
			continue
		}
		if t, desc, err := p.input("weights"); err == nil {
			buf := make([]byte, desc.Bytes())
			if err := t.Read(ctx, 0, buf); err != nil {
				return "", fmt.Errorf("pipeline: read weights: %w", simdev.DeviceErr(err))
			}
			return hex.EncodeToString(buf), nil
		}
	}
	return "", ErrNoLoRAProgram
}

// VAEEncode implements ImageEncoder with the VAE encoder program.
func (d *TTNNDevice) VAEEncode(ctx context.Context, image []float32) ([]float32, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.encoder == nil {
		return nil, ErrNoEncoder
	}
	s := d.spec
	if len(image) != 3*s.ImageHeight*s.ImageWidth {
		return nil, fmt.Errorf("pipeline: VAE encoder input has %d values, want 3x%dx%d", len(image), s.ImageHeight, s.ImageWidth)
	}
	buf := make([]byte, 2*len(image))
	putBF16(buf, image)
	out, err := runRead(ctx, d.encoder, buf, "latent_dist")
	if err != nil {
		return nil, err
	}
	d.stats.VAEEncodes++
	return out[0], nil
}

var _ ImageEncoder = (*TTNNDevice)(nil)
