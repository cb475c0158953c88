// The backend interface: buffers and the ops the Gemma 4 forward pass is written against.
// Activations are float32; weights stay in their stored dtype (f32, f16, bf16, or the q8/q4
// block types of base/quant.h). Small integer inputs (token ids, positions) are passed as host
// spans. A backend may run ops asynchronously; Download waits for everything issued before it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"
#include "io/reader.h"

namespace g4 {

class Buffer {
 public:
  virtual ~Buffer() = default;
  size_t bytes() const { return bytes_; }

 protected:
  explicit Buffer(size_t bytes) : bytes_(bytes) {}
  size_t bytes_;
};

// A read started by Backend::StartDownload, finished (once) by Finish.
class PendingDownload {
 public:
  virtual ~PendingDownload() = default;
  // Waits for the bytes and copies them to dst (the size StartDownload was given).
  virtual Status Finish(void* dst) = 0;
};

// A stored matrix (rows x cols, row-major) or a stack of `count` of them (MoE experts).
struct Weight {
  const Buffer* buffer = nullptr;
  DType dtype = DType::kBF16;
  int64_t count = 1;
  int64_t rows = 0;  // out features
  int64_t cols = 0;  // in features
  bool present() const { return buffer != nullptr; }
};

// A float32 region: `offset` elements into `buffer`.
struct F32 {
  Buffer* buffer = nullptr;
  size_t offset = 0;
  F32 At(size_t elements) const { return F32{buffer, offset + elements}; }
};

// Attention of `rows` new queries at positions start..start+rows-1 over a key/value cache ring
// (slot = position % capacity, holding positions [start - cached, start)) and the new rows' own
// keys and values. A query at position p sees positions p - window + 1 .. p (all when window = 0).
struct AttentionShape {
  int rows = 0;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  int window = 0;
  int64_t start = 0;
  int64_t cached = 0;
  int64_t capacity = 0;
  // The queries see only positions before their own (the MTP assistant drafting over a target's
  // cache): positions p - window .. p - 1, with no new rows of their own.
  bool past_only = false;
};

// A block's output joining the residual stream, put off until the op that reads the stream next,
// which writes the sum as well as using it: x_out = (x_in + rmsnorm(delta) * norm) * scale
// (rows, dim each). x_out is a buffer region apart from x_in and delta (kernels cannot update in
// place what their other workgroups still read); delta may be overwritten.
struct ResidualAdd {
  F32 x_in, delta, x_out;
  Weight norm;
  float eps = 0.0f;
  float scale = 1.0f;
  bool present() const { return x_out.buffer != nullptr; }
};

struct MoeShape {
  int rows = 0;
  int hidden = 0;
  int experts = 0;
  int top_k = 0;
  int expert_width = 0;  // moe_intermediate_size
};

// The new keys and values NormMatMulKvNorms norms: k, v: (rows, kv_heads, inv_freq.size() * 2).
struct KvNorms {
  F32 k, v;
  int kv_heads = 0;
  Weight k_norm;
  std::span<const float> inv_freq;
  std::span<const int64_t> positions;
};

// One layer's cache and new rows for CacheAppends.
struct CacheAppendLayer {
  F32 k_cache, v_cache;  // (capacity, row_size)
  F32 k_new, v_new;      // (rows, row_size)
  int row_size = 0;
  int64_t capacity = 0;
};

// The fused ops (AddRmsNorm, AddRmsNormTo, MatMulRoundedInput, NormMatMul, NormMatMul2,
// NormMatMulKvNorms, GateUp, NormRope, MatMulGeluMul, CacheAppends)
// default to the ops they fuse (backend.cc); a backend overrides them where one kernel does
// better. NormMatMul, NormMatMul2, GateUp and MatMulGeluMul take an optional `pre`: a ResidualAdd to make
// first, whose x_out is then their input `in`.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string Name() const = 0;
  // The name and what the backend measured or chose of the device, for benchmarks and logs.
  virtual std::string Describe() const { return Name(); }
  // The workgroups that fill a GPU backend's device (they shape its dispatches); 0 elsewhere.
  virtual uint64_t gpu_fill() const { return 0; }

