package diffusionpipeline

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"

	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// Program names of the SD3.5 pipeline; a program set holds "<name>.ttbsim" for each.
const (
	ProgSD3TextEncoder  = "sd35-text-encoder"
	ProgSD3TextEncoder2 = "sd35-text-encoder-2"
	ProgSD3TextEncoder3 = "sd35-text-encoder-3"
	ProgSD3Transformer  = "sd35-transformer"
	ProgSD3VAE          = "sd35-vae"
)

// SD3Programs returns the simulator manifests of the full-size SD3.5 Large pipeline
// (1024x1024, classifier-free-guidance batch 2), kept in this package.
func SD3Programs() fs.FS { return Programs() }

// TTNNSD3Device runs the SD3.5 programs on a ttnn device. At construction it runs each
// program once (the compile run) and captures one transformer step in a trace; every
// Transformer call then writes the trace's persistent inputs and replays it. ctx is checked
// before each device call; a started call is not abandoned. Methods are serialized.
type TTNNSD3Device struct {
	progSet
	clipL, clipG, t5, transf *program
	spec                     SD3Spec
	batch                    int // the programs' batch (2: negative and positive prompt)
	hidL                     int // CLIP-L's hidden size (and pooled size)
	lastCond                 *SD3Cond
}

// NewTTNNSD3Device loads the five programs of set (see SD3Programs), compiled for dev's
// mesh, checks that their shapes agree, runs each once and captures the transformer trace.
// dev stays the caller's; Close releases only what NewTTNNSD3Device made.
func NewTTNNSD3Device(ctx context.Context, dev *ttnn.Device, set fs.FS) (*TTNNSD3Device, error) {
	return newTTNNSD3Device(ctx, dev, set, "")
}

