package ttnn

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// Sentinel errors; every error from this package wraps one of them (test with errors.Is).
var (
	ErrInvalidArgument = errors.New("invalid argument")
	ErrOutOfMemory     = errors.New("out of memory")
	ErrTimeout         = errors.New("device timeout")
	ErrDeviceLost      = errors.New("device lost")
	ErrBusy            = errors.New("busy")
	ErrInternal        = errors.New("internal error")
	ErrNotFound        = errors.New("not found")
	ErrUnsupported     = errors.New("unsupported")
	// ErrClosed reports use of a device, program, tensor or trace after Close/Free/Release.
	ErrClosed = errors.New("closed")
)

// Error is a failed bridge call: the operation, the backend's message (its thread-local last
// error) and the sentinel for the status code.
type Error struct {
	Op   string
	Msg  string
	Kind error
}

func (e *Error) Error() string { return fmt.Sprintf("ttnn: %s: %v: %s", e.Op, e.Kind, e.Msg) }

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error { return e.Kind }

// DType is an element type of host and device tensors. BF16 travels as raw uint16 bits.
type DType uint32

// Element types.
const (
	BF16 DType = iota
	F32
	U32
	I32
	U16
	U8
)

var dtypeNames = [...]string{"bf16", "f32", "u32", "i32", "u16", "u8"}

// Size is the size of one element in bytes, 0 for an unknown type.
func (d DType) Size() int {
	switch d {
	case BF16, U16:
		return 2
	case F32, U32, I32:
		return 4
	case U8:
		return 1
	}
	return 0
}

func (d DType) String() string {
	if int(d) < len(dtypeNames) {
		return dtypeNames[d]
	}
	return fmt.Sprintf("dtype(%d)", uint32(d))
}

// Layout is the memory layout of a device tensor.
type Layout uint32

// Layouts.
const (
	RowMajor Layout = iota
	Tile
)

// Placement says where a tensor lives.
type Placement uint32

// Placements.
const (
	DRAM Placement = iota
	L1
	Host
)

// DispatchCore selects the cores that run the dispatch firmware.
type DispatchCore uint32

// Dispatch core types; DispatchAuto lets the backend choose (ethernet where the SKU allows).
const (
	DispatchAuto DispatchCore = iota
	DispatchWorker
	DispatchEth
)

// Fabric is the inter-chip fabric configuration (process-global on hardware).
type Fabric uint32

// Fabric configurations.
const (
	FabricOff Fabric = iota
	Fabric1D
	Fabric1DRing
	Fabric2D
)

// MemoryKind names a device memory pool for MemoryStats.
type MemoryKind uint32

// Memory pools.
const (
	MemDRAM MemoryKind = iota
	MemL1
	MemL1Small
	MemTrace
)

// MeshShape is the rows x cols of chips a device opens. The zero value means one row of all
// visible chips.
type MeshShape struct{ Rows, Cols int }

// Chips is Rows*Cols.
func (m MeshShape) Chips() int { return m.Rows * m.Cols }

func (m MeshShape) String() string { return fmt.Sprintf("%dx%d", m.Rows, m.Cols) }

// MeshCoord is a chip position (row, col) inside a mesh, e.g. a submesh's offset.
type MeshCoord struct{ Row, Col int }

func (c MeshCoord) String() string { return fmt.Sprintf("(%d,%d)", c.Row, c.Col) }

// Options are the device open parameters. They are per process on hardware: submeshes (and
// OpenSubmesh) use their parent's.
type Options struct {
	Mesh            MeshShape
	DeviceIDs       []int  // optional logical ids; prefer TT_VISIBLE_DEVICES in the process env
	L1SmallSize     uint64 // bytes reserved per core for L1_SMALL buffers (convolutions)
	TraceRegionSize uint64 // bytes for captured traces; 0 = dynamic
	CommandQueues   int    // 1 or 2; 0 means 1
	Dispatch        DispatchCore
	Fabric          Fabric
	ProgramCache    bool
	// SimLatencyScale scales the simulator's program latencies on this device (0 means 1;
	// the metal backend ignores it). TTB_SIM_LATENCY_SCALE in the environment wins. Use
	// SimScale to ask for a device time, including none.
	SimLatencyScale float64
}

