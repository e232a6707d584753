/*
 * tt_fake_runtime.h - the control surface of the test-only fake of tt::runtime
 * (ttnn/fakert/fake_runtime.cc). The fake is built into a libTTMLIRRuntime.so by
 * scripts/check-metal.sh so that the metal backend (ttb_metal.cc, build tag `ttnn`) links and
 * runs without a TT-Metal install. Nothing here is part of tt-mlir's API: these symbols exist
 * only in the fake, and the Go side finds them through a weak reference (absent = real runtime).
 */
#ifndef TT_FAKE_RUNTIME_H
#define TT_FAKE_RUNTIME_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  /* live objects */
  uint64_t meshes_open;        /* parent meshes opened and not closed */
  uint64_t submeshes_open;     /* submeshes created and not released */
  uint64_t device_buffers;     /* device tensors allocated (on any mesh) */
  uint64_t device_bytes;       /* their physical bytes */
  uint64_t host_tensors;       /* host tensors with owned storage alive */
  uint64_t traces;             /* entries in the meshes' trace caches */
  /* accounting at close: what closeMeshDevice / releaseSubMeshDevice found still there */
  uint64_t buffers_leaked_at_close;
  uint64_t traces_leaked_at_close;
  uint64_t submeshes_leaked_at_close;
  /* activity */
  uint64_t submits, traces_captured, traces_replayed, traces_released;
  uint64_t buffers_deallocated;      /* deallocateTensor that freed a device buffer */
  uint64_t retained_dealloc_ignored; /* deallocateTensor on a retained tensor (a no-op) */
  uint64_t inputs_consumed;          /* non-retained program inputs the program deallocated */
  /* the MeshDeviceOptions of the last openMeshDevice, as given (0 = not given) */
  uint32_t last_mesh_rows, last_mesh_cols, last_num_hw_cqs, last_program_cache;
  uint32_t last_dispatch; /* 0 not given, 1 Worker, 2 Ethernet */
  uint32_t last_fabric;   /* tt::runtime::FabricConfig in force at the open */
  uint64_t last_l1_small_size, last_trace_region_size;
  uint32_t last_num_device_ids;
  int32_t last_device_ids[64];
} tt_fake_runtime_stats;

/* Fills *out; returns 0. */
int tt_fake_runtime_stats_get(tt_fake_runtime_stats *out);

/* One submit as the fake received it (the submit log): what ran, where, on what. */
#define TT_FAKE_MAX_INPUTS 8
#define TT_FAKE_MAX_RANK 8
#define TT_FAKE_SUBMIT_LOG 4096 /* the last submits kept */
typedef struct {
  char file[96];    /* the .ttnn file's base name (truncated) */
  char program[64]; /* the program (entry point) it ran */
  uint32_t mesh_rows, mesh_cols, mesh_is_submesh;
  uint32_t trace; /* 0 not traced, 1 the trace was captured, 2 replayed */
  uint32_t num_inputs;
  struct {
    char dtype[16]; /* tt::target::DataType's name, e.g. "BFloat16" */
    uint32_t tile;  /* 1 tile layout, 0 row-major */
    uint32_t rank;
    uint32_t shape[TT_FAKE_MAX_RANK];
    uint64_t hash; /* FNV-1a of the first and last 32 KiB of its device bytes, and their size */
  } inputs[TT_FAKE_MAX_INPUTS];
} tt_fake_runtime_submit;

/* The number of submits since the process started. */
uint64_t tt_fake_runtime_submit_count(void);
/* Fills *out with submit i (0-based) and returns 0 if it is among the last TT_FAKE_SUBMIT_LOG;
 * returns -1 otherwise. */
int tt_fake_runtime_submit_get(uint64_t i, tt_fake_runtime_submit *out);

#ifdef __cplusplus
}
#endif
#endif
