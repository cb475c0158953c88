// The WebGPU backend, for the WebAssembly build, in parts: the arena (arena.h), weight upload
// (weight_upload.h), command recording (command_list.h, in the format of wire.h), the shader
// library (shader_library.h), dispatch shapes (dispatch_policy.h) and the ops, which this class
// holds: webgpu_backend.cc (memory, measurement, the small ops), products.cc (matrix products)
// and attention.cc. Every op records dispatches; nothing runs until a read needs it.
#pragma once

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/webgpu/arena.h"
#include "backend/webgpu/command_list.h"
#include "backend/webgpu/dispatch_policy.h"
#include "backend/webgpu/shader_library.h"
#include "backend/webgpu/weight_upload.h"

namespace g4::webgpu {

class WebGpuBackend final : public Backend {
 public:
  WebGpuBackend(uint64_t arena_bytes, uint64_t weight_binding_limit)
      : arena_bytes_(arena_bytes), weight_binding_limit_(weight_binding_limit), cmds_(arena_) {}
  // fill: Tuning::fill, or 0 to measure it (Calibrate).
  Status Init(uint64_t fill);
  std::string Name() const override { return "webgpu"; }
  uint64_t gpu_fill() const override { return tuning_.fill; }
  std::string Describe() const override;

  // --- memory (webgpu_backend.cc)
  Result<std::unique_ptr<Buffer>> Allocate(size_t bytes) override;
  Result<std::unique_ptr<Buffer>> LoadWeights(const Reader& source, uint64_t offset, uint64_t size) override;
  Result<std::unique_ptr<Buffer>> LoadQuantizedWeights(DType type, uint64_t elements, const Reader& values,
                                                       uint64_t values_offset, const Reader& scales,
                                                       uint64_t scales_offset) override;
  Status Upload(Buffer& dst, size_t offset, const void* src, size_t bytes) override;
  Status Download(const Buffer& src, size_t offset, void* dst, size_t bytes) override;
  Result<std::unique_ptr<PendingDownload>> StartDownload(const Buffer& src, size_t offset, size_t bytes) override;
  bool DownloadsOverlap() const override { return true; }

  // --- measurement (webgpu_backend.cc)
  uint64_t dispatches() const override { return cmds_.dispatches(); }
  double HostHandOverMs() const override;
  void Profile(ProfileMode mode) override;
  void LeaveOut(const std::vector<std::string>& prefixes) override;
  Result<std::string> ProfileJson() override;
  Result<double> MeasureReadBandwidth(uint64_t bytes) override;

  // --- small ops (webgpu_backend.cc)
  void Embed(F32 out, const Weight& table, std::span<const int32_t> ids, float scale) override;
  void EmbedIds(F32 out, const Weight& table, F32 ids, int rows, float scale) override;
  void RmsNorm(F32 out, F32 in, const Weight& weight, int rows, int dim, float eps) override;
  void AddRmsNorm(F32 x, F32 in, const Weight& weight, int rows, int dim, float eps, float scale) override;
  void AddRmsNormTo(const ResidualAdd& add, int rows, int dim) override;
  void NormRope(F32 x, int rows, int heads, const Weight& norm, float eps, std::span<const float> inv_freq,
                std::span<const int64_t> positions) override;
  void Rope(F32 x, int rows, int heads, std::span<const float> inv_freq, std::span<const int64_t> positions) override;
  void GeluMul(F32 out, F32 gate, F32 up, int rows, int cols, int up_stride) override;
  void RoundOcts(F32 x, int rows, int dim) override;
  void MatMulRoundedInput(F32 out, F32 in, F32 scratch, const Weight& w, int rows) override;
  void Add(F32 out, F32 a, F32 b, size_t count) override { Elementwise(0, count, out, a, b, 0.0f); }
  void Copy(F32 dst, F32 src, size_t count) override { Elementwise(2, count, dst, src, src, 0.0f); }
  void CopyRow(F32 dst, F32 src, size_t count, F32 index) override { Elementwise(6, count, dst, src, index, 0.0f); }
  void Scale(F32 x, size_t count, float s) override { Elementwise(1, count, x, x, x, s); }
  void Softcap(F32 x, size_t count, float cap) override { Elementwise(3, count, x, x, x, cap); }
  void Argmax(F32 ids, F32 x, int rows, int cols) override;
  void TopK(F32 indices, F32 x, int rows, int cols, int k) override;
  void TopKValues(F32 out, F32 x, int cols, int k) override;
  void ArgmaxKeyed(F32 id, F32 x, F32 keys, int cols) override;
  void AcceptDrafts(F32 result, F32 drafts, F32 target, int k) override;
  void MoeRoute(F32 indices, F32 weights, F32 logits_scratch, F32 normed_scratch, F32 x, const Weight& scale,
                const Weight& proj, const Weight& per_expert_scale, const MoeShape& shape, float eps) override;
  void MoeExperts(F32 out, F32 act_scratch, F32 x, const Weight& gate_up, const Weight& down, F32 indices,
                  F32 weights, const MoeShape& shape) override;

