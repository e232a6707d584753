// A fake of tt::runtime (the tt-mlir runtime, TTNN device runtime) for tests: TEST-ONLY.
//
// Written from the declarations in the pinned headers (../shared/tt-mlir-sdk,
// tenstorrent/tt-mlir@19c86fca) and the contracts they and tt-mlir's documentation state; it
// contains no tt-mlir or TT-Metal source. scripts/check-metal.sh builds it into a
// libTTMLIRRuntime.so, so that the metal backend (ttnn/ttb_metal.cc, build tag `ttnn`) links
// and runs where no TT-Metal install exists. It implements every tt::runtime function the
// backend calls, behaving as the real runtime promises, and checks what it is given:
//
//  - getNumAvailableDevices: MOCK_DEVICES_COUNT chips (default 8), narrowed by
//    TT_VISIBLE_DEVICES (comma-separated indexes, as the UMD reads it).
//  - openMeshDevice honours and records MeshDeviceOptions: mesh shape (2-D, within the visible
//    chips), device ids (distinct, visible, one per chip), L1 small size, trace region size,
//    1 or 2 hardware CQs, dispatch core type, program cache, and the fabric config set before
//    the open. One parent mesh per process. closeMeshDevice needs a parent mesh;
//    createSubMeshDevice needs a parent, a 2-D shape that fits at its offset and no overlap with
//    a live submesh; releaseSubMeshDevice needs a submesh.
//  - Binary::loadFromPath reads a size-prefixed .ttnn flatbuffer (file identifier "TTNN",
//    verified with the SDK's generated schema code) and answers getNumPrograms, getProgramName,
//    getProgramInputs/Outputs, getNumProgramInputs from it; getLayout gives an input's layout
//    (storage, tile or row-major, data type, buffer type) from its TensorRef.
//  - Tensors have a shape, stride, data type, layout, physical volume (tile layout pads the last
//    two dims to 32), host or device placement (which mesh), a retain flag and an allocated
//    state. toLayout moves a host tensor to a device layout (and deallocates the source when not
//    retained, as the runtime does); submit checks the input count, that every input is
//    allocated, on the device it runs on and in the layout and shape the program expects, and
//    that the program's mesh shape is the device's; it deallocates non-retained inputs (the
//    compiled program's DeallocateOps) and returns device outputs filled deterministically from
//    the program name and the inputs (outputs are NOT a model's results). toHost/memcpy/wait
//    check allocation, sizes, layouts and command queues; deallocateTensor is a no-op on a
//    retained tensor (as in the runtime) and frees otherwise.
//  - Programs whose operations include CaptureOrExecuteTraceOp capture a trace on their first
//    submit on a mesh (charged to the trace region: 64 KiB per operation) and replay it later;
//    releaseTrace drops the entry. Closing a mesh or releasing a submesh accounts for what is
//    left: device buffers still allocated, trace entries and live submeshes are counted as
//    leaked (tt_fake_runtime_stats_get, see tt_fake_runtime.h).
//
// Errors are thrown the way the runtime throws them: std::runtime_error. tt-mlir's LOG_ASSERT
// throws "Fatal error" with the detail in its log; the fake appends the detail to what()
// ("Fatal error: ...") so tests can tell the checks apart. TT-Metal's TT_FATAL / TT_THROW
// carry their message; the fake's start with "TT_FATAL:" / "TT_THROW:".

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tt/runtime/runtime.h"
#include "tt/runtime/types.h"
#include "ttmlir/Target/TTNN/binary_generated.h"

#include "tt_fake_runtime.h"

namespace rt = ::tt::runtime;
namespace tgt = ::tt::target;

namespace {

constexpr uint64_t kDramChannels = 12;
constexpr uint64_t kDramPerChannel = 1ull << 30;
constexpr uint64_t kL1PerCore = 1464ull * 1024;
constexpr uint64_t kCores = 64;
constexpr uint64_t kTraceBytesPerOp = 64 * 1024;

[[noreturn]] void logAssert(const std::string &detail) { throw std::runtime_error("Fatal error: " + detail); }
[[noreturn]] void ttFatal(const std::string &detail) { throw std::runtime_error("TT_FATAL: " + detail); }

template <class... A>
std::string str(const A &...a) {
  std::ostringstream s;
  (s << ... << a);
  return s.str();
}

std::string shapeStr(const std::vector<uint32_t> &s) {
  std::string o = "[";
  for (size_t i = 0; i < s.size(); i++) o += (i ? "," : "") + std::to_string(s[i]);
  return o + "]";
}

uint32_t dtypeSize(tgt::DataType d) {
  switch (d) {
  case tgt::DataType::Float32:
  case tgt::DataType::UInt32:
  case tgt::DataType::Int32: return 4;
  case tgt::DataType::Float16:
  case tgt::DataType::BFloat16:
  case tgt::DataType::UInt16: return 2;
  case tgt::DataType::UInt8: return 1;
  default: return 0; // block floats and the types the runtime does not support on device
  }
}

enum class Storage { Host, Device };
enum class Lay { RowMajor, Tile };

const char *layName(Lay l) { return l == Lay::Tile ? "tile" : "row-major"; }
const char *storageName(Storage s) { return s == Storage::Device ? "device" : "host"; }

struct Mesh;

struct Stats {
  tt_fake_runtime_stats s{};
} g_stats;

std::recursive_mutex g_mu;

// What a tt::runtime::Tensor's handle points to (the TTNN tensor wrapper's stand-in).
struct Buf {
  std::vector<uint32_t> shape;
  std::vector<int64_t> stride;
  tgt::DataType dtype = tgt::DataType::Float32;
  uint32_t itemsize = 0;
  Storage storage = Storage::Host;
  Lay lay = Lay::RowMajor;
  tgt::BufferType mem = tgt::BufferType::SystemMemory;
  std::shared_ptr<Mesh> mesh; // device tensors only
  bool allocated = true;
  bool retain = false;
  std::vector<uint8_t> bytes; // physical contents (row-major logical data, zero padding)

