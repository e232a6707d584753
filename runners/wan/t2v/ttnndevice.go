package t2v

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// TTNNDevice runs the four Wan2.2 T2V programs of one set (ProgramNames) on a ttnn device (the
// simulator's manifests, NewTTNNDevice, or the metal backend's .ttnn files, NewMetalDevice):
// each call writes the program's persistent inputs, runs it and reads its output. ctx is checked before each device
// call; a started call is not abandoned. Methods are serialized.
type TTNNDevice struct {
	mu    sync.Mutex
	names []string
	dev   *ttnn.Device
	dir   string
	progs map[string]*program
	spec  Spec
	stats TTNNStats
	// enc is the VAE encoder's program (VAEEncoderName) of an image-to-video set, "" for
	// text-to-video; inCh is the transformer's input channels (16, or 36 with the condition).
	enc  string
	inCh int
}

// TTNNStats counts program runs.
type TTNNStats struct {
	Encodes int
	// Runs counts transformer runs per expert (index HighNoise, LowNoise).
	Runs [3]int
	VAEs int
	// VAEEncodes counts the VAE encoder's runs (image-to-video sets).
	VAEEncodes int
}

type program struct {
	name   string
	prog   *ttnn.Program
	fn     ttnn.Function
	inputs []*ttnn.Tensor
}

// NewTTNNDevice loads the programs of prefix (Prefix480, Prefix720) from set's simulator
// manifests (see Programs), compiled for dev's mesh, and checks that their shapes fit together.
// dev stays the caller's; Close releases only what NewTTNNDevice made.
func NewTTNNDevice(ctx context.Context, dev *ttnn.Device, set fs.FS, prefix string) (_ *TTNNDevice, err error) {
	d := &TTNNDevice{dev: dev, progs: map[string]*program{}, names: ProgramNames(prefix)}
	defer func() {
		if err != nil {
			_ = d.Close()
		}
	}()
	if d.dir, err = os.MkdirTemp("", "wan22-programs-"); err != nil {
		return nil, fmt.Errorf("wan2.2 programs: %w", err)
	}
	for _, name := range d.names {
		p, err := d.load(ctx, set, name)
		if p != nil {
			d.progs[name] = p
		}
		if err != nil {
			return nil, err
		}
	}
	if err := d.loadEncoder(ctx, set, prefix); err != nil {
		return nil, err
	}
	if err := d.checkShapes(); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *TTNNDevice) load(ctx context.Context, set fs.FS, name string) (*program, error) {
	src, err := fs.ReadFile(set, name+".ttbsim")
	if err != nil {
		return nil, fmt.Errorf("wan2.2 program %s: %w", name, err)
	}
	mesh := d.dev.Info().Mesh
	lines := strings.Split(string(src), "\n")
	for i, l := range lines {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "mesh" {
			lines[i] = fmt.Sprintf("mesh %d %d", mesh.Rows, mesh.Cols)
		}
	}
	path := filepath.Join(d.dir, name+".ttbsim")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		return nil, fmt.Errorf("wan2.2 program %s: %w", name, err)
	}
	prog, err := d.dev.LoadProgram(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("wan2.2: load program %s: %w", name, simdev.DeviceErr(err))
	}
	return d.bind(ctx, name, prog, nil)
}

// bind takes a loaded program with one function and allocates its persistent (retained)
// inputs; decl, when not nil, is the function's declaration, which the program matched and
// which names its positional tensors (a .ttnn program's). The returned program (also on error,
// when not nil) is the caller's to close.
func (d *TTNNDevice) bind(ctx context.Context, name string, prog *ttnn.Program, decl *ttnn.FunctionSpec) (*program, error) {
	p := &program{name: name, prog: prog}
	fns := prog.Functions()
	if len(fns) != 1 {
		return p, fmt.Errorf("wan2.2: program %s has %d functions, want 1", name, len(fns))
	}
	p.fn = fns[0]
	if decl != nil {
		if len(decl.Inputs) != len(p.fn.Inputs) || len(decl.Outputs) != len(p.fn.Outputs) {
			return p, fmt.Errorf("wan2.2: program %s does not have its declared inputs and outputs", name)
		}
		p.fn.Inputs, p.fn.Outputs = slices.Clone(p.fn.Inputs), slices.Clone(p.fn.Outputs)
		for i := range p.fn.Inputs {
			p.fn.Inputs[i].Name = decl.Inputs[i].Name
		}
		for i := range p.fn.Outputs {
			p.fn.Outputs[i].Name = decl.Outputs[i].Name
		}
	}
	for _, in := range p.fn.Inputs {
		t, err := d.dev.Alloc(ctx, in, ttnn.TensorOptions{Placement: ttnn.DRAM, Layout: ttnn.Tile, Retain: true})
		if err != nil {
			return p, fmt.Errorf("wan2.2: allocate %s input %s: %w", name, in, simdev.DeviceErr(err))
		}
		p.inputs = append(p.inputs, t)
	}
	return p, nil
}

