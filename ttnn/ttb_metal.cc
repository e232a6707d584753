//go:build ttnn

// Metal backend of the C ABI over the tt-mlir runtime (tt::runtime, TTNN device runtime).
//
// NOT RUN ON HARDWARE. It is written against the public runtime headers of
// tenstorrent/tt-mlir@19c86fca45ae7c3d8f886c0401d8b40a40d2f294 (runtime/include/tt/runtime/
// runtime.h and types.h), which pins tt-metal d5f9bc4a43b1287523458f1af6a470c6b2adc180. CI
// (scripts/check-metal.sh) compiles it against those headers (../shared/tt-mlir-sdk) with
// -Werror and runs it over a fake tt::runtime (fakert/); no TT-Metal / tt-mlir install exists
// there. Build it for hardware with `go build -tags ttnn` and CGO_CPPFLAGS/CGO_LDFLAGS pointing
// at that install (see README.md).
//
// Mapping notes:
//  - Traces are compiled into tt-mlir binaries (the first submit captures, later ones replay),
//    so the explicit trace calls and the event calls return TTB_UNSUPPORTED here; freeing a
//    program releases its traces with releaseTrace.
//  - tt-mlir exposes device layouts only per program input (getLayout), so tensors stay host
//    tensors until a program consumes them; program_run moves each input with toLayout to the
//    layout that input needs (what ttrt does). Placement/layout flags are advisory here.

#ifdef TTB_WITH_METAL

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "include/ttbridge.h"
#include "tt/runtime/runtime.h"
#include "tt/runtime/types.h"

namespace rt = ::tt::runtime;
namespace tgt = ::tt::target;

struct ttb_program {
  rt::Binary bin;
  std::set<ttb_device *> ranOn; // devices whose trace cache may hold this binary's traces (g_mu)
  explicit ttb_program(rt::Binary b) : bin(std::move(b)) {}
};

struct ttb_tensor {
  ttb_device *dev = nullptr;
  ttb_tensor_desc desc{};
  bool retain = false;
  bool consumed = false;
  size_t bytes = 0;
  rt::Tensor host;                 // owned host copy (always present unless consumed)
  std::optional<rt::Tensor> onDev; // device copy in the layout of one program input
  uint64_t layoutBinary = 0;       // binary id / function / input index that layout is for
  uint32_t layoutFn = 0, layoutIdx = 0;
};

struct ttb_device {
  std::optional<rt::Device> dev;
  uint32_t ncq = 1;
  uint32_t fabric = TTB_FABRIC_OFF;
  bool poisoned = false;
  std::string poisonMsg;
  std::set<ttb_tensor *> tensors;
  // Submeshes (createSubMeshDevice): parent is null for the mesh openMeshDevice returned.
  ttb_device *parent = nullptr;
  uint32_t rowOff = 0, colOff = 0;
  uint32_t children = 0; // live submeshes; guarded by g_mu
  uint32_t rows = 0, cols = 0;
  std::set<ttb_device *> subs;     // live submeshes (g_mu), for the overlap check
  std::set<ttb_program *> ran;     // programs run here, whose traces close releases (g_mu)
};

