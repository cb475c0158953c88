// The WebGPU backend, for the WebAssembly build. Every float32 activation and cache lives in one
// arena buffer (bound once per dispatch, so in-place ops never bind a buffer twice); weights keep
// their stored dtype in buffers of their own and are unpacked in the kernels. Ops are recorded
// as a command list in wasm memory and handed to the host in one call when results are needed
// (with the read that needs them, when there is one).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "backend/backend.h"
#include "backend/webgpu/gpu_imports.h"
#include "base/quant.h"

namespace g4 {

const char* WgslSource(const char* name);
class WebGpuBackend;

namespace {

constexpr uint64_t kArenaAlign = 256;
constexpr uint64_t kHostRegion = 4u << 20;  // small host inputs (ids, positions, frequencies)
constexpr uint64_t kSplitRegion = 4u << 20;  // attention's partial results (splits of few rows)
constexpr uint64_t kSplitTarget = 264;       // workgroups worth filling the GPU with (2 x 132 SMs)
constexpr size_t kMaxParams = 32;  // parameter words per dispatch (web/gpu_bridge.mjs's PARAMS)
constexpr uint64_t kMatMulFill = kSplitTarget;  // workgroups a matmul's tile size leaves at least
constexpr int kSplitTile = 3;                     // matmul_wide's tile for split columns, by size (3: 128 x 128)
constexpr uint64_t kSplitColumns = 1024;          // columns a part of a split matmul takes at least

class ArenaBuffer final : public Buffer {
 public:
  ArenaBuffer(size_t bytes, uint64_t offset, WebGpuBackend* owner) : Buffer(bytes), offset_(offset), owner_(owner) {}
  ~ArenaBuffer() override;
  uint64_t offset() const { return offset_; }

 private:
  uint64_t offset_;
  WebGpuBackend* owner_;
};

// A read the host has queued (read_start); finished or cancelled once.
class GpuDownload final : public PendingDownload {
 public:
  GpuDownload(uint32_t ticket, size_t bytes) : ticket_(ticket), bytes_(bytes) {}
  ~GpuDownload() override {
    if (ticket_) g4_gpu_read_cancel(ticket_);
  }
  Status Finish(void* dst) override {
    if (!ticket_) return FailedPrecondition("webgpu: a download was finished twice");
    std::vector<uint8_t> tmp((bytes_ + 3) / 4 * 4);
    const uint32_t ok = g4_gpu_read_finish(ticket_, tmp.data(), static_cast<uint32_t>(tmp.size()));
    ticket_ = 0;
    if (!ok) return Internal("webgpu: reading back failed (device lost, or a kernel error the host reported)");
    if (bytes_) std::memcpy(dst, tmp.data(), bytes_);
    return Status::Ok();
  }

 private:
  uint32_t ticket_;
  size_t bytes_;
};

// A weight in one GPU buffer, or split in up to three chunks of chunk_bytes when it is larger
// than one binding may be.
class WeightBuffer final : public Buffer {
 public:
  WeightBuffer(size_t bytes, std::vector<uint32_t> ids, uint64_t chunk_bytes)
      : Buffer(bytes), ids_(std::move(ids)), chunk_bytes_(chunk_bytes) {}
  ~WeightBuffer() override {
    for (uint32_t id : ids_) g4_gpu_destroy_buffer(id);
  }
  uint32_t id(size_t chunk = 0) const { return ids_[chunk]; }
  size_t chunks() const { return ids_.size(); }
  uint64_t chunk_bytes() const { return chunk_bytes_; }

 private:
  std::vector<uint32_t> ids_;
  uint64_t chunk_bytes_;
};

enum class Kernel { kRmsNorm, kMatMul, kMatVec, kRope, kAttention, kCacheAppend, kElementwise, kGeluMul, kMoeRoute,
                    kMoeExperts, kArgmax, kBandwidth,
                    kAttentionCombine, kEmbedIds, kGatherMatVecIds, kTopK, kArgmaxKeyed, kAccept, kMatVecQ, kGateUp, kNormRope, kTopKValues,
                    kMatVecWide, kGateUpWide, kKvNorms, kAttentionWide, kMatMulWide, kAttentionTiled, kGateUpQ,
                    kSplitSum, kTopKSort, kMatVecRows };
const char* KernelFile(Kernel k) {
  switch (k) {
    case Kernel::kRmsNorm: return "rms_norm";
    case Kernel::kMatMul: return "matmul";
    case Kernel::kMatVec: return "matvec";
    case Kernel::kRope: return "rope";
    case Kernel::kAttention: return "attention";
    case Kernel::kCacheAppend: return "cache_append";
    case Kernel::kElementwise: return "elementwise";
    case Kernel::kGeluMul: return "gelu_mul";
    case Kernel::kMoeRoute: return "moe_route";
    case Kernel::kMoeExperts: return "moe_experts";
    case Kernel::kArgmax: return "argmax";
    case Kernel::kBandwidth: return "bandwidth";
    case Kernel::kAttentionCombine: return "attention_combine";
    case Kernel::kEmbedIds: return "embed_ids";
    case Kernel::kGatherMatVecIds: return "gather_matvec_ids";
    case Kernel::kTopK: return "topk";
    case Kernel::kArgmaxKeyed: return "argmax_keyed";
    case Kernel::kAccept: return "accept";
    case Kernel::kMatVecQ: return "matvec_q";
    case Kernel::kGateUp: return "gate_up";
    case Kernel::kNormRope: return "norm_rope";
    case Kernel::kTopKValues: return "topk_values";
    case Kernel::kMatVecWide: return "matvec_wide";
    case Kernel::kGateUpWide: return "gate_up_wide";
    case Kernel::kKvNorms: return "kv_norms";
    case Kernel::kAttentionWide: return "attention_wide";
    case Kernel::kMatMulWide: return "matmul_wide";
    case Kernel::kAttentionTiled: return "attention_tiled";
    case Kernel::kGateUpQ: return "gate_up_q";
    case Kernel::kSplitSum: return "split_sum";
    case Kernel::kTopKSort: return "topk_sort";
    case Kernel::kMatVecRows: return "matvec_rows";
  }
  return "";
}

// Quantized weights on the GPU: superblocks of 64 values (two groups of 32), each a word of the
// two float16 scales, then the values: 16 words of four int8 (q8) or 8 words of eight int4
// offset by 8 (q4), lowest element in the lowest bits. Every word is aligned, and a superblock
// never straddles two bindings.
constexpr uint64_t kSuperblock = 64;
uint64_t SuperblockWords(DType t) { return t == DType::kQ8 ? 17 : 9; }
// Elements per chunk of a split weight.
uint64_t ChunkElements(DType t, uint64_t chunk_bytes) {
  return IsQuantized(t) ? chunk_bytes / (4 * SuperblockWords(t)) * kSuperblock : chunk_bytes / DTypeSize(t);
}

// Element i of a quantized weight: the scale of its group and the word holding it.
// `w` is the binding's word accessor (w1word for W1, ...).
std::string QuantPrefix(const std::string& w, int dtype) {
  const std::string words = std::to_string(SuperblockWords(static_cast<DType>(dtype)));
  const std::string per_word = dtype == static_cast<int>(DType::kQ8) ? "2u" : "3u";  // log2 values per word
  // q8 values are signed bytes (extractBits of an i32 sign-extends); q4 nibbles are unsigned.
  const std::string word = w + "(b + 1u + ((i & 63u) >> " + per_word + "))";
  return "let b = (i >> 6u) * " + words + "u; let s = unpack2x16float(" + w + "(b))[(i >> 5u) & 1u]; " +
         "let v = " + (dtype == static_cast<int>(DType::kQ8) ? "bitcast<i32>(" + word + ")" : word) + "; ";
}

std::string LoadSnippet(int slot, int dtype) {  // dtype: -1 none, else DType
  const std::string w = "w" + std::to_string(slot) + "word";
  switch (dtype) {
    case static_cast<int>(DType::kQ8): return QuantPrefix(w, dtype) + "return f32(extractBits(v, (i & 3u) * 8u, 8u)) * s;";
    case static_cast<int>(DType::kQ4):
      return QuantPrefix(w, dtype) + "return (f32(extractBits(v, (i & 7u) * 4u, 4u)) - 8.0) * s;";
    case static_cast<int>(DType::kF32): return "return bitcast<f32>(" + w + "(i));";
    case static_cast<int>(DType::kBF16):
      return "let v = " + w + "(i >> 1u); if ((i & 1u) == 0u) { return bitcast<f32>(v << 16u); } "
             "return bitcast<f32>(v & 0xffff0000u);";
    case static_cast<int>(DType::kF16): return "return unpack2x16float(" + w + "(i >> 1u))[i & 1u];";
    default: return "return 0.0;";
  }
}

std::string PairSnippet(int slot, int dtype) {  // elements 2j, 2j + 1
  const std::string w = "w" + std::to_string(slot) + "word";
  switch (dtype) {
    case static_cast<int>(DType::kQ8):
      return "let i = 2u * j; " + QuantPrefix(w, dtype) +
             "let sh = (i & 3u) * 8u; return vec2<f32>(f32(extractBits(v, sh, 8u)), f32(extractBits(v, sh + 8u, 8u))) * s;";
    case static_cast<int>(DType::kQ4):
      return "let i = 2u * j; " + QuantPrefix(w, dtype) +
             "let sh = (i & 7u) * 4u; "
             "return (vec2<f32>(f32(extractBits(v, sh, 4u)), f32(extractBits(v, sh + 4u, 4u))) - 8.0) * s;";
    case static_cast<int>(DType::kF32):
      return "return vec2<f32>(bitcast<f32>(" + w + "(2u * j)), bitcast<f32>(" + w + "(2u * j + 1u)));";
    case static_cast<int>(DType::kBF16):
      return "let v = " + w + "(j); return vec2<f32>(bitcast<f32>(v << 16u), bitcast<f32>(v & 0xffff0000u));";
    case static_cast<int>(DType::kF16): return "return unpack2x16float(" + w + "(j));";
    default: return "return vec2<f32>(0.0);";
  }
}

void ReplaceAll(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
}

}  // namespace

class WebGpuBackend final : public Backend {
 public:
  WebGpuBackend(uint64_t arena_bytes, uint64_t weight_binding_limit)
      : arena_bytes_(arena_bytes), weight_binding_limit_(weight_binding_limit) {}
  ~WebGpuBackend() override {
    if (arena_) g4_gpu_destroy_buffer(arena_);
  }
  Status Init() {
    const uint32_t sg = g4_gpu_subgroup_size();
    subgroup_ = sg >= 4 && sg <= 32 && 32 % sg == 0 ? sg : 0;
    const double limit = g4_gpu_max_binding_size();
    if (weight_binding_limit_ == 0 || weight_binding_limit_ > limit) weight_binding_limit_ = static_cast<uint64_t>(limit);
    arena_bytes_ = std::min<uint64_t>(arena_bytes_, static_cast<uint64_t>(limit) / kArenaAlign * kArenaAlign);
    arena_ = g4_gpu_create_buffer(static_cast<double>(arena_bytes_), 0);
    if (!arena_) return ResourceExhausted("webgpu: cannot allocate the " + std::to_string(arena_bytes_ >> 20) + " MiB arena");
    host_base_ = arena_bytes_ - kHostRegion;
    split_base_ = host_base_ - kSplitRegion;
    free_.push_back({0, split_base_});
    return Status::Ok();
  }
  std::string Name() const override { return "webgpu"; }