  uint64_t logicalVolume() const {
    uint64_t n = 1;
    for (uint32_t s : shape) n *= s;
    return n;
  }
  uint64_t physicalVolume() const {
    if (lay == Lay::RowMajor || shape.empty()) return logicalVolume();
    std::vector<uint32_t> p = shape;
    p.back() = (p.back() + 31) / 32 * 32;
    if (p.size() >= 2) p[p.size() - 2] = (p[p.size() - 2] + 31) / 32 * 32;
    uint64_t n = 1;
    for (uint32_t s : p) n *= s;
    return n;
  }
  ~Buf();
};

struct LayoutDesc {
  Storage storage;
  Lay lay;
  tgt::DataType dtype;
  tgt::BufferType mem;
};

struct Mesh {
  bool isParent = true;
  std::shared_ptr<Mesh> parent; // a submesh keeps its parent alive, as in TT-Metal
  uint32_t id = 0;
  uint32_t rows = 0, cols = 0, rowOff = 0, colOff = 0;
  std::vector<int> ids;
  bool open = true;
  size_t numHWCQs = 1;
  bool programCache = true;
  size_t l1Small = 0, traceRegion = 0;
  std::set<Buf *> live;                                  // allocated device buffers
  std::map<std::pair<uint64_t, size_t>, uint64_t> traces; // (binary id, program) -> trace bytes
  uint64_t traceUsed = 0;
  std::vector<std::weak_ptr<Mesh>> subs;

  uint64_t dramUsed() const {
    uint64_t n = 0;
    for (Buf *b : live)
      if (b->mem == tgt::BufferType::DRAM) n += b->bytes.size();
    return n;
  }
  uint64_t l1Used() const {
    uint64_t n = 0;
    for (Buf *b : live)
      if (b->mem == tgt::BufferType::L1) n += b->bytes.size();
    return n;
  }
  std::string name() const { return str(isParent ? "mesh " : "submesh ", id, " (", rows, "x", cols, ")"); }
};

Buf::~Buf() {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  if (!allocated) return;
  if (storage == Storage::Host) {
    g_stats.s.host_tensors--;
  } else if (mesh) { // the last handle dropped: the buffer is freed, as a TTNN device tensor is
    mesh->live.erase(this);
    g_stats.s.device_buffers--;
    g_stats.s.device_bytes -= bytes.size();
  }
}

std::map<uint64_t, std::string> g_binaryFiles;   // Binary::id() -> the file's base name
std::vector<tt_fake_runtime_submit> g_submitLog; // a ring of the last TT_FAKE_SUBMIT_LOG submits
uint64_t g_submitCount = 0;

std::weak_ptr<Mesh> g_parent; // the open parent mesh
uint32_t g_nextMesh = 1;
rt::FabricConfig g_fabric = rt::FabricConfig::DISABLED;
rt::DeviceRuntime g_runtime = rt::DeviceRuntime::TTNN;

uint32_t visibleChips() {
  long total = 8;
  if (const char *m = getenv("MOCK_DEVICES_COUNT")) total = strtol(m, nullptr, 10);
  if (total < 0 || total > 64) ttFatal(str("MOCK_DEVICES_COUNT=", total, " is outside 0..64"));
  const char *v = getenv("TT_VISIBLE_DEVICES");
  if (v == nullptr) return (uint32_t)total;
  std::set<long> seen;
  std::string s(v);
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    std::string tok = s.substr(i, j - i);
    char *end = nullptr;
    long id = strtol(tok.c_str(), &end, 10);
    if (tok.empty() || *end != 0 || id < 0 || id >= total || !seen.insert(id).second)
      ttFatal(str("TT_VISIBLE_DEVICES=", v, ": bad chip index \"", tok, "\""));
    i = j + 1;
  }
  return (uint32_t)seen.size();
}

std::shared_ptr<Mesh> meshOf(rt::Device d, const char *op) {
  if (!d.matchesRuntime(rt::DeviceRuntime::TTNN) || !d.handle) logAssert(str(op, ": not a TTNN device handle"));
  auto m = std::static_pointer_cast<Mesh>(d.handle);
  if (!m->open) ttFatal(str(op, ": ", m->name(), " is closed"));
  return m;
}

std::shared_ptr<Buf> bufOf(const rt::Tensor &t, const char *op) {
  if (!t.matchesRuntime(rt::DeviceRuntime::TTNN) || !t.handle) logAssert(str(op, ": not a TTNN tensor handle"));
  return std::static_pointer_cast<Buf>(t.handle);
}

void requireAllocated(const Buf &b, const char *op, const std::string &what) {
  if (!b.allocated) ttFatal(str(op, ": ", what, " is not allocated (it was deallocated)"));
  if (b.storage == Storage::Device && (!b.mesh || !b.mesh->open))
    ttFatal(str(op, ": ", what, " lives on a mesh device that was closed"));
}

rt::Tensor wrap(std::shared_ptr<Buf> b) {
  std::shared_ptr<void> h = b;
  return rt::Tensor(h, nullptr, rt::DeviceRuntime::TTNN);
}

void freeBuf(Buf &b) {
  if (!b.allocated) return;
  b.allocated = false;
  if (b.storage == Storage::Host) {
    g_stats.s.host_tensors--;
  } else if (b.mesh) {
    b.mesh->live.erase(&b);
    g_stats.s.device_buffers--;
    g_stats.s.device_bytes -= b.bytes.size();
  }
  std::vector<uint8_t>().swap(b.bytes);
}

std::shared_ptr<Buf> newDeviceBuf(const std::shared_ptr<Mesh> &m, const std::vector<uint32_t> &shape, tgt::DataType dt,
                                  Lay lay, tgt::BufferType mem) {
  auto b = std::make_shared<Buf>();
  b->shape = shape;
  b->dtype = dt;
  b->itemsize = dtypeSize(dt);
  b->storage = Storage::Device;
  b->lay = lay;
  b->mem = mem;
  b->mesh = m;
  b->stride.assign(shape.size(), 1);
  for (int i = (int)shape.size() - 2; i >= 0; i--) b->stride[i] = b->stride[i + 1] * shape[i + 1];
  uint64_t need = b->physicalVolume() * b->itemsize;
  uint64_t chips = (uint64_t)m->rows * m->cols;
  if (mem == tgt::BufferType::L1) {
    if (m->l1Used() + need > kCores * (kL1PerCore - m->l1Small) * chips)
      throw std::runtime_error(str("TT_THROW: Out of Memory: Not enough space to allocate ", need, " B L1 buffer"));
  } else if (m->dramUsed() + need > kDramChannels * kDramPerChannel * chips - m->traceRegion * chips) {
    throw std::runtime_error(str("TT_THROW: Out of Memory: Not enough space to allocate ", need, " B DRAM buffer"));
  }
  b->bytes.assign(need, 0);
  m->live.insert(b.get());
  g_stats.s.device_buffers++;
  g_stats.s.device_bytes += need;
  return b;
}