// SimNoLatency is the SimLatencyScale of a simulator with no device time: the smallest
// positive scale, since 0 means "the programs' own latencies".
const SimNoLatency = math.SmallestNonzeroFloat64

// SimScale is the SimLatencyScale that makes a program whose own latency is own take want
// instead (both in seconds), clamped to [0, 1000]; want 0 gives SimNoLatency, not 0, so that
// a zero MOCK_* latency means no device time rather than the programs' own.
func SimScale(want, own float64) float64 {
	if !(own > 0) {
		return 1
	}
	s := min(max(want/own, 0), 1000)
	if s == 0 {
		return SimNoLatency
	}
	return s
}

// TensorDesc is a tensor's name (may be empty), element type and shape.
type TensorDesc struct {
	Name  string
	DType DType
	Shape []int
}

// Elements is the product of the shape.
func (d TensorDesc) Elements() int {
	n := 1
	for _, s := range d.Shape {
		n *= s
	}
	return n
}

// Bytes is the size of the tensor's row-major host data.
func (d TensorDesc) Bytes() int { return d.Elements() * d.DType.Size() }

func (d TensorDesc) String() string { return fmt.Sprintf("%s %v%v", d.Name, d.DType, d.Shape) }

// TensorOptions say where a tensor is placed and whether a program may free it after use.
type TensorOptions struct {
	Placement Placement
	Layout    Layout
	// Retain keeps an uploaded tensor alive across program runs (weights, KV caches, trace
	// inputs). A program deallocates the inputs that are not retained.
	Retain bool
}

// Function describes one function (entry point) of a program.
type Function struct {
	Index   int
	Name    string
	Inputs  []TensorDesc
	Outputs []TensorDesc
}

// DeviceInfo describes an open device.
type DeviceInfo struct {
	Backend             string
	Arch                string
	Mesh                MeshShape
	Chips               int
	CommandQueues       int
	DeviceIDs           []int
	L1SmallSize         uint64
	TraceRegionSize     uint64
	DRAMBytesPerChannel uint64
	DRAMChannels        int
	L1BytesPerCore      uint64
	Submesh             bool      // made by Submesh or OpenSubmesh
	Offset              MeshCoord // a submesh's position in its parent mesh
}

// MemStats are the bytes of one memory pool, summed over the mesh.
type MemStats struct{ Total, Allocated, LargestFree uint64 }

// LiveCounts are the backend's live handles; all zero once everything is closed.
type LiveCounts struct{ Devices, Programs, Tensors, Traces, TensorBytes uint64 }

// Event marks a point in a command queue, for ordering two queues.
type Event uint64

// The cgo and no-cgo builds must export the same API; these assertions keep them in step.
var (
	_ interface {
		Close() error
		Info() DeviceInfo
		MemoryStats(context.Context, MemoryKind) (MemStats, error)
		Synchronize(context.Context, int) error
		Submesh(context.Context, MeshShape, MeshCoord) (*Device, error)
		LoadProgram(context.Context, string) (*Program, error)
		Upload(context.Context, int, TensorDesc, TensorOptions, []byte) (*Tensor, error)
		Alloc(context.Context, TensorDesc, TensorOptions) (*Tensor, error)
		BeginTrace(context.Context, int) (*Trace, error)
		RecordEvent(context.Context, int) (Event, error)
		WaitEvent(context.Context, int, Event) error
		SynchronizeEvent(context.Context, Event) error
	} = (*Device)(nil)
	_ interface {
		Path() string
		Functions() []Function
		Function(string) (Function, error)
		Run(context.Context, int, string, ...*Tensor) ([]*Tensor, error)
		Close() error
	} = (*Program)(nil)
	_ interface {
		Desc() TensorDesc
		Options() TensorOptions
		Write(context.Context, int, []byte) error
		Read(context.Context, int, []byte) error
		Free() error
	} = (*Tensor)(nil)
	_ interface {
		ID() uint64
		End(context.Context) error
		Replay(context.Context, bool) error
		Release() error
	} = (*Trace)(nil)
	_ func(string) error                              = Init
	_ func() []string                                 = Backends
	_ func() (int, error)                             = VisibleChips
	_ func() (LiveCounts, error)                      = Counts
	_ func(context.Context, Options) (*Device, error) = Open
	_ func(context.Context, Options) (*Device, error) = OpenParent
)