  // --- memory
  Result<std::unique_ptr<Buffer>> Allocate(size_t bytes) override {
    const std::optional<uint64_t> off = Take(bytes);
    if (!off) {
      return ResourceExhausted("webgpu: the activation arena (" + std::to_string(arena_bytes_ >> 20) +
                               " MiB) has no room for " + std::to_string(bytes) + " bytes");
    }
    auto b = std::make_unique<ArenaBuffer>(bytes, *off, this);
    Fill(F32{b.get(), 0}, ArenaBytes(bytes) / 4, 0.0f);  // zero-filled, as the interface promises
    return std::unique_ptr<Buffer>(std::move(b));
  }
  // The arena bytes `bytes` take: whole kArenaAlign blocks, at least one.
  static uint64_t ArenaBytes(uint64_t bytes) {
    return (std::max<uint64_t>(bytes, 4) + kArenaAlign - 1) / kArenaAlign * kArenaAlign;
  }
  // The offset of ArenaBytes(bytes) taken from the first free range that holds them; none if no
  // range does. Allocate's buffers, and the backend's own space between two of its dispatches
  // (not zero-filled: the GPU runs dispatches in order, so it can be released once they are
  // recorded).
  std::optional<uint64_t> Take(uint64_t bytes) {
    const uint64_t need = ArenaBytes(bytes);
    for (size_t i = 0; i < free_.size(); ++i) {
      if (free_[i].second >= need) {
        const uint64_t off = free_[i].first;
        free_[i].first += need;
        free_[i].second -= need;
        if (!free_[i].second) free_.erase(free_.begin() + i);
        return off;
      }
    }
    return std::nullopt;
  }
  void Release(uint64_t off, uint64_t bytes) {
    free_.push_back({off, ArenaBytes(bytes)});
    std::sort(free_.begin(), free_.end());
    std::vector<std::pair<uint64_t, uint64_t>> merged;
    for (const auto& f : free_) {
      if (!merged.empty() && merged.back().first + merged.back().second == f.first) {
        merged.back().second += f.second;
      } else {
        merged.push_back(f);
      }
    }
    free_ = std::move(merged);
  }

  Result<std::unique_ptr<Buffer>> LoadWeights(const Reader& source, uint64_t offset, uint64_t size) override {
    const uint64_t limit = weight_binding_limit_ / 16 * 16;
    const uint64_t padded = (std::max<uint64_t>(size, 16) + 15) / 16 * 16;  // whole 16-byte words
    if (padded > 3 * limit) {
      return Unimplemented("webgpu: a weight of " + std::to_string(size) + " bytes is more than three bindings of " +
                           std::to_string(limit) + " bytes");
    }
    // Chunks of `limit` bytes (a multiple of 16: no element or pair of elements straddles two).
    std::vector<uint32_t> ids;
    for (uint64_t at = 0; at < padded; at += limit) {
      const uint64_t n = std::min(limit, padded - at);
      const uint32_t id = g4_gpu_create_buffer(static_cast<double>(n), 1);
      if (!id) {
        for (uint32_t done : ids) g4_gpu_destroy_buffer(done);
        return ResourceExhausted("webgpu: cannot allocate " + std::to_string(n) + " bytes of weights");
      }
      ids.push_back(id);
    }
    auto buf = std::make_unique<WeightBuffer>(padded, ids, limit);
    // Stream through a small staging block: the wasm heap never holds a whole tensor.
    constexpr uint64_t kStage = 4u << 20;
    staging_.resize(kStage);
    for (uint64_t at = 0; at < size;) {
      const uint64_t chunk = at / limit, in_chunk = at % limit;
      const uint64_t n = std::min({kStage, size - at, limit - in_chunk});
      G4_RETURN_IF_ERROR(source.Read(offset + at, n, staging_.data()));
      const uint64_t n4 = (n + 3) / 4 * 4;
      std::memset(staging_.data() + n, 0, n4 - n);
      g4_gpu_write_buffer(ids[chunk], static_cast<double>(in_chunk), staging_.data(), static_cast<uint32_t>(n4));
      at += n;
    }
    return std::unique_ptr<Buffer>(std::move(buf));
  }

  // Superblocks (see kSuperblock) assembled in a staging block and written chunk by chunk.
  Result<std::unique_ptr<Buffer>> LoadQuantizedWeights(DType type, uint64_t elements, const Reader& values,
                                                       uint64_t values_offset, const Reader& scales,
                                                       uint64_t scales_offset) override {
    G4_RETURN_IF_ERROR(CheckQuantizedSource(type, elements, values, values_offset, scales, scales_offset));
    const uint64_t sb_bytes = 4 * SuperblockWords(type);
    const uint64_t blocks = (elements + kSuperblock - 1) / kSuperblock, total = blocks * sb_bytes;
    const uint64_t per_chunk = weight_binding_limit_ / sb_bytes;  // superblocks per binding
    if (blocks > 3 * per_chunk) {
      return Unimplemented("webgpu: a quantized weight of " + std::to_string(total) + " bytes is more than three bindings of " +
                           std::to_string(per_chunk * sb_bytes) + " bytes");
    }
    std::vector<uint32_t> ids;
    for (uint64_t b = 0; b < blocks; b += per_chunk) {
      const uint32_t id = g4_gpu_create_buffer(static_cast<double>(std::min(per_chunk, blocks - b) * sb_bytes), 1);
      if (!id) {
        for (uint32_t done : ids) g4_gpu_destroy_buffer(done);
        return ResourceExhausted("webgpu: cannot allocate " + std::to_string(total) + " bytes of quantized weights");
      }
      ids.push_back(id);
    }
    auto buf = std::make_unique<WeightBuffer>(total, ids, per_chunk * sb_bytes);
    const uint64_t group_bytes = QuantValueBytes(type, kQuantGroup), groups = elements / kQuantGroup;
    constexpr uint64_t kStageBlocks = 32768;
    std::vector<uint8_t> v(kStageBlocks * 2 * group_bytes), sc(kStageBlocks * 4);
    staging_.resize(kStageBlocks * sb_bytes);
    for (uint64_t b0 = 0; b0 < blocks;) {
      const uint64_t n = std::min({kStageBlocks, blocks - b0, per_chunk - b0 % per_chunk});
      const uint64_t g0 = 2 * b0, ng = std::min(2 * n, groups - g0);
      std::fill(v.begin(), v.end(), 0);
      std::fill(sc.begin(), sc.end(), 0);
      G4_RETURN_IF_ERROR(values.Read(values_offset + g0 * group_bytes, ng * group_bytes, v.data()));
      G4_RETURN_IF_ERROR(scales.Read(scales_offset + g0 * 2, ng * 2, sc.data()));
      for (uint64_t k = 0; k < n; ++k) {
        uint8_t* dst = staging_.data() + k * sb_bytes;
        std::memcpy(dst, sc.data() + 4 * k, 4);
        std::memcpy(dst + 4, v.data() + 2 * k * group_bytes, 2 * group_bytes);
      }
      g4_gpu_write_buffer(ids[b0 / per_chunk], static_cast<double>(b0 % per_chunk * sb_bytes), staging_.data(),
                          static_cast<uint32_t>(n * sb_bytes));
      b0 += n;
    }
    return std::unique_ptr<Buffer>(std::move(buf));
  }