// Copies row-major logical data into a buffer of layout lay (zero padding for tiles).
void putLogical(Buf &b, const uint8_t *src) {
  if (b.lay == Lay::RowMajor || b.shape.empty()) {
    std::memcpy(b.bytes.data(), src, b.logicalVolume() * b.itemsize);
    return;
  }
  size_t rank = b.shape.size();
  uint64_t cols = b.shape[rank - 1], pcols = (cols + 31) / 32 * 32;
  uint64_t rows = rank >= 2 ? b.shape[rank - 2] : 1, prows = rank >= 2 ? (rows + 31) / 32 * 32 : 1;
  uint64_t outer = b.logicalVolume() / (rows * cols);
  for (uint64_t o = 0; o < outer; o++)
    for (uint64_t r = 0; r < rows; r++)
      std::memcpy(&b.bytes[((o * prows + r) * pcols) * b.itemsize], src + ((o * rows + r) * cols) * b.itemsize,
                  cols * b.itemsize);
}

// Reads the logical row-major data of a buffer.
std::vector<uint8_t> getLogical(const Buf &b) {
  std::vector<uint8_t> out(b.logicalVolume() * b.itemsize);
  if (b.lay == Lay::RowMajor || b.shape.empty()) {
    std::memcpy(out.data(), b.bytes.data(), out.size());
    return out;
  }
  size_t rank = b.shape.size();
  uint64_t cols = b.shape[rank - 1], pcols = (cols + 31) / 32 * 32;
  uint64_t rows = rank >= 2 ? b.shape[rank - 2] : 1, prows = rank >= 2 ? (rows + 31) / 32 * 32 : 1;
  uint64_t outer = b.logicalVolume() / (rows * cols);
  for (uint64_t o = 0; o < outer; o++)
    for (uint64_t r = 0; r < rows; r++)
      std::memcpy(&out[((o * rows + r) * cols) * b.itemsize], &b.bytes[((o * prows + r) * pcols) * b.itemsize],
                  cols * b.itemsize);
  return out;
}

float bf16ToF32(uint16_t v) {
  uint32_t u = (uint32_t)v << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t f32ToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return (uint16_t)((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}

// The runtime's layout conversion typecasts; the fake converts between Float32 and BFloat16
// and otherwise requires the same data type.
std::vector<uint8_t> convert(const std::vector<uint8_t> &src, tgt::DataType from, tgt::DataType to, const char *op) {
  if (from == to) return src;
  size_t n = src.size() / dtypeSize(from);
  std::vector<uint8_t> out(n * dtypeSize(to));
  if (from == tgt::DataType::Float32 && to == tgt::DataType::BFloat16) {
    for (size_t i = 0; i < n; i++) {
      float f;
      std::memcpy(&f, &src[4 * i], 4);
      uint16_t h = f32ToBf16(f);
      std::memcpy(&out[2 * i], &h, 2);
    }
  } else if (from == tgt::DataType::BFloat16 && to == tgt::DataType::Float32) {
    for (size_t i = 0; i < n; i++) {
      uint16_t h;
      std::memcpy(&h, &src[2 * i], 2);
      float f = bf16ToF32(h);
      std::memcpy(&out[4 * i], &f, 4);
    }
  } else {
    ttFatal(str(op, ": typecast ", tgt::EnumNameDataType(from), " -> ", tgt::EnumNameDataType(to),
                " is not modelled by the fake"));
  }
  return out;
}

const tgt::ttnn::TTNNBinary *binOf(const rt::Flatbuffer &b) {
  if (!b.handle || !tgt::ttnn::SizePrefixedTTNNBinaryBufferHasIdentifier(b.handle.get()))
    logAssert("Unsupported binary format");
  return tgt::ttnn::GetSizePrefixedTTNNBinary(b.handle.get());
}

const tgt::ttnn::Program *programOf(const rt::Flatbuffer &b, uint32_t i) {
  const auto *progs = binOf(b)->programs();
  if (progs == nullptr || i >= progs->size()) logAssert(str("Program index out of bounds: ", i));
  return progs->Get(i);
}

LayoutDesc layoutOfRef(const tgt::ttnn::TensorRef *r) {
  const auto *md = r->desc()->layout()->memory_desc();
  LayoutDesc l{};
  l.storage = md->storage_type() == tgt::ttnn::StorageType::Device ? Storage::Device : Storage::Host;
  // The runtime infers the layout from the tile shape: 32x32 tiles = tile layout.
  l.lay = (md->tile_shape() != nullptr && md->tile_shape()->y() == 32 && md->tile_shape()->x() == 32) ? Lay::Tile
                                                                                                     : Lay::RowMajor;
  l.dtype = md->data_type();
  l.mem = md->memory_config() != nullptr ? md->memory_config()->buffer_type() : tgt::BufferType::SystemMemory;
  return l;
}

std::vector<uint32_t> shapeOfRef(const tgt::ttnn::TensorRef *r) {
  return {r->desc()->shape()->begin(), r->desc()->shape()->end()};
}

// Every field the runtime dereferences must be there (the runtime would crash; the fake refuses).
void checkRefs(const flatbuffers::Vector<flatbuffers::Offset<tgt::ttnn::TensorRef>> *refs, const std::string &where) {
  if (refs == nullptr) logAssert(where + ": missing tensor list");
  for (uint32_t i = 0; i < refs->size(); i++) {
    const auto *r = refs->Get(i);
    if (r->desc() == nullptr || r->desc()->shape() == nullptr || r->desc()->layout() == nullptr ||
        r->desc()->layout()->memory_desc() == nullptr)
      logAssert(str(where, " ", i, ": tensor ref without desc, shape or memory desc"));
    const auto *md = r->desc()->layout()->memory_desc();
    if (md->storage_type() == tgt::ttnn::StorageType::Device && md->memory_config() == nullptr)
      logAssert(str(where, " ", i, ": Device tensors must have memory config"));
  }
}

// FNV-1a over 8-byte words (then the tail bytes): a Whisper decoder step hashes its 3.8 MB
// of encoder states on every one of the thousands of steps a transcription runs.
uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const uint8_t *b = static_cast<const uint8_t *>(p);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, b + i, 8);
    h = (h ^ w) * 1099511628211ull;
  }
  for (; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

// sampleHash is the submit log's hash of a tensor's bytes: its size, its first and last 32 KiB.
uint64_t sampleHash(const std::vector<uint8_t> &b) {
  constexpr size_t kSample = 32 * 1024;
  uint64_t n = b.size();
  uint64_t h = fnv(1469598103934665603ull, &n, sizeof n);
  if (b.size() <= 2 * kSample) return fnv(h, b.data(), b.size());
  h = fnv(h, b.data(), kSample);
  return fnv(h, b.data() + b.size() - kSample, kSample);
}

void copyName(char *dst, size_t cap, const std::string &s) {
  size_t n = std::min(s.size(), cap - 1);
  std::memcpy(dst, s.data(), n);
  dst[n] = 0;
}

void fillDeterministic(Buf &b, uint64_t seed) {
  std::vector<uint8_t> logical(b.logicalVolume() * b.itemsize);
  uint64_t x = seed | 1;
  for (size_t i = 0; i < logical.size() / b.itemsize; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    double u = (double)(x >> 11) / (double)(1ull << 53) * 2.0 - 1.0; // [-1, 1)
    uint8_t *dst = &logical[i * b.itemsize];
    switch (b.dtype) {
    case tgt::DataType::Float32: {
      float f = (float)u;
      std::memcpy(dst, &f, 4);
      break;
    }
    case tgt::DataType::BFloat16: {
      uint16_t h = f32ToBf16((float)u);
      std::memcpy(dst, &h, 2);
      break;
    }
    default: {
      uint32_t v = (uint32_t)(x % 1000);
      std::memcpy(dst, &v, b.itemsize); // little-endian low bytes
    }
    }
  }
  putLogical(b, logical.data());
}

} // namespace

