// Simulator backend of the C ABI (always built). It keeps the hardware's contracts (visible
// chips, one mesh per process carved into submeshes, mesh limits, trace rules, retain
// semantics, memory accounting)
// and models latency from a program manifest, with fault injection for supervisor tests.

#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "include/ttbridge.h"

/* Scripted Whisper decoder steps (ttb_sim_script.c). */
struct ttb_sim_script;
typedef struct { const ttb_tensor_desc *desc; void *data; size_t bytes; } ttb_sim_buf;
ttb_status ttb_sim_script_open(struct ttb_sim_script **out);
void ttb_sim_script_free(struct ttb_sim_script *s);
ttb_status ttb_sim_script_apply(struct ttb_sim_script *s, const ttb_sim_buf *in, uint32_t n_in, const ttb_sim_buf *out, uint32_t n_out, int *handled);
int ttb_sim_next_line(char **cursor, int *line, char **key, char **rest);

#define SIM_DEV_MAGIC 0x7474626465766963ULL
#define SIM_TENSOR_MAGIC 0x74746274656e736fULL
#define SIM_PROG_MAGIC 0x7474627072676d00ULL
#define SIM_MAX_IO 16
#define SIM_MAX_FNS 32
#define SIM_EVENTS 256
#define SIM_MANIFEST_MAX (1 << 20)

/* Wormhole n150 figures used by the memory model. */
#define SIM_DRAM_CHANNELS 12u
#define SIM_DRAM_PER_CHANNEL (1ull << 30)
#define SIM_L1_PER_CORE 1499136ull
#define SIM_CORES 64u

typedef struct {
  char name[TTB_NAME_MAX];
  double latency_ms;
  uint64_t trace_bytes;
  uint32_t n_in, n_out;
  ttb_tensor_desc in[SIM_MAX_IO], out[SIM_MAX_IO];
} sim_fn;

struct ttb_program {
  uint64_t magic;
  uint64_t id;
  char name[TTB_NAME_MAX];
  uint32_t mesh_rows, mesh_cols; /* 0,0 = any mesh */
  uint32_t n_fn;
  sim_fn fns[SIM_MAX_FNS];
  uint32_t trace_refs; /* runs recorded in live traces */
  struct ttb_sim_script *script; /* decoder-step state and TTB_SIM_SCRIPT (ttb_sim_script.c) */
};

struct ttb_tensor {
  uint64_t magic;
  ttb_device *dev;
  ttb_tensor_desc desc;
  uint32_t placement, layout;
  int retain;
  int consumed; /* non-retained input deallocated by a program run */
  char consumed_by[2 * TTB_NAME_MAX + 2];
  size_t bytes;
  uint8_t *data;
  uint64_t gen; /* changes whenever data does (sim_gen): lets a trace replay skip unchanged runs */
  /* A computed output is generated when first needed (read, or used as an input), not when
   * computed: an output the host frees unread (a VAE's 1024² image in mock mode) costs nothing.
   * lazy_h and lazy_o are compute's hash and output index; the bytes are the same either way. */
  int lazy;
  uint64_t lazy_h;
  uint32_t lazy_o;
  uint32_t trace_refs;
  ttb_tensor *prev, *next;
};

/* sim_gen numbers tensor contents: every write, upload and computed output takes a new value,
 * unique across tensors and devices. */
static uint64_t sim_gen;
static uint64_t next_gen(void) { return __atomic_add_fetch(&sim_gen, 1, __ATOMIC_RELAXED); }
static void materialize(ttb_tensor *t);

typedef struct {
  ttb_program *p;
  uint32_t fn, n_in, n_out;
  ttb_tensor *in[SIM_MAX_IO], *out[SIM_MAX_IO];
  /* Memo of the last replay's compute: the outputs are a deterministic function of the
   * inputs, so when neither the inputs nor the outputs changed since (same generations) and
   * no decoder-step script (which keeps state) produced them, they already hold this run's
   * result and a replay only spends the run's latency. Host CPU only: nothing observable
   * changes (a padded device batch of 16 hashes its 15 unchanged padding images once, not on
   * every replay). */
  int memo;
  uint64_t in_gen[SIM_MAX_IO], out_gen[SIM_MAX_IO];
} sim_run;

typedef struct sim_trace {
  ttb_trace_id id;
  uint32_t cq;
  int ended;
  uint64_t bytes;
  sim_run *runs;
  uint32_t n_runs, cap_runs;
  struct sim_trace *next;
} sim_trace;

typedef struct {
  double fail_prob;
  double hang_seconds;
  uint64_t hang_after, abort_after, lost_after;
  double op_timeout;
  double latency_scale;
  uint64_t rng;
} sim_faults;

struct ttb_device {
  uint64_t magic;
  uint32_t rows, cols, nchips, ncq, dispatch, fabric, program_cache;
  int32_t ids[TTB_MAX_CHIPS];
  uint64_t l1_small_size, trace_region_size;
  uint64_t dram_total, dram_used, l1_total, l1_used, trace_used;
  int poisoned;
  char poison_msg[256];
  ttb_tensor *tensors;
  uint64_t *compiled; /* (program id << 8) | fn of functions that ran on this device */
  uint32_t n_compiled, cap_compiled;
  sim_trace *traces;
  sim_trace *capturing;
  ttb_trace_id next_trace;
  ttb_event_id next_event;
  uint64_t runs; /* executions so far, for the Nth-run faults */
  sim_faults f;
  /* Submeshes. parent, children and siblings are guarded by g_mu. */
  ttb_device *parent;      /* NULL for a root device */
  uint32_t row_off, col_off; /* position in the parent */
  ttb_device *children;    /* live submeshes of this device */
  ttb_device *sibling;     /* next live submesh of the same parent */
};

/* Process state. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_inited;
static uint32_t g_total_chips;
static int32_t g_visible[TTB_MAX_CHIPS];
static uint32_t g_nvisible;
static ttb_device *g_open;
static int g_lost;
static uint64_t g_next_prog_id = 1;
static uint64_t c_devices, c_programs, c_tensors, c_traces, c_bytes;

static void count_add(uint64_t *c, int64_t d) { __atomic_add_fetch(c, (uint64_t)d, __ATOMIC_SEQ_CST); }

/* ---------- helpers ---------- */

static const char *dtype_name(uint32_t d) {
  static const char *n[] = {"bf16", "f32", "u32", "i32", "u16", "u8"};
  return d < 6 ? n[d] : "?";
}

static int dtype_parse(const char *s, uint32_t *out) {
  static const char *n[] = {"bf16", "f32", "u32", "i32", "u16", "u8"};
  for (uint32_t i = 0; i < 6; i++)
    if (strcmp(s, n[i]) == 0) {
      *out = i;
      return 1;
    }
  return 0;
}

static void shape_str(const ttb_tensor_desc *d, char *buf, size_t cap) {
  size_t o = (size_t)snprintf(buf, cap, "%s[", dtype_name(d->dtype));
  for (uint32_t i = 0; i < d->rank && o < cap; i++) o += (size_t)snprintf(buf + o, cap - o, i ? ",%u" : "%u", d->shape[i]);
  if (o < cap) snprintf(buf + o, cap - o, "]");
}

static ttb_status desc_bytes(const ttb_tensor_desc *d, size_t *out) {
  size_t es = ttb_dtype_size(d->dtype);
  if (es == 0) return ttb_fail(TTB_INVALID_ARGUMENT, "unknown dtype %u", d->dtype);
  if (d->rank == 0 || d->rank > TTB_MAX_RANK) return ttb_fail(TTB_INVALID_ARGUMENT, "rank %u not in 1..%d", d->rank, TTB_MAX_RANK);
  uint64_t n = es;
  for (uint32_t i = 0; i < d->rank; i++) {
    if (d->shape[i] == 0) return ttb_fail(TTB_INVALID_ARGUMENT, "dimension %u is zero", i);
    n *= d->shape[i];
    if (n > (1ull << 40)) return ttb_fail(TTB_INVALID_ARGUMENT, "tensor larger than 1 TiB");
  }
  *out = (size_t)n;
  return TTB_OK;
}

