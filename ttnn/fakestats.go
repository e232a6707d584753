package ttnn

// FakeRuntimeStats are the counters of the test-only fake of tt::runtime (ttnn/fakert) that
// scripts/check-metal.sh links the metal backend against: live objects, what device close
// found left over (leaks), activity, and the open options the last openMeshDevice received.
type FakeRuntimeStats struct {
	MeshesOpen, SubmeshesOpen, DeviceBuffers, DeviceBytes, HostTensors, Traces uint64
	BuffersLeakedAtClose, TracesLeakedAtClose, SubmeshesLeakedAtClose          uint64
	Submits, TracesCaptured, TracesReplayed, TracesReleased                    uint64
	BuffersDeallocated, RetainedDeallocIgnored, InputsConsumed                 uint64
	LastMesh                                                                   MeshShape // 0x0: not given
	LastCQs, LastDispatch, LastFabric                                          int       // dispatch: 0 not given, 1 worker, 2 ethernet
	LastProgramCache                                                           bool
	LastL1Small, LastTraceRegion                                               uint64
	LastDeviceIDs                                                              []int
}

// FakeSubmit is one program run as the fake tt::runtime received it (its submit log): the
// .ttnn file and program, the mesh it ran on, whether it captured or replayed its compiled-in
// trace, and each input's data type, layout, shape and a hash of its contents.
type FakeSubmit struct {
	File, Program string
	Mesh          MeshShape
	Submesh       bool
	Trace         FakeTrace
	Inputs        []FakeInput
}

// FakeTrace says what a submit did with its program's compiled-in trace.
type FakeTrace int

// The submit's trace: none (the program is not traced), captured on this run, or replayed.
const (
	FakeTraceNone FakeTrace = iota
	FakeTraceCaptured
	FakeTraceReplayed
)

// FakeInput is one input of a FakeSubmit. DType is tt::target::DataType's name ("BFloat16",
// "Float32", "Int32", ...). Hash (FNV-1a of the size and the first and last 32 KiB of the
// device bytes) tells two inputs' contents apart.
type FakeInput struct {
	DType string
	Tile  bool
	Shape []int
	Hash  uint64
}
