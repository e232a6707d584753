package diffusionpipeline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// FluxVariant is one of the two Flux.1 checkpoints; each has its own programs.
type FluxVariant int

const (
	// FluxDev is black-forest-labs/FLUX.1-dev (T5 512 tokens, embedded guidance).
	FluxDev FluxVariant = iota
	// FluxSchnell is black-forest-labs/FLUX.1-schnell (T5 256 tokens, no guidance input).
	FluxSchnell
)

// Prefix is the variant's program-name prefix ("flux1-dev", "flux1-schnell").
func (v FluxVariant) Prefix() string {
	if v == FluxSchnell {
		return "flux1-schnell"
	}
	return "flux1-dev"
}

// Config is the variant's pipeline configuration.
func (v FluxVariant) Config() FluxConfig {
	if v == FluxSchnell {
		return FluxSchnellConfig()
	}
	return FluxDevConfig()
}

// Programs are the variant's program names, in load order: CLIP-L ("-text-encoder"), T5-XXL
// ("-text-encoder-2"), the transformer step and the VAE decoder; a program set holds
// "<name>.ttbsim" for each on the simulator, MODEL_WEIGHTS_PATH "<name>.ttnn" on metal.
func (v FluxVariant) Programs() []string {
	p := v.Prefix()
	return []string{p + "-text-encoder", p + "-text-encoder-2", p + "-transformer", p + "-vae"}
}

// FluxPrograms returns the simulator manifests of the full-size Flux.1 pipelines (1024x1024,
// batch 1: Flux has no classifier-free guidance), kept in this package.
func FluxPrograms() fs.FS { return Programs() }

// TTNNFluxDevice runs one Flux.1 variant's programs on a ttnn device. At construction it writes
// the constant position ids, runs each program once (the compile run) and captures one
// transformer step in a trace; every Transformer call then writes the trace's persistent
// inputs and replays it. ctx is checked before each device call; a started call is not
// abandoned. Methods are serialized.
type TTNNFluxDevice struct {
	progSet
	clip, t5, transf *program
	spec             FluxSpec
	lastCond         *FluxCond
}

// NewTTNNFluxDevice loads the variant's four programs from set (see FluxPrograms), compiled for
// dev's mesh, checks that their shapes agree, runs each once and captures the transformer
// trace. dev stays the caller's; Close releases only what NewTTNNFluxDevice made.
func NewTTNNFluxDevice(ctx context.Context, dev *ttnn.Device, set fs.FS, v FluxVariant) (*TTNNFluxDevice, error) {
	return newTTNNFluxDevice(ctx, dev, set, "", v)
}

// NewMetalFluxDevice is NewTTNNFluxDevice on the metal backend: the programs are
// MODEL_WEIGHTS_PATH's .ttnn files, each checked against its declaration (runners/programs).
func NewMetalFluxDevice(ctx context.Context, dev *ttnn.Device, weights string, v FluxVariant) (*TTNNFluxDevice, error) {
	if weights == "" {
		return nil, runners.Permanent(errors.New("pipeline on metal: MODEL_WEIGHTS_PATH is not set (it must hold the .ttnn programs, docs/DEVICE-PROGRAMS.md)"))
	}
	return newTTNNFluxDevice(ctx, dev, nil, weights, v)
}

