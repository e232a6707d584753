// Dispatch layer of the C ABI: backend selection, thread-local last error, shared helpers.

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/ttbridge.h"

static _Thread_local char tls_err[1024];
static pthread_mutex_t sel_mu = PTHREAD_MUTEX_INITIALIZER;
static const ttb_backend *selected;

int ttb_abi_version(void) { return TTB_ABI_VERSION; }

const char *ttb_last_error(void) { return tls_err; }

void ttb_clear_error(void) { tls_err[0] = 0; }

ttb_status ttb_fail(ttb_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tls_err, sizeof tls_err, fmt, ap);
  va_end(ap);
  return st;
}

const char *ttb_backends_available(void) {
#ifdef TTB_WITH_METAL
  return "sim,metal";
#else
  return "sim";
#endif
}

ttb_status ttb_select_backend(const char *name) {
  ttb_clear_error();
  if (name == NULL) return ttb_fail(TTB_INVALID_ARGUMENT, "backend name is NULL");
  const ttb_backend *b = NULL;
  if (strcmp(name, "sim") == 0) b = ttb_sim_backend();
#ifdef TTB_WITH_METAL
  else if (strcmp(name, "metal") == 0) b = ttb_metal_backend();
#else
  else if (strcmp(name, "metal") == 0)
    return ttb_fail(TTB_UNSUPPORTED, "backend \"metal\" is not compiled in (build with -tags ttnn)");
#endif
  else
    return ttb_fail(TTB_INVALID_ARGUMENT, "unknown backend \"%s\" (available: %s)", name,
                    ttb_backends_available());
  if (b->abi_version != TTB_ABI_VERSION)
    return ttb_fail(TTB_INTERNAL, "backend %s has ABI %u, want %d", name, b->abi_version, TTB_ABI_VERSION);
  pthread_mutex_lock(&sel_mu);
  ttb_status st = TTB_OK;
  if (selected != NULL && selected != b)
    st = ttb_fail(TTB_BUSY, "backend \"%s\" already selected for this process", selected->name);
  else
    selected = b;
  pthread_mutex_unlock(&sel_mu);
  return st;
}

static const ttb_backend *cur(void) {
  pthread_mutex_lock(&sel_mu);
  const ttb_backend *b = selected;
  pthread_mutex_unlock(&sel_mu);
  return b;
}