// checkShapes derives the Spec from the programs and checks that they agree.
func (d *TTNNDevice) checkShapes() error {
	enc, tr, tr2, vae := d.progs[d.names[0]], d.progs[d.names[1]], d.progs[d.names[2]], d.progs[d.names[3]]
	want := func(p *program, ts []ttnn.TensorDesc, names ...string) error {
		if len(ts) != len(names) {
			return fmt.Errorf("wan2.2: program %s has %d tensors where %v are expected", p.name, len(ts), names)
		}
		for i, n := range names {
			if ts[i].Name != n {
				return fmt.Errorf("wan2.2: program %s tensor %d is %s, want %s", p.name, i, ts[i].Name, n)
			}
		}
		return nil
	}
	errs := []error{
		want(enc, enc.fn.Inputs, "input_ids", "attention_mask"), want(enc, enc.fn.Outputs, "hidden_states"),
		want(tr, tr.fn.Inputs, "hidden_states", "timestep", "encoder_hidden_states"), want(tr, tr.fn.Outputs, "sample"),
		want(vae, vae.fn.Inputs, "latents"), want(vae, vae.fn.Outputs, "video"),
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	ids, hid := enc.fn.Inputs[0].Shape, enc.fn.Outputs[0].Shape
	lat, txt := tr.fn.Outputs[0].Shape, tr.fn.Inputs[2].Shape
	video := vae.fn.Outputs[0].Shape
	d.inCh = LatentChannels
	if d.enc != "" {
		d.inCh += ConditionChannels
	}
	in := slices.Clone(lat)
	if len(in) == 5 {
		in[1] = d.inCh
	}
	switch {
	case len(ids) != 2 || len(hid) != 3 || hid[1] != ids[1]:
		return fmt.Errorf("wan2.2: text encoder takes %v ids and returns %v states", ids, hid)
	case len(lat) != 5 || lat[1] != LatentChannels:
		return fmt.Errorf("wan2.2: transformer sample %v, want [1,16,F,H,W]", lat)
	case !slices.Equal(tr.fn.Inputs[0].Shape, in):
		return fmt.Errorf("wan2.2: transformer hidden_states %v, want [1,%d,F,H,W] as its sample's %v", tr.fn.Inputs[0].Shape, d.inCh, lat)
	case !slices.Equal(txt, hid):
		return fmt.Errorf("wan2.2: transformer encoder_hidden_states %v, the text encoder returns %v", txt, hid)
	case !slices.Equal(tr2.fn.Inputs[0].Shape, in) || !slices.Equal(tr2.fn.Inputs[2].Shape, txt) || !slices.Equal(tr2.fn.Outputs[0].Shape, lat):
		return fmt.Errorf("wan2.2: the two experts' programs differ in shape")
	case !slices.Equal(vae.fn.Inputs[0].Shape, lat):
		return fmt.Errorf("wan2.2: VAE input %v, want the latents %v", vae.fn.Inputs[0].Shape, lat)
	}
	sh := Shape{LatentFrames: lat[2], LatentHeight: lat[3], LatentWidth: lat[4],
		Frames: (lat[2]-1)*TemporalFactor + 1, Height: lat[3] * SpatialFactor, Width: lat[4] * SpatialFactor}
	if !slices.Equal(video, []int{1, 3, sh.Frames, sh.Height, sh.Width}) {
		return fmt.Errorf("wan2.2: VAE output %v, the latents %v decode to [1,3,%d,%d,%d]", video, lat, sh.Frames, sh.Height, sh.Width)
	}
	d.spec = Spec{Shape: sh, TextLen: ids[1], TextDim: hid[2]}
	return d.checkEncoder(video, lat)
}

// Spec implements Device.
func (d *TTNNDevice) Spec() Spec { return d.spec }

// Stats returns the run counts so far.
func (d *TTNNDevice) Stats() TTNNStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// Encode implements Device.
func (d *TTNNDevice) Encode(ctx context.Context, ids, mask []int) ([]float32, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(ids) != d.spec.TextLen || len(mask) != d.spec.TextLen {
		return nil, fmt.Errorf("wan2.2 text encoder: %d ids and %d mask values, the program takes %d", len(ids), len(mask), d.spec.TextLen)
	}
	out, err := d.run(ctx, d.progs[d.names[0]], i32Bytes(ids), i32Bytes(mask))
	if err == nil {
		d.stats.Encodes++
	}
	return out, err
}

// Transformer implements Device.
func (d *TTNNDevice) Transformer(ctx context.Context, expert int, x []float32, t int64, text []float32) ([]float32, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if expert != HighNoise && expert != LowNoise {
		return nil, fmt.Errorf("wan2.2 transformer: no expert %d", expert)
	}
	if n := d.spec.Shape.Elems() / LatentChannels * d.inCh; len(x) != n || len(text) != d.spec.TextLen*d.spec.TextDim {
		return nil, fmt.Errorf("wan2.2 transformer: %d latents and %d text values, the program takes %d and %d",
			len(x), len(text), n, d.spec.TextLen*d.spec.TextDim)
	}
	ts := make([]byte, 4)
	binary.LittleEndian.PutUint32(ts, math.Float32bits(float32(t)))
	out, err := d.run(ctx, d.progs[d.names[expert]], bf16Bytes(x), ts, bf16Bytes(text))
	if err == nil {
		d.stats.Runs[expert]++
	}
	return out, err
}

// VAE implements Device.
func (d *TTNNDevice) VAE(ctx context.Context, x []float32) ([]float32, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(x) != d.spec.Shape.Elems() {
		return nil, fmt.Errorf("wan2.2 VAE: %d latents, the program takes %d", len(x), d.spec.Shape.Elems())
	}
	out, err := d.run(ctx, d.progs[d.names[3]], bf16Bytes(x))
	if err == nil {
		d.stats.VAEs++
	}
	return out, err
}

// run writes the inputs, runs the program and reads its bf16 output. The caller holds d.mu.
func (d *TTNNDevice) run(ctx context.Context, p *program, ins ...[]byte) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ctx = context.WithoutCancel(ctx) // a started device call is not abandoned
	for i, b := range ins {
		if err := p.inputs[i].Write(ctx, 0, b); err != nil {
			return nil, fmt.Errorf("wan2.2: write %s input %s: %w", p.name, p.fn.Inputs[i].Name, simdev.DeviceErr(err))
		}
	}
	outs, err := p.prog.Run(ctx, 0, p.fn.Name, p.inputs...)
	defer func() {
		for _, o := range outs {
			_ = o.Free()
		}
	}()
	if err != nil {
		return nil, fmt.Errorf("wan2.2: run %s: %w", p.name, simdev.DeviceErr(err))
	}
	if len(outs) != 1 {
		return nil, fmt.Errorf("wan2.2: %s returned %d outputs", p.name, len(outs))
	}
	desc := p.fn.Outputs[0]
	buf := make([]byte, desc.Bytes())
	if err := outs[0].Read(ctx, 0, buf); err != nil {
		return nil, fmt.Errorf("wan2.2: read %s output: %w", p.name, simdev.DeviceErr(err))
	}
	v := make([]float32, desc.Elements())
	for i := range v {
		v[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(buf[2*i:])) << 16)
	}
	return v, nil
}