// ---------- the tt::runtime API ----------

namespace tt::runtime {

std::uint32_t Device::nextDeviceGlobalId() {
  static std::uint32_t id = 0;
  return id++;
}
std::uint64_t Tensor::nextTensorGlobalId() {
  static std::uint64_t id = 0;
  return id++;
}
std::uint64_t Layout::nextLayoutGlobalId() {
  static std::uint64_t id = 0;
  return id++;
}

TensorDesc::TensorDesc(const std::vector<uint32_t> &shape_, const ::tt::target::DataType dataType_,
                       const std::optional<std::vector<int64_t>> &stride_, const std::optional<uint64_t> physicalVolume_)
    : shape(shape_), dataType(dataType_) {
  if (stride_) {
    stride = *stride_;
  } else {
    stride.assign(shape.size(), 1);
    for (int i = (int)shape.size() - 2; i >= 0; i--) stride[i] = stride[i + 1] * shape[i + 1];
  }
  physicalVolume = physicalVolume_.value_or(volume());
}
size_t TensorDesc::volume() const {
  size_t n = 1;
  for (uint32_t s : shape) n *= s;
  return n;
}
uint32_t TensorDesc::elementSize() const {
  uint32_t s = dtypeSize(dataType);
  if (s == 0) logAssert("elementSize of a block-format data type");
  return s;
}
size_t TensorDesc::sizeBytes() const { return physicalVolume * elementSize(); }

// ---------- binaries ----------

Binary::Binary(std::shared_ptr<void> h) : Flatbuffer(h), binaryId(nextBinaryId()), programDescCache(nullptr) {}
Binary::Binary(Flatbuffer fb) : Flatbuffer(fb), binaryId(nextBinaryId()), programDescCache(nullptr) {}

std::uint64_t Binary::nextBinaryId() {
  static std::uint64_t id = 0;
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  return id++;
}
std::uint64_t Binary::id() const { return binaryId; }

Binary Binary::loadFromPath(const char *path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f.is_open()) logAssert(str("Failed to open file: ", path));
  std::streamsize size = f.tellg();
  f.seekg(0, std::ios::beg);
  if (size < 8) logAssert(str(path, ": Unsupported binary format (", size, " bytes)"));
  std::shared_ptr<void> buf(std::malloc((size_t)size), std::free);
  if (!buf) throw std::bad_alloc();
  f.read(static_cast<char *>(buf.get()), size);
  const uint8_t *p = static_cast<const uint8_t *>(buf.get());
  if (!tgt::ttnn::SizePrefixedTTNNBinaryBufferHasIdentifier(p))
    logAssert(str(path, ": Unsupported binary format (not a size-prefixed TTNN flatbuffer)"));
  flatbuffers::Verifier v(p, (size_t)size);
  if (!tgt::ttnn::VerifySizePrefixedTTNNBinaryBuffer(v))
    logAssert(str(path, ": TTNN flatbuffer fails verification against the schema"));
  const auto *bin = tgt::ttnn::GetSizePrefixedTTNNBinary(p);
  if (bin->programs() == nullptr) logAssert(str(path, ": binary has no programs"));
  for (uint32_t i = 0; i < bin->programs()->size(); i++) {
    const auto *pr = bin->programs()->Get(i);
    std::string where = str(path, ": program ", i);
    if (pr->name() == nullptr) logAssert(where + " has no name");
    checkRefs(pr->inputs(), where + " input");
    checkRefs(pr->outputs(), where + " output");
  }
  Binary b(buf);
  std::string base(path);
  if (size_t slash = base.rfind('/'); slash != std::string::npos) base = base.substr(slash + 1);
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  g_binaryFiles[b.id()] = base;
  return b;
}

std::uint32_t Binary::getNumPrograms() const { return binOf(*this)->programs()->size(); }

std::string Binary::getProgramName(std::uint32_t i) const { return programOf(*this, i)->name()->str(); }

std::uint32_t Binary::getNumProgramInputs(std::uint32_t i) const { return programOf(*this, i)->inputs()->size(); }

std::uint32_t Binary::getNumProgramOutputs(std::uint32_t i) const { return programOf(*this, i)->outputs()->size(); }

static std::vector<TensorDesc> descsOf(const flatbuffers::Vector<flatbuffers::Offset<tgt::ttnn::TensorRef>> *refs) {
  std::vector<TensorDesc> out;
  for (const auto *r : *refs) out.emplace_back(shapeOfRef(r), r->desc()->layout()->memory_desc()->data_type());
  return out;
}

std::vector<TensorDesc> Binary::getProgramInputs(std::uint32_t i) const { return descsOf(programOf(*this, i)->inputs()); }

std::vector<TensorDesc> Binary::getProgramOutputs(std::uint32_t i) const { return descsOf(programOf(*this, i)->outputs()); }

const std::pair<std::uint32_t, std::uint32_t> Binary::getProgramMeshShape(std::uint32_t i) const {
  const auto *m = programOf(*this, i)->mesh_shape();
  if (m == nullptr) logAssert("program has no mesh shape");
  return {(uint32_t)m->y(), (uint32_t)m->x()};
}

// ---------- process ----------

void setMlirHome(std::string_view) {}
void setMetalHome(std::string_view) {}