  // --- memory ---
  // A zero-filled buffer for activations or caches.
  virtual Result<std::unique_ptr<Buffer>> Allocate(size_t bytes) = 0;
  // A buffer holding bytes [offset, offset + size) of `source` (weights). The CPU backend maps
  // them in place when the source is memory; others copy in chunks. `source` must outlive it.
  virtual Result<std::unique_ptr<Buffer>> LoadWeights(const Reader& source, uint64_t offset, uint64_t size) = 0;
  // A quantized weight (kQ8, kQ4; base/quant.h) of `elements` values, a multiple of 32, from its
  // stored values and float16 scales (one per group of 32). Each backend keeps its own layout.
  virtual Result<std::unique_ptr<Buffer>> LoadQuantizedWeights(DType type, uint64_t elements, const Reader& values,
                                                               uint64_t values_offset, const Reader& scales,
                                                               uint64_t scales_offset) = 0;
  virtual Status Upload(Buffer& dst, size_t offset_bytes, const void* src, size_t bytes) = 0;
  virtual Status Download(const Buffer& src, size_t offset_bytes, void* dst, size_t bytes) = 0;
  // A Download in two halves: the bytes are those every op recorded before this call leaves, and
  // ops recorded after it (before Finish) do not change them. A backend whose reads overlap its
  // work (DownloadsOverlap) returns at once, so the next step can be recorded while this one
  // runs; the default reads now.
  virtual Result<std::unique_ptr<PendingDownload>> StartDownload(const Buffer& src, size_t offset_bytes,
                                                                 size_t bytes);
  virtual bool DownloadsOverlap() const { return false; }

  // --- positions held on the device ---
  // While a shift is set, every op that takes positions (RoPE's positions, attention's start and
  // its cached positions, the cache's appends) adds to them the integer held as a float at `word`
  // when the op runs, which must be from 0 to `most`: work whose positions follow a result still
  // on the device (a speculative round's accepted count) can be recorded before that result is
  // read. Attention sizes its work for `most` more positions. ClearPositionShift ends it. A
  // backend that wraps another hands the shift on.
  virtual void SetPositionShift(F32 word, int most) {
    shift_ = word;
    shift_most_ = most;
  }
  void ClearPositionShift() { SetPositionShift({}, 0); }
  F32 position_shift() const { return shift_; }  // buffer null: none
  int position_shift_most() const { return shift_most_; }

