package ttnn

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
	Name      string
	Mesh      MeshShape
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
