//go:build cgo

package ttnn

/*
#include <stdlib.h>
#include "include/ttbridge.h"
*/
import "C"

import (
	"context"
	"fmt"
	"strings"
	"unsafe"
)

// Program is a loaded program with its functions. It belongs to the device that loaded it.
type Program struct {
	dev  *Device
	h    *C.ttb_program // device goroutine only
	path string
	fns  []Function
}

// LoadProgram loads a program from a file (a sim manifest or, on metal, a .ttnn flatbuffer).
func (d *Device) LoadProgram(ctx context.Context, path string) (*Program, error) {
	p := &Program{dev: d, path: path}
	err := d.do(ctx, "load program", func() error {
		cpath := C.CString(path)
		defer C.free(unsafe.Pointer(cpath))
		var h *C.ttb_program
		if err := check("load program", C.ttb_program_load_file(cpath, &h)); err != nil {
			return err
		}
		fns, err := describe(h)
		if err != nil {
			C.ttb_program_free(h)
			return err
		}
		p.h, p.fns = h, fns
		d.programs[p] = struct{}{}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

func describe(h *C.ttb_program) ([]Function, error) {
	var n C.uint32_t
	if err := check("program functions", C.ttb_program_num_functions(h, &n)); err != nil {
		return nil, err
	}
	fns := make([]Function, int(n))
	var name [256]C.char
	for i := range fns {
		if err := check("program function name", C.ttb_program_function_name(h, C.uint32_t(i), &name[0], C.size_t(len(name)))); err != nil {
			return nil, err
		}
		fns[i] = Function{Index: i, Name: C.GoString(&name[0])}
		for _, out := range []bool{false, true} {
			isOut := C.int(0)
			if out {
				isOut = 1
			}
			var cnt C.uint32_t
			if err := check("program io", C.ttb_program_io(h, C.uint32_t(i), isOut, nil, 0, &cnt)); err != nil {
				return nil, err
			}
			if cnt == 0 {
				continue
			}
			descs := make([]C.ttb_tensor_desc, int(cnt))
			if err := check("program io", C.ttb_program_io(h, C.uint32_t(i), isOut, &descs[0], cnt, &cnt)); err != nil {
				return nil, err
			}
			for _, cd := range descs {
				if out {
					fns[i].Outputs = append(fns[i].Outputs, goDesc(&cd))
				} else {
					fns[i].Inputs = append(fns[i].Inputs, goDesc(&cd))
				}
			}
		}
	}
	return fns, nil
}

func goDesc(cd *C.ttb_tensor_desc) TensorDesc {
	d := TensorDesc{Name: C.GoString(&cd.name[0]), DType: DType(cd.dtype)}
	for i := 0; i < int(cd.rank) && i < C.TTB_MAX_RANK; i++ {
		d.Shape = append(d.Shape, int(cd.shape[i]))
	}
	return d
}

func cDesc(op string, d TensorDesc) (C.ttb_tensor_desc, error) {
	var cd C.ttb_tensor_desc
	if d.DType.Size() == 0 {
		return cd, invalid(op, "unknown dtype %v", d.DType)
	}
	if len(d.Shape) == 0 || len(d.Shape) > C.TTB_MAX_RANK {
		return cd, invalid(op, "rank %d not in 1..%d", len(d.Shape), C.TTB_MAX_RANK)
	}
	for i, s := range d.Shape {
		if s <= 0 || s > 1<<31 {
			return cd, invalid(op, "dimension %d is %d", i, s)
		}
		cd.shape[i] = C.uint32_t(s)
	}
	cd.rank = C.uint32_t(len(d.Shape))
	cd.dtype = C.uint32_t(d.DType)
	for i := 0; i < len(d.Name) && i < C.TTB_NAME_MAX-1; i++ {
		cd.name[i] = C.char(d.Name[i])
	}
	return cd, nil
}

// Path is the file the program was loaded from.
func (p *Program) Path() string { return p.path }

// Functions lists the program's functions.
func (p *Program) Functions() []Function { return append([]Function(nil), p.fns...) }

// Function finds a function by name.
func (p *Program) Function(name string) (Function, error) {
	for _, f := range p.fns {
		if f.Name == name {
			return f, nil
		}
	}
	names := make([]string, len(p.fns))
	for i, f := range p.fns {
		names[i] = f.Name
	}
	return Function{}, &Error{Op: "function", Msg: fmt.Sprintf("program %s has no function %q (has %s)", p.path, name, strings.Join(names, ", ")), Kind: ErrNotFound}
}

// Run executes a function on command queue cq and returns its outputs as new tensors, which
// the caller frees. Inside a trace capture the run is recorded, not executed.
func (p *Program) Run(ctx context.Context, cq int, function string, inputs ...*Tensor) ([]*Tensor, error) {
	f, err := p.Function(function)
	if err != nil {
		return nil, err
	}
	if cq < 0 {
		return nil, invalid("run", "command queue %d", cq)
	}
	for i, t := range inputs {
		if t == nil || t.dev != p.dev {
			return nil, invalid("run", "input %d is nil or belongs to another device", i)
		}
	}
	var outs []*Tensor
	err = p.dev.do(ctx, "run", func() error {
		if p.h == nil {
			return &Error{Op: "run", Msg: "program is closed", Kind: ErrClosed}
		}
		in := make([]*C.ttb_tensor, len(inputs)+1)
		for i, t := range inputs {
			if t.h == nil {
				return &Error{Op: "run", Msg: fmt.Sprintf("input %d is freed", i), Kind: ErrClosed}
			}
			in[i] = t.h
		}
		out := make([]*C.ttb_tensor, len(f.Outputs)+1)
		var n C.uint32_t
		if err := check("run "+function, C.ttb_program_run(p.dev.h, p.h, C.uint32_t(f.Index), &in[0], C.uint32_t(len(inputs)),
			C.uint32_t(cq), &out[0], C.uint32_t(len(f.Outputs)), &n)); err != nil {
			return err
		}
		for i := 0; i < int(n); i++ {
			desc := TensorDesc{}
			if i < len(f.Outputs) {
				desc = f.Outputs[i]
			}
			outs = append(outs, p.dev.adopt(out[i], desc, TensorOptions{Placement: DRAM, Layout: Tile, Retain: true}))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return outs, nil
}

// Close frees the program. A program used by a live trace cannot be freed (ErrBusy).
func (p *Program) Close() error {
	err := p.dev.do(context.Background(), "free program", func() error {
		if p.h == nil {
			return nil
		}
		if err := check("free program", C.ttb_program_free(p.h)); err != nil {
			return err
		}
		p.h = nil
		delete(p.dev.programs, p)
		return nil
	})
	if isClosed(err) {
		return nil // the device's Close freed it
	}
	return err
}