void setCurrentDeviceRuntime(const DeviceRuntime &r) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  if (r != DeviceRuntime::TTNN) logAssert(str("runtime ", flatbuffer::EnumNameDeviceRuntime(r), " is not enabled in this build"));
  g_runtime = r;
}

tt::target::Arch getArch() { return tt::target::Arch::Wormhole_b0; }

size_t getNumAvailableDevices() { return visibleChips(); }

void setFabricConfig(FabricConfig config) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  if (auto p = g_parent.lock(); p && p->open && config != g_fabric)
    ttFatal("fabric config cannot change while a mesh device is open");
  g_fabric = config;
}

// ---------- devices ----------

static Device deviceOf(const std::shared_ptr<Mesh> &m) {
  auto tc = std::make_shared<TraceCache>(std::static_pointer_cast<void>(m), DeviceRuntime::TTNN);
  return Device(std::static_pointer_cast<void>(m), tc, DeviceRuntime::TTNN);
}

Device openMeshDevice(const MeshDeviceOptions &o) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  if (g_runtime != DeviceRuntime::TTNN) logAssert("current device runtime is not TTNN");
  if (auto p = g_parent.lock(); p && p->open) ttFatal("a mesh device is already open in this process");
  uint32_t visible = visibleChips();
  uint32_t rows = 1, cols = visible;
  if (o.meshShape) {
    if (o.meshShape->size() != 2) logAssert("Mesh shape must be 2D for now");
    rows = (*o.meshShape)[0];
    cols = (*o.meshShape)[1];
  }
  if (o.meshOffset.size() != 2) logAssert("Mesh offset must be 2D for now");
  if (rows == 0 || cols == 0) ttFatal(str("mesh shape ", rows, "x", cols, " is empty"));
  if ((uint64_t)rows * cols > visible)
    ttFatal(str("mesh shape ", rows, "x", cols, " needs ", (uint64_t)rows * cols, " chips; ", visible, " are visible"));
  if (o.numHWCQs < 1 || o.numHWCQs > 2) ttFatal(str("num_hw_cqs is ", o.numHWCQs, "; it can be 1 or 2"));
  std::vector<int> ids;
  if (!o.deviceIds.empty()) {
    if (o.deviceIds.size() != (size_t)rows * cols)
      ttFatal(str(o.deviceIds.size(), " device ids for a ", rows, "x", cols, " mesh"));
    std::set<int> seen;
    for (int id : o.deviceIds)
      if (id < 0 || (uint32_t)id >= visible || !seen.insert(id).second)
        ttFatal(str("device id ", id, " is not a distinct visible chip (", visible, " visible)"));
    ids = o.deviceIds;
  } else {
    for (uint32_t i = 0; i < rows * cols; i++) ids.push_back((int)(o.meshOffset[0] * cols + o.meshOffset[1] + i));
    for (int id : ids)
      if ((uint32_t)id >= visible) ttFatal(str("mesh offset puts chip ", id, " beyond the ", visible, " visible"));
  }
  size_t l1Small = o.l1SmallSize.value_or(0), trace = o.traceRegionSize.value_or(0);
  if (l1Small >= kL1PerCore) ttFatal(str("l1_small_size ", l1Small, " does not fit L1 (", kL1PerCore, " B per core)"));
  if (trace >= kDramChannels * kDramPerChannel) ttFatal(str("trace_region_size ", trace, " does not fit DRAM"));
  if (g_fabric != FabricConfig::DISABLED && rows * cols < 2) ttFatal("a fabric needs a mesh of more than one chip");

  auto m = std::make_shared<Mesh>();
  m->id = g_nextMesh++;
  m->rows = rows;
  m->cols = cols;
  m->ids = ids;
  m->numHWCQs = o.numHWCQs;
  m->programCache = o.enableProgramCache;
  m->l1Small = l1Small;
  m->traceRegion = trace;
  g_parent = m;

  tt_fake_runtime_stats &s = g_stats.s;
  s.meshes_open++;
  s.last_mesh_rows = o.meshShape ? rows : 0;
  s.last_mesh_cols = o.meshShape ? cols : 0;
  s.last_num_hw_cqs = (uint32_t)o.numHWCQs;
  s.last_program_cache = o.enableProgramCache ? 1 : 0;
  s.last_dispatch = !o.dispatchCoreType ? 0 : *o.dispatchCoreType == DispatchCoreType::Worker ? 1 : 2;
  s.last_fabric = (uint32_t)g_fabric;
  s.last_l1_small_size = o.l1SmallSize.value_or(0);
  s.last_trace_region_size = o.traceRegionSize.value_or(0);
  s.last_num_device_ids = (uint32_t)std::min<size_t>(o.deviceIds.size(), 64);
  for (uint32_t i = 0; i < s.last_num_device_ids; i++) s.last_device_ids[i] = o.deviceIds[i];
  return deviceOf(m);
}

// Frees what is left on a mesh being closed and counts it.
static void closeMesh(Mesh &m) {
  tt_fake_runtime_stats &s = g_stats.s;
  for (auto &w : m.subs)
    if (auto sub = w.lock(); sub && sub->open) s.submeshes_leaked_at_close++;
  s.traces_leaked_at_close += m.traces.size();
  s.traces -= m.traces.size();
  m.traces.clear();
  m.traceUsed = 0;
  for (Buf *b : std::set<Buf *>(m.live)) {
    s.buffers_leaked_at_close++;
    freeBuf(*b);
  }
  m.open = false;
}

void closeMeshDevice(Device parentMesh) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  auto m = meshOf(parentMesh, "closeMeshDevice");
  if (!m->isParent) logAssert("Mesh device must be a parent mesh");
  closeMesh(*m);
  g_stats.s.meshes_open--;
}