  // --- ops ---
  // out[r, :] = table[ids[r], :] * scale                            out: (rows, table.cols)
  virtual void Embed(F32 out, const Weight& table, std::span<const int32_t> ids, float scale) = 0;
  // out[r, :] = in[r, :] * (mean(in[r]^2) + eps)^-0.5 * weight      (rows, dim); weight may be absent
  virtual void RmsNorm(F32 out, F32 in, const Weight& weight, int rows, int dim, float eps) = 0;
  // x[r, :] = (x[r, :] + rmsnorm(in[r, :]) * weight) * scale        (rows, dim): a block's output
  // joining the residual stream; `in` may be overwritten
  virtual void AddRmsNorm(F32 x, F32 in, const Weight& weight, int rows, int dim, float eps, float scale);
  // add.x_out = (add.x_in + rmsnorm(add.delta) * add.norm) * add.scale     (rows, dim)
  virtual void AddRmsNormTo(const ResidualAdd& add, int rows, int dim);
  // out[r, o] = sum_i in[r, i] * w[o, i]                             in: (rows, w.cols), out: (rows, w.rows)
  virtual void MatMul(F32 out, F32 in, const Weight& w, int rows) = 0;
  // MatMul of `in` rounded to 8 bits an oct (base/quant.h: RoundOctsToInt8) with `in` left as it
  // is; the op may overwrite scratch (rows, w.cols)
  virtual void MatMulRoundedInput(F32 out, F32 in, F32 scratch, const Weight& w, int rows);
  // out[r, :] = w . (rmsnorm(in[r, :]) * norm): a projection of a normed input   in: (rows, w.cols);
  // normed_scratch: (rows, w.cols), which the op may overwrite
  virtual void NormMatMul(F32 out, F32 normed_scratch, F32 in, const Weight& norm, float eps, const Weight& w,
                          int rows, const ResidualAdd& pre = {});
  // NormMatMul of one input through two matrices of the same width (a layer's keys and values):
  // out_a = wa . (rmsnorm(in) * norm), out_b = wb . (rmsnorm(in) * norm)   in: (rows, wa.cols)
  virtual void NormMatMul2(F32 out_a, F32 out_b, F32 normed_scratch, F32 in, const Weight& norm, float eps,
                           const Weight& wa, const Weight& wb, int rows, const ResidualAdd& pre = {});
  // NormMatMul (the queries), and the attention norms of the layer's new keys and values, in
  // place: k = NormRope(k) with k_norm at positions, v = rmsnorm(v) without a weight, per head
  // (the keys' and values' projections are made before).
  virtual void NormMatMulKvNorms(F32 out, F32 normed_scratch, F32 in, const Weight& norm, float eps, const Weight& w,
                                 int rows, const KvNorms& kv);
  // out[r, o] = gelu_tanh(h[r] . gate[o]) * (h[r] . up[o]) with h = rmsnorm(in) * norm
  // in: (rows, gate.cols), out: (rows, gate.rows); the op may overwrite up_scratch (rows, up.rows)
  // and normed_scratch (rows, gate.cols)
  virtual void GateUp(F32 out, F32 up_scratch, F32 normed_scratch, F32 in, const Weight& norm, float eps,
                      const Weight& gate, const Weight& up, int rows, const ResidualAdd& pre = {});
  // Rotate-half RoPE on x: (rows, heads, inv_freq.size() * 2), row r at positions[r].
  virtual void Rope(F32 x, int rows, int heads, std::span<const float> inv_freq,
                    std::span<const int64_t> positions) = 0;
  // out: (rows, heads * head_dim); q: same; k_new, v_new: (rows, kv_heads * head_dim);
  // k_cache, v_cache: (capacity, kv_heads * head_dim). Scale 1, softmax in float32.
  virtual void Attention(F32 out, F32 q, F32 k_new, F32 v_new, F32 k_cache, F32 v_cache,
                         const AttentionShape& shape) = 0;
  // NormRope of the queries (q_norm, inv_freq, positions) and then Attention over them; q's
  // contents are unspecified afterwards (a backend may norm and rotate a copy as it loads it).
  virtual void NormRopeAttention(F32 out, F32 q, const Weight& q_norm, float eps, std::span<const float> inv_freq,
                                 std::span<const int64_t> positions, F32 k_new, F32 v_new, F32 k_cache, F32 v_cache,
                                 const AttentionShape& shape);
  // Writes rows 0..rows-1 (positions start..) into the cache ring; only the last `capacity` land.
  // k_cache, v_cache: (capacity, row_size); k_new, v_new: (rows, row_size)
  virtual void CacheAppend(F32 k_cache, F32 v_cache, F32 k_new, F32 v_new, int rows, int row_size, int64_t start,
                           int64_t capacity) = 0;
  // CacheAppend for several layers' caches, the same rows and start (the default: one at a time).
  virtual void CacheAppends(std::span<const CacheAppendLayer> layers, int rows, int64_t start);
  // Per head: x[r, h, :] = rope(rmsnorm(x[r, h, :]) * norm) at positions[r], as RmsNorm then Rope
  // (the query and key norms of attention)          x: (rows, heads, inv_freq.size() * 2)
  virtual void NormRope(F32 x, int rows, int heads, const Weight& norm, float eps, std::span<const float> inv_freq,
                        std::span<const int64_t> positions);
  // out[r, c] = gelu_tanh(gate[r, c]) * up[r * up_stride + c]        (rows, cols)
  virtual void GeluMul(F32 out, F32 gate, F32 up, int rows, int cols, int up_stride) = 0;
  // x[r, :] rounded in place to 8 bits an oct (base/quant.h: RoundOctsToInt8)    (rows, dim)
  virtual void RoundOcts(F32 x, int rows, int dim) = 0;
  // out[r, o] = gelu_tanh(in[r] . w[o]) * mul[r * mul_stride + o]: MatMul then GeluMul (the
  // per-layer embedding's gate)                  in: (rows, w.cols), out: (rows, w.rows)
  virtual void MatMulGeluMul(F32 out, F32 in, const Weight& w, F32 mul, int rows, int mul_stride,
                             const ResidualAdd& pre = {});
  // out = a + b                                                      (count)
  virtual void Add(F32 out, F32 a, F32 b, size_t count) = 0;
  // dst = src                                                        (count)
  virtual void Copy(F32 dst, F32 src, size_t count) = 0;
  // dst = src[index * count ..], index the integer held as a float at `index` when the op runs
  // (0 <= index, the row inside src)                                 (count)
  virtual void CopyRow(F32 dst, F32 src, size_t count, F32 index) = 0;
  // ids[r] = the index of the largest x[r, :] (the lowest among equals), as a float     x: (rows, cols)
  virtual void Argmax(F32 ids, F32 x, int rows, int cols) = 0;
  // out[j] = in . w[rows[j]]: a matrix-vector product over chosen rows of w   in: (w.cols)
  virtual void GatherMatVec(F32 out, F32 in, const Weight& w, std::span<const int32_t> rows) = 0;
  // x *= s                                                           (count)
  virtual void Scale(F32 x, size_t count, float s) = 0;
  // x = cap * tanh(x / cap)                                          (count)
  virtual void Softcap(F32 x, size_t count, float cap) = 0;
  // Router: p = softmax(proj(rmsnorm(x) * scale * hidden^-0.5)); top_k of p renormalised to sum 1,
  // times per_expert_scale. x: (rows, hidden); indices, weights: (rows, top_k), indices as floats.
  // logits_scratch: (rows, experts) and normed_scratch: (rows, hidden), overwritten.
  virtual void MoeRoute(F32 indices, F32 weights, F32 logits_scratch, F32 normed_scratch, F32 x,
                        const Weight& scale, const Weight& proj,
                        const Weight& per_expert_scale, const MoeShape& shape, float eps) = 0;
  // out[r] = sum_j weights[r, j] * down_e(h[r, j]), h[r, j] = gelu(gate_e x[r]) * up_e x[r],
  // e = indices[r, j]; gate_up: (experts, 2 * width, hidden), gate rows first; down: (experts,
  // hidden, width). act_scratch: (rows, top_k, width), overwritten with h.
  virtual void MoeExperts(F32 out, F32 act_scratch, F32 x, const Weight& gate_up, const Weight& down, F32 indices,
                          F32 weights, const MoeShape& shape) = 0;