// newTTNNSD3Device loads the programs from set's manifests, or from the .ttnn files of metal
// when it is not "" (NewMetalSD3Device).
func newTTNNSD3Device(ctx context.Context, dev *ttnn.Device, set fs.FS, metal string) (_ *TTNNSD3Device, err error) {
	d := &TTNNSD3Device{progSet: progSet{dev: dev, metal: metal}}
	defer func() {
		if err != nil {
			_ = d.Close()
		}
	}()
	if err := d.load(ctx, set, "sd35-programs-", ProgSD3TextEncoder, ProgSD3TextEncoder2, ProgSD3TextEncoder3, ProgSD3Transformer, ProgSD3VAE); err != nil {
		return nil, err
	}
	d.clipL, d.clipG, d.t5, d.transf, d.vae = d.progs[0], d.progs[1], d.progs[2], d.progs[3], d.progs[4]
	d.denoiser = d.transf
	if err := d.checkShapes(); err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	d.latent = d.spec.LatentElems()
	if err := d.compileAndCapture(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

// checkShapes derives the SD3Spec from the programs and checks that they fit together.
func (d *TTNNSD3Device) checkShapes() error {
	ds, err := shapes(
		tensorRef{d.clipL, true, "input_ids"},
		tensorRef{d.clipL, false, "hidden_states"},
		tensorRef{d.clipG, false, "hidden_states"},
		tensorRef{d.t5, true, "input_ids"},
		tensorRef{d.t5, false, "hidden_states"},
		tensorRef{d.transf, true, "hidden_states"},
		tensorRef{d.vae, false, "image"},
	)
	if err != nil {
		return err
	}
	ids, hL, hG, ids3, h3, sample, img := ds[0], ds[1], ds[2], ds[3], ds[4], ds[5], ds[6]
	if len(ids.Shape) != 2 || len(hL.Shape) != 3 || len(hG.Shape) != 3 || len(ids3.Shape) != 2 || len(h3.Shape) != 3 ||
		len(sample.Shape) != 4 || len(img.Shape) != 4 || ids.Shape[0] < 1 {
		return fmt.Errorf("programs have unexpected ranks: %s, %s, %s, %s, %s, %s, %s", ids, hL, hG, ids3, h3, sample, img)
	}
	b := ids.Shape[0]
	d.batch, d.hidL = b, hL.Shape[2]
	d.spec = SD3Spec{
		LatentChannels: sample.Shape[1], LatentHeight: sample.Shape[2], LatentWidth: sample.Shape[3],
		CLIPSeqLen: ids.Shape[1], CLIPHidden: hL.Shape[2] + hG.Shape[2], PooledSize: hL.Shape[2] + hG.Shape[2],
		T5SeqLen: ids3.Shape[1], JointDim: h3.Shape[2], ImageHeight: img.Shape[2], ImageWidth: img.Shape[3],
	}
	s := d.spec
	c, lh, lw := s.LatentChannels, s.LatentHeight, s.LatentWidth
	checks := []tensorCheck{
		{d.clipL, true, "input_ids", ttnn.I32, []int{b, s.CLIPSeqLen}},
		{d.clipL, false, "text_embeds", ttnn.BF16, []int{b, d.hidL}},
		{d.clipG, true, "input_ids", ttnn.I32, []int{b, s.CLIPSeqLen}},
		{d.clipG, false, "hidden_states", ttnn.BF16, []int{b, s.CLIPSeqLen, s.CLIPHidden - d.hidL}},
		{d.clipG, false, "text_embeds", ttnn.BF16, []int{b, s.CLIPHidden - d.hidL}},
		{d.t5, true, "input_ids", ttnn.I32, []int{b, s.T5SeqLen}},
		{d.t5, false, "hidden_states", ttnn.BF16, []int{b, s.T5SeqLen, s.JointDim}},
		{d.transf, true, "hidden_states", ttnn.BF16, []int{b, c, lh, lw}},
		{d.transf, true, "timestep", ttnn.F32, []int{1}},
		{d.transf, true, "encoder_hidden_states", ttnn.BF16, []int{b, s.JointSeqLen(), s.JointDim}},
		{d.transf, true, "pooled_projections", ttnn.BF16, []int{b, s.PooledSize}},
		{d.transf, false, "sample", ttnn.BF16, []int{b, c, lh, lw}},
		{d.vae, true, "latents", ttnn.BF16, []int{1, c, lh, lw}},
		{d.vae, false, "image", ttnn.BF16, []int{1, 3, s.ImageHeight, s.ImageWidth}},
	}
	if err := want(d.clipL, hL, ttnn.BF16, b, s.CLIPSeqLen, d.hidL); err != nil {
		return err
	}
	if err := checkTensors(checks); err != nil {
		return err
	}
	if s.JointDim < s.CLIPHidden {
		return fmt.Errorf("program %s: joint dimension %d is below the CLIP hidden size %d", d.t5.name, s.JointDim, s.CLIPHidden)
	}
	if len(d.transf.fn.Inputs) != 4 || len(d.vae.fn.Inputs) != 1 || len(d.clipL.fn.Inputs) != 1 ||
		len(d.clipG.fn.Inputs) != 1 || len(d.t5.fn.Inputs) != 1 {
		return errors.New("programs have unexpected extra inputs")
	}
	return nil
}

// Spec implements SD3Device.
func (d *TTNNSD3Device) Spec() SD3Spec { return d.spec }

// idsBytes lays out one id sequence per row as i32, padded to the programs' batch by
// repeating the last row.
func idsBytes(rows [][]int, batch, seq int) ([]byte, error) {
	buf := make([]byte, 4*batch*seq)
	for r := range batch {
		ids := rows[min(r, len(rows)-1)]
		if len(ids) != seq {
			return nil, fmt.Errorf("pipeline: %d token ids for an encoder of sequence length %d", len(ids), seq)
		}
		for j, id := range ids {
			binary.LittleEndian.PutUint32(buf[4*(r*seq+j):], uint32(int32(id)))
		}
	}
	return buf, nil
}

// Encode implements SD3Device: the two CLIP programs run once over the prompts and the T5
// program once when the prompts carry T5 ids (all of them or none).
func (d *TTNNSD3Device) Encode(ctx context.Context, prompts []SD3Inputs) (SD3Embeds, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, b := d.spec, len(prompts)
	if b < 1 || b > d.batch {
		return SD3Embeds{}, fmt.Errorf("pipeline: %d prompts for encoders of batch %d", b, d.batch)
	}
	var l, g, t5 [][]int
	for _, p := range prompts {
		l, g = append(l, p.CLIP.Encoder1.IDs), append(g, p.CLIP.Encoder2.IDs)
		if p.T5 != nil {
			t5 = append(t5, p.T5)
		}
	}
	if len(t5) != 0 && len(t5) != b {
		return SD3Embeds{}, errors.New("pipeline: T5 ids for some prompts only")
	}
	hidG := s.CLIPHidden - d.hidL
	e := SD3Embeds{Batch: b, CLIPHidden: make([]float32, 0, b*s.CLIPSeqLen*s.CLIPHidden), Pooled: make([]float32, 0, b*s.PooledSize)}
	var outs [2][][]float32
	for k, enc := range []struct {
		p   *program
		ids [][]int
	}{{d.clipL, l}, {d.clipG, g}} {
		in, err := idsBytes(enc.ids, d.batch, s.CLIPSeqLen)
		if err != nil {
			return SD3Embeds{}, err
		}
		if outs[k], err = runRead(ctx, enc.p, in, "hidden_states", "text_embeds"); err != nil {
			return SD3Embeds{}, err
		}
	}
	hL, pL, hG, pG := outs[0][0], outs[0][1], outs[1][0], outs[1][1]
	for tok := range b * s.CLIPSeqLen {
		e.CLIPHidden = append(e.CLIPHidden, hL[tok*d.hidL:(tok+1)*d.hidL]...)
		e.CLIPHidden = append(e.CLIPHidden, hG[tok*hidG:(tok+1)*hidG]...)
	}
	for r := range b {
		e.Pooled = append(e.Pooled, pL[r*d.hidL:(r+1)*d.hidL]...)
		e.Pooled = append(e.Pooled, pG[r*hidG:(r+1)*hidG]...)
	}
	if len(t5) > 0 {
		in, err := idsBytes(t5, d.batch, s.T5SeqLen)
		if err != nil {
			return SD3Embeds{}, err
		}
		h, err := runRead(ctx, d.t5, in, "hidden_states")
		if err != nil {
			return SD3Embeds{}, err
		}
		e.T5Hidden = h[0][:b*s.T5SeqLen*s.JointDim]
	}
	d.stats.Encodes++
	return e, nil
}

// Transformer implements SD3Device by replaying the captured trace; the conditioning inputs
// are written only when cond differs from the previous call's.
func (d *TTNNSD3Device) Transformer(ctx context.Context, sample []float32, t float32, cond *SD3Cond) ([]float32, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if cond == nil || cond.Batch < 1 || cond.Batch > d.batch {
		return nil, fmt.Errorf("pipeline: transformer conditioning batch must be 1..%d", d.batch)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ctx = context.WithoutCancel(ctx)
	b := cond.Batch
	write := func(name string, src []float32) error {
		tn, desc, err := d.transf.input(name)
		if err != nil {
			return err
		}
		return writeRows(ctx, tn, src, b, d.batch, desc.DType)
	}
	if cond != d.lastCond {
		d.lastCond = nil
		if err := write("encoder_hidden_states", cond.Hidden); err != nil {
			return nil, err
		}
		if err := write("pooled_projections", cond.Pooled); err != nil {
			return nil, err
		}
		d.lastCond = cond
	}
	if err := write("hidden_states", sample); err != nil {
		return nil, err
	}
	return d.step(ctx, t, "sample", b)
}

var _ SD3Device = (*TTNNSD3Device)(nil)