Device createSubMeshDevice(Device parentMesh, const std::vector<uint32_t> &meshShape,
                           const std::optional<const std::vector<uint32_t>> &meshOffset) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  auto p = meshOf(parentMesh, "createSubMeshDevice");
  if (!p->isParent) logAssert("Mesh device must be a parent mesh");
  if (meshShape.size() != 2) logAssert("Mesh shape must be 2D for now");
  uint32_t r0 = 0, c0 = 0;
  if (meshOffset) {
    if (meshOffset->size() != 2) logAssert("Mesh offset must be 2D for now");
    r0 = (*meshOffset)[0];
    c0 = (*meshOffset)[1];
  }
  uint32_t rows = meshShape[0], cols = meshShape[1];
  if (rows == 0 || cols == 0 || (uint64_t)r0 + rows > p->rows || (uint64_t)c0 + cols > p->cols)
    ttFatal(str("submesh ", rows, "x", cols, " at (", r0, ",", c0, ") does not fit ", p->name()));
  for (auto &w : p->subs) {
    auto o = w.lock();
    if (!o || !o->open) continue;
    bool apart = r0 + rows <= o->rowOff || o->rowOff + o->rows <= r0 || c0 + cols <= o->colOff || o->colOff + o->cols <= c0;
    if (!apart) ttFatal(str("submesh ", rows, "x", cols, " at (", r0, ",", c0, ") overlaps live ", o->name(), " at (",
                            o->rowOff, ",", o->colOff, ")"));
  }
  auto m = std::make_shared<Mesh>();
  m->isParent = false;
  m->parent = p;
  m->id = g_nextMesh++;
  m->rows = rows;
  m->cols = cols;
  m->rowOff = r0;
  m->colOff = c0;
  for (uint32_t r = 0; r < rows; r++)
    for (uint32_t c = 0; c < cols; c++) m->ids.push_back(p->ids[(r0 + r) * p->cols + c0 + c]);
  m->numHWCQs = p->numHWCQs;
  m->programCache = p->programCache;
  m->l1Small = p->l1Small;
  m->traceRegion = p->traceRegion;
  p->subs.push_back(m);
  g_stats.s.submeshes_open++;
  return deviceOf(m);
}

void releaseSubMeshDevice(Device subMesh) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  auto m = meshOf(subMesh, "releaseSubMeshDevice");
  if (m->isParent) logAssert("Mesh device must be a submesh");
  closeMesh(*m);
  g_stats.s.submeshes_open--;
}

std::vector<uint32_t> getMeshShape(Device d) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  auto m = meshOf(d, "getMeshShape");
  return {m->rows, m->cols};
}

std::vector<int> getDeviceIds(Device d) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  return meshOf(d, "getDeviceIds")->ids;
}

size_t getNumHwCqs(Device d) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  return meshOf(d, "getNumHwCqs")->numHWCQs;
}
size_t getL1SmallSize(Device d) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  return meshOf(d, "getL1SmallSize")->l1Small;
}
size_t getTraceRegionSize(Device d) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  return meshOf(d, "getTraceRegionSize")->traceRegion;
}
size_t getNumDramChannels(Device d) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  meshOf(d, "getNumDramChannels");
  return kDramChannels;
}
size_t getDramSizePerChannel(Device d) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  meshOf(d, "getDramSizePerChannel");
  return kDramPerChannel;
}
size_t getL1SizePerCore(Device d) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  meshOf(d, "getL1SizePerCore");
  return kL1PerCore;
}

std::unordered_map<MemoryBufferType, MemoryView> getMemoryView(Device d) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  auto m = meshOf(d, "getMemoryView");
  uint64_t chips = (uint64_t)m->rows * m->cols;
  auto view = [&](uint64_t banks, uint64_t perBank, uint64_t used) {
    MemoryView v;
    v.numBanks = banks;
    v.totalBytesPerBank = perBank;
    v.totalBytesAllocatedPerBank = banks ? used / banks : 0;
    v.totalBytesFreePerBank = perBank - v.totalBytesAllocatedPerBank;
    v.largestContiguousBytesFreePerBank = v.totalBytesFreePerBank;
    return v;
  };
  std::unordered_map<MemoryBufferType, MemoryView> out;
  out[MemoryBufferType::DRAM] = view(kDramChannels * chips, kDramPerChannel - m->traceRegion / kDramChannels, m->dramUsed());
  out[MemoryBufferType::L1] = view(kCores * chips, kL1PerCore - m->l1Small, m->l1Used());
  out[MemoryBufferType::L1_SMALL] = view(kCores * chips, m->l1Small, 0);
  out[MemoryBufferType::TRACE] = view(chips, m->traceRegion, m->traceUsed * chips);
  return out;
}

void releaseTrace(Device meshDevice, std::uint64_t binaryId, size_t mainProgramId) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  meshOf(meshDevice, "releaseTrace");
  auto tc = meshDevice.getTraceCache();
  if (!tc) logAssert("releaseTrace: device has no trace cache");
  Mesh &m = tc->as<Mesh>(DeviceRuntime::TTNN);
  auto it = m.traces.find({binaryId, mainProgramId});
  if (it == m.traces.end()) return; // erasing a missing key is a no-op, as in the runtime
  m.traceUsed -= it->second;
  m.traces.erase(it);
  g_stats.s.traces--;
  g_stats.s.traces_released++;
}

// ---------- tensors ----------

Tensor createOwnedHostTensor(const void *data, const std::vector<std::uint32_t> &shape,
                             const std::vector<std::int64_t> &stride, std::uint32_t itemsize,
                             ::tt::target::DataType dataType) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  if (data == nullptr) logAssert("createOwnedHostTensor: data is null");
  uint32_t es = dtypeSize(dataType);
  if (es == 0) logAssert(str("createOwnedHostTensor: unsupported data type ", tgt::EnumNameDataType(dataType)));
  if (itemsize != es)
    logAssert(str("createOwnedHostTensor: itemsize ", itemsize, " for ", tgt::EnumNameDataType(dataType), " (", es, ")"));
  if (stride.size() != shape.size()) logAssert("createOwnedHostTensor: stride rank differs from shape rank");
  int64_t want = 1;
  for (int i = (int)shape.size() - 1; i >= 0; i--) {
    if (stride[i] != want) logAssert(str("createOwnedHostTensor: stride ", i, " is ", stride[i], ", not contiguous (", want, ")"));
    want *= shape[i];
  }
  auto b = std::make_shared<Buf>();
  b->shape = shape;
  b->stride = stride;
  b->dtype = dataType;
  b->itemsize = es;
  b->bytes.assign(static_cast<const uint8_t *>(data), static_cast<const uint8_t *>(data) + b->logicalVolume() * es);
  g_stats.s.host_tensors++;
  return wrap(b);
}

std::uint32_t getTensorElementSize(Tensor t) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  return bufOf(t, "getTensorElementSize")->itemsize;
}

std::uint32_t getTensorVolume(Tensor t) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  return (std::uint32_t)bufOf(t, "getTensorVolume")->physicalVolume();
}

std::uint32_t getTensorLogicalVolume(Tensor t) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  return (std::uint32_t)bufOf(t, "getTensorLogicalVolume")->logicalVolume();
}

std::vector<std::uint32_t> getTensorShape(Tensor t) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  return bufOf(t, "getTensorShape")->shape;
}

bool isTensorAllocated(Tensor t) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  auto b = bufOf(t, "isTensorAllocated");
  return b->allocated && (b->storage == Storage::Host || (b->mesh && b->mesh->open));
}

