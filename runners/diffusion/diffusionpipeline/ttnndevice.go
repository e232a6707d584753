package diffusionpipeline

import (
	"context"
	"embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"

	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/clip"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// Program names of the SDXL pipeline; a program set holds "<name>.ttbsim" for each.
const (
	ProgTextEncoder  = "sdxl-text-encoder"
	ProgTextEncoder2 = "sdxl-text-encoder-2"
	ProgUNet         = "sdxl-unet"
	ProgVAE          = "sdxl-vae"
	// ProgVAEEncoder is the VAE encoder of image-to-image and inpainting.
	ProgVAEEncoder = "sdxl-vae-encoder"
	// ProgInpaintUNet is the 9-channel inpainting UNet of tt-sdxl-edit.
	ProgInpaintUNet = "sdxl-inpaint-unet"
	// ProgLoRAFuse folds a LoRA adapter into the weights (optional in a program set).
	ProgLoRAFuse = "sdxl-lora-fuse"
)

// Variant is which SDXL pipeline a TTNNDevice serves, so which programs it loads.
type Variant int

// The three SDXL pipelines.
const (
	// TextToImage loads the encoders, the UNet and the VAE decoder.
	TextToImage Variant = iota
	// ImageToImage adds the VAE encoder.
	ImageToImage
	// Inpaint loads the inpainting UNet instead of the UNet, and the VAE encoder.
	Inpaint
)

//go:embed programs/*.ttbsim
var ownPrograms embed.FS

// Programs returns the simulator manifests of the full-size SDXL pipeline: the two text
// encoders from this package and the UNet and VAE from ttnn.SimPrograms().
func Programs() fs.FS {
	own, err := fs.Sub(ownPrograms, "programs")
	if err != nil { // cannot happen: the directory is embedded above
		own = ownPrograms
	}
	return overlay{own, ttnn.SimPrograms()}
}

// overlay opens a name from the first FS that has it.
type overlay []fs.FS

func (o overlay) Open(name string) (fs.File, error) {
	for _, f := range o {
		file, err := f.Open(name)
		if err == nil {
			return file, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

// Stats count a TTNNDevice's program executions since it was made (warm-up excluded).
type Stats struct {
	// Encodes counts Encode calls; each runs both encoder programs once.
	Encodes int
	// TraceCaptures counts UNet trace captures (1, at warm-up; on metal the compile run of the
	// UNet program, which captures the trace compiled into it).
	TraceCaptures int
	// TraceReplays counts UNet steps, each a replay of the captured trace (on metal a run of
	// the UNet program, which replays its compiled-in trace).
	TraceReplays int
	// VAEDecodes counts VAE program runs.
	VAEDecodes int
	// VAEEncodes counts VAE encoder runs.
	VAEEncodes int
	// LoRAFuses counts adapters fused into the weights; LoRAChunks the fuse program's runs.
	LoRAFuses, LoRAChunks int
	// WeightRestores counts returns to the base weights (a request without LoRA after one with).
	WeightRestores int
}

// TTNNDevice runs the SDXL programs on a ttnn device: the simulator's manifests
// (NewTTNNDeviceFor), or the metal backend's .ttnn files (NewMetalDevice). At construction it
// runs each program once (the compile run) and captures one UNet step in a trace (on metal the
// trace compiled into the UNet program, captured by that run); every UNet call then writes the
// trace's persistent inputs and replays it (on metal: runs the program, which replays it). Device calls are not interrupted once started (as on hardware): ctx is
// checked before each call. Methods are serialized.
type TTNNDevice struct {
	progSet
	enc1, enc2, unet *program
	encoder, fuse    *program // nil when not loaded
	spec             Spec
	batch            int // the programs' batch (2: negative and positive prompt)
	hid1             int // first encoder's hidden size
	lastCond         *Cond
	weights          weightsState
}

// NewTTNNDevice loads the text-to-image programs of set (see Programs): NewTTNNDeviceFor with
// TextToImage.
func NewTTNNDevice(ctx context.Context, dev *ttnn.Device, set fs.FS) (*TTNNDevice, error) {
	return NewTTNNDeviceFor(ctx, dev, set, TextToImage)
}

// NewTTNNDeviceFor loads the programs of variant v from set, compiled for dev's mesh (and the
// LoRA fuse program when set has it), checks that their shapes agree, runs each once and
// captures the UNet trace. dev stays the caller's; Close releases only what it made.
func NewTTNNDeviceFor(ctx context.Context, dev *ttnn.Device, set fs.FS, v Variant) (*TTNNDevice, error) {
	return newTTNNDevice(ctx, dev, set, "", v)
}

// newTTNNDevice loads the programs from set's manifests, or from the .ttnn files of metal
// when it is not "" (NewMetalDevice).
func newTTNNDevice(ctx context.Context, dev *ttnn.Device, set fs.FS, metal string, v Variant) (_ *TTNNDevice, err error) {
	d := &TTNNDevice{progSet: progSet{dev: dev, metal: metal}}
	defer func() {
		if err != nil {
			_ = d.Close()
		}
	}()
	unet := ProgUNet
	if v == Inpaint {
		unet = ProgInpaintUNet
	}
	names := []string{ProgTextEncoder, ProgTextEncoder2, unet, ProgVAE}
	if v != TextToImage {
		names = append(names, ProgVAEEncoder)
	}
	if set != nil {
		if _, err := fs.Stat(set, ProgLoRAFuse+".ttbsim"); err == nil {
			names = append(names, ProgLoRAFuse)
		}
	}
	if err := d.load(ctx, set, "sdxl-programs-", names...); err != nil {
		return nil, err
	}
	d.enc1, d.enc2, d.unet, d.vae = d.progs[0], d.progs[1], d.progs[2], d.progs[3]
	for _, p := range d.progs[4:] {
		switch p.name {
		case ProgVAEEncoder:
			d.encoder = p
		case ProgLoRAFuse:
			d.fuse = p
		}
	}
	d.denoiser = d.unet
	if err := d.checkShapes(); err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	if v == Inpaint && d.spec.UNetIn() != 2*d.spec.LatentChannels+1 {
		return nil, fmt.Errorf("pipeline: program %s takes %d channels, not the inpainting UNet's %d", unet, d.spec.UNetIn(), 2*d.spec.LatentChannels+1)
	}
	d.latent = d.spec.LatentElems()
	if err := d.initWeights(ctx); err != nil {
		return nil, err
	}
	if err := d.compileAndCapture(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

// checkShapes derives the Spec from the programs and checks that they fit together.
func (d *TTNNDevice) checkShapes() error {
	_, ids, err := d.enc1.input("input_ids")
	if err != nil {
		return err
	}
	if len(ids.Shape) != 2 || ids.Shape[0] < 1 {
		return fmt.Errorf("program %s: input_ids %v, want [batch, seq]", d.enc1.name, ids.Shape)
	}
	b, seq := ids.Shape[0], ids.Shape[1]
	_, h1, err := d.enc1.output("hidden_states")
	if err != nil {
		return err
	}
	if len(h1.Shape) != 3 {
		return fmt.Errorf("program %s: hidden_states %v, want [batch, seq, hidden]", d.enc1.name, h1.Shape)
	}
	d.hid1 = h1.Shape[2]
	_, h2, err := d.enc2.output("hidden_states")
	if err != nil {
		return err
	}
	_, pooled, err := d.enc2.output("text_embeds")
	if err != nil {
		return err
	}
	if len(h2.Shape) != 3 || len(pooled.Shape) != 2 {
		return fmt.Errorf("program %s: hidden_states %v, text_embeds %v", d.enc2.name, h2.Shape, pooled.Shape)
	}
	_, sample, err := d.unet.input("sample")
	if err != nil {
		return err
	}
	if len(sample.Shape) != 4 {
		return fmt.Errorf("program %s: sample %v, want [batch, c, h, w]", d.unet.name, sample.Shape)
	}
	cin, lh, lw := sample.Shape[1], sample.Shape[2], sample.Shape[3]
	_, np, err := d.unet.output("noise_pred")
	if err != nil {
		return err
	}
	if len(np.Shape) != 4 {
		return fmt.Errorf("program %s: noise_pred %v, want [batch, c, h, w]", d.unet.name, np.Shape)
	}
	c := np.Shape[1]
	_, img, err := d.vae.output("image")
	if err != nil {
		return err
	}
	if len(img.Shape) != 4 {
		return fmt.Errorf("program %s: image %v, want [1, 3, h, w]", d.vae.name, img.Shape)
	}
	d.batch = b
	d.spec = Spec{LatentChannels: c, LatentHeight: lh, LatentWidth: lw, SeqLen: seq,
		HiddenSize: d.hid1 + h2.Shape[2], PooledSize: pooled.Shape[1], ImageHeight: img.Shape[2], ImageWidth: img.Shape[3]}
	if cin != c {
		d.spec.UNetChannels = cin
	}
	s := d.spec
	checks := []tensorCheck{
		{d.enc1, false, "hidden_states", ttnn.BF16, []int{b, seq, d.hid1}},
		{d.enc2, true, "input_ids", ttnn.I32, []int{b, seq}},
		{d.enc2, false, "hidden_states", ttnn.BF16, []int{b, seq, h2.Shape[2]}},
		{d.enc2, false, "text_embeds", ttnn.BF16, []int{b, s.PooledSize}},
		{d.unet, true, "sample", ttnn.BF16, []int{b, cin, lh, lw}},
		{d.unet, true, "timestep", ttnn.F32, []int{1}},
		{d.unet, true, "encoder_hidden_states", ttnn.BF16, []int{b, seq, s.HiddenSize}},
		{d.unet, true, "text_embeds", ttnn.BF16, []int{b, s.PooledSize}},
		{d.unet, true, "time_ids", ttnn.F32, []int{b, timeIDsLen}},
		{d.unet, false, "noise_pred", ttnn.BF16, []int{b, c, lh, lw}},
		{d.vae, true, "latents", ttnn.BF16, []int{1, c, lh, lw}},
		{d.vae, false, "image", ttnn.BF16, []int{1, 3, s.ImageHeight, s.ImageWidth}},
	}
	if ids.DType != ttnn.I32 {
		return fmt.Errorf("program %s: %s, want i32", d.enc1.name, ids)
	}
	if err := checkTensors(checks); err != nil {
		return err
	}
	unetIn := 5
	if _, w, err := d.unet.input("weights"); err == nil {
		if err := want(d.unet, w, ttnn.U32, weightsWords); err != nil {
			return err
		}
		unetIn++
	}
	if len(d.unet.fn.Inputs) != unetIn || len(d.vae.fn.Inputs) != 1 || len(d.enc1.fn.Inputs) != 1 || len(d.enc2.fn.Inputs) != 1 {
		return errors.New("programs have unexpected extra inputs")
	}
	if d.encoder != nil {
		_, in, err := d.encoder.input("image")
		if err != nil {
			return err
		}
		if err := want(d.encoder, in, ttnn.BF16, 1, 3, s.ImageHeight, s.ImageWidth); err != nil {
			return err
		}
		_, out, err := d.encoder.output("latent_dist")
		if err != nil {
			return err
		}
		if err := want(d.encoder, out, ttnn.BF16, 1, 2*c, lh, lw); err != nil {
			return err
		}
		if len(d.encoder.fn.Inputs) != 1 {
			return errors.New("the VAE encoder has unexpected extra inputs")
		}
	}
	return d.checkFuse()
}

// Spec implements Device.
func (d *TTNNDevice) Spec() Spec { return d.spec }

// Encode implements Device: both encoder programs run once over the prompts, padded to the
// programs' batch by repeating the last prompt.
func (d *TTNNDevice) Encode(ctx context.Context, prompts []clip.SDXLInputs) (Embeds, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, b := d.spec, len(prompts)
	if b < 1 || b > d.batch {
		return Embeds{}, fmt.Errorf("pipeline: %d prompts for encoders of batch %d", b, d.batch)
	}
	ids := [2][]byte{make([]byte, 4*d.batch*s.SeqLen), make([]byte, 4*d.batch*s.SeqLen)}
	for row := range d.batch {
		in := prompts[min(row, b-1)]
		for e, enc := range []clip.Inputs{in.Encoder1, in.Encoder2} {
			if len(enc.IDs) != s.SeqLen {
				return Embeds{}, fmt.Errorf("pipeline: %d token ids for encoders of sequence length %d", len(enc.IDs), s.SeqLen)
			}
			for j, id := range enc.IDs {
				binary.LittleEndian.PutUint32(ids[e][4*(row*s.SeqLen+j):], uint32(int32(id)))
			}
		}
	}
	h1, err := runRead(ctx, d.enc1, ids[0], "hidden_states")
	if err != nil {
		return Embeds{}, err
	}
	out2, err := runRead(ctx, d.enc2, ids[1], "hidden_states", "text_embeds")
	if err != nil {
		return Embeds{}, err
	}
	h2, pooled := out2[0], out2[1]
	hid2 := s.HiddenSize - d.hid1
	e := Embeds{Batch: b, Hidden: make([]float32, 0, b*s.SeqLen*s.HiddenSize), Pooled: pooled[:b*s.PooledSize]}
	for tok := range b * s.SeqLen {
		e.Hidden = append(e.Hidden, h1[0][tok*d.hid1:(tok+1)*d.hid1]...)
		e.Hidden = append(e.Hidden, h2[tok*hid2:(tok+1)*hid2]...)
	}
	d.stats.Encodes++
	return e, nil
}

// UNet implements Device by replaying the captured trace; the conditioning inputs are
// written only when cond differs from the previous call's.
func (d *TTNNDevice) UNet(ctx context.Context, sample []float32, t float32, cond *Cond) ([]float32, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if cond == nil || cond.Batch < 1 || cond.Batch > d.batch {
		return nil, fmt.Errorf("pipeline: UNet conditioning batch must be 1..%d", d.batch)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ctx = context.WithoutCancel(ctx)
	b := cond.Batch
	write := func(name string, src []float32, rows int) error {
		tn, desc, err := d.unet.input(name)
		if err != nil {
			return err
		}
		return writeRows(ctx, tn, src, rows, d.batch, desc.DType)
	}
	if cond != d.lastCond {
		d.lastCond = nil
		for _, in := range []struct {
			name string
			v    []float32
		}{{"encoder_hidden_states", cond.Hidden}, {"text_embeds", cond.Pooled}, {"time_ids", cond.TimeIDs}} {
			if err := write(in.name, in.v, b); err != nil {
				return nil, err
			}
		}
		d.lastCond = cond
	}
	if err := write("sample", sample, b); err != nil {
		return nil, err
	}
	return d.step(ctx, t, "noise_pred", b)
}

var _ Device = (*TTNNDevice)(nil)