namespace {

std::mutex g_mu;
ttb_device *g_open = nullptr;
bool g_lost = false;
bool g_inited = false;
std::atomic<uint64_t> c_devices{0}, c_programs{0}, c_tensors{0}, c_bytes{0};

ttb_status poison(ttb_device *d, ttb_status st, const std::string &msg) {
  if (d != nullptr) {
    d->poisoned = true;
    d->poisonMsg = msg;
  }
  std::lock_guard<std::mutex> lk(g_mu);
  g_lost = true;
  return ttb_fail(st, "%s; device is now unusable (exit the process and reset the chips)", msg.c_str());
}

// Maps a C++ exception message to a status. tt-mlir LOG_FATAL throws a bare "Fatal error"
// (the detail is in the log; set TTMLIR_RUNTIME_LOGGER_FILE); tt-metal TT_THROW carries it.
ttb_status classify(const char *op, ttb_device *d, const char *what) {
  std::string m = what ? what : "";
  if (m.find("TIMEOUT") != std::string::npos) return poison(d, TTB_TIMEOUT, std::string(op) + ": " + m);
  if (m.find("Out of Memory") != std::string::npos || m.find("out of memory") != std::string::npos ||
      m.find("trace region") != std::string::npos || m.find("trace buffers") != std::string::npos)
    return ttb_fail(TTB_OUT_OF_MEMORY, "%s: %s", op, m.c_str());
  return ttb_fail(TTB_INTERNAL, "%s: %s", op, m.c_str());
}

// Runs f, converting every C++ exception to a status: no exception crosses the C ABI.
template <class F>
ttb_status guard(const char *op, ttb_device *d, F &&f) {
  try {
    for (ttb_device *p = d; p != nullptr; p = p->parent) // a lost parent mesh takes its submeshes
      if (p->poisoned)
        return ttb_fail(TTB_DEVICE_LOST, "%s: device lost: %s (exit the process)", op, p->poisonMsg.c_str());
    return f();
  } catch (const std::bad_alloc &) {
    return ttb_fail(TTB_OUT_OF_MEMORY, "%s: host allocation failed", op);
  } catch (const std::exception &e) {
    return classify(op, d, e.what());
  } catch (...) {
    return ttb_fail(TTB_INTERNAL, "%s: unknown C++ exception", op);
  }
}

bool toTarget(uint32_t d, tgt::DataType *out) {
  switch (d) {
  case TTB_BF16: *out = tgt::DataType::BFloat16; return true;
  case TTB_F32: *out = tgt::DataType::Float32; return true;
  case TTB_U32: *out = tgt::DataType::UInt32; return true;
  case TTB_I32: *out = tgt::DataType::Int32; return true;
  case TTB_U16: *out = tgt::DataType::UInt16; return true;
  case TTB_U8: *out = tgt::DataType::UInt8; return true;
  }
  return false;
}

bool fromTarget(tgt::DataType d, uint32_t *out) {
  switch (d) {
  case tgt::DataType::BFloat16: *out = TTB_BF16; return true;
  case tgt::DataType::Float32: *out = TTB_F32; return true;
  case tgt::DataType::UInt32: *out = TTB_U32; return true;
  case tgt::DataType::Int32: *out = TTB_I32; return true;
  case tgt::DataType::UInt16: *out = TTB_U16; return true;
  case tgt::DataType::UInt8: *out = TTB_U8; return true;
  default: return false; // block floats etc. have no row-major host form in this ABI
  }
}

ttb_status shapeOf(const ttb_tensor_desc *d, std::vector<uint32_t> &shape, std::vector<int64_t> &stride,
                   size_t *bytes) {
  size_t es = ttb_dtype_size(d->dtype);
  if (es == 0 || d->rank == 0 || d->rank > TTB_MAX_RANK) return ttb_fail(TTB_INVALID_ARGUMENT, "bad tensor descriptor");
  shape.assign(d->shape, d->shape + d->rank);
  stride.assign(d->rank, 1);
  for (int i = (int)d->rank - 2; i >= 0; i--) stride[i] = stride[i + 1] * shape[i + 1];
  size_t n = es;
  for (uint32_t s : shape) n *= s;
  *bytes = n;
  return TTB_OK;
}

std::string descStr(uint32_t dtype, const uint32_t *shape, uint32_t rank) {
  static const char *names[] = {"bf16", "f32", "u32", "i32", "u16", "u8"};
  std::string s = dtype < 6 ? names[dtype] : "?";
  s += "[";
  for (uint32_t k = 0; k < rank; k++) s += (k ? "," : "") + std::to_string(shape[k]);
  return s + "]";
}

ttb_status checkDev(ttb_device *d) {
  if (d == nullptr || !d->dev) return ttb_fail(TTB_INVALID_ARGUMENT, "invalid device handle");
  return TTB_OK;
}

ttb_status checkCq(ttb_device *d, uint32_t cq) {
  if (cq >= d->ncq) return ttb_fail(TTB_INVALID_ARGUMENT, "command queue %u does not exist (device has %u)", cq, d->ncq);
  return TTB_OK;
}

rt::FabricConfig fabricOf(uint32_t f) {
  switch (f) {
  case TTB_FABRIC_1D: return rt::FabricConfig::FABRIC_1D;
  case TTB_FABRIC_1D_RING: return rt::FabricConfig::FABRIC_1D_RING;
  case TTB_FABRIC_2D: return rt::FabricConfig::FABRIC_2D;
  default: return rt::FabricConfig::DISABLED;
  }
}

// Frees a tensor's device copy. deallocateTensor is a no-op on a retained tensor (the runtime
// only logs it), so the retain flag is cleared first.
void freeDevCopy(ttb_tensor *t) {
  if (!t->onDev) return;
  rt::setTensorRetain(*t->onDev, false);
  rt::deallocateTensor(*t->onDev, /*force=*/true);
  t->onDev.reset();
}

void destroyTensor(ttb_tensor *t) {
  freeDevCopy(t);
  if (!t->consumed) c_bytes -= t->bytes;
  t->dev->tensors.erase(t);
  delete t;
  c_tensors--;
}

// Releases the traces programs captured on d (tt-mlir keys them by binary and program index in
// the device's trace cache) and forgets the programs. Caller holds no lock.
void releaseTraces(ttb_device *d) {
  std::set<ttb_program *> ran;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    ran.swap(d->ran);
    for (ttb_program *p : ran) p->ranOn.erase(d);
  }
  for (ttb_program *p : ran)
    for (uint32_t i = 0; i < p->bin.getNumPrograms(); i++) rt::releaseTrace(*d->dev, p->bin.id(), i);
}

// ---------- process level ----------

ttb_status m_runtime_init() {
  return guard("runtime init", nullptr, [] {
    std::lock_guard<std::mutex> lk(g_mu);
    if (g_inited) return TTB_OK;
    if (const char *h = getenv("TT_METAL_HOME")) rt::setMetalHome(h);
    if (const char *h = getenv("TT_MLIR_HOME")) rt::setMlirHome(h);
    rt::setCurrentDeviceRuntime(rt::DeviceRuntime::TTNN);
    g_inited = true;
    return TTB_OK;
  });
}

ttb_status m_num_visible_chips(uint32_t *out) {
  return guard("visible chips", nullptr, [&] {
    *out = (uint32_t)rt::getNumAvailableDevices();
    return TTB_OK;
  });
}

ttb_status m_live_counts(ttb_live_counts *out) {
  out->devices = c_devices;
  out->programs = c_programs;
  out->tensors = c_tensors;
  out->traces = 0;
  out->tensor_bytes = c_bytes;
  return TTB_OK;
}

// ---------- devices ----------

