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