#define DISPATCH(call, ...)                                                              \
  do {                                                                                   \
    ttb_clear_error();                                                                   \
    const ttb_backend *b = cur();                                                        \
    if (b == NULL) return ttb_fail(TTB_INVALID_ARGUMENT, "no backend selected");         \
    if (b->call == NULL) return ttb_fail(TTB_UNSUPPORTED, "%s: %s not implemented", b->name, #call); \
    return b->call(__VA_ARGS__);                                                         \
  } while (0)

ttb_status ttb_runtime_init(void) { DISPATCH(runtime_init); }
ttb_status ttb_num_visible_chips(uint32_t *out) { DISPATCH(num_visible_chips, out); }
ttb_status ttb_live_counts_get(ttb_live_counts *out) { DISPATCH(live_counts, out); }
ttb_status ttb_device_open(const ttb_device_options *opt, ttb_device **out) { DISPATCH(device_open, opt, out); }
ttb_status ttb_device_close(ttb_device *dev) { DISPATCH(device_close, dev); }
ttb_status ttb_device_info_get(ttb_device *dev, ttb_device_info *out) { DISPATCH(device_info, dev, out); }
ttb_status ttb_device_mem(ttb_device *dev, uint32_t kind, ttb_mem_stats *out) { DISPATCH(device_mem, dev, kind, out); }
ttb_status ttb_device_sync(ttb_device *dev, uint32_t cq) { DISPATCH(device_sync, dev, cq); }
ttb_status ttb_submesh_create(ttb_device *parent, const ttb_submesh_options *opt, ttb_device **out) {
  DISPATCH(submesh_create, parent, opt, out);
}
ttb_status ttb_submesh_release(ttb_device *sub) { DISPATCH(submesh_release, sub); }
ttb_status ttb_program_load_file(const char *path, ttb_program **out) { DISPATCH(program_load_file, path, out); }
ttb_status ttb_program_free(ttb_program *p) { DISPATCH(program_free, p); }
ttb_status ttb_program_num_functions(ttb_program *p, uint32_t *out) { DISPATCH(program_num_functions, p, out); }
ttb_status ttb_program_function_name(ttb_program *p, uint32_t fn, char *buf, size_t cap) {
  DISPATCH(program_function_name, p, fn, buf, cap);
}
ttb_status ttb_program_io(ttb_program *p, uint32_t fn, int is_output, ttb_tensor_desc *descs, uint32_t cap,
                          uint32_t *n) {
  DISPATCH(program_io, p, fn, is_output, descs, cap, n);
}
ttb_status ttb_tensor_upload(ttb_device *dev, const ttb_tensor_desc *d, const void *src, size_t bytes,
                             uint32_t placement, uint32_t layout, int retain, uint32_t cq, ttb_tensor **out) {
  DISPATCH(tensor_upload, dev, d, src, bytes, placement, layout, retain, cq, out);
}
ttb_status ttb_tensor_alloc(ttb_device *dev, const ttb_tensor_desc *d, uint32_t placement, uint32_t layout,
                            ttb_tensor **out) {
  DISPATCH(tensor_alloc, dev, d, placement, layout, out);
}
ttb_status ttb_tensor_write(ttb_tensor *t, const void *src, size_t bytes, uint32_t cq) {
  DISPATCH(tensor_write, t, src, bytes, cq);
}
ttb_status ttb_tensor_read(ttb_tensor *t, void *dst, size_t bytes, uint32_t cq) {
  DISPATCH(tensor_read, t, dst, bytes, cq);
}
ttb_status ttb_tensor_desc_get(ttb_tensor *t, ttb_tensor_desc *out) { DISPATCH(tensor_desc, t, out); }
ttb_status ttb_tensor_free(ttb_tensor *t) { DISPATCH(tensor_free, t); }
ttb_status ttb_program_run(ttb_device *dev, ttb_program *p, uint32_t fn, ttb_tensor *const *in, uint32_t n_in,
                           uint32_t cq, ttb_tensor **out, uint32_t out_cap, uint32_t *n_out) {
  DISPATCH(program_run, dev, p, fn, in, n_in, cq, out, out_cap, n_out);
}
ttb_status ttb_trace_begin(ttb_device *dev, uint32_t cq, ttb_trace_id *out) { DISPATCH(trace_begin, dev, cq, out); }
ttb_status ttb_trace_end(ttb_device *dev, ttb_trace_id id, uint32_t cq) { DISPATCH(trace_end, dev, id, cq); }
ttb_status ttb_trace_replay(ttb_device *dev, ttb_trace_id id, uint32_t cq, int blocking) {
  DISPATCH(trace_replay, dev, id, cq, blocking);
}
ttb_status ttb_trace_release(ttb_device *dev, ttb_trace_id id) { DISPATCH(trace_release, dev, id); }
ttb_status ttb_event_record(ttb_device *dev, uint32_t cq, ttb_event_id *out) { DISPATCH(event_record, dev, cq, out); }
ttb_status ttb_event_wait(ttb_device *dev, uint32_t cq, ttb_event_id ev) { DISPATCH(event_wait, dev, cq, ev); }
ttb_status ttb_event_synchronize(ttb_device *dev, ttb_event_id ev) { DISPATCH(event_synchronize, dev, ev); }

size_t ttb_dtype_size(uint32_t dtype) {
  switch (dtype) {
  case TTB_BF16: return 2;
  case TTB_F32: return 4;
  case TTB_U32: return 4;
  case TTB_I32: return 4;
  case TTB_U16: return 2;
  case TTB_U8: return 1;
  default: return 0;
  }
}

ttb_status ttb_parse_visible_devices(const char *value, int is_set, uint32_t total, int32_t *ids, uint32_t cap,
                                     uint32_t *n) {
  *n = 0;
  if (!is_set) {
    if (total > cap) return ttb_fail(TTB_INVALID_ARGUMENT, "%u chips exceed the limit of %u", total, cap);
    for (uint32_t i = 0; i < total; i++) ids[i] = (int32_t)i;
    *n = total;
    return TTB_OK;
  }
  const char *p = value;
  if (*p == 0) return TTB_OK; /* set but empty: no chips visible */
  for (;;) {
    while (*p == ' ' || *p == '\t') p++;
    if (!isdigit((unsigned char)*p))
      return ttb_fail(TTB_INVALID_ARGUMENT,
                      "TT_VISIBLE_DEVICES=\"%s\": entry %u is not a chip index (want e.g. \"0,2\")", value, *n);
    errno = 0;
    char *end;
    unsigned long v = strtoul(p, &end, 10);
    if (errno != 0 || v >= total)
      return ttb_fail(TTB_INVALID_ARGUMENT, "TT_VISIBLE_DEVICES=\"%s\": chip %.*s does not exist (%u chips present)",
                      value, (int)(end - p), p, total);
    for (uint32_t i = 0; i < *n; i++)
      if (ids[i] == (int32_t)v)
        return ttb_fail(TTB_INVALID_ARGUMENT, "TT_VISIBLE_DEVICES=\"%s\": chip %lu listed twice", value, v);
    if (*n >= cap) return ttb_fail(TTB_INVALID_ARGUMENT, "TT_VISIBLE_DEVICES=\"%s\": too many chips", value);
    ids[(*n)++] = (int32_t)v;
    p = end;
    while (*p == ' ' || *p == '\t') p++;
    if (*p == 0) return TTB_OK;
    if (*p != ',')
      return ttb_fail(TTB_INVALID_ARGUMENT, "TT_VISIBLE_DEVICES=\"%s\": unexpected '%c'", value, *p);
    p++;
  }
}