ttb_status m_device_open(const ttb_device_options *o, ttb_device **out) {
  if (o == nullptr || out == nullptr || o->struct_size < sizeof(ttb_device_options))
    return ttb_fail(TTB_INVALID_ARGUMENT, "bad options");
  if (o->num_command_queues != 1 && o->num_command_queues != 2)
    return ttb_fail(TTB_INVALID_ARGUMENT, "num_command_queues is %u; TT-Metal supports 1 or 2", o->num_command_queues);
  if ((o->mesh_rows == 0) != (o->mesh_cols == 0))
    return ttb_fail(TTB_INVALID_ARGUMENT, "mesh %ux%u: give both rows and cols, or neither", o->mesh_rows, o->mesh_cols);
  {
    std::lock_guard<std::mutex> lk(g_mu);
    if (g_lost) return ttb_fail(TTB_DEVICE_LOST, "a device was lost earlier in this process; exit and reset the chips");
    if (g_open != nullptr) return ttb_fail(TTB_BUSY, "a device is already open in this process");
  }
  return guard("open", nullptr, [&] {
    uint32_t visible = (uint32_t)rt::getNumAvailableDevices();
    uint64_t need = (uint64_t)o->mesh_rows * o->mesh_cols;
    if (need > visible)
      return ttb_fail(TTB_INVALID_ARGUMENT, "mesh %ux%u needs %llu chips but only %u are visible", o->mesh_rows,
                      o->mesh_cols, (unsigned long long)need, visible);
    if (o->num_device_ids != 0) {
      if (need == 0 || o->num_device_ids != need)
        return ttb_fail(TTB_INVALID_ARGUMENT, "%u device ids given for a %ux%u mesh", o->num_device_ids, o->mesh_rows,
                        o->mesh_cols);
      std::set<int32_t> seen;
      for (uint32_t i = 0; i < o->num_device_ids; i++) {
        int32_t id = o->device_ids[i];
        if (id < 0 || (uint32_t)id >= visible) return ttb_fail(TTB_INVALID_ARGUMENT, "device id %d is not visible", id);
        if (!seen.insert(id).second) return ttb_fail(TTB_INVALID_ARGUMENT, "device id %d given twice", id);
      }
    }
    rt::MeshDeviceOptions mo;
    if (o->mesh_rows != 0) mo.meshShape = std::vector<uint32_t>{o->mesh_rows, o->mesh_cols};
    for (uint32_t i = 0; i < o->num_device_ids; i++) mo.deviceIds.push_back(o->device_ids[i]);
    mo.numHWCQs = o->num_command_queues;
    mo.enableProgramCache = o->enable_program_cache != 0;
    mo.l1SmallSize = o->l1_small_size;
    mo.traceRegionSize = o->trace_region_size;
    if (o->dispatch == TTB_DISPATCH_WORKER) mo.dispatchCoreType = rt::DispatchCoreType::Worker;
    else if (o->dispatch == TTB_DISPATCH_ETH) mo.dispatchCoreType = rt::DispatchCoreType::Ethernet;
    // Fabric is process-global and must be set before the open; undo it if the open fails.
    if (o->fabric != TTB_FABRIC_OFF) rt::setFabricConfig(fabricOf(o->fabric));
    auto *d = new ttb_device();
    try {
      d->dev.emplace(rt::openMeshDevice(mo));
    } catch (...) {
      delete d;
      if (o->fabric != TTB_FABRIC_OFF) rt::setFabricConfig(rt::FabricConfig::DISABLED);
      throw;
    }
    d->ncq = o->num_command_queues;
    d->fabric = o->fabric;
    std::vector<uint32_t> shape = rt::getMeshShape(*d->dev);
    if (shape.size() == 2) d->rows = shape[0], d->cols = shape[1];
    {
      std::lock_guard<std::mutex> lk(g_mu);
      g_open = d;
    }
    c_devices++;
    *out = d;
    return TTB_OK;
  });
}

ttb_status m_device_close(ttb_device *d) {
  if (checkDev(d)) return TTB_INVALID_ARGUMENT;
  if (d->parent != nullptr) return ttb_fail(TTB_INVALID_ARGUMENT, "device is a submesh; release it with ttb_submesh_release");
  {
    std::lock_guard<std::mutex> lk(g_mu);
    if (d->children > 0) return ttb_fail(TTB_BUSY, "cannot close a device with %u live submeshes; release them first", d->children);
  }
  bool lost = d->poisoned;
  ttb_status st = TTB_OK;
  if (!lost) {
    // Never close a lost device: closing chips that were reset or hung can hang (tt-metal #25377).
    st = guard("close", d, [&] {
      while (!d->tensors.empty()) destroyTensor(*d->tensors.begin());
      releaseTraces(d);
      rt::closeMeshDevice(*d->dev);
      if (d->fabric != TTB_FABRIC_OFF) rt::setFabricConfig(rt::FabricConfig::DISABLED);
      return TTB_OK;
    });
  }
  for (ttb_tensor *t : std::set<ttb_tensor *>(d->tensors)) { // host memory only
    c_tensors--;
    if (!t->consumed) c_bytes -= t->bytes;
    delete t;
  }
  {
    std::lock_guard<std::mutex> lk(g_mu);
    for (ttb_program *p : d->ran) p->ranOn.erase(d);
    g_open = nullptr;
  }
  delete d;
  c_devices--;
  if (lost) return ttb_fail(TTB_DEVICE_LOST, "device was lost; host resources freed, exit the process");
  return st;
}