  // --- matrix products (products.cc)
  void MatMul(F32 out, F32 in, const Weight& w, int rows) override;
  void NormMatMul(F32 out, F32 normed_scratch, F32 in, const Weight& norm, float eps, const Weight& w, int rows,
                  const ResidualAdd& pre) override;
  void NormMatMul2(F32 out_a, F32 out_b, F32 normed_scratch, F32 in, const Weight& norm, float eps, const Weight& wa,
                   const Weight& wb, int rows, const ResidualAdd& pre) override;
  void NormMatMulKvNorms(F32 out, F32 normed_scratch, F32 in, const Weight& norm, float eps, const Weight& w, int rows,
                         const KvNorms& kv) override;
  void GateUp(F32 out, F32 up_scratch, F32 normed_scratch, F32 in, const Weight& norm, float eps, const Weight& gate,
              const Weight& up, int rows, const ResidualAdd& pre) override;
  void MatMulGeluMul(F32 out, F32 in, const Weight& w, F32 mul, int rows, int mul_stride,
                     const ResidualAdd& pre) override;
  void GatherMatVec(F32 out, F32 in, const Weight& w, std::span<const int32_t> rows) override;
  void GatherMatVecIds(F32 out, F32 in, const Weight& w, F32 rows, int count) override;

  // --- attention (attention.cc)
  void Attention(F32 out, F32 q, F32 k_new, F32 v_new, F32 k_cache, F32 v_cache, const AttentionShape& s) override;
  void NormRopeAttention(F32 out, F32 q, const Weight& q_norm, float eps, std::span<const float> inv_freq,
                         std::span<const int64_t> positions, F32 k_new, F32 v_new, F32 k_cache, F32 v_cache,
                         const AttentionShape& s) override;
  void CacheAppend(F32 k_cache, F32 v_cache, F32 k_new, F32 v_new, int rows, int row_size, int64_t start,
                   int64_t capacity) override;
  void CacheAppends(std::span<const CacheAppendLayer> layers, int rows, int64_t start) override;

 private:
  // --- recording
  // One dispatch of kernel K over `groups` workgroups, weights bound as W1 .. W4 (absent ones and
  // nulls bind nothing). The variant's weight types (and W1's chunks, when split) are filled in
  // from the weights.
  template <typename K>
  void Run(typename K::Variant v, const typename K::Params& p, uint64_t groups,
           std::initializer_list<const Weight*> weights = {});
  // The same over threads of 64-wide workgroups: one a `count` items.
  template <typename K>
  void RunThreads(typename K::Variant v, const typename K::Params& p, uint64_t count,
                  std::initializer_list<const Weight*> weights = {}) {
    Run<K>(v, p, (count + 63) / 64, weights);
  }
  void Fail(Status s) {
    if (error_.ok()) error_ = std::move(s);
  }
  // Whether kernel `id` is one LeaveOut named (its answer kept by id).
  bool LeftOut(uint32_t id);

  // The most workgroups of calibrate.wgsl the device runs in about the time of one: how many it
  // runs at once, found by doubling and then halving the interval.
  Result<uint64_t> Calibrate();

  // --- helpers
  // The word offset of t in the arena; a null buffer marks an offset into the host region.
  static uint32_t At(F32 t) {
    return t.buffer ? static_cast<uint32_t>(static_cast<const ArenaBuffer*>(t.buffer)->offset() / 4 + t.offset)
                    : static_cast<uint32_t>(t.offset);
  }
  static uint64_t Offset(const Buffer& b) { return static_cast<const ArenaBuffer&>(b).offset(); }
  static size_t Bindings(const Weight& w) { return static_cast<const WeightBuffer*>(w.buffer)->chunks(); }
  // Ids as the floats the id kernels read, in the host region (exact below 2^24).
  F32 HostIds(std::span<const int32_t> ids);
  // RoPE's positions (as u32) and frequencies in the host region: their word offsets.
  // The kernels' place of the position shift in force: 0 for none, else 1 + its arena float.
  uint32_t ShiftPlace() const {
    const F32 w = position_shift();
    return w.buffer ? At(w) + 1 : 0;
  }
  std::pair<uint32_t, uint32_t> RopeTables(std::span<const float> inv_freq, std::span<const int64_t> positions);
  void Elementwise(uint32_t op, size_t count, F32 out, F32 a, F32 b, float s);
  void Fill(F32 out, size_t count, float v) { Elementwise(4, count, out, out, out, v); }
  // A weight's buffer, set to hand the recorded list over before it is destroyed (hand_over_).
  Result<std::unique_ptr<Buffer>> Owned(Result<std::unique_ptr<Buffer>> b);