static int desc_match(const ttb_tensor_desc *a, const ttb_tensor_desc *b) {
  if (a->dtype != b->dtype || a->rank != b->rank) return 0;
  for (uint32_t i = 0; i < a->rank; i++)
    if (a->shape[i] != b->shape[i]) return 0;
  return 1;
}

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Input hash: 8 bytes per step (the inputs reach megabytes), then the byte tail. */
static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const uint8_t *b = p;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, b + i, 8);
    h = (h ^ w) * 0x100000001b3ULL;
    h ^= h >> 29;
  }
  for (; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
  return h;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_seconds(double s) {
  if (!(s > 0)) return;
  struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static ttb_status env_double(const char *name, double def, double lo, double hi, double *out) {
  const char *v = getenv(name);
  *out = def;
  if (v == NULL || *v == 0) return TTB_OK;
  char *end;
  errno = 0;
  double d = strtod(v, &end);
  if (errno != 0 || *end != 0 || !(d >= lo && d <= hi))
    return ttb_fail(TTB_INVALID_ARGUMENT, "%s=\"%s\": want a number in [%g, %g]", name, v, lo, hi);
  *out = d;
  return TTB_OK;
}

static ttb_status env_u64(const char *name, uint64_t def, uint64_t hi, uint64_t *out) {
  const char *v = getenv(name);
  *out = def;
  if (v == NULL || *v == 0) return TTB_OK;
  char *end;
  errno = 0;
  unsigned long long d = strtoull(v, &end, 10);
  if (errno != 0 || *end != 0 || v[0] == '-' || d > hi)
    return ttb_fail(TTB_INVALID_ARGUMENT, "%s=\"%s\": want an integer in [0, %llu]", name, v, (unsigned long long)hi);
  *out = d;
  return TTB_OK;
}

/* ---------- process level ---------- */

static ttb_status sim_runtime_init(void) {
  pthread_mutex_lock(&g_mu);
  ttb_status st = TTB_OK;
  if (!g_inited) {
    uint64_t total;
    st = env_u64("MOCK_DEVICES_COUNT", 5, TTB_MAX_CHIPS, &total);
    if (st == TTB_OK) {
      const char *vis = getenv("TT_VISIBLE_DEVICES");
      st = ttb_parse_visible_devices(vis ? vis : "", vis != NULL, (uint32_t)total, g_visible, TTB_MAX_CHIPS, &g_nvisible);
      if (st == TTB_OK) {
        g_total_chips = (uint32_t)total;
        g_inited = 1; /* like the UMD: the environment is read once, at first use */
      }
    }
  }
  pthread_mutex_unlock(&g_mu);
  return st;
}

static ttb_status need_init(void) {
  pthread_mutex_lock(&g_mu);
  int ok = g_inited;
  pthread_mutex_unlock(&g_mu);
  return ok ? TTB_OK : ttb_fail(TTB_INVALID_ARGUMENT, "ttb_runtime_init has not been called");
}

static ttb_status sim_num_visible_chips(uint32_t *out) {
  if (out == NULL) return ttb_fail(TTB_INVALID_ARGUMENT, "out is NULL");
  ttb_status st = need_init();
  if (st) return st;
  *out = g_nvisible;
  return TTB_OK;
}

static ttb_status sim_live_counts(ttb_live_counts *out) {
  if (out == NULL) return ttb_fail(TTB_INVALID_ARGUMENT, "out is NULL");
  out->devices = __atomic_load_n(&c_devices, __ATOMIC_SEQ_CST);
  out->programs = __atomic_load_n(&c_programs, __ATOMIC_SEQ_CST);
  out->tensors = __atomic_load_n(&c_tensors, __ATOMIC_SEQ_CST);
  out->traces = __atomic_load_n(&c_traces, __ATOMIC_SEQ_CST);
  out->tensor_bytes = __atomic_load_n(&c_bytes, __ATOMIC_SEQ_CST);
  return TTB_OK;
}

/* ---------- devices ---------- */

/* lost_ancestor is dev or the nearest of its parents that was lost, or NULL. A device's
 * parents outlive it (a device with live submeshes cannot be closed). */
static ttb_device *lost_ancestor(ttb_device *dev) {
  for (ttb_device *d = dev; d != NULL; d = d->parent)
    if (__atomic_load_n(&d->poisoned, __ATOMIC_ACQUIRE)) return d;
  return NULL;
}

static ttb_status check_dev(ttb_device *dev) {
  if (dev == NULL || dev->magic != SIM_DEV_MAGIC) return ttb_fail(TTB_INVALID_ARGUMENT, "invalid device handle");
  ttb_device *lost = lost_ancestor(dev);
  if (lost != NULL)
    return ttb_fail(TTB_DEVICE_LOST, "device lost: %s%s (exit the process and reset the chips)", lost->poison_msg,
                    lost == dev ? "" : " (on the parent mesh)");
  return TTB_OK;
}

static ttb_status check_cq(ttb_device *dev, uint32_t cq) {
  if (cq >= dev->ncq)
    return ttb_fail(TTB_INVALID_ARGUMENT, "command queue %u does not exist (device opened with %u)", cq, dev->ncq);
  return TTB_OK;
}

static ttb_status poison(ttb_device *dev, ttb_status st, const char *msg) {
  snprintf(dev->poison_msg, sizeof dev->poison_msg, "%s", msg);
  __atomic_store_n(&dev->poisoned, 1, __ATOMIC_RELEASE);
  pthread_mutex_lock(&g_mu);
  g_lost = 1;
  pthread_mutex_unlock(&g_mu);
  return ttb_fail(st, "%s; device is now unusable (exit the process and reset the chips)", msg);
}

/* read_faults reads the fault and latency settings of one device; scale is the latency scale
 * the caller asked for (used when TTB_SIM_LATENCY_SCALE is not set). */
static ttb_status read_faults(sim_faults *f, double scale) {
  ttb_status st;
  uint64_t seed;
  if ((st = env_double("TTB_SIM_FAIL_PROB", 0, 0, 1, &f->fail_prob))) return st;
  if ((st = env_double("TTB_SIM_HANG_SECONDS", 0, 0, 1e6, &f->hang_seconds))) return st;
  if ((st = env_u64("TTB_SIM_HANG_AFTER", 1, UINT64_MAX, &f->hang_after))) return st;
  if ((st = env_u64("TTB_SIM_ABORT", 0, UINT64_MAX, &f->abort_after))) return st;
  if ((st = env_u64("TTB_SIM_DEVICE_LOST", 0, UINT64_MAX, &f->lost_after))) return st;
  if ((st = env_double("TT_METAL_OPERATION_TIMEOUT_SECONDS", 0, 0, 1e6, &f->op_timeout))) return st;
  if ((st = env_double("TTB_SIM_LATENCY_SCALE", scale, 0, 1000, &f->latency_scale))) return st;
  if ((st = env_u64("TTB_SIM_SEED", 1, UINT64_MAX, &seed))) return st;
  f->rng = seed;
  return TTB_OK;
}

static ttb_status sim_device_open(const ttb_device_options *opt, ttb_device **out) {
  if (opt == NULL || out == NULL) return ttb_fail(TTB_INVALID_ARGUMENT, "options or out is NULL");
  *out = NULL;
  if (opt->struct_size < sizeof(ttb_device_options))
    return ttb_fail(TTB_INVALID_ARGUMENT, "options struct_size %u < %zu", opt->struct_size, sizeof(ttb_device_options));
  ttb_status st = need_init();
  if (st) return st;
  if (opt->num_command_queues != 1 && opt->num_command_queues != 2)
    return ttb_fail(TTB_INVALID_ARGUMENT, "num_command_queues is %u; TT-Metal supports 1 or 2", opt->num_command_queues);
  if (opt->dispatch > TTB_DISPATCH_ETH) return ttb_fail(TTB_INVALID_ARGUMENT, "unknown dispatch core type %u", opt->dispatch);
  if (opt->fabric > TTB_FABRIC_2D) return ttb_fail(TTB_INVALID_ARGUMENT, "unknown fabric config %u", opt->fabric);
  uint32_t rows = opt->mesh_rows, cols = opt->mesh_cols;
  if ((rows == 0) != (cols == 0)) return ttb_fail(TTB_INVALID_ARGUMENT, "mesh %ux%u: give both rows and cols, or neither", rows, cols);
  if (rows == 0) {
    rows = 1;
    cols = g_nvisible;
  }
  uint64_t need = (uint64_t)rows * cols;
  if (need == 0) return ttb_fail(TTB_INVALID_ARGUMENT, "no chips are visible (TT_VISIBLE_DEVICES is empty)");
  if (need > g_nvisible)
    return ttb_fail(TTB_INVALID_ARGUMENT, "mesh %ux%u needs %llu chips but only %u are visible (MOCK_DEVICES_COUNT=%u, TT_VISIBLE_DEVICES=%s)",
                    rows, cols, (unsigned long long)need, g_nvisible, g_total_chips,
                    getenv("TT_VISIBLE_DEVICES") ? getenv("TT_VISIBLE_DEVICES") : "<unset>");
  int32_t ids[TTB_MAX_CHIPS];
  if (opt->num_device_ids > 0) {
    if (opt->device_ids == NULL) return ttb_fail(TTB_INVALID_ARGUMENT, "num_device_ids is %u but device_ids is NULL", opt->num_device_ids);
    if (opt->num_device_ids != need)
      return ttb_fail(TTB_INVALID_ARGUMENT, "%u device ids given for a %ux%u mesh", opt->num_device_ids, rows, cols);
    for (uint32_t i = 0; i < need; i++) {
      int32_t id = opt->device_ids[i];
      if (id < 0 || (uint32_t)id >= g_nvisible)
        return ttb_fail(TTB_INVALID_ARGUMENT, "device id %d is not visible (logical ids 0..%u)", id, g_nvisible - 1);
      for (uint32_t j = 0; j < i; j++)
        if (opt->device_ids[j] == id) return ttb_fail(TTB_INVALID_ARGUMENT, "device id %d listed twice", id);
      ids[i] = g_visible[id];
    }
  } else {
    for (uint32_t i = 0; i < need; i++) ids[i] = g_visible[i];
  }
  uint32_t dispatch = opt->dispatch == TTB_DISPATCH_AUTO ? TTB_DISPATCH_ETH : opt->dispatch;
  if (opt->num_command_queues == 2 && need > 1 && dispatch == TTB_DISPATCH_WORKER)
    return ttb_fail(TTB_INVALID_ARGUMENT, "a multi-chip mesh with 2 command queues needs ethernet dispatch");
  if (opt->l1_small_size >= SIM_L1_PER_CORE)
    return ttb_fail(TTB_INVALID_ARGUMENT, "l1_small_size %llu exceeds L1 per core (%llu)", (unsigned long long)opt->l1_small_size, SIM_L1_PER_CORE);
  uint64_t dram_chip = SIM_DRAM_CHANNELS * SIM_DRAM_PER_CHANNEL;
  if (opt->trace_region_size >= dram_chip)
    return ttb_fail(TTB_OUT_OF_MEMORY, "trace_region_size %llu does not fit in DRAM (%llu per chip)", (unsigned long long)opt->trace_region_size, (unsigned long long)dram_chip);
  if (!(opt->sim_latency_scale >= 0 && opt->sim_latency_scale <= 1000))
    return ttb_fail(TTB_INVALID_ARGUMENT, "sim_latency_scale %g not in [0, 1000]", opt->sim_latency_scale);
  sim_faults f;
  if ((st = read_faults(&f, opt->sim_latency_scale > 0 ? opt->sim_latency_scale : 1))) return st;

  pthread_mutex_lock(&g_mu);
  if (g_lost) {
    pthread_mutex_unlock(&g_mu);
    return ttb_fail(TTB_DEVICE_LOST, "a device was lost earlier in this process; exit and reset the chips");
  }
  if (g_open != NULL) {
    pthread_mutex_unlock(&g_mu);
    return ttb_fail(TTB_BUSY, "a device is already open in this process (TT-Metal allows one mesh per process; close it first)");
  }
  ttb_device *d = calloc(1, sizeof *d);
  if (d == NULL) {
    pthread_mutex_unlock(&g_mu);
    return ttb_fail(TTB_OUT_OF_MEMORY, "host allocation failed");
  }
  g_open = d;
  pthread_mutex_unlock(&g_mu);

  d->magic = SIM_DEV_MAGIC;
  d->rows = rows;
  d->cols = cols;
  d->nchips = (uint32_t)need;
  memcpy(d->ids, ids, need * sizeof ids[0]);
  d->ncq = opt->num_command_queues;
  d->dispatch = dispatch;
  d->fabric = opt->fabric;
  d->program_cache = opt->enable_program_cache != 0;
  d->l1_small_size = opt->l1_small_size;
  d->trace_region_size = opt->trace_region_size;
  d->dram_total = need * (dram_chip - opt->trace_region_size);
  d->l1_total = need * SIM_CORES * (SIM_L1_PER_CORE - opt->l1_small_size);
  d->next_trace = 1;
  d->next_event = 1;
  d->f = f;
  count_add(&c_devices, 1);
  *out = d;
  return TTB_OK;
}

static void tensor_destroy(ttb_tensor *t) {
  ttb_device *d = t->dev;
  if (t->prev) t->prev->next = t->next;
  else d->tensors = t->next;
  if (t->next) t->next->prev = t->prev;
  if (t->data != NULL) {
    if (t->placement == TTB_DRAM) d->dram_used -= t->bytes;
    else if (t->placement == TTB_L1) d->l1_used -= t->bytes;
    count_add(&c_bytes, -(int64_t)t->bytes);
    free(t->data);
  }
  t->magic = 0;
  free(t);
  count_add(&c_tensors, -1);
}

static void trace_destroy(ttb_device *d, sim_trace *tr) {
  for (uint32_t i = 0; i < tr->n_runs; i++) {
    sim_run *r = &tr->runs[i];
    r->p->trace_refs--;
    for (uint32_t j = 0; j < r->n_in; j++) r->in[j]->trace_refs--;
    for (uint32_t j = 0; j < r->n_out; j++) r->out[j]->trace_refs--;
  }
  if (tr->ended) d->trace_used -= tr->bytes;
  sim_trace **pp = &d->traces;
  while (*pp != tr) pp = &(*pp)->next;
  *pp = tr->next;
  if (d->capturing == tr) d->capturing = NULL;
  free(tr->runs);
  free(tr);
  count_add(&c_traces, -1);
}

/* destroy frees a device (root or submesh) that has no live submeshes; it unlinks a submesh
 * from its parent. */
static ttb_status destroy(ttb_device *dev) {
  while (dev->traces) trace_destroy(dev, dev->traces);
  while (dev->tensors) tensor_destroy(dev->tensors);
  ttb_device *lost = lost_ancestor(dev);
  char msg[256];
  snprintf(msg, sizeof msg, "%s", lost ? lost->poison_msg : "");
  free(dev->compiled);
  pthread_mutex_lock(&g_mu);
  if (dev->parent == NULL) {
    g_open = NULL;
  } else {
    ttb_device **pp = &dev->parent->children;
    while (*pp != dev) pp = &(*pp)->sibling;
    *pp = dev->sibling;
  }
  dev->magic = 0;
  pthread_mutex_unlock(&g_mu);
  free(dev);
  count_add(&c_devices, -1);
  if (lost) return ttb_fail(TTB_DEVICE_LOST, "device closed after it was lost (%s); host resources freed, exit the process", msg);
  return TTB_OK;
}

/* busy_children fails with TTB_BUSY when dev has live submeshes. */
static ttb_status busy_children(ttb_device *dev, const char *what) {
  pthread_mutex_lock(&g_mu);
  uint32_t n = 0;
  for (ttb_device *c = dev->children; c; c = c->sibling) n++;
  pthread_mutex_unlock(&g_mu);
  if (n > 0) return ttb_fail(TTB_BUSY, "cannot %s a device with %u live submesh%s; release them first", what, n, n == 1 ? "" : "es");
  return TTB_OK;
}

static ttb_status sim_device_close(ttb_device *dev) {
  if (dev == NULL || dev->magic != SIM_DEV_MAGIC) return ttb_fail(TTB_INVALID_ARGUMENT, "invalid device handle");
  if (dev->parent != NULL) return ttb_fail(TTB_INVALID_ARGUMENT, "device is a submesh; release it with ttb_submesh_release");
  ttb_status st = busy_children(dev, "close");
  if (st) return st;
  return destroy(dev);
}

static ttb_status sim_submesh_create(ttb_device *parent, const ttb_submesh_options *opt, ttb_device **out) {
  if (opt == NULL || out == NULL) return ttb_fail(TTB_INVALID_ARGUMENT, "options or out is NULL");
  *out = NULL;
  ttb_status st = check_dev(parent);
  if (st) return st;
  if (opt->struct_size < sizeof(ttb_submesh_options))
    return ttb_fail(TTB_INVALID_ARGUMENT, "options struct_size %u < %zu", opt->struct_size, sizeof(ttb_submesh_options));
  uint32_t rows = opt->mesh_rows, cols = opt->mesh_cols, r0 = opt->row_offset, c0 = opt->col_offset;
  if (rows == 0 || cols == 0) return ttb_fail(TTB_INVALID_ARGUMENT, "submesh %ux%u: rows and cols must be positive", rows, cols);
  if ((uint64_t)r0 + rows > parent->rows || (uint64_t)c0 + cols > parent->cols)
    return ttb_fail(TTB_INVALID_ARGUMENT, "submesh %ux%u at offset (%u,%u) does not fit the %ux%u parent mesh", rows, cols, r0, c0,
                    parent->rows, parent->cols);
  if (!(opt->sim_latency_scale >= 0 && opt->sim_latency_scale <= 1000))
    return ttb_fail(TTB_INVALID_ARGUMENT, "sim_latency_scale %g not in [0, 1000]", opt->sim_latency_scale);
  sim_faults f;
  if ((st = read_faults(&f, opt->sim_latency_scale > 0 ? opt->sim_latency_scale : parent->f.latency_scale))) return st;
  ttb_device *d = calloc(1, sizeof *d);
  if (d == NULL) return ttb_fail(TTB_OUT_OF_MEMORY, "host allocation failed");

  pthread_mutex_lock(&g_mu);
  if (g_lost) {
    pthread_mutex_unlock(&g_mu);
    free(d);
    return ttb_fail(TTB_DEVICE_LOST, "a device was lost earlier in this process; exit and reset the chips");
  }
  for (ttb_device *c = parent->children; c; c = c->sibling) {
    if (r0 < c->row_off + c->rows && c->row_off < r0 + rows && c0 < c->col_off + c->cols && c->col_off < c0 + cols) {
      pthread_mutex_unlock(&g_mu);
      free(d);
      return ttb_fail(TTB_BUSY, "submesh %ux%u at (%u,%u) overlaps the live submesh %ux%u at (%u,%u)", rows, cols, r0, c0, c->rows,
                      c->cols, c->row_off, c->col_off);
    }
  }
  d->magic = SIM_DEV_MAGIC;
  d->parent = parent;
  d->row_off = r0;
  d->col_off = c0;
  d->sibling = parent->children;
  parent->children = d;
  pthread_mutex_unlock(&g_mu);

  d->rows = rows;
  d->cols = cols;
  d->nchips = rows * cols;
  for (uint32_t i = 0; i < rows; i++)
    for (uint32_t j = 0; j < cols; j++) d->ids[i * cols + j] = parent->ids[(r0 + i) * parent->cols + c0 + j];
  d->ncq = parent->ncq;
  d->dispatch = parent->dispatch;
  d->fabric = parent->fabric;
  d->program_cache = parent->program_cache;
  d->l1_small_size = parent->l1_small_size;
  d->trace_region_size = parent->trace_region_size;
  uint64_t dram_chip = SIM_DRAM_CHANNELS * SIM_DRAM_PER_CHANNEL;
  d->dram_total = (uint64_t)d->nchips * (dram_chip - d->trace_region_size);
  d->l1_total = (uint64_t)d->nchips * SIM_CORES * (SIM_L1_PER_CORE - d->l1_small_size);
  d->next_trace = 1;
  d->next_event = 1;
  d->f = f;
  count_add(&c_devices, 1);
  *out = d;
  return TTB_OK;
}

static ttb_status sim_submesh_release(ttb_device *dev) {
  if (dev == NULL || dev->magic != SIM_DEV_MAGIC) return ttb_fail(TTB_INVALID_ARGUMENT, "invalid device handle");
  if (dev->parent == NULL) return ttb_fail(TTB_INVALID_ARGUMENT, "device is not a submesh; close it with ttb_device_close");
  ttb_status st = busy_children(dev, "release");
  if (st) return st;
  return destroy(dev);
}

static ttb_status sim_device_info(ttb_device *dev, ttb_device_info *out) {
  ttb_status st = check_dev(dev);
  if (st) return st;
  if (out == NULL) return ttb_fail(TTB_INVALID_ARGUMENT, "out is NULL");
  memset(out, 0, sizeof *out);
  snprintf(out->backend, sizeof out->backend, "sim");
  snprintf(out->arch, sizeof out->arch, "wormhole_b0");
  out->mesh_rows = dev->rows;
  out->mesh_cols = dev->cols;
  out->num_chips = dev->nchips;
  out->num_command_queues = dev->ncq;
  memcpy(out->device_ids, dev->ids, dev->nchips * sizeof dev->ids[0]);
  out->l1_small_size = dev->l1_small_size;
  out->trace_region_size = dev->trace_region_size;
  out->is_submesh = dev->parent != NULL;
  out->row_offset = dev->row_off;
  out->col_offset = dev->col_off;
  out->dram_bytes_per_channel = SIM_DRAM_PER_CHANNEL;
  out->dram_channels = SIM_DRAM_CHANNELS;
  out->l1_bytes_per_core = SIM_L1_PER_CORE;
  return TTB_OK;
}

static ttb_status sim_device_mem(ttb_device *dev, uint32_t kind, ttb_mem_stats *out) {
  ttb_status st = check_dev(dev);
  if (st) return st;
  if (out == NULL) return ttb_fail(TTB_INVALID_ARGUMENT, "out is NULL");
  switch (kind) {
  case TTB_MEM_DRAM: out->total = dev->dram_total; out->allocated = dev->dram_used; break;
  case TTB_MEM_L1: out->total = dev->l1_total; out->allocated = dev->l1_used; break;
  case TTB_MEM_L1_SMALL: out->total = (uint64_t)dev->nchips * SIM_CORES * dev->l1_small_size; out->allocated = 0; break;
  case TTB_MEM_TRACE: out->total = dev->trace_region_size; out->allocated = dev->trace_used; break;
  default: return ttb_fail(TTB_INVALID_ARGUMENT, "unknown memory kind %u", kind);
  }
  out->largest_free = out->total - out->allocated;
  return TTB_OK;
}

static ttb_status sim_device_sync(ttb_device *dev, uint32_t cq) {
  ttb_status st = check_dev(dev);
  if (st) return st;
  return check_cq(dev, cq);
}

/* ---------- programs (manifests) ---------- */

static ttb_status parse_desc(const char *path, int line, char *rest, ttb_tensor_desc *d) {
  char *save = NULL;
  char *name = strtok_r(rest, " \t", &save);
  char *dt = strtok_r(NULL, " \t", &save);
  memset(d, 0, sizeof *d);
  if (name == NULL || dt == NULL) return ttb_fail(TTB_INVALID_ARGUMENT, "%s:%d: want NAME DTYPE DIM...", path, line);
  if (strlen(name) >= TTB_NAME_MAX) return ttb_fail(TTB_INVALID_ARGUMENT, "%s:%d: name too long", path, line);
  strcpy(d->name, name);
  if (!dtype_parse(dt, &d->dtype)) return ttb_fail(TTB_INVALID_ARGUMENT, "%s:%d: unknown dtype \"%s\" (bf16 f32 u32 i32 u16 u8)", path, line, dt);
  char *tok;
  while ((tok = strtok_r(NULL, " \t", &save)) != NULL) {
    if (d->rank == TTB_MAX_RANK) return ttb_fail(TTB_INVALID_ARGUMENT, "%s:%d: rank above %d", path, line, TTB_MAX_RANK);
    char *end;
    errno = 0;
    unsigned long v = strtoul(tok, &end, 10);
    if (errno || *end || v == 0 || v > 0xffffffffUL || tok[0] == '-')
      return ttb_fail(TTB_INVALID_ARGUMENT, "%s:%d: bad dimension \"%s\"", path, line, tok);
    d->shape[d->rank++] = (uint32_t)v;
  }
  size_t b;
  ttb_status st = desc_bytes(d, &b);
  if (st) return ttb_fail(st, "%s:%d: %s", path, line, ttb_last_error());
  return TTB_OK;
}

/* ttb_sim_next_line finds the next non-empty line of a manifest or script at *cursor, which it
 * advances (the text is cut up in place): a comment (#) and the blanks around the line are
 * dropped, its first word goes to *key and the rest, blanks trimmed, to *rest; *line counts the
 * lines read. It returns 0 at the end of the text. Shared with ttb_sim_script.c. */
int ttb_sim_next_line(char **cursor, int *line, char **key, char **rest) {
  while (*cursor != NULL) {
    char *l = *cursor, *nl = strchr(l, '\n');
    if (nl) *nl++ = 0;
    *cursor = nl;
    (*line)++;
    char *hash = strchr(l, '#');
    if (hash) *hash = 0;
    size_t n = strlen(l);
    while (n > 0 && (l[n - 1] == ' ' || l[n - 1] == '\t' || l[n - 1] == '\r')) l[--n] = 0;
    while (*l == ' ' || *l == '\t') l++;
    if (*l == 0) continue;
    char *r = l;
    while (*r && *r != ' ' && *r != '\t') r++;
    if (*r) *r++ = 0;
    while (*r == ' ' || *r == '\t') r++;
    *key = l;
    *rest = r;
    return 1;
  }
  return 0;
}

static ttb_status parse_manifest(const char *path, char *text, ttb_program *p) {
  int line = 0, header = 0;
  sim_fn *fn = NULL;
  char *cursor = text, *l, *rest;
  while (ttb_sim_next_line(&cursor, &line, &l, &rest)) {
    if (!header) {
      if (strcmp(l, "ttb-sim-program") != 0 || strcmp(rest, "1") != 0)
        return ttb_fail(TTB_INVALID_ARGUMENT, "%s: first line must be \"ttb-sim-program 1\"", path);
      header = 1;
    } else if (strcmp(l, "name") == 0) {
      if (*rest == 0 || strlen(rest) >= TTB_NAME_MAX) return ttb_fail(TTB_INVALID_ARGUMENT, "%s:%d: bad name", path, line);
      strcpy(p->name, rest);
    } else if (strcmp(l, "mesh") == 0) {
      if (sscanf(rest, "%u %u", &p->mesh_rows, &p->mesh_cols) != 2 || (p->mesh_rows == 0) != (p->mesh_cols == 0))
        return ttb_fail(TTB_INVALID_ARGUMENT, "%s:%d: want \"mesh ROWS COLS\"", path, line);
    } else if (strcmp(l, "func") == 0) {
      if (p->n_fn == SIM_MAX_FNS) return ttb_fail(TTB_INVALID_ARGUMENT, "%s:%d: more than %d functions", path, line, SIM_MAX_FNS);
      if (*rest == 0 || strlen(rest) >= TTB_NAME_MAX || strchr(rest, ' ')) return ttb_fail(TTB_INVALID_ARGUMENT, "%s:%d: bad function name", path, line);
      for (uint32_t i = 0; i < p->n_fn; i++)
        if (strcmp(p->fns[i].name, rest) == 0) return ttb_fail(TTB_INVALID_ARGUMENT, "%s:%d: function %s defined twice", path, line, rest);
      fn = &p->fns[p->n_fn++];
      strcpy(fn->name, rest);
    } else if (fn == NULL) {
      return ttb_fail(TTB_INVALID_ARGUMENT, "%s:%d: \"%s\" outside a func block", path, line, l);
    } else if (strcmp(l, "latency_ms") == 0) {
      char *end;
      fn->latency_ms = strtod(rest, &end);
      if (*rest == 0 || *end || !(fn->latency_ms >= 0 && fn->latency_ms < 1e7))
        return ttb_fail(TTB_INVALID_ARGUMENT, "%s:%d: bad latency_ms", path, line);
    } else if (strcmp(l, "trace_bytes") == 0) {
      char *end;
      fn->trace_bytes = strtoull(rest, &end, 10);
      if (*rest == 0 || *rest == '-' || *end) return ttb_fail(TTB_INVALID_ARGUMENT, "%s:%d: bad trace_bytes", path, line);
    } else if (strcmp(l, "input") == 0 || strcmp(l, "output") == 0) {
      int in = l[0] == 'i';
      uint32_t *cnt = in ? &fn->n_in : &fn->n_out;
      if (*cnt == SIM_MAX_IO) return ttb_fail(TTB_INVALID_ARGUMENT, "%s:%d: more than %d %ss", path, line, SIM_MAX_IO, l);
      ttb_status st = parse_desc(path, line, rest, in ? &fn->in[*cnt] : &fn->out[*cnt]);
      if (st) return st;
      (*cnt)++;
    } else {
      return ttb_fail(TTB_INVALID_ARGUMENT, "%s:%d: unknown keyword \"%s\"", path, line, l);
    }
  }
  if (!header) return ttb_fail(TTB_INVALID_ARGUMENT, "%s: empty manifest", path);
  if (p->name[0] == 0) return ttb_fail(TTB_INVALID_ARGUMENT, "%s: missing \"name\"", path);
  if (p->n_fn == 0) return ttb_fail(TTB_INVALID_ARGUMENT, "%s: no functions", path);
  for (uint32_t i = 0; i < p->n_fn; i++)
    if (p->fns[i].n_out == 0) return ttb_fail(TTB_INVALID_ARGUMENT, "%s: function %s has no outputs", path, p->fns[i].name);
  return TTB_OK;
}

static ttb_status sim_program_load_file(const char *path, ttb_program **out) {
  if (path == NULL || out == NULL) return ttb_fail(TTB_INVALID_ARGUMENT, "path or out is NULL");
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (f == NULL) return ttb_fail(errno == ENOENT ? TTB_NOT_FOUND : TTB_INVALID_ARGUMENT, "open %s: %s", path, strerror(errno));
  char *text = malloc(SIM_MANIFEST_MAX + 1);
  if (text == NULL) {
    fclose(f);
    return ttb_fail(TTB_OUT_OF_MEMORY, "host allocation failed");
  }
  size_t n = fread(text, 1, SIM_MANIFEST_MAX + 1, f);
  int rerr = ferror(f);
  fclose(f);
  if (rerr || n > SIM_MANIFEST_MAX) {
    free(text);
    return ttb_fail(TTB_INVALID_ARGUMENT, "%s: %s", path, rerr ? "read error" : "manifest larger than 1 MiB");
  }
  text[n] = 0;
  if (memchr(text, 0, n) != NULL) {
    free(text);
    return ttb_fail(TTB_INVALID_ARGUMENT, "%s: not a text manifest (a .ttnn flatbuffer needs the metal backend)", path);
  }
  ttb_program *p = calloc(1, sizeof *p);
  if (p == NULL) {
    free(text);
    return ttb_fail(TTB_OUT_OF_MEMORY, "host allocation failed");
  }
  ttb_status st = parse_manifest(path, text, p);
  free(text);
  if (st == TTB_OK) st = ttb_sim_script_open(&p->script);
  if (st) {
    free(p);
    return st;
  }
  p->magic = SIM_PROG_MAGIC;
  pthread_mutex_lock(&g_mu);
  p->id = g_next_prog_id++;
  pthread_mutex_unlock(&g_mu);
  count_add(&c_programs, 1);
  *out = p;
  return TTB_OK;
}

static ttb_status check_prog(ttb_program *p, uint32_t fn) {
  if (p == NULL || p->magic != SIM_PROG_MAGIC) return ttb_fail(TTB_INVALID_ARGUMENT, "invalid program handle");
  if (fn >= p->n_fn) return ttb_fail(TTB_NOT_FOUND, "program %s has no function %u (it has %u)", p->name, fn, p->n_fn);
  return TTB_OK;
}

static ttb_status sim_program_free(ttb_program *p) {
  if (p == NULL || p->magic != SIM_PROG_MAGIC) return ttb_fail(TTB_INVALID_ARGUMENT, "invalid program handle");
  if (p->trace_refs > 0) return ttb_fail(TTB_BUSY, "program %s is used by a live trace; release the trace first", p->name);
  p->magic = 0;
  ttb_sim_script_free(p->script);
  free(p);
  count_add(&c_programs, -1);
  return TTB_OK;
}

static ttb_status sim_program_num_functions(ttb_program *p, uint32_t *out) {
  if (p == NULL || p->magic != SIM_PROG_MAGIC || out == NULL) return ttb_fail(TTB_INVALID_ARGUMENT, "invalid program handle");
  *out = p->n_fn;
  return TTB_OK;
}

static ttb_status sim_program_function_name(ttb_program *p, uint32_t fn, char *buf, size_t cap) {
  ttb_status st = check_prog(p, fn);
  if (st) return st;
  if (buf == NULL || cap <= strlen(p->fns[fn].name)) return ttb_fail(TTB_INVALID_ARGUMENT, "name buffer too small");
  strcpy(buf, p->fns[fn].name);
  return TTB_OK;
}

static ttb_status sim_program_io(ttb_program *p, uint32_t fn, int is_output, ttb_tensor_desc *descs, uint32_t cap, uint32_t *n) {
  ttb_status st = check_prog(p, fn);
  if (st) return st;
  if (n == NULL) return ttb_fail(TTB_INVALID_ARGUMENT, "n is NULL");
  const sim_fn *f = &p->fns[fn];
  uint32_t cnt = is_output ? f->n_out : f->n_in;
  *n = cnt;
  if (descs == NULL && cap == 0) return TTB_OK; /* size query */
  if (cap < cnt) return ttb_fail(TTB_INVALID_ARGUMENT, "descriptor buffer holds %u, need %u", cap, cnt);
  memcpy(descs, is_output ? f->out : f->in, cnt * sizeof *descs);
  return TTB_OK;
}

/* ---------- tensors ---------- */

static ttb_status check_tensor(ttb_tensor *t) {
  if (t == NULL || t->magic != SIM_TENSOR_MAGIC) return ttb_fail(TTB_INVALID_ARGUMENT, "invalid tensor handle");
  return check_dev(t->dev);
}

static ttb_status tensor_new(ttb_device *dev, const ttb_tensor_desc *d, uint32_t placement, uint32_t layout, int retain, ttb_tensor **out) {
  if (d == NULL || out == NULL) return ttb_fail(TTB_INVALID_ARGUMENT, "desc or out is NULL");
  *out = NULL;
  if (placement > TTB_HOST) return ttb_fail(TTB_INVALID_ARGUMENT, "unknown placement %u", placement);
  if (layout > TTB_TILE) return ttb_fail(TTB_INVALID_ARGUMENT, "unknown layout %u", layout);
  size_t bytes;
  ttb_status st = desc_bytes(d, &bytes);
  if (st) return st;
  if (placement == TTB_DRAM && dev->dram_used + bytes > dev->dram_total)
    return ttb_fail(TTB_OUT_OF_MEMORY, "out of DRAM: %zu B requested, %llu B free", bytes, (unsigned long long)(dev->dram_total - dev->dram_used));
  if (placement == TTB_L1 && dev->l1_used + bytes > dev->l1_total)
    return ttb_fail(TTB_OUT_OF_MEMORY, "out of L1: %zu B requested, %llu B free", bytes, (unsigned long long)(dev->l1_total - dev->l1_used));
  ttb_tensor *t = calloc(1, sizeof *t);
  uint8_t *data = calloc(1, bytes);
  if (t == NULL || data == NULL) {
    free(t);
    free(data);
    return ttb_fail(TTB_OUT_OF_MEMORY, "host allocation of %zu B failed", bytes);
  }
  t->magic = SIM_TENSOR_MAGIC;
  t->dev = dev;
  t->desc = *d;
  t->desc.name[TTB_NAME_MAX - 1] = 0;
  t->placement = placement;
  t->layout = layout;
  t->retain = retain != 0;
  t->bytes = bytes;
  t->data = data;
  t->gen = next_gen();
  if (placement == TTB_DRAM) dev->dram_used += bytes;
  else if (placement == TTB_L1) dev->l1_used += bytes;
  t->next = dev->tensors;
  if (dev->tensors) dev->tensors->prev = t;
  dev->tensors = t;
  count_add(&c_tensors, 1);
  count_add(&c_bytes, (int64_t)bytes);
  *out = t;
  return TTB_OK;
}

static ttb_status no_capture(ttb_device *dev, const char *what) {
  if (dev->capturing != NULL)
    return ttb_fail(TTB_BUSY, "%s during trace capture: a trace records program runs only, not tensor reads or writes", what);
  return TTB_OK;
}

static ttb_status usable(ttb_tensor *t) {
  if (t->data == NULL) return ttb_fail(TTB_INVALID_ARGUMENT, "tensor was deallocated by program %s (it was not retained; upload with retain=1 to keep inputs)", t->consumed_by);
  return TTB_OK;
}

static ttb_status sim_tensor_upload(ttb_device *dev, const ttb_tensor_desc *d, const void *src, size_t bytes, uint32_t placement, uint32_t layout, int retain, uint32_t cq, ttb_tensor **out) {
  ttb_status st;
  if ((st = check_dev(dev)) || (st = check_cq(dev, cq)) || (st = no_capture(dev, "tensor upload"))) return st;
  size_t want;
  if (d == NULL) return ttb_fail(TTB_INVALID_ARGUMENT, "desc is NULL");
  if ((st = desc_bytes(d, &want))) return st;
  if (bytes != want || (src == NULL && bytes > 0)) return ttb_fail(TTB_INVALID_ARGUMENT, "upload of %zu B for a tensor of %zu B", bytes, want);
  if ((st = tensor_new(dev, d, placement, layout, retain, out))) return st;
  memcpy((*out)->data, src, bytes);
  (*out)->gen = next_gen();
  return TTB_OK;
}

static ttb_status sim_tensor_alloc(ttb_device *dev, const ttb_tensor_desc *d, uint32_t placement, uint32_t layout, ttb_tensor **out) {
  ttb_status st = check_dev(dev);
  if (st) return st;
  return tensor_new(dev, d, placement, layout, 1, out);
}

static ttb_status sim_tensor_write(ttb_tensor *t, const void *src, size_t bytes, uint32_t cq) {
  ttb_status st;
  if ((st = check_tensor(t)) || (st = check_cq(t->dev, cq)) || (st = no_capture(t->dev, "tensor write")) || (st = usable(t))) return st;
  if (bytes != t->bytes || src == NULL) return ttb_fail(TTB_INVALID_ARGUMENT, "write of %zu B to a tensor of %zu B", bytes, t->bytes);
  memcpy(t->data, src, bytes);
  t->lazy = 0;
  t->gen = next_gen();
  return TTB_OK;
}

static ttb_status sim_tensor_read(ttb_tensor *t, void *dst, size_t bytes, uint32_t cq) {
  ttb_status st;
  if ((st = check_tensor(t)) || (st = check_cq(t->dev, cq)) || (st = no_capture(t->dev, "tensor read")) || (st = usable(t))) return st;
  if (bytes != t->bytes || dst == NULL) return ttb_fail(TTB_INVALID_ARGUMENT, "read of %zu B from a tensor of %zu B", bytes, t->bytes);
  materialize(t);
  memcpy(dst, t->data, bytes);
  return TTB_OK;
}

static ttb_status sim_tensor_desc(ttb_tensor *t, ttb_tensor_desc *out) {
  if (t == NULL || t->magic != SIM_TENSOR_MAGIC || out == NULL) return ttb_fail(TTB_INVALID_ARGUMENT, "invalid tensor handle");
  *out = t->desc;
  return TTB_OK;
}

static ttb_status sim_tensor_free(ttb_tensor *t) {
  if (t == NULL || t->magic != SIM_TENSOR_MAGIC) return ttb_fail(TTB_INVALID_ARGUMENT, "invalid tensor handle");
  if (t->trace_refs > 0 && lost_ancestor(t->dev) == NULL)
    return ttb_fail(TTB_BUSY, "tensor is used by a live trace (its address is baked into the trace); release the trace first");
  tensor_destroy(t);
  return TTB_OK;
}

/* ---------- execution ---------- */

static int is_compiled(ttb_device *d, uint64_t key) {
  for (uint32_t i = 0; i < d->n_compiled; i++)
    if (d->compiled[i] == key) return 1;
  return 0;
}

static ttb_status mark_compiled(ttb_device *d, uint64_t key) {
  if (is_compiled(d, key)) return TTB_OK;
  if (d->n_compiled == d->cap_compiled) {
    uint32_t nc = d->cap_compiled ? d->cap_compiled * 2 : 16;
    uint64_t *n = realloc(d->compiled, nc * sizeof *n);
    if (n == NULL) return ttb_fail(TTB_OUT_OF_MEMORY, "host allocation failed");
    d->compiled = n;
    d->cap_compiled = nc;
  }
  d->compiled[d->n_compiled++] = key;
  return TTB_OK;
}

static ttb_status compute_outputs(ttb_program *p, uint32_t fn, ttb_tensor *const *in, uint32_t n_in, ttb_tensor *const *out, uint32_t n_out, int *scripted);

/* materialize writes a lazily computed output's values: output o of the run whose input hash
 * was h, a splitmix64 stream of floats in [-1, 1) (ints take the raw draws). */
static void materialize(ttb_tensor *t) {
  if (!t->lazy || t->data == NULL) return;
  t->lazy = 0;
  uint64_t s = t->lazy_h ^ ((uint64_t)(t->lazy_o + 1) * 0xd1b54a32d192ed03ULL);
  size_t es = ttb_dtype_size(t->desc.dtype), n = t->bytes / es;
  for (size_t i = 0; i < n; i++) {
    uint64_t r = splitmix(&s);
    float v = (float)((double)(r >> 40) / (double)(1ull << 24) * 2.0 - 1.0); /* [-1, 1) */
    uint32_t bits;
    memcpy(&bits, &v, 4);
    switch (t->desc.dtype) {
    case TTB_F32: memcpy(t->data + i * 4, &bits, 4); break;
    case TTB_BF16: { uint16_t b = (uint16_t)(bits >> 16); memcpy(t->data + i * 2, &b, 2); break; }
    case TTB_U32: case TTB_I32: { uint32_t u = (uint32_t)r; memcpy(t->data + i * 4, &u, 4); break; }
    case TTB_U16: { uint16_t u = (uint16_t)r; memcpy(t->data + i * 2, &u, 2); break; }
    default: t->data[i] = (uint8_t)r;
    }
  }
}

/* compute writes the outputs of one run of function fn; *scripted (when not NULL) tells
 * whether a decoder-step script produced them. Every output takes a new generation. */
static ttb_status compute_ex(ttb_program *p, uint32_t fn, ttb_tensor *const *in, uint32_t n_in, ttb_tensor *const *out, uint32_t n_out, int *scripted) {
  ttb_status st = compute_outputs(p, fn, in, n_in, out, n_out, scripted);
  for (uint32_t o = 0; o < n_out; o++) out[o]->gen = next_gen();
  return st;
}

static ttb_status compute(ttb_program *p, uint32_t fn, ttb_tensor *const *in, uint32_t n_in, ttb_tensor *const *out, uint32_t n_out) {
  return compute_ex(p, fn, in, n_in, out, n_out, NULL);
}

static ttb_status compute_outputs(ttb_program *p, uint32_t fn, ttb_tensor *const *in, uint32_t n_in, ttb_tensor *const *out, uint32_t n_out, int *scripted) {
  ttb_sim_buf bi[SIM_MAX_IO], bo[SIM_MAX_IO]; /* a Whisper decoder step writes its own logits */
  for (uint32_t i = 0; i < n_in; i++) materialize(in[i]);
  for (uint32_t o = 0; o < n_out; o++) out[o]->lazy = 0; /* overwritten below, or by the script */
  for (uint32_t i = 0; i < n_in; i++) bi[i] = (ttb_sim_buf){&in[i]->desc, in[i]->data, in[i]->bytes};
  for (uint32_t o = 0; o < n_out; o++) bo[o] = (ttb_sim_buf){&out[o]->desc, out[o]->data, out[o]->bytes};
  int handled = 0;
  ttb_status st = ttb_sim_script_apply(p->script, bi, n_in, bo, n_out, &handled);
  if (scripted) *scripted = handled;
  if (st || handled) return st;
  const sim_fn *f = &p->fns[fn];
  uint64_t h = 0xcbf29ce484222325ULL;
  h = fnv(h, p->name, strlen(p->name) + 1);
  h = fnv(h, f->name, strlen(f->name) + 1);
  for (uint32_t i = 0; i < n_in; i++) {
    h = fnv(h, &in[i]->desc.dtype, sizeof in[i]->desc.dtype);
    h = fnv(h, in[i]->desc.shape, in[i]->desc.rank * sizeof(uint32_t));
    h = fnv(h, in[i]->data, in[i]->bytes);
  }
  for (uint32_t o = 0; o < n_out; o++) { /* generated on first use: materialize() */
    out[o]->lazy = 1;
    out[o]->lazy_h = h;
    out[o]->lazy_o = o;
  }
  return TTB_OK;
}

/* Sleeps what is left of the modelled latency of one execution begun at start. */
static void finish_latency(ttb_device *dev, ttb_program *p, uint32_t fn, double start) {
  sleep_seconds(p->fns[fn].latency_ms / 1000.0 * dev->f.latency_scale - (now_seconds() - start));
}

/* Applies the fault settings of one execution. */
static ttb_status execute(ttb_device *dev, ttb_program *p, uint32_t fn) {
  dev->runs++;
  sim_faults *f = &dev->f;
  if (f->abort_after && dev->runs == f->abort_after) {
    fprintf(stderr, "ttb sim: TTB_SIM_ABORT=%llu: aborting in %s.%s\n", (unsigned long long)f->abort_after, p->name, p->fns[fn].name);
    abort();
  }
  if (f->lost_after && dev->runs == f->lost_after) {
    char msg[160];
    snprintf(msg, sizeof msg, "injected device loss on run %llu (TTB_SIM_DEVICE_LOST)", (unsigned long long)dev->runs);
    return poison(dev, TTB_DEVICE_LOST, msg);
  }
  if (f->hang_seconds > 0 && dev->runs == f->hang_after) {
    if (f->op_timeout > 0 && f->op_timeout < f->hang_seconds) {
      sleep_seconds(f->op_timeout);
      return poison(dev, TTB_TIMEOUT, "TIMEOUT: device timeout in dispatch (TT_METAL_OPERATION_TIMEOUT_SECONDS)");
    }
    sleep_seconds(f->hang_seconds);
  }
  if (f->fail_prob > 0) {
    double u = (double)(splitmix(&f->rng) >> 11) / (double)(1ull << 53);
    if (u < f->fail_prob)
      return ttb_fail(TTB_INTERNAL, "injected failure in %s.%s (TTB_SIM_FAIL_PROB=%g)", p->name, p->fns[fn].name, f->fail_prob);
  }
  return TTB_OK;
}

static ttb_status record_run(sim_trace *tr, ttb_program *p, uint32_t fn, ttb_tensor *const *in, uint32_t n_in, ttb_tensor *const *out, uint32_t n_out) {
  if (tr->n_runs == tr->cap_runs) {
    uint32_t nc = tr->cap_runs ? tr->cap_runs * 2 : 8;
    sim_run *n = realloc(tr->runs, nc * sizeof *n);
    if (n == NULL) return ttb_fail(TTB_OUT_OF_MEMORY, "host allocation failed");
    tr->runs = n;
    tr->cap_runs = nc;
  }
  sim_run *r = &tr->runs[tr->n_runs++];
  r->p = p;
  r->memo = 0;
  r->fn = fn;
  r->n_in = n_in;
  r->n_out = n_out;
  p->trace_refs++;
  for (uint32_t i = 0; i < n_in; i++) (r->in[i] = in[i])->trace_refs++;
  for (uint32_t i = 0; i < n_out; i++) (r->out[i] = out[i])->trace_refs++;
  tr->bytes += p->fns[fn].trace_bytes;
  return TTB_OK;
}

static ttb_status sim_program_run(ttb_device *dev, ttb_program *p, uint32_t fn, ttb_tensor *const *in, uint32_t n_in, uint32_t cq, ttb_tensor **out, uint32_t out_cap, uint32_t *n_out) {
  ttb_status st;
  if ((st = check_dev(dev)) || (st = check_cq(dev, cq)) || (st = check_prog(p, fn))) return st;
  if (n_out == NULL || (out == NULL && out_cap > 0) || (in == NULL && n_in > 0)) return ttb_fail(TTB_INVALID_ARGUMENT, "NULL argument");
  const sim_fn *f = &p->fns[fn];
  *n_out = 0;
  if (p->mesh_rows != 0 && (p->mesh_rows != dev->rows || p->mesh_cols != dev->cols))
    return ttb_fail(TTB_INVALID_ARGUMENT, "program %s was compiled for a %ux%u mesh, device is %ux%u", p->name, p->mesh_rows, p->mesh_cols, dev->rows, dev->cols);
  if (n_in != f->n_in) return ttb_fail(TTB_INVALID_ARGUMENT, "%s.%s takes %u inputs, got %u", p->name, f->name, f->n_in, n_in);
  if (out_cap < f->n_out) return ttb_fail(TTB_INVALID_ARGUMENT, "%s.%s returns %u outputs, room for %u", p->name, f->name, f->n_out, out_cap);
  sim_trace *cap = dev->capturing;
  for (uint32_t i = 0; i < n_in; i++) {
    ttb_tensor *t = in[i];
    if ((st = check_tensor(t))) return ttb_fail(st, "input %u: %s", i, ttb_last_error());
    if (t->dev != dev) return ttb_fail(TTB_INVALID_ARGUMENT, "input %u (%s) belongs to another device", i, f->in[i].name);
    if ((st = usable(t))) return ttb_fail(st, "input %u (%s): %s", i, f->in[i].name, ttb_last_error());
    if (t->placement == TTB_HOST) return ttb_fail(TTB_INVALID_ARGUMENT, "input %u (%s) is a host tensor; upload it to DRAM or L1", i, f->in[i].name);
    if (!desc_match(&t->desc, &f->in[i])) {
      char got[96], want[96];
      shape_str(&t->desc, got, sizeof got);
      shape_str(&f->in[i], want, sizeof want);
      return ttb_fail(TTB_INVALID_ARGUMENT, "%s.%s input %u (%s): got %s, want %s", p->name, f->name, i, f->in[i].name, got, want);
    }
    for (uint32_t j = 0; j < i; j++)
      if (in[j] == t && !t->retain) return ttb_fail(TTB_INVALID_ARGUMENT, "input %u is passed twice but not retained", i);
    if (cap != NULL && !t->retain)
      return ttb_fail(TTB_INVALID_ARGUMENT, "input %u (%s) of a captured run must be persistent (retained or allocated) so its address stays fixed", i, f->in[i].name);
  }
  uint64_t key = (p->id << 8) | fn;
  if (cap != NULL && !is_compiled(dev, key))
    return ttb_fail(TTB_BUSY, "%s.%s has not run on this device before the trace capture; run it once first so its ops are compiled", p->name, f->name);
  double start = now_seconds();
  if (cap == NULL && (st = execute(dev, p, fn))) return st;
  ttb_tensor *res[SIM_MAX_IO] = {0};
  for (uint32_t o = 0; o < f->n_out; o++) {
    if ((st = tensor_new(dev, &f->out[o], TTB_DRAM, TTB_TILE, 1, &res[o]))) {
      for (uint32_t k = 0; k < o; k++) tensor_destroy(res[k]);
      return st;
    }
  }
  if (cap != NULL) {
    if ((st = record_run(cap, p, fn, in, n_in, res, f->n_out))) {
      for (uint32_t k = 0; k < f->n_out; k++) tensor_destroy(res[k]);
      return st;
    }
  } else {
    if ((st = compute(p, fn, in, n_in, res, f->n_out)) == TTB_OK) finish_latency(dev, p, fn, start);
    if (st || (st = mark_compiled(dev, key))) {
      for (uint32_t k = 0; k < f->n_out; k++) tensor_destroy(res[k]);
      return st;
    }
    for (uint32_t i = 0; i < n_in; i++) {
      ttb_tensor *t = in[i];
      if (!t->retain && t->data != NULL) { /* the program deallocates inputs it does not have to keep */
        if (t->placement == TTB_DRAM) dev->dram_used -= t->bytes;
        else if (t->placement == TTB_L1) dev->l1_used -= t->bytes;
        count_add(&c_bytes, -(int64_t)t->bytes);
        free(t->data);
        t->data = NULL;
        t->gen = next_gen();
        snprintf(t->consumed_by, sizeof t->consumed_by, "%s.%s", p->name, f->name);
      }
    }
  }
  memcpy(out, res, f->n_out * sizeof *out);
  *n_out = f->n_out;
  return TTB_OK;
}

/* ---------- traces ---------- */

static sim_trace *find_trace(ttb_device *d, ttb_trace_id id) {
  for (sim_trace *t = d->traces; t; t = t->next)
    if (t->id == id) return t;
  return NULL;
}

static ttb_status sim_trace_begin(ttb_device *dev, uint32_t cq, ttb_trace_id *out) {
  ttb_status st;
  if ((st = check_dev(dev)) || (st = check_cq(dev, cq))) return st;
  if (out == NULL) return ttb_fail(TTB_INVALID_ARGUMENT, "out is NULL");
  if (dev->capturing) return ttb_fail(TTB_BUSY, "trace %llu is already being captured", (unsigned long long)dev->capturing->id);
  sim_trace *tr = calloc(1, sizeof *tr);
  if (tr == NULL) return ttb_fail(TTB_OUT_OF_MEMORY, "host allocation failed");
  tr->id = dev->next_trace++;
  tr->cq = cq;
  tr->next = dev->traces;
  dev->traces = tr;
  dev->capturing = tr;
  count_add(&c_traces, 1);
  *out = tr->id;
  return TTB_OK;
}

static ttb_status sim_trace_end(ttb_device *dev, ttb_trace_id id, uint32_t cq) {
  ttb_status st;
  if ((st = check_dev(dev)) || (st = check_cq(dev, cq))) return st;
  sim_trace *tr = find_trace(dev, id);
  if (tr == NULL) return ttb_fail(TTB_NOT_FOUND, "no trace %llu", (unsigned long long)id);
  if (dev->capturing != tr) return ttb_fail(TTB_BUSY, "trace %llu is not being captured", (unsigned long long)id);
  if (cq != tr->cq) return ttb_fail(TTB_INVALID_ARGUMENT, "trace %llu was begun on cq %u, ended on cq %u", (unsigned long long)id, tr->cq, cq);
  dev->capturing = NULL;
  uint64_t limit = dev->trace_region_size ? dev->trace_region_size : dev->dram_total - dev->dram_used;
  if (dev->trace_used + tr->bytes > limit) {
    unsigned long long want = tr->bytes, free_b = limit - dev->trace_used, size = dev->trace_region_size;
    trace_destroy(dev, tr);
    return ttb_fail(TTB_OUT_OF_MEMORY, "creating trace buffers of %llu B, but only %llu B of the trace region is free (trace_region_size=%llu%s); trace discarded", want, free_b, size, size ? "" : ", dynamic");
  }
  tr->ended = 1;
  dev->trace_used += tr->bytes;
  return TTB_OK;
}

static ttb_status sim_trace_replay(ttb_device *dev, ttb_trace_id id, uint32_t cq, int blocking) {
  (void)blocking; /* the sim completes every replay before returning */
  ttb_status st;
  if ((st = check_dev(dev)) || (st = check_cq(dev, cq))) return st;
  sim_trace *tr = find_trace(dev, id);
  if (tr == NULL) return ttb_fail(TTB_NOT_FOUND, "no trace %llu", (unsigned long long)id);
  if (!tr->ended) return ttb_fail(TTB_BUSY, "trace %llu is still being captured", (unsigned long long)id);
  if (dev->capturing) return ttb_fail(TTB_BUSY, "cannot replay a trace while trace %llu is being captured", (unsigned long long)dev->capturing->id);
  for (uint32_t i = 0; i < tr->n_runs; i++) {
    sim_run *r = &tr->runs[i];
    double start = now_seconds();
    if ((st = execute(dev, r->p, r->fn))) return st;
    int same = r->memo;
    for (uint32_t k = 0; same && k < r->n_in; k++) same = r->in[k]->data != NULL && r->in[k]->gen == r->in_gen[k];
    for (uint32_t k = 0; same && k < r->n_out; k++) same = r->out[k]->gen == r->out_gen[k];
    if (!same) {
      int scripted = 0;
      r->memo = 0;
      if ((st = compute_ex(r->p, r->fn, r->in, r->n_in, r->out, r->n_out, &scripted))) return st;
      for (uint32_t k = 0; k < r->n_in; k++) r->in_gen[k] = r->in[k]->gen;
      for (uint32_t k = 0; k < r->n_out; k++) r->out_gen[k] = r->out[k]->gen;
      r->memo = !scripted;
    }
    finish_latency(dev, r->p, r->fn, start);
  }
  return TTB_OK;
}

static ttb_status sim_trace_release(ttb_device *dev, ttb_trace_id id) {
  if (dev == NULL || dev->magic != SIM_DEV_MAGIC) return ttb_fail(TTB_INVALID_ARGUMENT, "invalid device handle");
  sim_trace *tr = find_trace(dev, id);
  if (tr == NULL) return ttb_fail(TTB_NOT_FOUND, "no trace %llu", (unsigned long long)id);
  trace_destroy(dev, tr);
  return TTB_OK;
}

/* ---------- events ---------- */

static ttb_status sim_event_record(ttb_device *dev, uint32_t cq, ttb_event_id *out) {
  ttb_status st;
  if ((st = check_dev(dev)) || (st = check_cq(dev, cq))) return st;
  if (out == NULL) return ttb_fail(TTB_INVALID_ARGUMENT, "out is NULL");
  ttb_event_id id = dev->next_event++;
  *out = id;
  return TTB_OK;
}

static ttb_status check_event(ttb_device *dev, ttb_event_id ev) {
  if (ev == 0 || ev >= dev->next_event || dev->next_event - ev > SIM_EVENTS)
    return ttb_fail(TTB_NOT_FOUND, "event %llu is unknown or too old (the last %d events are kept)", (unsigned long long)ev, SIM_EVENTS);
  return TTB_OK;
}

static ttb_status sim_event_wait(ttb_device *dev, uint32_t cq, ttb_event_id ev) {
  ttb_status st;
  if ((st = check_dev(dev)) || (st = check_cq(dev, cq)) || (st = check_event(dev, ev))) return st;
  return TTB_OK; /* the sim completes work in issue order, so the event has fired */
}

static ttb_status sim_event_synchronize(ttb_device *dev, ttb_event_id ev) {
  ttb_status st;
  if ((st = check_dev(dev)) || (st = check_event(dev, ev))) return st;
  return TTB_OK;
}

static const ttb_backend sim_backend = {
    .abi_version = TTB_ABI_VERSION,
    .name = "sim",
    .runtime_init = sim_runtime_init,
    .num_visible_chips = sim_num_visible_chips,
    .device_open = sim_device_open,
    .device_close = sim_device_close,
    .device_info = sim_device_info,
    .device_mem = sim_device_mem,
    .device_sync = sim_device_sync,
    .program_load_file = sim_program_load_file,
    .program_free = sim_program_free,
    .program_num_functions = sim_program_num_functions,
    .program_function_name = sim_program_function_name,
    .program_io = sim_program_io,
    .tensor_upload = sim_tensor_upload,
    .tensor_alloc = sim_tensor_alloc,
    .tensor_write = sim_tensor_write,
    .tensor_read = sim_tensor_read,
    .tensor_desc = sim_tensor_desc,
    .tensor_free = sim_tensor_free,
    .program_run = sim_program_run,
    .trace_begin = sim_trace_begin,
    .trace_end = sim_trace_end,
    .trace_replay = sim_trace_replay,
    .trace_release = sim_trace_release,
    .event_record = sim_event_record,
    .event_wait = sim_event_wait,
    .event_synchronize = sim_event_synchronize,
    .live_counts = sim_live_counts,
    .submesh_create = sim_submesh_create,
    .submesh_release = sim_submesh_release,
};

const ttb_backend *ttb_sim_backend(void) { return &sim_backend; }