// Submeshes: tt::runtime::createSubMeshDevice(parent, shape, offset) ->
// MeshDevice::create_submesh; releaseSubMeshDevice drops the runtime's handle. They share the
// parent's open options (one set per process in TT-Metal).
ttb_status m_submesh_create(ttb_device *parent, const ttb_submesh_options *o, ttb_device **out) {
  if (checkDev(parent)) return TTB_INVALID_ARGUMENT;
  if (o == nullptr || out == nullptr || o->struct_size < sizeof(ttb_submesh_options))
    return ttb_fail(TTB_INVALID_ARGUMENT, "bad submesh options");
  if (o->mesh_rows == 0 || o->mesh_cols == 0)
    return ttb_fail(TTB_INVALID_ARGUMENT, "submesh %ux%u: rows and cols must be positive", o->mesh_rows, o->mesh_cols);
  {
    std::lock_guard<std::mutex> lk(g_mu);
    if (g_lost) return ttb_fail(TTB_DEVICE_LOST, "a device was lost earlier in this process; exit and reset the chips");
  }
  return guard("create submesh", parent, [&] {
    std::vector<uint32_t> pshape = rt::getMeshShape(*parent->dev);
    if (pshape.size() != 2 || (uint64_t)o->row_offset + o->mesh_rows > pshape[0] ||
        (uint64_t)o->col_offset + o->mesh_cols > pshape[1])
      return ttb_fail(TTB_INVALID_ARGUMENT, "submesh %ux%u at offset (%u,%u) does not fit the parent mesh", o->mesh_rows,
                      o->mesh_cols, o->row_offset, o->col_offset);
    {
      std::lock_guard<std::mutex> lk(g_mu);
      for (ttb_device *o2 : parent->subs) {
        bool apart = o->row_offset + o->mesh_rows <= o2->rowOff || o2->rowOff + o2->rows <= o->row_offset ||
                     o->col_offset + o->mesh_cols <= o2->colOff || o2->colOff + o2->cols <= o->col_offset;
        if (!apart)
          return ttb_fail(TTB_BUSY, "submesh %ux%u at (%u,%u) overlaps a live submesh %ux%u at (%u,%u)", o->mesh_rows,
                          o->mesh_cols, o->row_offset, o->col_offset, o2->rows, o2->cols, o2->rowOff, o2->colOff);
      }
    }
    auto *d = new ttb_device();
    try {
      d->dev.emplace(rt::createSubMeshDevice(*parent->dev, std::vector<uint32_t>{o->mesh_rows, o->mesh_cols},
                                             std::vector<uint32_t>{o->row_offset, o->col_offset}));
    } catch (...) {
      delete d;
      throw;
    }
    d->ncq = parent->ncq;
    d->fabric = TTB_FABRIC_OFF; // the parent owns the process's fabric setting
    d->parent = parent;
    d->rowOff = o->row_offset;
    d->colOff = o->col_offset;
    d->rows = o->mesh_rows;
    d->cols = o->mesh_cols;
    {
      std::lock_guard<std::mutex> lk(g_mu);
      parent->children++;
      parent->subs.insert(d);
    }
    c_devices++;
    *out = d;
    return TTB_OK;
  });
}

ttb_status m_submesh_release(ttb_device *d) {
  if (checkDev(d)) return TTB_INVALID_ARGUMENT;
  if (d->parent == nullptr) return ttb_fail(TTB_INVALID_ARGUMENT, "device is not a submesh; close it with ttb_device_close");
  {
    std::lock_guard<std::mutex> lk(g_mu);
    if (d->children > 0) return ttb_fail(TTB_BUSY, "cannot release a submesh with %u live submeshes; release them first", d->children);
  }
  bool lost = false;
  for (ttb_device *p = d; p != nullptr; p = p->parent) lost = lost || p->poisoned;
  ttb_status st = TTB_OK;
  if (!lost) {
    st = guard("release submesh", d, [&] {
      while (!d->tensors.empty()) destroyTensor(*d->tensors.begin());
      releaseTraces(d);
      rt::releaseSubMeshDevice(*d->dev);
      return TTB_OK;
    });
  }
  for (ttb_tensor *t : std::set<ttb_tensor *>(d->tensors)) { // host memory only
    c_tensors--;
    if (!t->consumed) c_bytes -= t->bytes;
    delete t;
  }
  {
    std::lock_guard<std::mutex> lk(g_mu);
    for (ttb_program *p : d->ran) p->ranOn.erase(d);
    d->parent->children--;
    d->parent->subs.erase(d);
  }
  delete d;
  c_devices--;
  if (lost) return ttb_fail(TTB_DEVICE_LOST, "submesh was lost; host resources freed, exit the process");
  return st;
}

