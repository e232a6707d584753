//go:build !cgo

package ttnn

import (
	"context"
	"fmt"
)

// errNoCgo is returned by every call of a build without cgo.
func errNoCgo(op string) error {
	return &Error{Op: op, Msg: "built without device support (CGO_ENABLED=0)", Kind: ErrUnsupported}
}

// Init fails: this build has no device support.
func Init(backend string) error { return errNoCgo("init " + backend) }

// Backends is empty in a build without cgo.
func Backends() []string { return nil }

// VisibleChips fails: this build has no device support.
func VisibleChips() (int, error) { return 0, errNoCgo("visible chips") }

// Counts fails: this build has no device support.
func Counts() (LiveCounts, error) { return LiveCounts{}, errNoCgo("live counts") }

// Device is an open mesh; a build without cgo cannot open one.
type Device struct{}

// Open fails: this build has no device support.
func Open(ctx context.Context, opts Options) (*Device, error) { return nil, errNoCgo("open") }

// OpenParent fails: this build has no device support.
func OpenParent(ctx context.Context, opts Options) (*Device, error) {
	return nil, errNoCgo("open parent mesh")
}

// OpenSubmesh fails.
func (d *Device) OpenSubmesh(ctx context.Context, opts Options) (*Device, error) {
	return nil, errNoCgo("open submesh")
}

// Submesh fails.
func (d *Device) Submesh(ctx context.Context, mesh MeshShape, offset MeshCoord) (*Device, error) {
	return nil, errNoCgo("create submesh")
}

// Close does nothing.
func (d *Device) Close() error { return nil }

// Info is empty.
func (d *Device) Info() DeviceInfo { return DeviceInfo{} }

// MemoryStats fails.
func (d *Device) MemoryStats(ctx context.Context, kind MemoryKind) (MemStats, error) {
	return MemStats{}, errNoCgo("memory stats")
}

// Synchronize fails.
func (d *Device) Synchronize(ctx context.Context, cq int) error { return errNoCgo("synchronize") }

// LoadProgram fails.
func (d *Device) LoadProgram(ctx context.Context, path string) (*Program, error) {
	return nil, errNoCgo("load program")
}

// Upload fails.
func (d *Device) Upload(ctx context.Context, cq int, desc TensorDesc, opts TensorOptions, data []byte) (*Tensor, error) {
	return nil, errNoCgo("upload")
}

// Alloc fails.
func (d *Device) Alloc(ctx context.Context, desc TensorDesc, opts TensorOptions) (*Tensor, error) {
	return nil, errNoCgo("alloc")
}

// BeginTrace fails.
func (d *Device) BeginTrace(ctx context.Context, cq int) (*Trace, error) {
	return nil, errNoCgo("begin trace")
}

// RecordEvent fails.
func (d *Device) RecordEvent(ctx context.Context, cq int) (Event, error) {
	return 0, errNoCgo("record event")
}

// WaitEvent fails.
func (d *Device) WaitEvent(ctx context.Context, cq int, ev Event) error {
	return errNoCgo("wait event")
}

// SynchronizeEvent fails.
func (d *Device) SynchronizeEvent(ctx context.Context, ev Event) error {
	return errNoCgo("synchronize event")
}

// Program is a loaded program; a build without cgo cannot load one.
type Program struct{}

// Path is empty.
func (p *Program) Path() string { return "" }

// Functions is empty.
func (p *Program) Functions() []Function { return nil }

// Function fails.
func (p *Program) Function(name string) (Function, error) {
	return Function{}, errNoCgo(fmt.Sprintf("function %q", name))
}

// Run fails.
func (p *Program) Run(ctx context.Context, cq int, function string, inputs ...*Tensor) ([]*Tensor, error) {
	return nil, errNoCgo("run")
}

// Close does nothing.
func (p *Program) Close() error { return nil }

// Tensor is a device tensor; a build without cgo cannot make one.
type Tensor struct{}

// Desc is empty.
func (t *Tensor) Desc() TensorDesc { return TensorDesc{} }

// Options are empty.
func (t *Tensor) Options() TensorOptions { return TensorOptions{} }

// Write fails.
func (t *Tensor) Write(ctx context.Context, cq int, src []byte) error { return errNoCgo("write") }

// Read fails.
func (t *Tensor) Read(ctx context.Context, cq int, dst []byte) error { return errNoCgo("read") }

// Free does nothing.
func (t *Tensor) Free() error { return nil }

// Trace is a captured trace; a build without cgo cannot make one.
type Trace struct{}

// ID is zero.
func (tr *Trace) ID() uint64 { return 0 }

// End fails.
func (tr *Trace) End(ctx context.Context) error { return errNoCgo("end trace") }

// Replay fails.
func (tr *Trace) Replay(ctx context.Context, blocking bool) error { return errNoCgo("replay trace") }

// Release does nothing.
func (tr *Trace) Release() error { return nil }
