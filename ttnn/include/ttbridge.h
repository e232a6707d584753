/*
 * ttbridge.h - the C ABI between the Go server and a Tenstorrent device backend.
 *
 * Two backends implement it: "sim" (C, always built) and "metal" (C++ over the tt-mlir
 * runtime, built only with the Go build tag `ttnn`). One binary may carry both; the caller
 * picks one with ttb_select_backend() before any other call.
 *
 * Rules:
 *  - Opaque handles, plain C types. Every call returns a ttb_status; on failure the text is in
 *    ttb_last_error(), which is thread-local and valid until the next ttb_* call on that thread.
 *  - No C++ exception crosses this boundary.
 *  - Every queue-touching call names its command queue (cq) explicitly; there is no
 *    "current queue of this thread".
 *  - A device handle is used from one OS thread at a time (the Go wrapper pins one thread per
 *    device). Tensors and traces belong to the device that made them; ttb_device_close frees
 *    every tensor and trace of that device. Programs are not bound to a device.
 *  - After TTB_DEVICE_LOST (or TTB_TIMEOUT) the device is poisoned: every later call on it
 *    returns TTB_DEVICE_LOST, and the process must exit (the chips need a reset).
 *  - One open device (mesh) per process. Several device groups share a process the way
 *    TT-Metal allows it: one parent mesh over the visible chips, carved into submeshes
 *    (ttb_submesh_create). A submesh is a device handle of its own: its tensors, program runs,
 *    traces, events and memory/trace-region accounting are its own, its chips must lie inside
 *    the parent and must not overlap a live sibling, and it shares the parent's open options
 *    (L1 small size, trace region per chip, command queues, dispatch, fabric: TT-Metal keeps
 *    one set per process). Submeshes nest. Each submesh may be driven from its own thread.
 *    Closing (or releasing) a device that still has live submeshes is TTB_BUSY: release the
 *    submeshes first. A lost device poisons the process: no new device or submesh opens.
 */
#ifndef TTBRIDGE_H
#define TTBRIDGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TTB_ABI_VERSION 2 /* 2: submeshes, sim_latency_scale */

typedef enum {
  TTB_OK = 0,
  TTB_INVALID_ARGUMENT = 1, /* bad argument, shape, size, handle or options */
  TTB_OUT_OF_MEMORY = 2,    /* DRAM/L1 allocator or trace region exhausted */
  TTB_TIMEOUT = 3,          /* dispatch timeout fired; device is poisoned */
  TTB_DEVICE_LOST = 4,      /* device unusable; process must exit and chips be reset */
  TTB_BUSY = 5,             /* resource in use, or call not allowed in the current state */
  TTB_INTERNAL = 6,         /* any other backend failure */
  TTB_NOT_FOUND = 7,        /* file, function, trace or event does not exist */
  TTB_UNSUPPORTED = 8       /* backend does not implement this */
} ttb_status;

typedef struct ttb_device ttb_device;   /* one open mesh (device group) */
typedef struct ttb_program ttb_program; /* one loaded program (a .ttnn binary or sim manifest) */
typedef struct ttb_tensor ttb_tensor;   /* a tensor on a device (or host) */
typedef uint64_t ttb_trace_id;
typedef uint64_t ttb_event_id;

typedef enum { TTB_BF16 = 0, TTB_F32 = 1, TTB_U32 = 2, TTB_I32 = 3, TTB_U16 = 4, TTB_U8 = 5 } ttb_dtype;
typedef enum { TTB_ROW_MAJOR = 0, TTB_TILE = 1 } ttb_layout;
typedef enum { TTB_DRAM = 0, TTB_L1 = 1, TTB_HOST = 2 } ttb_placement;
typedef enum { TTB_DISPATCH_AUTO = 0, TTB_DISPATCH_WORKER = 1, TTB_DISPATCH_ETH = 2 } ttb_dispatch;
typedef enum { TTB_FABRIC_OFF = 0, TTB_FABRIC_1D = 1, TTB_FABRIC_1D_RING = 2, TTB_FABRIC_2D = 3 } ttb_fabric;
typedef enum { TTB_MEM_DRAM = 0, TTB_MEM_L1 = 1, TTB_MEM_L1_SMALL = 2, TTB_MEM_TRACE = 3 } ttb_mem_kind;

#define TTB_MAX_RANK 8
#define TTB_MAX_CHIPS 64
#define TTB_NAME_MAX 64

typedef struct {
  uint32_t struct_size;          /* sizeof(ttb_device_options) */
  uint32_t mesh_rows, mesh_cols; /* 0,0 = one row of all visible chips */
  const int32_t *device_ids;     /* optional; prefer TT_VISIBLE_DEVICES */
  uint32_t num_device_ids;
  uint64_t l1_small_size;        /* bytes */
  uint64_t trace_region_size;    /* bytes; 0 = dynamic trace allocation */
  uint32_t num_command_queues;   /* 1 or 2 */
  uint32_t dispatch;             /* ttb_dispatch */
  uint32_t fabric;               /* ttb_fabric; process-global, set before the open */
  uint32_t enable_program_cache; /* 0/1 */
  double sim_latency_scale;      /* sim only: latency scale, 0 = 1; TTB_SIM_LATENCY_SCALE wins */
} ttb_device_options;