ttb_status m_device_info(ttb_device *d, ttb_device_info *out) {
  if (checkDev(d)) return TTB_INVALID_ARGUMENT;
  return guard("device info", d, [&] {
    std::memset(out, 0, sizeof *out);
    std::snprintf(out->backend, sizeof out->backend, "metal");
    tgt::Arch a = rt::getArch();
    std::snprintf(out->arch, sizeof out->arch, "%s", a == tgt::Arch::Blackhole ? "blackhole" : a == tgt::Arch::Wormhole_b0 ? "wormhole_b0" : "other");
    std::vector<uint32_t> shape = rt::getMeshShape(*d->dev);
    if (shape.size() == 2) {
      out->mesh_rows = shape[0];
      out->mesh_cols = shape[1];
    }
    std::vector<int> ids = rt::getDeviceIds(*d->dev);
    out->num_chips = (uint32_t)ids.size();
    for (size_t i = 0; i < ids.size() && i < TTB_MAX_CHIPS; i++) out->device_ids[i] = ids[i];
    out->num_command_queues = (uint32_t)rt::getNumHwCqs(*d->dev);
    out->l1_small_size = rt::getL1SmallSize(*d->dev);
    out->trace_region_size = rt::getTraceRegionSize(*d->dev);
    out->dram_channels = (uint32_t)rt::getNumDramChannels(*d->dev);
    out->dram_bytes_per_channel = rt::getDramSizePerChannel(*d->dev);
    out->l1_bytes_per_core = rt::getL1SizePerCore(*d->dev);
    out->is_submesh = d->parent != nullptr;
    out->row_offset = d->rowOff;
    out->col_offset = d->colOff;
    return TTB_OK;
  });
}

ttb_status m_device_mem(ttb_device *d, uint32_t kind, ttb_mem_stats *out) {
  if (checkDev(d)) return TTB_INVALID_ARGUMENT;
  static const rt::MemoryBufferType kinds[] = {rt::MemoryBufferType::DRAM, rt::MemoryBufferType::L1,
                                               rt::MemoryBufferType::L1_SMALL, rt::MemoryBufferType::TRACE};
  if (kind > TTB_MEM_TRACE) return ttb_fail(TTB_INVALID_ARGUMENT, "unknown memory kind %u", kind);
  return guard("memory stats", d, [&] {
    auto views = rt::getMemoryView(*d->dev);
    const rt::MemoryView &v = views.at(kinds[kind]);
    out->total = v.numBanks * v.totalBytesPerBank;
    out->allocated = v.numBanks * v.totalBytesAllocatedPerBank;
    out->largest_free = v.largestContiguousBytesFreePerBank;
    return TTB_OK;
  });
}

ttb_status m_device_sync(ttb_device *d, uint32_t cq) {
  if (checkDev(d) || checkCq(d, cq)) return TTB_INVALID_ARGUMENT;
  return guard("synchronize", d, [&] {
    std::vector<rt::Tensor> live;
    for (ttb_tensor *t : d->tensors)
      if (t->onDev) live.push_back(*t->onDev);
    if (!live.empty()) rt::wait(live, (uint8_t)cq);
    return TTB_OK;
  });
}

// ---------- programs ----------

ttb_status m_program_load_file(const char *path, ttb_program **out) {
  if (path == nullptr || out == nullptr) return ttb_fail(TTB_INVALID_ARGUMENT, "path or out is NULL");
  struct stat st;
  if (stat(path, &st) != 0) return ttb_fail(TTB_NOT_FOUND, "%s: no such file", path);
  try {
    rt::Binary bin = rt::Binary::loadFromPath(path);
    (void)bin.getNumPrograms(); // asserts the TTNN file identifier
    *out = new ttb_program(std::move(bin));
  } catch (const std::bad_alloc &) {
    return ttb_fail(TTB_OUT_OF_MEMORY, "load program %s: host allocation failed", path);
  } catch (const std::exception &e) {
    return ttb_fail(TTB_INVALID_ARGUMENT, "load program %s: not a loadable .ttnn binary: %s", path, e.what());
  }
  c_programs++;
  return TTB_OK;
}

ttb_status m_program_free(ttb_program *p) {
  if (p == nullptr) return ttb_fail(TTB_INVALID_ARGUMENT, "invalid program handle");
  std::set<ttb_device *> devs;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    devs.swap(p->ranOn);
    for (ttb_device *d : devs) d->ran.erase(p);
  }
  ttb_status st = TTB_OK;
  for (ttb_device *d : devs) {
    bool lost = false;
    for (ttb_device *q = d; q != nullptr; q = q->parent) lost = lost || q->poisoned;
    if (lost) continue;
    ttb_status s2 = guard("free program", d, [&] {
      for (uint32_t i = 0; i < p->bin.getNumPrograms(); i++) rt::releaseTrace(*d->dev, p->bin.id(), i);
      return TTB_OK;
    });
    if (st == TTB_OK) st = s2;
  }
  delete p;
  c_programs--;
  return st;
}

ttb_status m_program_num_functions(ttb_program *p, uint32_t *out) {
  return guard("program functions", nullptr, [&] {
    *out = p->bin.getNumPrograms();
    return TTB_OK;
  });
}

ttb_status m_program_function_name(ttb_program *p, uint32_t fn, char *buf, size_t cap) {
  return guard("program function name", nullptr, [&] {
    if (fn >= p->bin.getNumPrograms()) return ttb_fail(TTB_NOT_FOUND, "no function %u", fn);
    std::string n = p->bin.getProgramName(fn);
    if (buf == nullptr || cap <= n.size()) return ttb_fail(TTB_INVALID_ARGUMENT, "name buffer too small");
    std::memcpy(buf, n.c_str(), n.size() + 1);
    return TTB_OK;
  });
}

