package diffusionpipeline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// A loaded ttnn program of the diffusion devices (SDXL's TTNNDevice, SD3.5's and Flux's) and
// the tensor I/O they share: loading from simulator manifests or the metal backend's .ttnn
// files, binding a program's function to its declaration, reading and writing its tensors.

// program is a loaded program's one function with persistent (retained) inputs.
type program struct {
	name   string
	prog   *ttnn.Program
	fn     ttnn.Function
	inputs []*ttnn.Tensor
}

func (p *program) input(name string) (*ttnn.Tensor, ttnn.TensorDesc, error) {
	for i, d := range p.fn.Inputs {
		if d.Name == name {
			return p.inputs[i], d, nil
		}
	}
	return nil, ttnn.TensorDesc{}, fmt.Errorf("program %s has no input %q", p.name, name)
}

func (p *program) output(name string) (int, ttnn.TensorDesc, error) {
	for i, d := range p.fn.Outputs {
		if d.Name == name {
			return i, d, nil
		}
	}
	return 0, ttnn.TensorDesc{}, fmt.Errorf("program %s has no output %q", p.name, name)
}

func loadProgram(ctx context.Context, dev *ttnn.Device, dir string, set fs.FS, name string) (*program, error) {
	path, err := simdev.WriteManifest(set, dir, name, dev.Info().Mesh)
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	prog, err := dev.LoadProgram(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("pipeline: load program %s: %w", name, simdev.DeviceErr(err))
	}
	return bindProgram(ctx, dev, name, prog, nil)
}

// bindProgram takes a loaded program with one function and allocates its persistent inputs;
// decl, when not nil, is the function's declaration (which the program matched), naming its
// positional tensors. The returned program (also on error, when not nil) is the caller's to close.
func bindProgram(ctx context.Context, dev *ttnn.Device, name string, prog *ttnn.Program, decl *ttnn.FunctionSpec) (*program, error) {
	p := &program{name: name, prog: prog}
	fns := prog.Functions()
	if len(fns) != 1 {
		return p, fmt.Errorf("pipeline: program %s has %d functions, want 1", name, len(fns))
	}
	p.fn = fns[0]
	if decl != nil {
		if len(decl.Inputs) != len(p.fn.Inputs) || len(decl.Outputs) != len(p.fn.Outputs) {
			return p, fmt.Errorf("pipeline: program %s does not have its declared inputs and outputs", name)
		}
		p.fn.Inputs, p.fn.Outputs = slices.Clone(p.fn.Inputs), slices.Clone(p.fn.Outputs) // the program's own stay
		for i := range p.fn.Inputs {
			p.fn.Inputs[i].Name = decl.Inputs[i].Name
		}
		for i := range p.fn.Outputs {
			p.fn.Outputs[i].Name = decl.Outputs[i].Name
		}
	}
	for _, in := range p.fn.Inputs {
		t, err := dev.Alloc(ctx, in, ttnn.TensorOptions{Placement: ttnn.DRAM, Layout: ttnn.Tile, Retain: true})
		if err != nil {
			return p, fmt.Errorf("pipeline: allocate %s input %s: %w", name, in, simdev.DeviceErr(err))
		}
		p.inputs = append(p.inputs, t)
	}
	return p, nil
}

// want checks one tensor's dtype and shape.
func want(p *program, d ttnn.TensorDesc, dt ttnn.DType, shape ...int) error {
	if d.DType != dt || !slices.Equal(d.Shape, shape) {
		return fmt.Errorf("program %s: %s, want %v%v", p.name, d, dt, shape)
	}
	return nil
}