typedef struct {
  uint32_t struct_size;          /* sizeof(ttb_submesh_options) */
  uint32_t mesh_rows, mesh_cols; /* shape of the submesh, both > 0 */
  uint32_t row_offset, col_offset; /* position of its first chip in the parent mesh */
  double sim_latency_scale;      /* sim only: 0 = the parent's; TTB_SIM_LATENCY_SCALE wins */
} ttb_submesh_options;

typedef struct {
  char name[TTB_NAME_MAX]; /* empty when unknown */
  uint32_t dtype;          /* ttb_dtype */
  uint32_t rank;
  uint32_t shape[TTB_MAX_RANK];
} ttb_tensor_desc;

typedef struct {
  char backend[16];          /* "sim" or "metal" */
  char arch[16];             /* "wormhole_b0", "blackhole" */
  uint32_t mesh_rows, mesh_cols, num_chips, num_command_queues;
  int32_t device_ids[TTB_MAX_CHIPS];
  uint64_t l1_small_size, trace_region_size;
  uint32_t is_submesh, row_offset, col_offset; /* position in the parent (submeshes only) */
  uint64_t dram_bytes_per_channel, l1_bytes_per_core;
  uint32_t dram_channels;
} ttb_device_info;

typedef struct {
  uint64_t total, allocated, largest_free; /* bytes, summed over the mesh */
} ttb_mem_stats;

typedef struct {
  uint64_t devices, programs, tensors, traces, tensor_bytes; /* live handles of this backend */
} ttb_live_counts;

/* One backend = one table. The dispatch functions below forward to the selected table. */
typedef struct ttb_backend {
  uint32_t abi_version;
  const char *name;
  ttb_status (*runtime_init)(void);
  ttb_status (*num_visible_chips)(uint32_t *out);
  ttb_status (*device_open)(const ttb_device_options *opt, ttb_device **out);
  ttb_status (*device_close)(ttb_device *dev);
  ttb_status (*device_info)(ttb_device *dev, ttb_device_info *out);
  ttb_status (*device_mem)(ttb_device *dev, uint32_t kind, ttb_mem_stats *out);
  ttb_status (*device_sync)(ttb_device *dev, uint32_t cq);
  ttb_status (*program_load_file)(const char *path, ttb_program **out);
  ttb_status (*program_free)(ttb_program *p);
  ttb_status (*program_num_functions)(ttb_program *p, uint32_t *out);
  ttb_status (*program_function_name)(ttb_program *p, uint32_t fn, char *buf, size_t cap);
  ttb_status (*program_io)(ttb_program *p, uint32_t fn, int is_output, ttb_tensor_desc *descs,
                           uint32_t cap, uint32_t *n);
  ttb_status (*tensor_upload)(ttb_device *dev, const ttb_tensor_desc *d, const void *src, size_t bytes,
                              uint32_t placement, uint32_t layout, int retain, uint32_t cq,
                              ttb_tensor **out);
  ttb_status (*tensor_alloc)(ttb_device *dev, const ttb_tensor_desc *d, uint32_t placement,
                             uint32_t layout, ttb_tensor **out);
  ttb_status (*tensor_write)(ttb_tensor *t, const void *src, size_t bytes, uint32_t cq);
  ttb_status (*tensor_read)(ttb_tensor *t, void *dst, size_t bytes, uint32_t cq);
  ttb_status (*tensor_desc)(ttb_tensor *t, ttb_tensor_desc *out);
  ttb_status (*tensor_free)(ttb_tensor *t);
  ttb_status (*program_run)(ttb_device *dev, ttb_program *p, uint32_t fn, ttb_tensor *const *in,
                            uint32_t n_in, uint32_t cq, ttb_tensor **out, uint32_t out_cap,
                            uint32_t *n_out);
  ttb_status (*trace_begin)(ttb_device *dev, uint32_t cq, ttb_trace_id *out);
  ttb_status (*trace_end)(ttb_device *dev, ttb_trace_id id, uint32_t cq);
  ttb_status (*trace_replay)(ttb_device *dev, ttb_trace_id id, uint32_t cq, int blocking);
  ttb_status (*trace_release)(ttb_device *dev, ttb_trace_id id);
  ttb_status (*event_record)(ttb_device *dev, uint32_t cq, ttb_event_id *out);
  ttb_status (*event_wait)(ttb_device *dev, uint32_t cq, ttb_event_id ev);
  ttb_status (*event_synchronize)(ttb_device *dev, ttb_event_id ev);
  ttb_status (*live_counts)(ttb_live_counts *out);
  ttb_status (*submesh_create)(ttb_device *parent, const ttb_submesh_options *opt, ttb_device **out);
  ttb_status (*submesh_release)(ttb_device *sub);
} ttb_backend;