ttb_status m_program_io(ttb_program *p, uint32_t fn, int is_output, ttb_tensor_desc *descs, uint32_t cap, uint32_t *n) {
  return guard("program io", nullptr, [&] {
    if (fn >= p->bin.getNumPrograms()) return ttb_fail(TTB_NOT_FOUND, "no function %u", fn);
    std::vector<rt::TensorDesc> ds = is_output ? p->bin.getProgramOutputs(fn) : p->bin.getProgramInputs(fn);
    *n = (uint32_t)ds.size();
    if (descs == nullptr && cap == 0) return TTB_OK;
    if (cap < ds.size()) return ttb_fail(TTB_INVALID_ARGUMENT, "descriptor buffer holds %u, need %zu", cap, ds.size());
    for (size_t i = 0; i < ds.size(); i++) {
      ttb_tensor_desc &o = descs[i];
      std::memset(&o, 0, sizeof o);
      if (!fromTarget(ds[i].dataType, &o.dtype) || ds[i].shape.size() > TTB_MAX_RANK)
        return ttb_fail(TTB_UNSUPPORTED, "%s %zu of function %u has a type or rank this ABI cannot carry",
                        is_output ? "output" : "input", i, fn);
      o.rank = (uint32_t)ds[i].shape.size();
      for (uint32_t k = 0; k < o.rank; k++) o.shape[k] = ds[i].shape[k];
    }
    return TTB_OK;
  });
}

// ---------- tensors ----------

ttb_status m_tensor_upload(ttb_device *d, const ttb_tensor_desc *desc, const void *src, size_t bytes, uint32_t placement,
                           uint32_t layout, int retain, uint32_t cq, ttb_tensor **out) {
  (void)placement;
  (void)layout;
  if (checkDev(d) || checkCq(d, cq) || desc == nullptr || out == nullptr) return ttb_fail(TTB_INVALID_ARGUMENT, "bad arguments");
  return guard("upload", d, [&] {
    std::vector<uint32_t> shape;
    std::vector<int64_t> stride;
    size_t want;
    tgt::DataType dt;
    if (shapeOf(desc, shape, stride, &want) || !toTarget(desc->dtype, &dt)) return ttb_fail(TTB_INVALID_ARGUMENT, "bad tensor descriptor");
    if (bytes != want || src == nullptr) return ttb_fail(TTB_INVALID_ARGUMENT, "upload of %zu B for a tensor of %zu B", bytes, want);
    auto *t = new ttb_tensor();
    t->dev = d;
    t->desc = *desc;
    t->retain = retain != 0;
    t->bytes = bytes;
    t->host = rt::createOwnedHostTensor(src, shape, stride, (uint32_t)ttb_dtype_size(desc->dtype), dt);
    d->tensors.insert(t);
    c_tensors++;
    c_bytes += bytes;
    *out = t;
    return TTB_OK;
  });
}

ttb_status m_tensor_alloc(ttb_device *d, const ttb_tensor_desc *desc, uint32_t placement, uint32_t layout, ttb_tensor **out) {
  if (desc == nullptr) return ttb_fail(TTB_INVALID_ARGUMENT, "desc is NULL");
  size_t n = 1;
  for (uint32_t i = 0; i < desc->rank && i < TTB_MAX_RANK; i++) n *= desc->shape[i];
  std::vector<uint8_t> zeros(n * ttb_dtype_size(desc->dtype));
  return m_tensor_upload(d, desc, zeros.data(), zeros.size(), placement, layout, 1, 0, out);
}

ttb_status m_tensor_write(ttb_tensor *t, const void *src, size_t bytes, uint32_t cq) {
  if (t == nullptr || checkCq(t->dev, cq)) return ttb_fail(TTB_INVALID_ARGUMENT, "bad arguments");
  return guard("write", t->dev, [&] {
    if (t->consumed) return ttb_fail(TTB_INVALID_ARGUMENT, "tensor was deallocated by a program (not retained)");
    if (bytes != t->bytes || src == nullptr) return ttb_fail(TTB_INVALID_ARGUMENT, "write of %zu B to a tensor of %zu B", bytes, t->bytes);
    std::vector<uint32_t> shape;
    std::vector<int64_t> stride;
    size_t want;
    tgt::DataType dt{};
    if (shapeOf(&t->desc, shape, stride, &want) || !toTarget(t->desc.dtype, &dt))
      return ttb_fail(TTB_INTERNAL, "tensor has a bad descriptor");
    rt::Tensor src_t = rt::createOwnedHostTensor(src, shape, stride, (uint32_t)ttb_dtype_size(t->desc.dtype), dt);
    t->host = src_t; // program outputs have no host copy yet
    // The device copy is in a program input's layout (tiles, maybe another dtype), which a
    // row-major host tensor cannot be copied into: drop it, the next run lays the new data out.
    freeDevCopy(t);
    return TTB_OK;
  });
}

ttb_status m_tensor_read(ttb_tensor *t, void *dst, size_t bytes, uint32_t cq) {
  if (t == nullptr || checkCq(t->dev, cq)) return ttb_fail(TTB_INVALID_ARGUMENT, "bad arguments");
  return guard("read", t->dev, [&] {
    if (t->consumed) return ttb_fail(TTB_INVALID_ARGUMENT, "tensor was deallocated by a program (not retained)");
    if (bytes != t->bytes || dst == nullptr) return ttb_fail(TTB_INVALID_ARGUMENT, "read of %zu B from a tensor of %zu B", bytes, t->bytes);
    if (!t->onDev) {
      rt::memcpy(dst, t->host);
      return TTB_OK;
    }
    rt::wait(*t->onDev, (uint8_t)cq);
    std::vector<rt::Tensor> shards = rt::toHost(*t->onDev, /*untilize=*/true);
    // One shard, or replicated shards: the first holds the whole tensor. Sharded tensors whose
    // shards concatenate to the logical tensor are copied shard by shard.
    size_t first = rt::getTensorVolume(shards.at(0)) * rt::getTensorElementSize(shards.at(0));
    if (first == bytes) {
      rt::memcpy(dst, shards[0]);
    } else {
      size_t off = 0;
      for (rt::Tensor &s : shards) {
        size_t n = rt::getTensorVolume(s) * rt::getTensorElementSize(s);
        if (off + n > bytes) return ttb_fail(TTB_UNSUPPORTED, "shard layout does not concatenate to the tensor");
        rt::memcpy(static_cast<uint8_t *>(dst) + off, s);
        off += n;
      }
      if (off != bytes) return ttb_fail(TTB_UNSUPPORTED, "shards hold %zu B, tensor is %zu B", off, bytes);
    }
    for (rt::Tensor &s : shards) {
      rt::setTensorRetain(s, false);
      rt::deallocateTensor(s, true);
    }
    return TTB_OK;
  });
}