  // --- ops on token ids the backend holds (a speculative round's tokens stay on the device) ---
  // Ids and indices are floats holding integers (exact below 2^24), as Argmax writes them.
  // Argmax, ArgmaxKeyed and TopKValues write kNotFiniteId for a row holding a value that is not
  // finite (a NaN or an infinity): whoever reads the id stops there. Ids outside a table (that one
  // among them) read its row 0 in EmbedIds and GatherMatVecIds.
  static constexpr float kNotFiniteId = -1.0f;
  // out[r, :] = table[ids[r], :] * scale                            out: (rows, table.cols)
  virtual void EmbedIds(F32 out, const Weight& table, F32 ids, int rows, float scale) = 0;
  // out[j] = in . w[rows[j]] for j < count                           in: (w.cols)
  virtual void GatherMatVecIds(F32 out, F32 in, const Weight& w, F32 rows, int count) = 0;
  // indices[r, :] = the columns of the k largest x[r, :], largest first, the lower column among
  // equals                                                           x: (rows, cols), indices: (rows, k)
  virtual void TopK(F32 indices, F32 x, int rows, int cols, int k) = 0;
  // out[0..k) = the columns of the k largest x, largest first, the lower column among equals (as
  // floats); out[k..2k) = their values; 1 <= k <= kMaxTopKValues, k <= cols <= 2^21 (sampling reads
  // these instead of a vocabulary of logits)                         x: (cols), out: (2k)
  static constexpr int kMaxTopKValues = 128;
  virtual void TopKValues(F32 out, F32 x, int cols, int k) = 0;
  // id[0] = keys[j] for the j with the largest x[j], the lowest key among equals      x, keys: (cols)
  virtual void ArgmaxKeyed(F32 id, F32 x, F32 keys, int cols) = 0;
  // Greedy acceptance of k drafts: result[0] = m, the length of the longest prefix of drafts[0..k)
  // equal to target[0..k); result[1] = target[m], the token that follows them.
  virtual void AcceptDrafts(F32 result, F32 drafts, F32 target, int k) = 0;