  Status Upload(Buffer& dst, size_t offset, const void* src, size_t bytes) override {
    Flush();
    if (offset > dst.bytes() || bytes > dst.bytes() - offset) return OutOfRange("webgpu: upload past the buffer");
    // writeBuffer wants multiples of 4 bytes.
    std::vector<uint8_t> tmp((bytes + 3) / 4 * 4, 0);
    std::memcpy(tmp.data(), src, bytes);
    g4_gpu_write_buffer(arena_, static_cast<double>(ArenaOffset(dst) + offset), tmp.data(), static_cast<uint32_t>(tmp.size()));
    return Status::Ok();
  }

  Status Download(const Buffer& src, size_t offset, void* dst, size_t bytes) override {
    G4_ASSIGN_OR_RETURN(std::unique_ptr<PendingDownload> read, StartDownload(src, offset, bytes));
    return read->Finish(dst);
  }
  Result<std::unique_ptr<PendingDownload>> StartDownload(const Buffer& src, size_t offset, size_t bytes) override {
    if (offset > src.bytes() || bytes > src.bytes() - offset) return OutOfRange("webgpu: download past the buffer");
    if (!error_.ok()) return error_;
    // The recorded commands go with the read: its copy rides in their last submit.
    const uint32_t size = static_cast<uint32_t>((bytes + 3) / 4 * 4);
    const uint32_t ticket = g4_gpu_read_start(cmds_.data(), static_cast<uint32_t>(cmds_.size()), arena_,
                                              static_cast<double>(ArenaOffset(src) + offset), size);
    Handed();
    if (!ticket) return Internal("webgpu: reading back failed to start (device lost)");
    return std::unique_ptr<PendingDownload>(new GpuDownload(ticket, bytes));
  }
  bool DownloadsOverlap() const override { return true; }

  // --- measurement
  uint64_t dispatches() const override { return dispatches_; }
  void Profile(ProfileMode mode) override {
    Flush();
    g4_gpu_profile(static_cast<uint32_t>(mode));
  }
  Result<std::string> ProfileJson() override {
    Flush();
    std::string text(1 << 16, '\0');
    const uint32_t n = g4_gpu_profile_read(text.data(), static_cast<uint32_t>(text.size()));
    if (n == 0) return Internal("webgpu: the kernel profile does not fit in 64 KiB");
    text.resize(n);
    return text;
  }
  // Best of 5 submits, each reading a zero-filled buffer of `bytes` 4 times.
  Result<double> MeasureReadBandwidth(uint64_t bytes) override {
    bytes = std::min<uint64_t>(bytes, weight_binding_limit_) / 16 * 16;
    const uint32_t buf = g4_gpu_create_buffer(static_cast<double>(bytes), 1);
    if (!buf) return ResourceExhausted("webgpu: cannot allocate " + std::to_string(bytes >> 20) + " MiB to measure bandwidth");
    G4_ASSIGN_OR_RETURN(std::unique_ptr<Buffer> sink, Allocate(4));
    WeightBuffer w(bytes, {buf}, bytes);  // destroys buf when done
    const Weight weight{&w, DType::kF32, 1, 1, static_cast<int64_t>(bytes / 4)};
    double best = 0.0;
    float out = 0.0f;
    for (int pass = 0; pass < 6; ++pass) {
      G4_RETURN_IF_ERROR(Download(*sink, 0, &out, 4));  // the queue is idle
      const auto t0 = std::chrono::steady_clock::now();
      for (int rep = 0; rep < 4; ++rep) {
        Dispatch(Kernel::kBandwidth, {&weight}, 132 * 16, {U(bytes / 16), U(ArenaOffset(*sink) / 4)});
      }
      G4_RETURN_IF_ERROR(Download(*sink, 0, &out, 4));
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (pass > 0) best = std::max(best, 4.0 * bytes / s / 1e9);  // the first pass compiles
    }
    return best;
  }