ttb_status m_tensor_desc(ttb_tensor *t, ttb_tensor_desc *out) {
  if (t == nullptr || out == nullptr) return ttb_fail(TTB_INVALID_ARGUMENT, "invalid tensor handle");
  *out = t->desc;
  return TTB_OK;
}

ttb_status m_tensor_free(ttb_tensor *t) {
  if (t == nullptr) return ttb_fail(TTB_INVALID_ARGUMENT, "invalid tensor handle");
  if (t->dev->poisoned) {
    t->dev->tensors.erase(t);
    if (!t->consumed) c_bytes -= t->bytes;
    delete t;
    c_tensors--;
    return TTB_OK;
  }
  return guard("free tensor", t->dev, [&] {
    destroyTensor(t);
    return TTB_OK;
  });
}

// ---------- execution ----------

ttb_status m_program_run(ttb_device *d, ttb_program *p, uint32_t fn, ttb_tensor *const *in, uint32_t n_in, uint32_t cq,
                         ttb_tensor **out, uint32_t out_cap, uint32_t *n_out) {
  if (checkDev(d) || checkCq(d, cq) || p == nullptr || n_out == nullptr) return ttb_fail(TTB_INVALID_ARGUMENT, "bad arguments");
  return guard("run", d, [&] {
    if (fn >= p->bin.getNumPrograms()) return ttb_fail(TTB_NOT_FOUND, "no function %u", fn);
    if (n_in != p->bin.getNumProgramInputs(fn))
      return ttb_fail(TTB_INVALID_ARGUMENT, "function takes %u inputs, got %u", p->bin.getNumProgramInputs(fn), n_in);
    std::pair<uint32_t, uint32_t> pm = p->bin.getProgramMeshShape(fn);
    if ((pm.first != 0 || pm.second != 0) && (pm.first != d->rows || pm.second != d->cols))
      return ttb_fail(TTB_INVALID_ARGUMENT, "program %s was compiled for a %ux%u mesh; this device is %ux%u",
                      p->bin.getProgramName(fn).c_str(), pm.first, pm.second, d->rows, d->cols);
    std::vector<rt::TensorDesc> want = p->bin.getProgramInputs(fn);
    std::vector<rt::Tensor> inputs, temps;
    struct FreeTemps { // also when submit throws
      std::vector<rt::Tensor> &v;
      ~FreeTemps() {
        for (rt::Tensor &x : v) try {
            rt::setTensorRetain(x, false);
            rt::deallocateTensor(x, /*force=*/true);
          } catch (...) { // never from a destructor; the runtime frees it with its last handle
          }
      }
    } freeTemps{temps};
    for (uint32_t i = 0; i < n_in; i++) {
      ttb_tensor *t = in[i];
      if (t == nullptr || t->dev != d || t->consumed) return ttb_fail(TTB_INVALID_ARGUMENT, "input %u is invalid or deallocated", i);
      uint32_t wdt = 0;
      bool okType = fromTarget(want[i].dataType, &wdt) && wdt == t->desc.dtype && want[i].shape.size() == t->desc.rank;
      for (uint32_t k = 0; okType && k < t->desc.rank; k++) okType = want[i].shape[k] == t->desc.shape[k];
      if (!okType)
        return ttb_fail(TTB_INVALID_ARGUMENT, "%s input %u: got %s, want %s", p->bin.getProgramName(fn).c_str(), i,
                        descStr(t->desc.dtype, t->desc.shape, t->desc.rank).c_str(),
                        descStr(wdt, want[i].shape.data(), (uint32_t)want[i].shape.size()).c_str());
      if (std::find(in, in + i, t) != in + i) {
        // The same tensor at a second position: a temporary device copy in this position's
        // layout, freed after the run (the first position keeps the tensor's own copy).
        rt::Tensor src = t->host.handle ? t->host : *t->onDev;
        rt::Tensor tmp = rt::toLayout(src, *d->dev, rt::getLayout(p->bin, fn, i), /*retain=*/true);
        temps.push_back(tmp);
        inputs.push_back(tmp);
        continue;
      }
      bool same = t->onDev && t->layoutBinary == p->bin.id() && t->layoutFn == fn && t->layoutIdx == i;
      if (!same) {
        rt::Layout l = rt::getLayout(p->bin, fn, i);
        // retain=true keeps the source (a non-retained conversion deallocates it); the device
        // copy then carries the tensor's own retain flag, which decides whether the program's
        // DeallocateOps free it.
        if (t->host.handle) {
          freeDevCopy(t);
          t->onDev = rt::toLayout(t->host, *d->dev, l, /*retain=*/true);
        } else { // a program output fed to a program: convert its device copy
          rt::Tensor prev = *t->onDev;
          t->onDev = rt::toLayout(prev, *d->dev, l, /*retain=*/true);
          rt::setTensorRetain(prev, false);
          rt::deallocateTensor(prev, /*force=*/true);
        }
        rt::setTensorRetain(*t->onDev, t->retain);
        t->layoutBinary = p->bin.id();
        t->layoutFn = fn;
        t->layoutIdx = i;
      }
      inputs.push_back(*t->onDev);
    }
    {
      std::lock_guard<std::mutex> lk(g_mu);
      p->ranOn.insert(d);
      d->ran.insert(p);
    }
    std::vector<rt::Tensor> outs = rt::submit(*d->dev, p->bin, fn, inputs);
    if (outs.size() > out_cap) {
      for (rt::Tensor &o : outs) rt::deallocateTensor(o, true);
      return ttb_fail(TTB_INVALID_ARGUMENT, "function returns %zu outputs, room for %u", outs.size(), out_cap);
    }
    std::vector<rt::TensorDesc> descs = p->bin.getProgramOutputs(fn);
    for (size_t i = 0; i < outs.size(); i++) {
      rt::setTensorRetain(outs[i], true);
      auto *t = new ttb_tensor();
      t->dev = d;
      t->retain = true;
      if (i < descs.size()) {
        fromTarget(descs[i].dataType, &t->desc.dtype);
        t->desc.rank = (uint32_t)std::min<size_t>(descs[i].shape.size(), TTB_MAX_RANK);
        for (uint32_t k = 0; k < t->desc.rank; k++) t->desc.shape[k] = descs[i].shape[k];
      }
      // Logical bytes: a tile-layout output's volume is padded to whole tiles.
      t->bytes = (size_t)rt::getTensorLogicalVolume(outs[i]) * rt::getTensorElementSize(outs[i]);
      t->onDev = outs[i];
      t->layoutBinary = ~0ull; // produced by a program, not moved to an input layout
      d->tensors.insert(t);
      c_tensors++;
      c_bytes += t->bytes;
      out[i] = t;
    }
    for (uint32_t i = 0; i < n_in; i++)
      if (!in[i]->retain) { // the program's DeallocateOp freed the device copy
        in[i]->onDev.reset();
        in[i]->consumed = true;
        c_bytes -= in[i]->bytes;
      }
    *n_out = (uint32_t)outs.size();
    return TTB_OK;
  });
}