  // --- measurement (benchmarks) ---
  // The read bandwidth of the memory the weights live in, in GB/s, measured now by streaming
  // `bytes` several times (0 when the backend cannot measure it).
  virtual Result<double> MeasureReadBandwidth(uint64_t bytes) { (void)bytes; return 0.0; }
  // GPU dispatches recorded so far (0 for backends without them).
  virtual uint64_t dispatches() const { return 0; }
  // Milliseconds the host has spent handing recorded work over to the device so far (WebGPU: the
  // bridge's submit and read_start, which copy, encode and submit command lists); the rest of the
  // host's time for that work is the module's own recording. 0 for backends that hand nothing over.
  virtual double HostHandOverMs() const { return 0.0; }
  // Dispatches of the kernels whose profile names (ProfileJson's, "matvec.gate_up.normed.vec")
  // start with one of `prefixes` are not recorded from now on, so that a benchmark can time the
  // work without them (their outputs are then wrong); none: every dispatch is recorded again.
  // Backends without kernels ignore it.
  virtual void LeaveOut(const std::vector<std::string>& prefixes) { (void)prefixes; }
  // GPU timing, where the device offers it: Profile(kKernels or kPasses) starts afresh, kOff
  // stops. ProfileJson() is the versioned profile (see web/gpu_bridge.mjs), "" when there is none.
  enum class ProfileMode {
    kOff = 0,
    kKernels = 1,  // each dispatch timed on its own (a pass each): time per kernel
    kPasses = 2,   // the work timed as it runs (a pass per submit): the GPU's time for all of it
  };
  virtual void Profile(ProfileMode mode) { (void)mode; }
  virtual Result<std::string> ProfileJson() { return std::string(); }

 private:
  F32 shift_;
  int shift_most_ = 0;
};

// The checks every LoadQuantizedWeights makes first: a block type, whole groups, both ranges
// inside their sources.
Status CheckQuantizedSource(DType type, uint64_t elements, const Reader& values, uint64_t values_offset,
                            const Reader& scales, uint64_t scales_offset);

std::unique_ptr<Backend> MakeCpuBackend(int threads = 0);  // 0: all cores
#ifdef __wasi__
// The WebGPU backend (WebAssembly builds, with the host's gpu imports): activations and caches in
// one arena of up to `arena_bytes` (capped by the adapter's binding size); weights larger than
// `weight_binding_limit` (0: the adapter's binding size) are split across bindings. `fill`: the
// workgroups that keep the device busy, which shape the dispatches of work with few rows; 0:
// measured when the backend is made.
Result<std::unique_ptr<Backend>> MakeWebGpuBackend(uint64_t arena_bytes, uint64_t weight_binding_limit = 0,
                                                   uint64_t fill = 0);
// The most bytes one binding of the adapter takes (its maxStorageBufferBindingSize).
double WebGpuMaxBindingBytes();
#endif

}  // namespace g4