  // --- ops
  // Host ids go to the host region as floats and take the same kernels as ids on the device.
  void Embed(F32 out, const Weight& table, std::span<const int32_t> ids, float scale) override {
    EmbedIds(out, table, HostIds(ids), static_cast<int>(ids.size()), scale);
  }
  void RmsNorm(F32 out, F32 in, const Weight& weight, int rows, int dim, float eps) override {
    Dispatch(Kernel::kRmsNorm, {&weight}, rows, {At(out), At(in), U(rows), U(dim), Fl(eps), U(weight.present()), 0, 0});
  }
  void AddRmsNorm(F32 x, F32 in, const Weight& weight, int rows, int dim, float eps, float scale) override {
    Dispatch(Kernel::kRmsNorm, {&weight}, rows,
             {At(x), At(in), U(rows), U(dim), Fl(eps), U(weight.present()), 1, Fl(scale)});
  }
  // rms_norm's parameters for a residual join; mode 2: the join alone, 3: then the next norm.
  static std::vector<uint32_t> JoinParams(const ResidualAdd& a, int rows, int dim, uint32_t mode) {
    return {At(a.x_out), At(a.delta), U(rows), U(dim), Fl(a.eps), U(a.norm.present()), mode, Fl(a.scale), At(a.x_in)};
  }
  void AddRmsNormTo(const ResidualAdd& a, int rows, int dim) override {
    Dispatch(Kernel::kRmsNorm, {&a.norm}, rows, JoinParams(a, rows, dim, 2));
  }
  // A pending join, then the next block's input norm of the joined rows (normed = rmsnorm(in) *
  // norm, in = pre.x_out): with a join, one rms_norm pass per row does both (many rows: prefill).
  void JoinThenNorm(const ResidualAdd& pre, F32 normed, F32 in, const Weight& norm, float eps, int rows, int dim) {
    auto split = [](const Weight& w) { return w.present() && Bindings(w) > 1; };
    if (!pre.present() || split(norm) || split(pre.norm)) {
      if (pre.present()) AddRmsNormTo(pre, rows, dim);
      RmsNorm(normed, in, norm, rows, dim, eps);
      return;
    }
    std::vector<uint32_t> p = JoinParams(pre, rows, dim, 3);
    p.insert(p.end(), {At(normed), Fl(eps), U(norm.present())});
    Dispatch(Kernel::kRmsNorm, {&pre.norm, &norm}, rows, p);
  }
  void GateUp(F32 out, F32 up_scratch, F32 normed_scratch, F32 in, const Weight& norm, float eps, const Weight& gate,
              const Weight& up, int rows, const ResidualAdd& pre) override {
    if (rows > 8 || !norm.present() || Bindings(gate) > 1 || Bindings(up) > 1 || gate.rows != up.rows ||
        gate.cols != up.cols) {
      JoinThenNorm(pre, normed_scratch, in, norm, eps, rows, static_cast<int>(gate.cols));
      MatMul(out, normed_scratch, gate, rows);
      MatMul(up_scratch, normed_scratch, up, rows);
      GeluMul(out, out, up_scratch, rows, static_cast<int>(gate.rows), static_cast<int>(up.rows));
      return;
    }
    // Decode and verification: the norm, both rows of each output feature and their product in
    // one dispatch; for one row whose length is a multiple of 4, the kernel makes a pending
    // residual join on the way in. Quantized rows of whole words of values, read as vec4s, take
    // gate_up_q.
    const bool quant_words = IsQuantized(gate.dtype) && gate.cols % 8 == 0 && At(in) % 4 == 0;
    const Kernel k = gate.dtype != up.dtype ? Kernel::kGateUp
                     : Wide(gate, in) && Wide(up)  ? Kernel::kGateUpWide
                     : quant_words                 ? Kernel::kGateUpQ
                                                   : Kernel::kGateUp;
    const bool fused = JoinOnTheWay(pre, k != Kernel::kGateUp || gate.cols % 4 == 0, rows, gate.cols);
    std::vector<uint32_t> p = {At(out), At(fused ? pre.x_in : in), U(rows), U(gate.rows), U(gate.cols), Fl(eps)};
    if (fused) PreParams(pre, &p);
    Dispatch(k, {&gate, &up, &norm, fused ? &pre.norm : &kNoWeight}, (gate.rows + 7) / 8, p,
             RowsVariant(rows) | (fused ? kPre : 0));
  }
  void MatMul(F32 out, F32 in, const Weight& w, int rows) override {
    if (rows <= 8) {
      MatVec(out, in, w, nullptr, 0.0f, rows);
      return;
    }
    if (Wide(w, in)) {
      MatMulTiled(out, in, w, rows);
      return;
    }
    const uint64_t tiles = static_cast<uint64_t>((rows + 63) / 64) * ((w.rows + 63) / 64);
    Dispatch(Kernel::kMatMul, {&w}, tiles, {At(out), At(in), U(rows), U(w.rows), U(w.cols)});
  }
  // matmul_wide's tiles (rows x outputs) by kernel variant, and the variants from small to large.
  static constexpr int kMatMulTiles[4][2] = {{64, 64}, {128, 64}, {128, 128}, {64, 32}};
  static constexpr int kMatMulBySize[4] = {3, 0, 1, 2};
  // matmul_wide with the largest tile that still gives the GPU kMatMulFill workgroups. Long rows
  // that leave too few of the largest tiles (E2B's down-projections in prefill: 512 rows x 1,536
  // outputs are 48 tiles of 128 x 128, over 12,288 columns) split their columns into as many parts
  // as still fit in kMatMulFill workgroups (5), of at least kSplitColumns columns each, written to
  // arena space taken for them (at most kMatMulFill tiles' worth, about 17 MB) and added up by
  // split_sum. On the H200 that took the products of E2B's 512-token prefill from about 96 to 89
  // ms; 11 parts (two waves) measured the same, 4 parts or 128 x 64 tiles less, and splitting the
  // 1,536- and 2,048-column products too no more.
  void MatMulTiled(F32 out, F32 in, const Weight& w, int rows) {
    auto tiles = [&](int v) {
      return static_cast<uint64_t>((rows + kMatMulTiles[v][0] - 1) / kMatMulTiles[v][0]) *
             ((w.rows + kMatMulTiles[v][1] - 1) / kMatMulTiles[v][1]);
    };
    const int big = kMatMulBySize[kSplitTile];
    const uint64_t n = static_cast<uint64_t>(rows) * w.rows;
    uint64_t parts = std::min<uint64_t>(kMatMulFill / tiles(big), w.cols / kSplitColumns);
    if (parts > 1 && w.rows % 4 == 0 && At(out) % 4 == 0) {
      const uint64_t kc = ((w.cols + parts - 1) / parts + 31) / 32 * 32;  // whole stages of columns
      parts = (w.cols + kc - 1) / kc;
      if (const std::optional<uint64_t> at = Take(parts * n * 4)) {
        Dispatch(Kernel::kMatMulWide, {&w}, tiles(big) * parts,
                 {U(*at / 4), At(in), U(rows), U(w.rows), U(w.cols), U(kc)}, big);
        Dispatch(Kernel::kSplitSum, {}, (n / 4 + 63) / 64, {At(out), U(*at / 4), U(n / 4), U(parts)});
        Release(*at, parts * n * 4);
        return;
      }
    }
    int pick = 3;
    while (pick > 0 && tiles(kMatMulBySize[pick]) < kMatMulFill) --pick;
    const int v = kMatMulBySize[pick];
    Dispatch(Kernel::kMatMulWide, {&w}, tiles(v), {At(out), At(in), U(rows), U(w.rows), U(w.cols), U(w.cols)}, v);
  }
  void NormMatMul(F32 out, F32 normed_scratch, F32 in, const Weight& norm, float eps, const Weight& w, int rows,
                  const ResidualAdd& pre) override {
    if (rows <= 8 && norm.present() && Bindings(w) == 1) {  // the norm folded into the product
      MatVec(out, in, w, &norm, eps, rows, {}, 0, pre);
      return;
    }
    JoinThenNorm(pre, normed_scratch, in, norm, eps, rows, static_cast<int>(w.cols));
    MatMul(out, normed_scratch, w, rows);
  }
  void NormMatMul2(F32 out_a, F32 out_b, F32 normed_scratch, F32 in, const Weight& norm, float eps, const Weight& wa,
                   const Weight& wb, int rows, const ResidualAdd& pre) override {
    // Decode and verification with two matrices of one width and dtype, 16-bit (matvec_wide) or
    // quantized (matvec_q), each in one binding: one dispatch, a team per output feature of
    // either, making a pending join of one row on the way in.
    if (rows > 8) {  // prefill: the norm (and the join) once for both products
      JoinThenNorm(pre, normed_scratch, in, norm, eps, rows, static_cast<int>(wa.cols));
      MatMul(out_a, normed_scratch, wa, rows);
      MatMul(out_b, normed_scratch, wb, rows);
      return;
    }
    const bool quantized = IsQuantized(wa.dtype) && Bindings(wa) == 1 && Bindings(wb) == 1;
    if (!norm.present() || Bindings(norm) > 1 || !((Wide(wa, in) && Wide(wb)) || quantized) ||
        wa.dtype != wb.dtype || wa.cols != wb.cols) {
      Backend::NormMatMul2(out_a, out_b, normed_scratch, in, norm, eps, wa, wb, rows, pre);
      return;
    }
    const Kernel k = quantized ? Kernel::kMatVecQ : Kernel::kMatVecWide;
    const bool fused = JoinOnTheWay(pre, true, rows, wa.cols);
    const int64_t outs = wa.rows + wb.rows;
    const TeamSplit t = TeamsPerFeature(outs, wa.cols);
    std::vector<uint32_t> p = {At(out_a), At(fused ? pre.x_in : in), U(rows), U(outs), U(wa.cols), Fl(eps),
                               At(out_b), U(wa.rows)};
    if (fused) PreParams(pre, &p);
    Dispatch(k, {&wa, &norm, &wb, fused ? &pre.norm : &kNoWeight}, t.groups, p,
             RowsVariant(rows) | kNormed | kTwo | (fused ? kPre : 0) | VecIn(k, in) | t.variant);
  }
  void NormMatMulKvNorms(F32 out, F32 normed_scratch, F32 in, const Weight& norm, float eps, const Weight& w, int rows,
                         const KvNorms& kv) override {
    // Up to 8 rows through matvec_wide or matvec_q: the norms by workgroups of their own in the
    // product's dispatch (one per row, kv head and keys or values, ahead of the product's). Else
    // the product, then the norms in one kv_norms dispatch. On the H200 this took E2B decode
    // from 322 to 307 dispatches a token and from about 255 to 264 tokens/s.
    if (!kv.k_norm.present() || Bindings(kv.k_norm) > 1) {
      Backend::NormMatMulKvNorms(out, normed_scratch, in, norm, eps, w, rows, kv);
      return;
    }
    const int hd = static_cast<int>(kv.inv_freq.size() * 2);
    const Kernel k = MatVecKernel(w, in);
    const auto [pp, fp] = RopeTables(kv.inv_freq, kv.positions);
    const uint32_t extra = static_cast<uint32_t>(rows) * 2 * kv.kv_heads;
    // kv_norm.wgsl's parameters, P12 on (eps: P5).
    const std::vector<uint32_t> norms = {extra, At(kv.k), At(kv.v), U(kv.kv_heads), U(hd / 2), pp, fp};
    if (rows > 8 || !norm.present() || Bindings(norm) > 1 || k == Kernel::kMatVec) {
      NormMatMul(out, normed_scratch, in, norm, eps, w, rows, {});
      std::vector<uint32_t> p(12, 0);
      p[5] = Fl(eps);
      p.insert(p.end(), norms.begin(), norms.end());
      Dispatch(Kernel::kKvNorms, {&kNoWeight, &kNoWeight, &kNoWeight, &kv.k_norm}, extra, p);
      return;
    }
    const TeamSplit t = TeamsPerFeature(w.rows, w.cols);
    std::vector<uint32_t> p = {At(out), At(in), U(rows), U(w.rows), U(w.cols), Fl(eps), 0, 0, 0, 0, 0, 0};
    p.insert(p.end(), norms.begin(), norms.end());
    Dispatch(k, {&w, &norm, &kNoWeight, &kv.k_norm}, t.groups + extra, p,
             RowsVariant(rows) | kNormed | kKvNorms | VecIn(k, in) | t.variant);
  }
  void NormRope(F32 x, int rows, int heads, const Weight& norm, float eps, std::span<const float> inv_freq,
                std::span<const int64_t> positions) override {
    const auto [pp, fp] = RopeTables(inv_freq, positions);
    Dispatch(Kernel::kNormRope, {&norm}, static_cast<uint64_t>(rows) * heads,
             {At(x), U(rows), U(heads), U(inv_freq.size()), pp, fp, Fl(eps)});
  }
  void MatMulGeluMul(F32 out, F32 in, const Weight& w, F32 mul, int rows, int mul_stride,
                     const ResidualAdd& pre) override {
    if (rows > 8) {
      Backend::MatMulGeluMul(out, in, w, mul, rows, mul_stride, pre);
      return;
    }
    MatVec(out, in, w, nullptr, 0.0f, rows, mul, mul_stride, pre);
  }
  void Rope(F32 x, int rows, int heads, std::span<const float> inv_freq, std::span<const int64_t> positions) override {
    const auto [pp, fp] = RopeTables(inv_freq, positions);
    Record(Kernel::kRope, {}, static_cast<uint64_t>(rows) * heads * inv_freq.size(),
           {At(x), U(rows), U(heads), U(inv_freq.size()), pp, fp});
  }
  void Attention(F32 out, F32 q, F32 k_new, F32 v_new, F32 k_cache, F32 v_cache, const AttentionShape& s) override {
    Attend(out, q, k_new, v_new, k_cache, v_cache, s, nullptr, 0.0f, {});
  }
  void NormRopeAttention(F32 out, F32 q, const Weight& q_norm, float eps, std::span<const float> inv_freq,
                         std::span<const int64_t> positions, F32 k_new, F32 v_new, F32 k_cache, F32 v_cache,
                         const AttentionShape& s) override {
    // Up to 8 rows at consecutive positions (decode, drafting, verification): attention_wide
    // norms and rotates its copy of each query as it loads it. Else the norm and RoPE go first.
    bool consecutive = positions.size() == static_cast<size_t>(s.rows);
    for (size_t r = 0; consecutive && r < positions.size(); ++r) consecutive = positions[r] == s.start + int64_t(r);
    const bool fold = s.rows <= 8 && consecutive && q_norm.present() &&
                      Bindings(q_norm) == 1 && inv_freq.size() * 2 == static_cast<size_t>(s.head_dim) &&
                      s.head_dim % 8 == 0 && WideAttention(s, {out, q, k_new, v_new, k_cache, v_cache});
    if (!fold) {
      Backend::NormRopeAttention(out, q, q_norm, eps, inv_freq, positions, k_new, v_new, k_cache, v_cache, s);
      return;
    }
    Attend(out, q, k_new, v_new, k_cache, v_cache, s, &q_norm, eps, inv_freq);
  }
  // Head dims and offsets in whole vec4s: the kernels that read them 16 bytes at a time.
  static bool WideAttention(const AttentionShape& s, std::initializer_list<F32> tensors) {
    bool wide = s.head_dim % 4 == 0;
    for (F32 t : tensors) wide = wide && At(t) % 4 == 0;
    return wide;
  }
  // Attention; with q_norm, attention_wide norms and rotates the queries first (up to 8 rows).
  void Attend(F32 out, F32 q, F32 k_new, F32 v_new, F32 k_cache, F32 v_cache, const AttentionShape& s,
              const Weight* q_norm, float eps, std::span<const float> inv_freq) {
    // Few (row, head) pairs (decode, drafting) split their positions so the GPU has enough
    // workgroups, each split at most a tile of 64 positions where that fills at most
    // kSplitTarget workgroups; attention_combine merges the splits. (Splits of a little over a
    // tile, as 520 positions in 8, cost a second, nearly empty tile: on the H200, E2B decode's
    // attention took 0.805 ms a token with them and 0.778 with splits of at most a tile; splits
    // of two or four tiles took 0.93 and 1.22.)
    if (s.head_dim > 512) {
      if (error_.ok()) error_ = Unimplemented("webgpu: attention with head_dim " + std::to_string(s.head_dim) + " > 512");
      return;
    }
    const uint64_t pairs = static_cast<uint64_t>(s.rows) * s.heads;
    const uint64_t positions = static_cast<uint64_t>(s.cached) + s.rows;
    uint64_t splits = std::min<uint64_t>({(kSplitTarget + pairs - 1) / pairs, (positions + 63) / 64, 64});
    splits = std::max<uint64_t>(1, std::min<uint64_t>(splits, kSplitRegion / 4 / (pairs * (s.head_dim + 2))));
    std::vector<uint32_t> p = {At(out), At(q), At(k_new), At(v_new), At(k_cache), At(v_cache), U(s.rows),
                               U(s.heads), U(s.kv_heads), U(s.head_dim),
                               U(s.window) | (s.past_only ? 0x80000000u : 0u), U(s.start), U(s.cached),
                               U(s.capacity), U(splits), U(split_base_ / 4)};
    const bool wide = WideAttention(s, {out, q, k_new, v_new, k_cache, v_cache});
    if (q_norm) p.insert(p.end(), {HostU32(inv_freq.data(), inv_freq.size()), Fl(eps)});
    if (!q_norm && wide && s.rows > 8 && s.heads % s.kv_heads == 0) {
      // Many rows (prefill): blocks of 16 query vectors that share a kv head, each reading the
      // keys and values once.
      const uint64_t blocks = (static_cast<uint64_t>(s.rows) * (s.heads / s.kv_heads) + 15) / 16;
      Dispatch(Kernel::kAttentionTiled, {}, blocks * s.kv_heads, p);
      return;
    }
    Dispatch(wide ? Kernel::kAttentionWide : Kernel::kAttention, {q_norm ? q_norm : &kNoWeight}, pairs * splits, p,
             q_norm ? kNormed : 0);
    if (splits > 1) Dispatch(Kernel::kAttentionCombine, {}, pairs * ((s.head_dim + 63) / 64), p);
  }
  void CacheAppend(F32 k_cache, F32 v_cache, F32 k_new, F32 v_new, int rows, int row_size, int64_t start,
                   int64_t capacity) override {
    const CacheAppendLayer layer{k_cache, v_cache, k_new, v_new, row_size, capacity};
    CacheAppends(std::span(&layer, 1), rows, start);
  }
  // One dispatch for every layer: their offsets, row sizes and capacities in a table in the host
  // region (six words a layer).
  void CacheAppends(std::span<const CacheAppendLayer> layers, int rows, int64_t start) override {
    std::vector<uint32_t> table;
    int widest = 0;
    for (const CacheAppendLayer& l : layers) {
      table.insert(table.end(), {At(l.k_cache), At(l.v_cache), At(l.k_new), At(l.v_new), U(l.row_size), U(l.capacity)});
      widest = std::max(widest, l.row_size);
    }
    if (table.empty()) return;
    Record(Kernel::kCacheAppend, {}, static_cast<uint64_t>(layers.size()) * rows * widest,
           {HostU32(table.data(), table.size()), U(layers.size()), U(rows), U(start), U(widest)});
  }
  void GeluMul(F32 out, F32 gate, F32 up, int rows, int cols, int up_stride) override {
    // Four columns a thread where rows are whole vec4s.
    const bool vec = cols % 4 == 0 && up_stride % 4 == 0 && At(out) % 4 == 0 && At(gate) % 4 == 0 && At(up) % 4 == 0;
    Dispatch(Kernel::kGeluMul, {}, (static_cast<uint64_t>(rows) * cols / (vec ? 4 : 1) + 63) / 64,
             {At(out), At(gate), At(up), U(rows), U(cols), U(up_stride)}, vec ? kVecIn : 0);
  }
  void Add(F32 out, F32 a, F32 b, size_t count) override { Elementwise(0, count, out, a, b, 0.0f); }
  void Copy(F32 dst, F32 src, size_t count) override { Elementwise(2, count, dst, src, src, 0.0f); }
  void Scale(F32 x, size_t count, float s) override { Elementwise(1, count, x, x, x, s); }
  void Softcap(F32 x, size_t count, float cap) override { Elementwise(3, count, x, x, x, cap); }
  void GatherMatVec(F32 out, F32 in, const Weight& w, std::span<const int32_t> rows) override {
    GatherMatVecIds(out, in, w, HostIds(rows), static_cast<int>(rows.size()));
  }
  void Argmax(F32 ids, F32 x, int rows, int cols) override {
    // Rows of a whole vocabulary: slices in parallel, then one pick per row.
    const uint64_t chunks = std::min<uint64_t>((cols + 4095) / 4096, 256);
    if (chunks > 1 && rows * chunks * 8 <= kSplitRegion) {
      const std::vector<uint32_t> p = {At(ids), At(x), U(rows), U(cols), 1, U(chunks), U(split_base_ / 4)};
      Dispatch(Kernel::kArgmax, {}, rows * chunks, p);
      std::vector<uint32_t> p2 = p;
      p2[4] = 2;
      Dispatch(Kernel::kArgmax, {}, rows, p2);
      return;
    }
    Dispatch(Kernel::kArgmax, {}, rows, {At(ids), At(x), U(rows), U(cols), 0, 1, 0});
  }
  void EmbedIds(F32 out, const Weight& table, F32 ids, int rows, float scale) override {
    Record(Kernel::kEmbedIds, {&table}, static_cast<uint64_t>(rows) * table.cols,
           {At(out), At(ids), U(rows), U(table.cols), Fl(scale)});
  }
  void GatherMatVecIds(F32 out, F32 in, const Weight& w, F32 rows, int count) override {
    Dispatch(Kernel::kGatherMatVecIds, {&w}, (count + 7) / 8, {At(out), At(in), At(rows), U(count), U(w.cols)});
  }
  void TopK(F32 indices, F32 x, int rows, int cols, int k) override {
    // Rows that fit workgroup memory are sorted whole (topk_sort): on the H200 the assistant's
    // top 32 of 2,048 centroids took 42 us that way, 82 us picked one at a time (topk).
    Dispatch(cols <= 2048 ? Kernel::kTopKSort : Kernel::kTopK, {}, rows, {At(indices), At(x), U(rows), U(cols), U(k)});
  }
  void TopKValues(F32 out, F32 x, int cols, int k) override {
    // Slices of up to 2048 columns (fewer slices when k is large: blocks * k candidates, and a
    // slice's columns, must fit the kernel's 64 per thread).
    constexpr uint64_t kHeld = 64 * 256;
    const uint64_t blocks = std::max<uint64_t>(1, std::min<uint64_t>((cols + 2047) / 2048, kHeld / k));
    if ((cols + blocks - 1) / blocks > kHeld || blocks * k * 8 > kSplitRegion) {
      if (error_.ok()) error_ = InvalidArgument("webgpu: top-k of " + std::to_string(k) + " over " + std::to_string(cols) +
                                                " columns is past the kernel's limits");
      return;
    }
    std::vector<uint32_t> p = {At(out), At(x), U(cols), U(k), 1, U(blocks), U(split_base_ / 4)};
    Dispatch(Kernel::kTopKValues, {}, blocks, p);
    p[4] = 2;
    Dispatch(Kernel::kTopKValues, {}, 1, p);
  }
  void ArgmaxKeyed(F32 id, F32 x, F32 keys, int cols) override {
    Dispatch(Kernel::kArgmaxKeyed, {}, 1, {At(id), At(x), At(keys), U(cols)});
  }
  void AcceptDrafts(F32 result, F32 drafts, F32 target, int k) override {
    Dispatch(Kernel::kAccept, {}, 1, {At(result), At(drafts), At(target), U(k)});
  }
  void MoeRoute(F32 indices, F32 weights, F32 x, const Weight& scale, const Weight& proj,
                const Weight& per_expert_scale, const MoeShape& s, float eps) override {
    Record(Kernel::kMoeRoute, {&scale, &proj, &per_expert_scale}, s.rows,
           {At(indices), At(weights), At(x), U(s.rows), U(s.hidden), U(s.experts), U(s.top_k), Fl(eps)});
  }
  void MoeExperts(F32 out, F32 x, const Weight& gate_up, const Weight& down, F32 indices, F32 weights,
                  const MoeShape& s) override {
    Record(Kernel::kMoeExperts, {&gate_up, &down}, static_cast<uint64_t>(s.rows) * s.hidden,
           {At(out), At(x), At(indices), At(weights), U(s.rows), U(s.hidden), U(s.top_k), U(s.expert_width)});
  }