int ttb_abi_version(void);
const char *ttb_last_error(void);
/* Backends and the dispatch layer report errors through this (printf-style; thread-local). */
ttb_status ttb_fail(ttb_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void ttb_clear_error(void);

/* Backend tables. ttb_metal_backend exists only in builds with TTB_WITH_METAL. */
const ttb_backend *ttb_sim_backend(void);
#ifdef TTB_WITH_METAL
const ttb_backend *ttb_metal_backend(void);
#endif
/* Comma-separated names of the backends compiled in, e.g. "sim,metal". */
const char *ttb_backends_available(void);

/* Process level. ttb_select_backend must come first; selecting another backend later is TTB_BUSY. */
ttb_status ttb_select_backend(const char *name);
ttb_status ttb_runtime_init(void);
ttb_status ttb_num_visible_chips(uint32_t *out);
ttb_status ttb_live_counts_get(ttb_live_counts *out);

/* Devices. */
ttb_status ttb_device_open(const ttb_device_options *opt, ttb_device **out);
ttb_status ttb_device_close(ttb_device *dev);
ttb_status ttb_device_info_get(ttb_device *dev, ttb_device_info *out);
ttb_status ttb_device_mem(ttb_device *dev, uint32_t kind, ttb_mem_stats *out);
ttb_status ttb_device_sync(ttb_device *dev, uint32_t cq);
/* Submeshes: a rows x cols part of an open mesh (see the rules at the top). ttb_device_close on
 * a submesh is TTB_INVALID_ARGUMENT; release it with ttb_submesh_release, which frees its
 * tensors and traces like ttb_device_close. */
ttb_status ttb_submesh_create(ttb_device *parent, const ttb_submesh_options *opt, ttb_device **out);
ttb_status ttb_submesh_release(ttb_device *sub);

/* Programs. */
ttb_status ttb_program_load_file(const char *path, ttb_program **out);
ttb_status ttb_program_free(ttb_program *p);
ttb_status ttb_program_num_functions(ttb_program *p, uint32_t *out);
ttb_status ttb_program_function_name(ttb_program *p, uint32_t fn, char *buf, size_t cap);
ttb_status ttb_program_io(ttb_program *p, uint32_t fn, int is_output, ttb_tensor_desc *descs, uint32_t cap,
                          uint32_t *n);

/* Tensors. Host data is row-major, little-endian, bf16 as raw uint16 bits. */
ttb_status ttb_tensor_upload(ttb_device *dev, const ttb_tensor_desc *d, const void *src, size_t bytes,
                             uint32_t placement, uint32_t layout, int retain, uint32_t cq, ttb_tensor **out);
ttb_status ttb_tensor_alloc(ttb_device *dev, const ttb_tensor_desc *d, uint32_t placement, uint32_t layout,
                            ttb_tensor **out);
ttb_status ttb_tensor_write(ttb_tensor *t, const void *src, size_t bytes, uint32_t cq);
ttb_status ttb_tensor_read(ttb_tensor *t, void *dst, size_t bytes, uint32_t cq);
ttb_status ttb_tensor_desc_get(ttb_tensor *t, ttb_tensor_desc *out);
ttb_status ttb_tensor_free(ttb_tensor *t);

/* Execution. Outputs are new tensors owned by the caller (free them). */
ttb_status ttb_program_run(ttb_device *dev, ttb_program *p, uint32_t fn, ttb_tensor *const *in, uint32_t n_in,
                           uint32_t cq, ttb_tensor **out, uint32_t out_cap, uint32_t *n_out);

/* Explicit trace: capture the program runs issued between begin and end, replay them later. */
ttb_status ttb_trace_begin(ttb_device *dev, uint32_t cq, ttb_trace_id *out);
ttb_status ttb_trace_end(ttb_device *dev, ttb_trace_id id, uint32_t cq);
ttb_status ttb_trace_replay(ttb_device *dev, ttb_trace_id id, uint32_t cq, int blocking);
ttb_status ttb_trace_release(ttb_device *dev, ttb_trace_id id);

/* Events for ordering two command queues. */
ttb_status ttb_event_record(ttb_device *dev, uint32_t cq, ttb_event_id *out);
ttb_status ttb_event_wait(ttb_device *dev, uint32_t cq, ttb_event_id ev);
ttb_status ttb_event_synchronize(ttb_device *dev, ttb_event_id ev);

/* Helpers shared by backends. */
size_t ttb_dtype_size(uint32_t dtype);
/* Parses a TT_VISIBLE_DEVICES value the way the UMD does (is_set=0: unset = all chips;
 * "" = none; otherwise comma-separated chip indexes below total, no duplicates). */
ttb_status ttb_parse_visible_devices(const char *value, int is_set, uint32_t total, int32_t *ids,
                                     uint32_t cap, uint32_t *n);

#ifdef __cplusplus
}
#endif
#endif /* TTBRIDGE_H */