// runRead writes the program's single input, runs it and reads the named outputs.
func runRead(ctx context.Context, p *program, in []byte, outputs ...string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ctx = context.WithoutCancel(ctx) // a started device call is not abandoned
	if err := p.inputs[0].Write(ctx, 0, in); err != nil {
		return nil, fmt.Errorf("pipeline: write %s input: %w", p.name, simdev.DeviceErr(err))
	}
	outs, err := p.prog.Run(ctx, 0, p.fn.Name, p.inputs...)
	defer freeAll(outs)
	if err != nil {
		return nil, fmt.Errorf("pipeline: run %s: %w", p.name, simdev.DeviceErr(err))
	}
	res := make([][]float32, len(outputs))
	for i, name := range outputs {
		k, desc, err := p.output(name)
		if err != nil || k >= len(outs) {
			return nil, fmt.Errorf("pipeline: %s output %q missing", p.name, name)
		}
		if res[i], err = readBF16(ctx, outs[k], desc); err != nil {
			return nil, fmt.Errorf("pipeline: read %s %s: %w", p.name, name, simdev.DeviceErr(err))
		}
	}
	return res, nil
}

func readBF16(ctx context.Context, t *ttnn.Tensor, desc ttnn.TensorDesc) ([]float32, error) {
	buf := make([]byte, desc.Bytes())
	if err := t.Read(ctx, 0, buf); err != nil {
		return nil, err
	}
	v := make([]float32, desc.Elements())
	getBF16(v, buf)
	return v, nil
}

// writeRows writes b rows of src into a bf16 or f32 tensor of batch rows, repeating the
// last row to fill it.
func writeRows(ctx context.Context, t *ttnn.Tensor, src []float32, b, batch int, dt ttnn.DType) error {
	desc := t.Desc()
	row := desc.Elements() / batch
	if len(src) != b*row {
		return fmt.Errorf("pipeline: %s: %d values for %d rows of %d", desc.Name, len(src), b, row)
	}
	full := make([]float32, 0, desc.Elements())
	for r := range batch {
		k := min(r, b-1)
		full = append(full, src[k*row:(k+1)*row]...)
	}
	buf := make([]byte, desc.Bytes())
	if dt == ttnn.F32 {
		putF32(buf, full)
	} else {
		putBF16(buf, full)
	}
	if err := t.Write(ctx, 0, buf); err != nil {
		return fmt.Errorf("pipeline: write %s: %w", desc.Name, simdev.DeviceErr(err))
	}
	return nil
}

func freeAll(ts []*ttnn.Tensor) { _ = freeAllErr(ts) }

func freeAllErr(ts []*ttnn.Tensor) error {
	var errs []error
	for _, t := range ts {
		errs = append(errs, t.Free())
	}
	return errors.Join(errs...)
}

// shape returns a program's named input (in) or output tensor description.
func shape(p *program, in bool, name string) (ttnn.TensorDesc, error) {
	var (
		d   ttnn.TensorDesc
		err error
	)
	if in {
		_, d, err = p.input(name)
	} else {
		_, d, err = p.output(name)
	}
	return d, err
}

// tensorRef names a program's input (in) or output tensor.
type tensorRef struct {
	p    *program
	in   bool
	name string
}

// shapes returns the descriptions of refs in order, or the first lookup's error.
func shapes(refs ...tensorRef) ([]ttnn.TensorDesc, error) {
	out := make([]ttnn.TensorDesc, len(refs))
	for i, r := range refs {
		d, err := shape(r.p, r.in, r.name)
		if err != nil {
			return nil, err
		}
		out[i] = d
	}
	return out, nil
}

// tensorCheck is the dtype and shape a program's input (in) or output tensor must have.
type tensorCheck struct {
	p    *program
	in   bool
	name string
	dt   ttnn.DType
	sh   []int
}

// checkTensors checks every tensor of checks in order; the first lookup or mismatch is the error.
func checkTensors(checks []tensorCheck) error {
	for _, c := range checks {
		desc, err := shape(c.p, c.in, c.name)
		if err != nil {
			return err
		}
		if err := want(c.p, desc, c.dt, c.sh...); err != nil {
			return err
		}
	}
	return nil
}