 private:
  static uint32_t U(int64_t v) { return static_cast<uint32_t>(v); }
  static uint32_t Fl(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  }
  static uint64_t ArenaOffset(const Buffer& b) { return static_cast<const ArenaBuffer&>(b).offset(); }
  // The word offset of t in the arena; a null buffer marks an offset into the host region.
  static uint32_t At(F32 t) { return t.buffer ? U(ArenaOffset(*t.buffer) / 4 + t.offset) : U(t.offset); }

  void Fill(F32 out, size_t count, float v) { Elementwise(4, count, out, out, out, v); }
  // Kernels over 1 to 4 rows are compiled for their exact row count: on the H200, E2B's 3-token
  // verification (K = 2) took 5.11 ms compiled for 3 rows against 5.31 for 4 (each row costs the
  // team sums at the end, and registers, whether it is there or not). 5 to 8 rows (K of 4 to 7,
  // short prompts) share the 8-row kernels: every variant is compiled where it is first used, and
  // an 8-row kernel takes tens of seconds to compile on a CPU device.
  static int RowsVariant(int rows) { return rows <= 4 ? std::max(rows, 1) : 8; }
  static size_t Bindings(const Weight& w) { return static_cast<const WeightBuffer*>(w.buffer)->chunks(); }
  // A 16-bit matrix in one binding whose rows are whole 16-byte words: the wide kernels read it.
  static bool Wide(const Weight& w) {
    return (w.dtype == DType::kBF16 || w.dtype == DType::kF16) && Bindings(w) == 1 && w.cols % 8 == 0;
  }
  // ... and an input the wide kernels can read as vec4s.
  static bool Wide(const Weight& w, F32 in) { return Wide(w) && At(in) % 4 == 0; }
  // The matrix-vector kernel for w and the input in: matvec_wide (wide), matvec_q (int8/int4 in one
  // binding) or matvec.
  static Kernel MatVecKernel(const Weight& w, F32 in) {
    return Wide(w, in) ? Kernel::kMatVecWide
                       : IsQuantized(w.dtype) && Bindings(w) == 1 ? Kernel::kMatVecQ : Kernel::kMatVec;
  }
  // matvec_q reads an input at a 16-byte offset four floats at a time.
  static int VecIn(Kernel k, F32 in) { return k == Kernel::kMatVecQ && At(in) % 4 == 0 ? kVecIn : 0; }
  static constexpr int kNormed = 16;  // variant bit: the input rms-normed with W2 on the way in
  static constexpr int kGelu = 32;    // variant bit: the product through gelu_tanh, times a second input
  static constexpr int kVecIn = 64;   // variant bit: the arena seen as vec4s, the input read four floats at a time
  static constexpr int kPre = 128;    // variant bit: a residual join made on the way in (residual_add.wgsl)
  static constexpr int kTwo = 256;    // variant bit: matvec_wide over two matrices (NormMatMul2)
  static constexpr int kTeamsShift = 9;  // variant bits 9, 10: log2 of the teams per feature
  static constexpr int kKvNorms = 2048;   // variant bit: the first workgroups norm new keys and values (kv_norm.wgsl)
  // matvec_wide's and matvec_q's teams per output feature: doubled while the dispatch has fewer
  // than 4,096 teams and each team keeps at least 64 runs of eight weights (two per lane: two
  // 16-byte words of 16-bit weights or two q4 words; q8 words hold four weights, so four of those).
  // On the H200, E2B's down-projections (1,536 features of 6,144 or 12,288 weights) took 192
  // workgroups of one team a feature, fewer than two per core. Returns the workgroups (eight teams
  // each) and the variant bits.
  struct TeamSplit {
    uint64_t groups;
    int variant;
  };
  static TeamSplit TeamsPerFeature(int64_t features, int64_t cols) {
    const int64_t runs = cols / 8;
    int log2_teams = 0;
    while (log2_teams < 3 && (features << log2_teams) < 4096 && (runs >> (log2_teams + 1)) >= 64) ++log2_teams;
    return {static_cast<uint64_t>(((features << log2_teams) + 7) / 8), log2_teams << kTeamsShift};
  }
  static inline const Weight kNoWeight{};
  // Products over 2 to 8 rows with at least this many output features take matvec_rows (two
  // features a team). On the H200 that took E2B's 3-row LM head (262,144 features) from 0.41 to
  // 0.26 ms; its 1,536-feature projections went from 1.60 to 1.81 ms a round, so fewer take it.
  static constexpr int64_t kRowsFeatures = 65536;
  // A pending join the wide kernels make as they read their input: one row (decode, drafting),
  // whole vec4s, one binding for its norm. With more rows (verification) the extra reads of
  // every row's delta per output feature cost more than the dispatch they save (measured on the
  // H200: a 3-token verification took 1.85x a plain step fused, 1.63x with the joins apart).
  static bool Fusable(const ResidualAdd& pre, int rows) {
    return pre.present() && rows == 1 && pre.norm.present() && Bindings(pre.norm) == 1 && At(pre.x_in) % 4 == 0 &&
           At(pre.delta) % 4 == 0 && At(pre.x_out) % 4 == 0;
  }
  // Whether a kernel that can make the pending join `pre` on its way in (kernel_can) makes it;
  // otherwise it is made now, apart (if any).
  bool JoinOnTheWay(const ResidualAdd& pre, bool kernel_can, int rows, int64_t dim) {
    const bool fused = kernel_can && Fusable(pre, rows);
    if (pre.present() && !fused) AddRmsNormTo(pre, rows, static_cast<int>(dim));
    return fused;
  }
  // The join's parameters, P8 .. P11.
  static void PreParams(const ResidualAdd& pre, std::vector<uint32_t>* p) {
    p->resize(8, 0);
    p->insert(p->end(), {At(pre.delta), At(pre.x_out), Fl(pre.eps), Fl(pre.scale)});
  }
  // Up to 8 rows: a team per output feature, the weights read once for all rows; quantized
  // weights in one binding take whole words of values at a time. With a norm weight, the input
  // is rms-normed on the way in.
  // With a `mul` buffer (gelu_mul.buffer set), out = gelu_tanh(product) * mul[r * mul_stride + o].
  // With a pending residual join `pre` (whose x_out is `in`), the wide and quantized kernels make
  // it on the way in (its norm bound as W3); the others have it made first.
  void MatVec(F32 out, F32 in, const Weight& w, const Weight* norm, float eps, int rows, F32 gelu_mul = {},
              int mul_stride = 0, const ResidualAdd& pre = {}) {
    const Kernel k = MatVecKernel(w, in);
    const bool fused = JoinOnTheWay(pre, k == Kernel::kMatVecWide || k == Kernel::kMatVecQ, rows, w.cols);
    std::vector<const Weight*> ws = {&w, norm ? norm : &kNoWeight};
    if (fused) ws.push_back(&pre.norm);
    const bool gelu = gelu_mul.buffer != nullptr;
    std::vector<uint32_t> p = {At(out), At(fused ? pre.x_in : in), U(rows), U(w.rows), U(w.cols), Fl(eps),
                               gelu ? At(gelu_mul) : 0, U(mul_stride)};
    if (fused) PreParams(pre, &p);
    if (k == Kernel::kMatVecWide && rows > 1 && !fused && w.rows >= kRowsFeatures) {
      // Verification's LM head: two output features a team (matvec_rows.wgsl).
      const TeamSplit t = TeamsPerFeature((w.rows + 1) / 2, w.cols);
      Dispatch(Kernel::kMatVecRows, ws, t.groups, p,
               RowsVariant(rows) | (norm ? kNormed : 0) | (gelu ? kGelu : 0) | t.variant);
      return;
    }
    const bool teams = k == Kernel::kMatVecWide || k == Kernel::kMatVecQ;
    const TeamSplit t = teams ? TeamsPerFeature(w.rows, w.cols) : TeamSplit{static_cast<uint64_t>(w.rows + 7) / 8, 0};
    Dispatch(k, ws, t.groups, p,
             RowsVariant(rows) | (norm ? kNormed : 0) | (gelu ? kGelu : 0) | (fused ? kPre : 0) |
                 VecIn(k, in) | t.variant);
  }
  void Elementwise(uint32_t op, size_t count, F32 out, F32 a, F32 b, float s) {
    Record(Kernel::kElementwise, {}, count, {op, U(count), At(out), At(a), At(b), Fl(s)});
  }

