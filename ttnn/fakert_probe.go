//go:build cgo && ttnn

package ttnn

// A weak reference to the control surface of the test-only fake of tt::runtime
// (fakert/tt_fake_runtime.h): present when the metal backend is linked against the fake
// (scripts/check-metal.sh), absent (nil) against the real libTTMLIRRuntime.

/*
#include <stddef.h>
#include "fakert/tt_fake_runtime.h"
#pragma weak tt_fake_runtime_stats_get
#pragma weak tt_fake_runtime_submit_count
#pragma weak tt_fake_runtime_submit_get
static int ttb_fake_stats(tt_fake_runtime_stats *out) {
  if (tt_fake_runtime_stats_get == NULL) return -1;
  return tt_fake_runtime_stats_get(out);
}
static int ttb_fake_submit_count(uint64_t *n) {
  if (tt_fake_runtime_submit_count == NULL) return -1;
  *n = tt_fake_runtime_submit_count();
  return 0;
}
static int ttb_fake_submit(uint64_t i, tt_fake_runtime_submit *out) {
  if (tt_fake_runtime_submit_get == NULL) return -1;
  return tt_fake_runtime_submit_get(i, out);
}
*/
import "C"

// FakeRuntime returns the fake tt::runtime's counters; ok is false unless the metal backend is
// built (tag ttnn) and linked against the fake (tests under scripts/check-metal.sh).
func FakeRuntime() (stats FakeRuntimeStats, ok bool) {
	var s C.tt_fake_runtime_stats
	if C.ttb_fake_stats(&s) != 0 {
		return FakeRuntimeStats{}, false
	}
	out := FakeRuntimeStats{
		MeshesOpen: uint64(s.meshes_open), SubmeshesOpen: uint64(s.submeshes_open),
		DeviceBuffers: uint64(s.device_buffers), DeviceBytes: uint64(s.device_bytes),
		HostTensors: uint64(s.host_tensors), Traces: uint64(s.traces),
		BuffersLeakedAtClose: uint64(s.buffers_leaked_at_close), TracesLeakedAtClose: uint64(s.traces_leaked_at_close),
		SubmeshesLeakedAtClose: uint64(s.submeshes_leaked_at_close),
		Submits:                uint64(s.submits), TracesCaptured: uint64(s.traces_captured),
		TracesReplayed: uint64(s.traces_replayed), TracesReleased: uint64(s.traces_released),
		BuffersDeallocated: uint64(s.buffers_deallocated), RetainedDeallocIgnored: uint64(s.retained_dealloc_ignored),
		InputsConsumed: uint64(s.inputs_consumed),
		LastMesh:       MeshShape{Rows: int(s.last_mesh_rows), Cols: int(s.last_mesh_cols)},
		LastCQs:        int(s.last_num_hw_cqs), LastDispatch: int(s.last_dispatch), LastFabric: int(s.last_fabric),
		LastProgramCache: s.last_program_cache != 0,
		LastL1Small:      uint64(s.last_l1_small_size), LastTraceRegion: uint64(s.last_trace_region_size),
	}
	for i := 0; i < int(s.last_num_device_ids); i++ {
		out.LastDeviceIDs = append(out.LastDeviceIDs, int(s.last_device_ids[i]))
	}
	return out, true
}

// FakeSubmits returns the fake tt::runtime's submit log from submit index from on (the last
// 4096 submits are kept; older ones are skipped) and the index after the last; ok is false
// unless the metal backend is linked against the fake.
func FakeSubmits(from uint64) (log []FakeSubmit, next uint64, ok bool) {
	var n C.uint64_t
	if C.ttb_fake_submit_count(&n) != 0 {
		return nil, 0, false
	}
	for i := from; i < uint64(n); i++ {
		var s C.tt_fake_runtime_submit
		if C.ttb_fake_submit(C.uint64_t(i), &s) != 0 {
			continue
		}
		rec := FakeSubmit{File: C.GoString(&s.file[0]), Program: C.GoString(&s.program[0]),
			Mesh: MeshShape{Rows: int(s.mesh_rows), Cols: int(s.mesh_cols)}, Submesh: s.mesh_is_submesh != 0, Trace: FakeTrace(s.trace)}
		for k := 0; k < int(s.num_inputs); k++ {
			in := s.inputs[k]
			shape := make([]int, int(in.rank))
			for d := range shape {
				shape[d] = int(in.shape[d])
			}
			rec.Inputs = append(rec.Inputs, FakeInput{DType: C.GoString(&in.dtype[0]), Tile: in.tile != 0, Shape: shape, Hash: uint64(in.hash)})
		}
		log = append(log, rec)
	}
	return log, uint64(n), true
}