ttb_status unsupportedTrace() {
  return ttb_fail(TTB_UNSUPPORTED, "the tt-mlir backend captures traces inside compiled programs (first run captures, later runs replay); explicit trace calls are not available");
}
ttb_status m_trace_begin(ttb_device *, uint32_t, ttb_trace_id *) { return unsupportedTrace(); }
ttb_status m_trace_end(ttb_device *, ttb_trace_id, uint32_t) { return unsupportedTrace(); }
ttb_status m_trace_replay(ttb_device *, ttb_trace_id, uint32_t, int) { return unsupportedTrace(); }
ttb_status m_trace_release(ttb_device *, ttb_trace_id) { return unsupportedTrace(); }
ttb_status m_event_record(ttb_device *, uint32_t, ttb_event_id *) {
  return ttb_fail(TTB_UNSUPPORTED, "the tt-mlir runtime API has no explicit event record; use device_sync");
}
ttb_status m_event_wait(ttb_device *, uint32_t, ttb_event_id) { return ttb_fail(TTB_UNSUPPORTED, "events are not available on the tt-mlir backend"); }
ttb_status m_event_synchronize(ttb_device *, ttb_event_id) { return ttb_fail(TTB_UNSUPPORTED, "events are not available on the tt-mlir backend"); }

ttb_backend makeBackend() {
  ttb_backend b{};
  b.abi_version = TTB_ABI_VERSION;
  b.name = "metal";
  b.runtime_init = m_runtime_init;
  b.num_visible_chips = m_num_visible_chips;
  b.device_open = m_device_open;
  b.device_close = m_device_close;
  b.device_info = m_device_info;
  b.device_mem = m_device_mem;
  b.device_sync = m_device_sync;
  b.program_load_file = m_program_load_file;
  b.program_free = m_program_free;
  b.program_num_functions = m_program_num_functions;
  b.program_function_name = m_program_function_name;
  b.program_io = m_program_io;
  b.tensor_upload = m_tensor_upload;
  b.tensor_alloc = m_tensor_alloc;
  b.tensor_write = m_tensor_write;
  b.tensor_read = m_tensor_read;
  b.tensor_desc = m_tensor_desc;
  b.tensor_free = m_tensor_free;
  b.program_run = m_program_run;
  b.trace_begin = m_trace_begin;
  b.trace_end = m_trace_end;
  b.trace_replay = m_trace_replay;
  b.trace_release = m_trace_release;
  b.event_record = m_event_record;
  b.event_wait = m_event_wait;
  b.event_synchronize = m_event_synchronize;
  b.live_counts = m_live_counts;
  b.submesh_create = m_submesh_create;
  b.submesh_release = m_submesh_release;
  return b;
}

const ttb_backend g_metal = makeBackend();

} // namespace

extern "C" const ttb_backend *ttb_metal_backend(void) { return &g_metal; }

#endif // TTB_WITH_METAL