  // Ids as the float values the id kernels read (exact below 2^24; larger ids are an error).
  F32 HostIds(std::span<const int32_t> ids) {
    std::vector<float> f(ids.begin(), ids.end());
    for (int32_t id : ids) {
      if (id < 0 || id >= (1 << 24)) {
        if (error_.ok()) error_ = Unimplemented("webgpu: row id " + std::to_string(id) + " is not below 2^24");
        f.assign(f.size(), 0.0f);
        break;
      }
    }
    return F32{nullptr, HostU32(f.data(), f.size())};
  }

  // RoPE's positions (as u32) and frequencies in the host region: their word offsets.
  std::pair<uint32_t, uint32_t> RopeTables(std::span<const float> inv_freq, std::span<const int64_t> positions) {
    std::vector<uint32_t> pos(positions.size());
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<uint32_t>(positions[i]);
    return {HostU32(pos.data(), pos.size()), HostU32(inv_freq.data(), inv_freq.size())};
  }

  // Small host arrays go to the arena's host region, written before the submit that reads them.
  // An array written earlier in the same batch (every layer's positions, frequencies) is reused.
  template <typename T>
  uint32_t HostU32(const T* data, size_t n) {
    static_assert(sizeof(T) == 4);
    std::vector<uint32_t> words(n);
    std::memcpy(words.data(), data, n * 4);
    for (const auto& [w, at] : host_written_) {
      if (w == words) return at;
    }
    const uint64_t bytes = std::max<uint64_t>(4, n * 4);
    if (host_used_ + bytes > kHostRegion) Flush();
    const uint64_t off = host_base_ + host_used_;
    host_used_ += (bytes + 15) / 16 * 16;
    g4_gpu_write_buffer(arena_, static_cast<double>(off), data, static_cast<uint32_t>(n * 4));
    if (host_written_.size() < 64) host_written_.push_back({std::move(words), U(off / 4)});
    return U(off / 4);
  }