// Close releases the input tensors, programs and manifests (not the ttnn device).
func (d *TTNNDevice) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for _, p := range d.progs {
		for _, t := range p.inputs {
			errs = append(errs, t.Free())
		}
		errs = append(errs, p.prog.Close())
	}
	d.progs = nil
	if d.dir != "" {
		errs = append(errs, os.RemoveAll(d.dir))
		d.dir = ""
	}
	err := errors.Join(errs...)
	if err == nil || errors.Is(err, ttnn.ErrDeviceLost) || errors.Is(err, ttnn.ErrTimeout) {
		return nil
	}
	return fmt.Errorf("wan2.2: close: %w", err)
}

func i32Bytes(v []int) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(int32(x)))
	}
	return b
}

// bf16Bytes is v as little-endian bfloat16, rounded to nearest even (NaN stays NaN).
func bf16Bytes(v []float32) []byte {
	b := make([]byte, 2*len(v))
	for i, f := range v {
		u := math.Float32bits(f)
		var h uint16
		if f != f {
			h = uint16(u>>16) | 0x40
		} else {
			h = uint16((u + 0x7fff + (u>>16)&1) >> 16)
		}
		binary.LittleEndian.PutUint16(b[2*i:], h)
	}
	return b
}

var _ Device = (*TTNNDevice)(nil)