func newTTNNFluxDevice(ctx context.Context, dev *ttnn.Device, set fs.FS, metal string, v FluxVariant) (_ *TTNNFluxDevice, err error) {
	d := &TTNNFluxDevice{progSet: progSet{dev: dev, metal: metal}}
	defer func() {
		if err != nil {
			_ = d.Close()
		}
	}()
	if err := d.load(ctx, set, v.Prefix()+"-programs-", v.Programs()...); err != nil {
		return nil, err
	}
	d.clip, d.t5, d.transf, d.vae = d.progs[0], d.progs[1], d.progs[2], d.progs[3]
	d.denoiser = d.transf
	if err := d.checkShapes(); err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	d.latent = d.spec.LatentElems()
	// The position ids are constants of the programs' shapes: written once, before the trace.
	s := d.spec
	for _, in := range []struct {
		name string
		v    []float32
	}{{"txt_ids", make([]float32, s.T5SeqLen*3)}, {"img_ids", LatentImageIDs(s.LatentHeight, s.LatentWidth)}} {
		tn, desc, err := d.transf.input(in.name)
		if err != nil {
			return nil, err
		}
		if err := writeRows(ctx, tn, in.v, 1, 1, desc.DType); err != nil {
			return nil, err
		}
	}
	if err := d.compileAndCapture(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

// checkShapes derives the FluxSpec from the programs and checks that they fit together.
func (d *TTNNFluxDevice) checkShapes() error {
	ds, err := shapes(
		tensorRef{d.clip, true, "input_ids"},
		tensorRef{d.clip, false, "pooled_output"},
		tensorRef{d.t5, false, "hidden_states"},
		tensorRef{d.vae, true, "latents"},
		tensorRef{d.vae, false, "image"},
	)
	if err != nil {
		return err
	}
	ids, pooled, h3, lat, img := ds[0], ds[1], ds[2], ds[3], ds[4]
	if len(ids.Shape) != 2 || len(pooled.Shape) != 2 || len(h3.Shape) != 3 || len(lat.Shape) != 4 || len(img.Shape) != 4 {
		return fmt.Errorf("programs have unexpected ranks: %s, %s, %s, %s, %s", ids, pooled, h3, lat, img)
	}
	_, hasGuidance, _ := d.transf.input("guidance")
	d.spec = FluxSpec{
		LatentChannels: lat.Shape[1], LatentHeight: lat.Shape[2], LatentWidth: lat.Shape[3],
		CLIPSeqLen: ids.Shape[1], PooledSize: pooled.Shape[1], T5SeqLen: h3.Shape[1], JointDim: h3.Shape[2],
		Guidance: hasGuidance.Name != "", ImageHeight: img.Shape[2], ImageWidth: img.Shape[3],
	}
	s := d.spec
	if s.LatentHeight%2 != 0 || s.LatentWidth%2 != 0 {
		return fmt.Errorf("program %s: latents %dx%d do not split into 2x2 patches", d.vae.name, s.LatentHeight, s.LatentWidth)
	}
	seq, dim := s.ImageSeqLen(), s.PackedDim()
	checks := []tensorCheck{
		{d.clip, true, "input_ids", ttnn.I32, []int{1, s.CLIPSeqLen}},
		{d.clip, false, "pooled_output", ttnn.BF16, []int{1, s.PooledSize}},
		{d.t5, true, "input_ids", ttnn.I32, []int{1, s.T5SeqLen}},
		{d.t5, false, "hidden_states", ttnn.BF16, []int{1, s.T5SeqLen, s.JointDim}},
		{d.transf, true, "hidden_states", ttnn.BF16, []int{1, seq, dim}},
		{d.transf, true, "timestep", ttnn.F32, []int{1}},
		{d.transf, true, "pooled_projections", ttnn.BF16, []int{1, s.PooledSize}},
		{d.transf, true, "encoder_hidden_states", ttnn.BF16, []int{1, s.T5SeqLen, s.JointDim}},
		{d.transf, true, "txt_ids", ttnn.F32, []int{s.T5SeqLen, 3}},
		{d.transf, true, "img_ids", ttnn.F32, []int{seq, 3}},
		{d.transf, false, "sample", ttnn.BF16, []int{1, seq, dim}},
		{d.vae, false, "image", ttnn.BF16, []int{1, 3, s.ImageHeight, s.ImageWidth}},
	}
	if s.Guidance {
		checks = append(checks, tensorCheck{d.transf, true, "guidance", ttnn.F32, []int{1}})
	}
	if err := want(d.vae, lat, ttnn.BF16, 1, s.LatentChannels, s.LatentHeight, s.LatentWidth); err != nil {
		return err
	}
	if err := checkTensors(checks); err != nil {
		return err
	}
	nIn := 6
	if s.Guidance {
		nIn = 7
	}
	if len(d.transf.fn.Inputs) != nIn || len(d.vae.fn.Inputs) != 1 || len(d.clip.fn.Inputs) != 1 || len(d.t5.fn.Inputs) != 1 {
		return errors.New("programs have unexpected extra inputs")
	}
	return nil
}

// Spec implements FluxDevice.
func (d *TTNNFluxDevice) Spec() FluxSpec { return d.spec }

// Encode implements FluxDevice: CLIP-L and T5 run once each.
func (d *TTNNFluxDevice) Encode(ctx context.Context, in FluxInputs) (FluxEmbeds, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.spec
	ids, err := idsBytes([][]int{in.CLIP}, 1, s.CLIPSeqLen)
	if err != nil {
		return FluxEmbeds{}, err
	}
	pooled, err := runRead(ctx, d.clip, ids, "pooled_output")
	if err != nil {
		return FluxEmbeds{}, err
	}
	if ids, err = idsBytes([][]int{in.T5}, 1, s.T5SeqLen); err != nil {
		return FluxEmbeds{}, err
	}
	h, err := runRead(ctx, d.t5, ids, "hidden_states")
	if err != nil {
		return FluxEmbeds{}, err
	}
	d.stats.Encodes++
	return FluxEmbeds{Pooled: pooled[0], T5Hidden: h[0]}, nil
}

// Transformer implements FluxDevice by replaying the captured trace; the conditioning inputs
// are written only when cond differs from the previous call's.
func (d *TTNNFluxDevice) Transformer(ctx context.Context, packed []float32, t float32, cond *FluxCond) ([]float32, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if cond == nil {
		return nil, errors.New("pipeline: transformer without conditioning")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ctx = context.WithoutCancel(ctx)
	write := func(name string, src []float32) error {
		tn, desc, err := d.transf.input(name)
		if err != nil {
			return err
		}
		return writeRows(ctx, tn, src, 1, 1, desc.DType)
	}
	if cond != d.lastCond {
		d.lastCond = nil
		if err := write("encoder_hidden_states", cond.Hidden); err != nil {
			return nil, err
		}
		if err := write("pooled_projections", cond.Pooled); err != nil {
			return nil, err
		}
		if d.spec.Guidance {
			if err := write("guidance", []float32{cond.Guidance}); err != nil {
				return nil, err
			}
		}
		d.lastCond = cond
	}
	if err := write("hidden_states", packed); err != nil {
		return nil, err
	}
	return d.step(ctx, t, "sample", 1)
}

var _ FluxDevice = (*TTNNFluxDevice)(nil)