  uint32_t KernelId(Kernel k, const std::vector<const Weight*>& ws, bool split, int variant) {
    int d[4] = {-1, -1, -1, -1};
    for (size_t i = 0; i < ws.size(); ++i) {
      if (ws[i]->present()) d[i] = static_cast<int>(ws[i]->dtype);
    }
    if (split) d[1] = d[2] = d[0];  // the chunks of W1 share its dtype
    const auto key = std::make_tuple(static_cast<int>(k) * 2 + split, d[0], d[1], d[2], d[3], variant);
    auto it = kernel_ids_.find(key);
    if (it != kernel_ids_.end()) return it->second;
    const uint32_t id = static_cast<uint32_t>(kernel_ids_.size() + 1);
    std::string name = KernelFile(k);
    if (k == Kernel::kMatMulWide) {  // profiled per tile size
      const auto& t = kMatMulTiles[variant & 3];
      name += "_" + std::to_string(t[0]) + "x" + std::to_string(t[1]);
    }
    if (k == Kernel::kBandwidth) {  // stands alone
      const std::string src = WgslSource(name.c_str());
      g4_gpu_register_kernel(id, src.data(), static_cast<uint32_t>(src.size()), name.data(), static_cast<uint32_t>(name.size()));
      return kernel_ids_[key] = id;
    }
    std::string src = WgslSource("prelude");
    for (int i = 0; i < 4; ++i) {
      const std::string tag = "W" + std::to_string(i + 1) + "_LOAD";
      src.replace(src.find(tag), tag.size(), LoadSnippet(i + 1, d[i]));
      const std::string pair = "W" + std::to_string(i + 1) + "_PAIR";
      src.replace(src.find(pair), pair.size(), PairSnippet(i + 1, d[i]));
    }
    const std::string read = split ? "let s = pu(15u); if (i < s) { return ld1(i); } if (i < 2u * s) { return ld2(i - s); } "
                                     "return ld3(i - 2u * s);"
                                   : "return ld1(i);";
    src.replace(src.find("W1_READ"), 7, read);
    // Chunks hold a multiple of 4 elements (see LoadWeights), so no pair straddles two.
    const std::string read_pair = split ? "let s = pu(15u) / 2u; if (j < s) { return lp1(j); } "
                                          "if (j < 2u * s) { return lp2(j - s); } return lp3(j - 2u * s);"
                                        : "return lp1(j);";
    src.replace(src.find("W1P_READ"), 8, read_pair);
    // The wide kernels read W1 (and gate_up_wide W2) 16 bytes at a time.
    const bool wide1 = k == Kernel::kMatVecWide || k == Kernel::kGateUpWide || k == Kernel::kMatMulWide ||
                       k == Kernel::kMatVecRows;
    const bool wide2 = k == Kernel::kGateUpWide;
    const bool vec_arena = wide1 || k == Kernel::kAttentionWide || k == Kernel::kAttentionTiled || k == Kernel::kGateUpQ ||
                           k == Kernel::kSplitSum || (variant & kVecIn);
    ReplaceAll(src, "A_TYPE", vec_arena ? "array<vec4<f32>>" : "array<f32>");
    ReplaceAll(src, "A_ELEMENT", vec_arena ? "A[i >> 2u][i & 3u]" : "A[i]");
    ReplaceAll(src, "A_VEC4", vec_arena ? "return A[i];"
                                        : "return vec4<f32>(A[4u * i], A[4u * i + 1u], A[4u * i + 2u], A[4u * i + 3u]);");
    ReplaceAll(src, "A4_SET", vec_arena ? "A[i] = v;"
                                        : "A[4u * i] = v.x; A[4u * i + 1u] = v.y; A[4u * i + 2u] = v.z; A[4u * i + 3u] = v.w;");
    ReplaceAll(src, "W1_TYPE", wide1 ? "array<vec4<u32>>" : "array<u32>");
    ReplaceAll(src, "W2_TYPE", wide2 ? "array<vec4<u32>>" : "array<u32>");
    ReplaceAll(src, "W1_WORD", wide1 ? "return W1[k >> 2u][k & 3u];" : "return W1[k];");
    ReplaceAll(src, "W2_WORD", wide2 ? "return W2[k >> 2u][k & 3u];" : "return W2[k];");
    const bool wide3 = k == Kernel::kMatVecWide && (variant & kTwo);  // the second matrix
    ReplaceAll(src, "W3_TYPE", wide3 ? "array<vec4<u32>>" : "array<u32>");
    ReplaceAll(src, "W3_WORD", wide3 ? "return W3[k >> 2u][k & 3u];" : "return W3[k];");
    // The matrix-vector kernels share their teams' reduction: subgroup adds where the device
    // has subgroups of one width that divides a team.
    if (k == Kernel::kMatVec || k == Kernel::kMatVecQ || k == Kernel::kGateUp || k == Kernel::kGatherMatVecIds ||
        k == Kernel::kMatVecWide || k == Kernel::kGateUpWide || k == Kernel::kGateUpQ || k == Kernel::kKvNorms ||
        k == Kernel::kMatVecRows) {
      if (subgroup_) {
        src = "enable subgroups;\n" + src + WgslSource("team_subgroup");
        ReplaceAll(src, "SUBGROUP", std::to_string(subgroup_) + "u");
      } else {
        src += WgslSource("team");
      }
    }
    if (k == Kernel::kAttention || k == Kernel::kAttentionWide || k == Kernel::kAttentionTiled) {
      src += WgslSource("attention_span");
    }
    if (k == Kernel::kMatVecWide || k == Kernel::kMatVecQ || k == Kernel::kMatVecRows) src += WgslSource("teams");
    if (k == Kernel::kMatVecWide || k == Kernel::kMatVecQ || k == Kernel::kKvNorms) src += WgslSource("kv_norm");
    if ((wide1 && k != Kernel::kMatMulWide) || k == Kernel::kMatVecQ || k == Kernel::kGateUp || k == Kernel::kGateUpQ) {
      src += WgslSource("residual_add");
      // The join's norm: W4 where W3 is taken (the gate_up kernels' norm, matvec_wide's second matrix).
      const bool w3_taken = k == Kernel::kGateUpWide || k == Kernel::kGateUp || k == Kernel::kGateUpQ ||
                            ((k == Kernel::kMatVecWide || k == Kernel::kMatVecQ) && (variant & kTwo));
      ReplaceAll(src, "PRE_LP", w3_taken ? "lp4" : "lp3");
      ReplaceAll(src, "PREv", (variant & kPre) ? "true" : "false");
    }
    if (k == Kernel::kMatVecQ || k == Kernel::kGateUpQ) src += WgslSource("quant");
    if (k == Kernel::kGateUp || k == Kernel::kGateUpWide || k == Kernel::kGateUpQ) src += WgslSource("gate_up_end");
    src += WgslSource(KernelFile(k));
    // Two 16-bit weights of a word, for the wide kernels.
    ReplaceAll(src, "PAIR16", d[0] == static_cast<int>(DType::kF16)
                                  ? "return unpack2x16float(v);"
                                  : "return vec2<f32>(bitcast<f32>(v << 16u), bitcast<f32>(v & 0xffff0000u));");
    ReplaceAll(src, "VARIANT", std::to_string(variant & 15));
    ReplaceAll(src, "NORMEDv", (variant & kNormed) ? "true" : "false");
    ReplaceAll(src, "GELUv", (variant & kGelu) ? "true" : "false");
    ReplaceAll(src, "TWOv", (variant & kTwo) ? "true" : "false");
    ReplaceAll(src, "KV_NORMSv", (variant & kKvNorms) ? "true" : "false");
    ReplaceAll(src, "TEAMSv", std::to_string(1 << ((variant >> kTeamsShift) & 3)) + "u");
    ReplaceAll(src, "W3_VEC4", wide3 ? "W3[k]" : "vec4<u32>(0u)");
    ReplaceAll(src, "VEC_INv", (variant & kVecIn) ? "true" : "false");
    ReplaceAll(src, "QBITS", d[0] == static_cast<int>(DType::kQ4) ? "4" : "8");
    g4_gpu_register_kernel(id, src.data(), static_cast<uint32_t>(src.size()), name.data(), static_cast<uint32_t>(name.size()));
    kernel_ids_[key] = id;
    return id;
  }