  // --- products (products.cc)
  // How matvec.wgsl makes a pending residual join (JoinPlaceFor): as it reads its input (PRE),
  // in workgroup memory before its product (STAGE), or not at all (made apart first).
  struct JoinWay {
    bool pre = false;
    uint32_t stage = 0;  // STAGE: the stage's floats
    bool fused() const { return pre || stage > 0; }
  };
  // The way the kernel makes `pre`, over rows of `dim` inputs (kernel_can: it reads them whole
  // vec4s from one binding; gate_up: the product is GateUp's; on_the_way false: the kernel makes
  // its input apart from the product, so it cannot take the join on the way; beside_bytes: the
  // workgroup memory the kernel needs beside a stage, which is staged only where both fit); a
  // join it cannot make is made now.
  JoinWay JoinOnTheWay(const ResidualAdd& pre, bool kernel_can, int rows, int64_t dim, bool gate_up = false,
                       bool on_the_way = true, uint64_t beside_bytes = 0);
  // matvec.wgsl's parameters every product sets: where `out` is, its rows, features and inputs,
  // and the input norm's epsilon.
  static wgsl::MatvecParams ProductParams(F32 out, int rows, int64_t outs, int64_t ins, float eps);
  // The kernel's join variant and parameters for `way`, and its input (`in`, or the residual
  // before the join).
  static void SetJoin(const JoinWay& way, const ResidualAdd& pre, F32 in, wgsl::MatvecVariant& v,
                      wgsl::MatvecParams& p);
  // rms_norm.wgsl's parameters for the join `a` of rows x dim (mode 2: x_out = (x_in +
  // rmsnorm(delta) * norm) * scale).
  static wgsl::RmsNormParams JoinParams(const ResidualAdd& a, int rows, int dim);
  // A pending join, then the next block's input norm of the joined rows.
  void JoinThenNorm(const ResidualAdd& pre, F32 normed, F32 in, const Weight& norm, float eps, int rows, int dim);
  // Whether matvec.wgsl reads w's rows and the input at `in` 16 bytes at a time.
  static bool Vec(const Weight& w, F32 in) { return w.cols % 8 == 0 && At(in) % 4 == 0; }
  // words: `in` is q8_pack.wgsl's 8-bit words of the rows (q4 weights, Vec).
  void MatVec(F32 out, F32 in, const Weight& w, const Weight* norm, float eps, int rows, F32 gelu_mul = {},
              int mul_stride = 0, const ResidualAdd& pre = {}, bool words = false);
  void Tiled(F32 out, F32 in, const Weight& w, int rows);

  // --- attention (attention.cc)
  void Attend(F32 out, F32 q, F32 k_new, F32 v_new, F32 k_cache, F32 v_cache, const AttentionShape& s,
              const Weight* q_norm, float eps, std::span<const float> inv_freq);

  uint64_t arena_bytes_;
  uint64_t weight_binding_limit_;
  Arena arena_;
  CommandList cmds_;
  // What a weight buffer calls before it is destroyed: the recorded list handed over (a weight's
  // buffers may be freed between recording and the read that would hand it over).
  std::shared_ptr<const std::function<void()>> hand_over_ =
      std::make_shared<const std::function<void()>>([this] { cmds_.Submit(); });
  std::optional<ShaderLibrary> lib_;
  Tuning tuning_;
  Status error_;  // an op that could not be recorded; reported by the next read
  std::vector<std::string> left_out_;     // LeaveOut's prefixes
  std::vector<int8_t> left_out_by_id_;    // by id: -1 not yet asked, 0 recorded, 1 left out
  uint32_t subgroup_ = 0;
};

template <typename K>
void WebGpuBackend::Run(typename K::Variant v, const typename K::Params& p, uint64_t groups,
                        std::initializer_list<const Weight*> weights) {
  if (groups == 0) return;
  static_assert(sizeof(p) <= 4 * wire::kMaxParamWords, "a kernel's Params must fit the bridge's uniform slot");
  uint32_t ids[wire::kWeightSlots] = {};
  uint32_t types[wire::kWeightSlots] = {};
  size_t slot = 0, chunks = 1;
  for (const Weight* w : weights) {
    const size_t at = slot++;
    if (!w || !w->present()) continue;
    const auto* b = static_cast<const WeightBuffer*>(w->buffer);
    if (at > 0 && (at < chunks || b->chunks() > 1)) {
      // Only W1 may span several bindings, and then W2 and W3 hold its chunks.
      return Fail(Unimplemented(std::string("webgpu: ") + K::kName + " with a weight larger than a binding"));
    }
    types[at] = static_cast<uint32_t>(w->dtype);
    ids[at] = b->id();
    if (at == 0 && b->chunks() > 1) {  // W1's chunks bound as W1, W2, W3, read as one weight
      chunks = b->chunks();
      for (size_t c = 1; c < chunks; ++c) {
        ids[c] = b->id(c);
        types[c] = types[0];
      }
      if constexpr (requires { v.w1_chunk; }) v.w1_chunk = static_cast<uint32_t>(ChunkElements(w->dtype, b->chunk_bytes()));
    }
  }
  if constexpr (requires { v.w1_dtype; }) {
    v.w1_dtype = types[0];
    v.w2_dtype = types[1];
    v.w3_dtype = types[2];
    v.w4_dtype = types[3];
  }
  Result<uint32_t> id = lib_->Id<K>(v);
  if (!id.ok()) return Fail(id.status());
  if (!left_out_.empty() && LeftOut(*id)) return;
  cmds_.Add(*id, ids, groups, &p, sizeof(p));
}

}  // namespace g4::webgpu