bool getTensorRetain(Tensor t) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  return bufOf(t, "getTensorRetain")->retain;
}

void setTensorRetain(Tensor t, bool retain) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  bufOf(t, "setTensorRetain")->retain = retain;
}

void deallocateTensor(Tensor &t, bool force) {
  (void)force;
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  auto b = bufOf(t, "deallocateTensor");
  if (b->retain) { // the runtime logs "Tensor is retained thus not deallocating" and returns
    g_stats.s.retained_dealloc_ignored++;
    return;
  }
  if (b->allocated && b->storage == Storage::Device) g_stats.s.buffers_deallocated++;
  freeBuf(*b);
}

Layout getLayout(Binary executableHandle, std::uint32_t programIndex, std::uint32_t inputIndex) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  const auto *p = programOf(executableHandle, programIndex);
  if (inputIndex >= p->inputs()->size()) logAssert(str("Invalid input index ", inputIndex));
  auto l = std::make_shared<LayoutDesc>(layoutOfRef(p->inputs()->Get(inputIndex)));
  return Layout(std::static_pointer_cast<void>(l), DeviceRuntime::TTNN);
}

Tensor toLayout(Tensor tensor, Device device, Layout layout, std::optional<bool> retain) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  auto src = bufOf(tensor, "toLayout");
  auto m = meshOf(device, "toLayout");
  if (!layout.matchesRuntime(DeviceRuntime::TTNN) || !layout.handle) logAssert("toLayout: not a TTNN layout");
  const LayoutDesc &l = layout.as<LayoutDesc>(DeviceRuntime::TTNN);
  requireAllocated(*src, "toLayout", "the source tensor");
  if (src->storage == Storage::Device && src->mesh != m)
    ttFatal(str("toLayout: tensor is on ", src->mesh->name(), ", not on ", m->name()));
  std::vector<uint8_t> logical = convert(getLogical(*src), src->dtype, l.dtype, "toLayout");
  std::shared_ptr<Buf> out;
  if (l.storage == Storage::Device) {
    out = newDeviceBuf(m, src->shape, l.dtype, l.lay, l.mem);
  } else {
    out = std::make_shared<Buf>();
    out->shape = src->shape;
    out->dtype = l.dtype;
    out->itemsize = dtypeSize(l.dtype);
    out->lay = l.lay;
    out->stride = src->stride;
    out->bytes.assign(out->physicalVolume() * out->itemsize, 0);
    g_stats.s.host_tensors++;
  }
  putLogical(*out, logical.data());
  bool keep = retain.value_or(src->retain);
  out->retain = keep;
  if (!keep) { // the runtime deallocates the source of a non-retained conversion
    if (src->retain) g_stats.s.retained_dealloc_ignored++;
    else freeBuf(*src);
  }
  return wrap(out);
}

std::vector<Tensor> submit(Device deviceHandle, Binary executableHandle, std::uint32_t programIndex,
                           std::vector<Tensor> &inputs) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  auto m = meshOf(deviceHandle, "submit");
  const auto *p = programOf(executableHandle, programIndex);
  std::string prog = p->name()->str();
  if (p->inputs()->size() != inputs.size())
    logAssert(str("Program input size mismatch: ", p->inputs()->size(), " != ", inputs.size()));
  if (const auto *ms = p->mesh_shape(); ms != nullptr && (ms->y() != 0 || ms->x() != 0) &&
                                         ((uint32_t)ms->y() != m->rows || (uint32_t)ms->x() != m->cols))
    ttFatal(str("program ", prog, " was compiled for a ", ms->y(), "x", ms->x(), " mesh; ", m->name(), " runs it"));
  uint64_t seed = fnv(1469598103934665603ull, prog.data(), prog.size());
  std::set<Buf *> seen;
  std::vector<std::shared_ptr<Buf>> ins;
  for (uint32_t i = 0; i < inputs.size(); i++) {
    auto b = bufOf(inputs[i], "submit");
    std::string what = str("program ", prog, " input ", i);
    requireAllocated(*b, "submit", what);
    const auto *ref = p->inputs()->Get(i);
    LayoutDesc want = layoutOfRef(ref);
    std::vector<uint32_t> wshape = shapeOfRef(ref);
    if (want.storage == Storage::Device && b->storage != Storage::Device)
      ttFatal(str(what, " is a host tensor; the program expects it on device (toLayout first)"));
    if (b->storage == Storage::Device && b->mesh != m)
      ttFatal(str(what, " is on ", b->mesh->name(), "; the program runs on ", m->name()));
    if (b->shape != wshape) ttFatal(str(what, " has shape ", shapeStr(b->shape), "; the program expects ", shapeStr(wshape)));
    if (b->dtype != want.dtype || b->lay != want.lay || (want.storage == Storage::Device && b->mem != want.mem))
      ttFatal(str(what, " is ", tgt::EnumNameDataType(b->dtype), " ", layName(b->lay), " in ", tgt::EnumNameBufferType(b->mem),
                  "; the program expects ", tgt::EnumNameDataType(want.dtype), " ", layName(want.lay), " in ",
                  tgt::EnumNameBufferType(want.mem), " (", storageName(want.storage), ")"));
    if (seen.insert(b.get()).second) ins.push_back(b);
    seed = fnv(seed, b->bytes.data(), b->bytes.size());
  }
  // Trace: a program that captures (CaptureOrExecuteTraceOp) does it on its first submit here.
  uint64_t capturedBefore = g_stats.s.traces_captured;
  bool traced = false;
  uint64_t ops = p->operations() ? p->operations()->size() : 0;
  if (p->operations())
    for (const auto *op : *p->operations())
      if (op->type_type() == tgt::ttnn::OpType::CaptureOrExecuteTraceOp) traced = true;
  if (traced) {
    auto key = std::make_pair(executableHandle.id(), (size_t)programIndex);
    if (m->traces.count(key) == 0) {
      uint64_t need = kTraceBytesPerOp * ops;
      if (m->traceUsed + need > m->traceRegion)
        throw std::runtime_error(str("TT_THROW: Trace buffers of size ", need, " B exceed the free trace region (",
                                     m->traceRegion - m->traceUsed, " B of ", m->traceRegion, " B)"));
      m->traces[key] = need;
      m->traceUsed += need;
      g_stats.s.traces++;
      g_stats.s.traces_captured++;
    } else {
      g_stats.s.traces_replayed++;
    }
  }
  {
    tt_fake_runtime_submit rec{};
    auto f = g_binaryFiles.find(executableHandle.id());
    copyName(rec.file, sizeof rec.file, f == g_binaryFiles.end() ? std::string() : f->second);
    copyName(rec.program, sizeof rec.program, prog);
    rec.mesh_rows = m->rows;
    rec.mesh_cols = m->cols;
    rec.mesh_is_submesh = m->isParent ? 0 : 1;
    rec.trace = !traced ? 0 : (g_stats.s.traces_captured > capturedBefore ? 1 : 2);
    rec.num_inputs = (uint32_t)std::min<size_t>(inputs.size(), TT_FAKE_MAX_INPUTS);
    for (uint32_t i = 0; i < rec.num_inputs; i++) {
      auto b = bufOf(inputs[i], "submit");
      auto &in = rec.inputs[i];
      copyName(in.dtype, sizeof in.dtype, tgt::EnumNameDataType(b->dtype));
      in.tile = b->lay == Lay::Tile ? 1 : 0;
      in.rank = (uint32_t)std::min<size_t>(b->shape.size(), TT_FAKE_MAX_RANK);
      for (uint32_t k = 0; k < in.rank; k++) in.shape[k] = b->shape[k];
      in.hash = sampleHash(b->bytes);
    }
    if (g_submitLog.size() < TT_FAKE_SUBMIT_LOG) g_submitLog.push_back(rec);
    else g_submitLog[g_submitCount % TT_FAKE_SUBMIT_LOG] = rec;
    g_submitCount++;
  }
  std::vector<Tensor> outs;
  for (uint32_t i = 0; i < p->outputs()->size(); i++) {
    const auto *ref = p->outputs()->Get(i);
    LayoutDesc l = layoutOfRef(ref);
    std::shared_ptr<Buf> o;
    if (l.storage == Storage::Device) {
      o = newDeviceBuf(m, shapeOfRef(ref), l.dtype, l.lay, l.mem);
    } else {
      o = std::make_shared<Buf>();
      o->shape = shapeOfRef(ref);
      o->dtype = l.dtype;
      o->itemsize = dtypeSize(l.dtype);
      o->lay = l.lay;
      o->stride.assign(o->shape.size(), 1);
      for (int k = (int)o->shape.size() - 2; k >= 0; k--) o->stride[k] = o->stride[k + 1] * o->shape[k + 1];
      o->bytes.assign(o->physicalVolume() * o->itemsize, 0);
      g_stats.s.host_tensors++;
    }
    if (o->itemsize == 0) logAssert(str("program ", prog, " output ", i, " has a block-format type"));
    fillDeterministic(*o, seed + i);
    outs.push_back(wrap(o));
  }
  for (auto &b : ins) // the compiled program's DeallocateOps free inputs that are not retained
    if (!b->retain) {
      freeBuf(*b);
      g_stats.s.inputs_consumed++;
    }
  g_stats.s.submits++;
  return outs;
}