  // One dispatch: threads (64 per workgroup) over `count` items.
  void Record(Kernel k, std::vector<const Weight*> ws, uint64_t count, std::vector<uint32_t> params) {
    Dispatch(k, ws, (count + 63) / 64, params);
  }
  // One dispatch of `groups` workgroups, recorded as: kernel id, four weight buffer ids (0: none;
  // a split weight's chunks take the first three), workgroups x and y, the parameter count, the
  // parameters.
  void Dispatch(Kernel k, const std::vector<const Weight*>& ws, uint64_t groups, const std::vector<uint32_t>& params,
                int variant = 0) {
    if (groups == 0) return;
    if (params.size() > kMaxParams) {  // the bridge's uniform slot holds kMaxParams words
      if (error_.ok()) error_ = Internal(std::string("webgpu: ") + KernelFile(k) + " given too many parameters");
      return;
    }
    auto wb = [&](size_t i) -> const WeightBuffer* {
      return i < ws.size() && ws[i]->present() ? static_cast<const WeightBuffer*>(ws[i]->buffer) : nullptr;
    };
    const bool split = wb(0) && wb(0)->chunks() > 1;
    if ((wb(1) && wb(1)->chunks() > 1) || (wb(2) && wb(2)->chunks() > 1) || (wb(3) && wb(3)->chunks() > 1) ||
        (split && (wb(1) || wb(2)))) {
      // Only a kernel's single weight may span several bindings.
      if (error_.ok()) error_ = Unimplemented(std::string("webgpu: ") + KernelFile(k) + " with a weight larger than a binding");
      return;
    }
    const uint32_t id = KernelId(k, ws, split, variant);
    const uint32_t gx = static_cast<uint32_t>(std::min<uint64_t>(groups, 65535));
    const uint32_t gy = static_cast<uint32_t>((groups + gx - 1) / gx);
    cmds_.push_back(id);
    ++dispatches_;
    for (size_t i = 0; i < 4; ++i) {
      if (split && i < 3) {
        cmds_.push_back(i < wb(0)->chunks() ? wb(0)->id(i) : 0);
      } else {
        cmds_.push_back(wb(i) ? wb(i)->id() : 0);
      }
    }
    cmds_.push_back(gx);
    cmds_.push_back(gy);
    std::vector<uint32_t> p = params;
    if (split) {
      if (p.size() < 16) p.resize(16, 0);
      p[15] = static_cast<uint32_t>(ChunkElements(ws[0]->dtype, wb(0)->chunk_bytes()));
    }
    cmds_.push_back(static_cast<uint32_t>(p.size()));
    cmds_.insert(cmds_.end(), p.begin(), p.end());
    if (++pending_ >= 2048) Flush();
  }
  void Flush() {
    if (!cmds_.empty()) g4_gpu_submit(cmds_.data(), static_cast<uint32_t>(cmds_.size()));
    Handed();
  }
  // Starts a new command list once the last is handed over.
  void Handed() {
    cmds_.clear();
    pending_ = 0;
    host_used_ = 0;
    host_written_.clear();
  }

  uint64_t arena_bytes_;
  uint32_t arena_ = 0;
  uint64_t host_base_ = 0, host_used_ = 0;
  uint64_t split_base_ = 0;
  std::vector<std::pair<std::vector<uint32_t>, uint32_t>> host_written_;  // this batch's host arrays
  std::vector<std::pair<uint64_t, uint64_t>> free_;  // (offset, bytes), sorted
  std::vector<uint32_t> cmds_;
  int pending_ = 0;
  std::vector<uint8_t> staging_;
  std::map<std::tuple<int, int, int, int, int, int>, uint32_t> kernel_ids_;
  Status error_;  // an op that could not be recorded; reported by the next Download
  uint32_t subgroup_ = 0;  // the device's subgroup width when team reductions use it, else 0
  uint64_t dispatches_ = 0;
  uint64_t weight_binding_limit_ = 0;

  friend class ArenaBuffer;
};

ArenaBuffer::~ArenaBuffer() { owner_->Release(offset_, bytes()); }

Result<std::unique_ptr<Backend>> MakeWebGpuBackend(uint64_t arena_bytes, uint64_t weight_binding_limit) {
  auto be = std::make_unique<WebGpuBackend>(arena_bytes, weight_binding_limit);
  G4_RETURN_IF_ERROR(be->Init());
  return std::unique_ptr<Backend>(std::move(be));
}

}  // namespace g4
