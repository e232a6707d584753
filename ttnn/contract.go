package ttnn

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// TensorSpec is one input or output of a device program as declared: its descriptor (name,
// dtype, shape) and the layout and placement the compiled program keeps it in. The ABI carries
// only the descriptor; layout and placement matter to the compile step (a .ttnn binary records
// them), not to callers: the metal backend moves each host input to the layout its program
// input wants.
type TensorSpec struct {
	TensorDesc
	Layout    Layout
	Placement Placement
}

// FunctionSpec declares one function (entry point) of a device program.
type FunctionSpec struct {
	Name    string
	Inputs  []TensorSpec
	Outputs []TensorSpec
}

// ProgramSpec declares one device program: the file a runner loads (Name.ttbsim for the
// simulator, Name.ttnn for the metal backend), the mesh it is compiled for and its functions.
type ProgramSpec struct {
	Name string
	Mesh MeshShape
	// Batch is the batch the program is compiled for (the leading dimension of its batched
	// tensors; 1 when it has none).
	Batch     int
	Functions []FunctionSpec
}

// Descs returns the specs' descriptors.
func Descs(specs []TensorSpec) []TensorDesc {
	out := make([]TensorDesc, len(specs))
	for i, s := range specs {
		out[i] = s.TensorDesc
	}
	return out
}

// Function returns the declared function of that name.
func (p ProgramSpec) Function(name string) (FunctionSpec, bool) {
	for _, f := range p.Functions {
		if f.Name == name {
			return f, true
		}
	}
	return FunctionSpec{}, false
}

// Check compares a loaded program's functions with the declaration. The error is one line
// naming the program, the function, the tensor and the difference, e.g.
//
//	program resnet50 (/w/resnet50.ttnn): function forward: input 0 (pixel_values): shape [8,3,224,224] in the file, [16,3,224,224] declared
//
// Tensor names are compared only where both sides have one (a .ttnn program's tensors are
// positional). The program's mesh is checked by both backends when it first runs.
func (p ProgramSpec) Check(path string, got []Function) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: program %s (%s): %s", ErrContract, p.Name, path, fmt.Sprintf(format, args...))
	}
	have := map[string]Function{}
	for _, f := range got {
		have[f.Name] = f
	}
	for _, want := range p.Functions {
		f, ok := have[want.Name]
		if !ok {
			names := make([]string, 0, len(got))
			for _, g := range got {
				names = append(names, g.Name)
			}
			return fail("function %s is missing (the file has %s)", want.Name, strings.Join(names, ", "))
		}
		for _, io := range []struct {
			kind string
			want []TensorSpec
			have []TensorDesc
		}{{"input", want.Inputs, f.Inputs}, {"output", want.Outputs, f.Outputs}} {
			if len(io.have) != len(io.want) {
				return fail("function %s: %d %ss in the file, %d declared", want.Name, len(io.have), io.kind, len(io.want))
			}
			for i, w := range io.want {
				h := io.have[i]
				label := fmt.Sprintf("function %s: %s %d (%s)", want.Name, io.kind, i, w.Name)
				switch {
				case h.Name != "" && w.Name != "" && h.Name != w.Name:
					return fail("%s: named %s in the file", label, h.Name)
				case h.DType != w.DType:
					return fail("%s: dtype %v in the file, %v declared", label, h.DType, w.DType)
				case !slices.Equal(h.Shape, w.Shape):
					return fail("%s: shape %s in the file, %s declared", label, shapeString(h.Shape), shapeString(w.Shape))
				}
			}
		}
	}
	return nil
}

// ErrContract marks a loaded program that does not match its declaration.
var ErrContract = errors.New("program does not match its declaration")

func shapeString(s []int) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, ",") + "]"
}