void wait(Tensor tensor, std::optional<uint8_t> cqId) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  auto b = bufOf(tensor, "wait");
  if (b->storage == Storage::Device && b->mesh && cqId && *cqId >= b->mesh->numHWCQs)
    ttFatal(str("wait: command queue ", (int)*cqId, " does not exist on ", b->mesh->name(), " (", b->mesh->numHWCQs, " CQs)"));
}

void wait(const std::vector<Tensor> &tensors, std::optional<uint8_t> cqId) {
  for (const Tensor &t : tensors) wait(t, cqId);
}

std::vector<Tensor> toHost(Tensor tensor, bool untilize, bool blocking) {
  (void)blocking;
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  auto b = bufOf(tensor, "toHost");
  requireAllocated(*b, "toHost", "the tensor");
  uint64_t shards = b->storage == Storage::Device ? (uint64_t)b->mesh->rows * b->mesh->cols : 1;
  std::vector<uint8_t> logical = getLogical(*b);
  std::vector<Tensor> out;
  for (uint64_t i = 0; i < shards; i++) { // a replicated tensor: every chip holds all of it
    auto h = std::make_shared<Buf>();
    h->shape = b->shape;
    h->stride = b->stride;
    h->dtype = b->dtype;
    h->itemsize = b->itemsize;
    h->lay = untilize ? Lay::RowMajor : b->lay;
    h->retain = b->retain;
    h->bytes.assign(h->physicalVolume() * h->itemsize, 0);
    putLogical(*h, logical.data());
    g_stats.s.host_tensors++;
    out.push_back(wrap(h));
  }
  return out;
}

void memcpy(void *dst, Tensor src, std::optional<tt::target::DataType> targetDataType) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  auto b = bufOf(src, "memcpy");
  requireAllocated(*b, "memcpy", "the source tensor");
  if (dst == nullptr) logAssert("memcpy: destination is null");
  if (targetDataType && *targetDataType != b->dtype)
    logAssert("If destination data type is specified, it must match the source data type");
  std::memcpy(dst, b->bytes.data(), b->bytes.size()); // physical volume x element size
}

void memcpy(Tensor dst, Tensor src) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  auto d = bufOf(dst, "memcpy");
  auto s = bufOf(src, "memcpy");
  requireAllocated(*d, "memcpy", "the destination tensor");
  requireAllocated(*s, "memcpy", "the source tensor");
  if (d->bytes.size() != s->bytes.size())
    logAssert(str("Input output tensor size mismatch in memcpy: ", s->physicalVolume(), " * ", s->itemsize,
                  " != ", d->physicalVolume(), " * ", d->itemsize));
  if ((d->storage == Storage::Device || s->storage == Storage::Device) && (d->lay != s->lay || d->dtype != s->dtype))
    ttFatal(str("memcpy between host and device needs the same layout and data type: ", tgt::EnumNameDataType(s->dtype), " ",
                layName(s->lay), " -> ", tgt::EnumNameDataType(d->dtype), " ", layName(d->lay)));
  d->bytes = s->bytes;
}

} // namespace tt::runtime

extern "C" int tt_fake_runtime_stats_get(tt_fake_runtime_stats *out) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  *out = g_stats.s;
  return 0;
}

extern "C" uint64_t tt_fake_runtime_submit_count(void) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  return g_submitCount;
}

extern "C" int tt_fake_runtime_submit_get(uint64_t i, tt_fake_runtime_submit *out) {
  std::lock_guard<std::recursive_mutex> lk(g_mu);
  if (i >= g_submitCount || g_submitCount - i > g_submitLog.size()) return -1;
  *out = g_submitLog[g_submitLog.size() < TT_FAKE_SUBMIT_LOG ? i : i % TT_FAKE_SUBMIT_LOG];
  return 0;
}
