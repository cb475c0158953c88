// The WebGPU backend's matrix products: up to 8 rows through matvec.wgsl (decode, drafting,
// verification: the matrix read once for all rows, with the input norm, a pending residual join,
// the MLP's gate and up projections, a layer's keys and values, or new keys' and values' norms
// made in the same dispatch), more through matmul.wgsl's tiles (prefill).
#include <algorithm>

#include "backend/webgpu/webgpu_backend.h"
#include "base/quant.h"

namespace g4::webgpu {

namespace {
constexpr int kMaxVecRows = 8;  // rows matvec.wgsl takes; more go through the tiles
bool Is16Bit(DType t) { return t == DType::kBF16 || t == DType::kF16; }
}  // namespace

WebGpuBackend::JoinWay WebGpuBackend::JoinOnTheWay(const ResidualAdd& pre, bool kernel_can, int rows, int64_t dim,
                                                  bool gate_up, bool on_the_way, uint64_t beside_bytes) {
  JoinWay way;
  if (pre.present() && kernel_can && pre.norm.present() && Bindings(pre.norm) == 1 && At(pre.x_in) % 4 == 0 &&
      At(pre.delta) % 4 == 0 && At(pre.x_out) % 4 == 0) {
    const JoinPlace place = JoinPlaceFor(tuning_, rows, dim, gate_up);
    const uint32_t stage = place == JoinPlace::kStaged ? StageFloats(tuning_, rows, dim) : 0;
    way.pre = on_the_way && place == JoinPlace::kOnTheWay;
    way.stage = 4ull * stage + beside_bytes <= tuning_.stage_bytes ? stage : 0;
  }
  if (pre.present() && !way.fused()) AddRmsNormTo(pre, rows, static_cast<int>(dim));
  return way;
}

wgsl::MatvecParams WebGpuBackend::ProductParams(F32 out, int rows, int64_t outs, int64_t ins, float eps) {
  wgsl::MatvecParams p;
  p.dst = At(out);
  p.rows = static_cast<uint32_t>(rows);
  p.outs = static_cast<uint32_t>(outs);
  p.ins = static_cast<uint32_t>(ins);
  p.eps = eps;
  return p;
}

void WebGpuBackend::SetJoin(const JoinWay& way, const ResidualAdd& pre, F32 in, wgsl::MatvecVariant& v,
                            wgsl::MatvecParams& p) {
  v.pre = way.pre;
  v.stage = way.stage;
  p.x = At(way.fused() ? pre.x_in : in);
  if (way.fused()) {
    p.pre_delta = At(pre.delta);
    p.pre_out = At(pre.x_out);
    p.pre_eps = pre.eps;
    p.pre_scale = pre.scale;
  }
}

void WebGpuBackend::JoinThenNorm(const ResidualAdd& pre, F32 normed, F32 in, const Weight& norm, float eps, int rows,
                                 int dim) {
  auto split = [](const Weight& w) { return w.present() && Bindings(w) > 1; };
  if (!pre.present() || split(norm) || split(pre.norm)) {
    if (pre.present()) AddRmsNormTo(pre, rows, dim);
    RmsNorm(normed, in, norm, rows, dim, eps);
    return;
  }
  // One pass a row makes the join and the next norm (many rows: prefill).
  wgsl::RmsNormParams p = JoinParams(pre, rows, dim);
  p.mode = 3;
  p.normed = At(normed);
  p.eps2 = eps;
  p.weighted2 = norm.present();
  Run<wgsl::RmsNorm>({}, p, rows, {&pre.norm, &norm});
}

// Up to 8 rows; with `norm`, the input is rms-normed on the way in; with gelu_mul,
// out = gelu_tanh(product) * gelu_mul[r * mul_stride + o]; a pending join `pre` (whose x_out is
// `in`) is made on the way in where the kernel can, else first.
void WebGpuBackend::MatVec(F32 out, F32 in, const Weight& w, const Weight* norm, float eps, int rows, F32 gelu_mul,
                           int mul_stride, const ResidualAdd& pre, bool words) {
  const bool vec = words || Vec(w, in);
  const JoinWay join = JoinOnTheWay(pre, vec && Bindings(w) == 1, rows, w.cols);
  const bool fused = join.fused();
  wgsl::MatvecVariant v;
  v.rows = RowsVariant(rows);
  v.normed = norm != nullptr;
  v.gelu = gelu_mul.buffer != nullptr;
  v.vec = vec;
  v.q8_in = words;
  wgsl::MatvecParams p = ProductParams(out, rows, w.rows, w.cols, eps);
  SetJoin(join, pre, in, v, p);
  if (v.gelu) {
    p.mul = At(gelu_mul);
    p.mul_stride = mul_stride;
  }
  // Several rows over very many 16-bit or q4 features (verification's LM head), or any rows over
  // 8-bit words: two features a team, each input word serving both.
  const bool paired = Is16Bit(w.dtype) || w.dtype == DType::kQ4;
  v.feats = vec && (rows > 1 || words) && !fused && paired && w.rows >= tuning_.rows_features ? 2 : 1;
  const TeamSplit t = vec ? TeamsPerFeature(tuning_, (w.rows + v.feats - 1) / v.feats, w.cols,
                                          LeastTeamOcts(rows, Is16Bit(w.dtype)))
                          : TeamSplit{static_cast<uint64_t>(w.rows + 7) / 8, 1};
  v.teams = t.teams;
  Run<wgsl::Matvec>(v, p, t.groups, {&w, nullptr, norm, fused ? &pre.norm : nullptr});
}

void WebGpuBackend::Tiled(F32 out, F32 in, const Weight& w, int rows) {
  const bool vec = Vec(w, in);
  const uint64_t n = static_cast<uint64_t>(rows) * w.rows;
  // Parts' results are summed a vec4 at a time: outputs of whole vec4s only. As many parts as the
  // arena's largest free range holds (all that fill the device where it has the room; fewer, not
  // none, where it is short).
  const bool splittable = w.rows % 4 == 0 && At(out) % 4 == 0;
  const uint64_t fit = splittable ? arena_.LargestFree() / (n * 4) : 1;
  const MatmulShape s = MatmulTiles(tuning_, rows, w.rows, w.cols, vec, fit);
  std::optional<uint64_t> scratch;
  if (s.parts > 1) {
    scratch = arena_.Take(s.parts * n * 4);
    if (!scratch) return Fail(Internal("webgpu: a split product's scratch was free and then not"));
  }
  wgsl::MatmulVariant v;
  v.tile = s.tile;
  v.vec = vec;
  v.two_stages = s.two_stages;
  const uint32_t dst = scratch ? static_cast<uint32_t>(*scratch / 4) : At(out);
  Run<wgsl::Matmul>(v, {dst, At(in), static_cast<uint32_t>(rows), static_cast<uint32_t>(w.rows),
                        static_cast<uint32_t>(w.cols), static_cast<uint32_t>(s.kc)},
                    s.groups, {&w});
  if (scratch) {
    RunThreads<wgsl::SplitSum>({}, {At(out), dst, static_cast<uint32_t>(n / 4), static_cast<uint32_t>(s.parts)}, n / 4);
    arena_.Release(*scratch, s.parts * n * 4);  // the GPU runs dispatches in order: free once recorded
  }
}

void WebGpuBackend::MatMul(F32 out, F32 in, const Weight& w, int rows) {
  if (rows <= kMaxVecRows) {
    MatVec(out, in, w, nullptr, 0.0f, rows);
  } else {
    Tiled(out, in, w, rows);
  }
}

// q4 weights over a few rows: the rows made 8-bit words once (q8_pack.wgsl), which every
// workgroup of the product then reads (a product of many outputs, the LM head, would otherwise
// round the input once a workgroup); else as the interface says.
void WebGpuBackend::MatMulRoundedInput(F32 out, F32 in, F32 scratch, const Weight& w, int rows) {
  if (w.dtype != DType::kQ4 || rows > kMaxVecRows || !Vec(w, in) || At(scratch) % 4 != 0) {
    Backend::MatMulRoundedInput(out, in, scratch, w, rows);
    return;
  }
  const uint64_t octs = static_cast<uint64_t>(rows) * static_cast<uint64_t>(w.cols) / 8;
  RunThreads<wgsl::Q8Pack>({}, {At(scratch), At(in), static_cast<uint32_t>(octs)}, octs);
  MatVec(out, scratch, w, nullptr, 0.0f, rows, {}, 0, {}, /*words=*/true);
}

void WebGpuBackend::NormMatMul(F32 out, F32 normed_scratch, F32 in, const Weight& norm, float eps, const Weight& w,
                               int rows, const ResidualAdd& pre) {
  if (rows <= kMaxVecRows && norm.present() && Bindings(w) == 1) {  // the norm folded into the product
    MatVec(out, in, w, &norm, eps, rows, {}, 0, pre);
    return;
  }
  JoinThenNorm(pre, normed_scratch, in, norm, eps, rows, static_cast<int>(w.cols));
  MatMul(out, normed_scratch, w, rows);
}

void WebGpuBackend::NormMatMul2(F32 out_a, F32 out_b, F32 normed_scratch, F32 in, const Weight& norm, float eps,
                                const Weight& wa, const Weight& wb, int rows, const ResidualAdd& pre) {
  if (rows > kMaxVecRows) {  // prefill: the norm (and the join) once for both products
    JoinThenNorm(pre, normed_scratch, in, norm, eps, rows, static_cast<int>(wa.cols));
    MatMul(out_a, normed_scratch, wa, rows);
    MatMul(out_b, normed_scratch, wb, rows);
    return;
  }
  // Two matrices of one type and width, each in one binding: one dispatch, a team a feature of
  // either (a layer's keys and values).
  if (!norm.present() || Bindings(norm) > 1 || Bindings(wa) > 1 || Bindings(wb) > 1 || wa.dtype != wb.dtype ||
      wa.cols != wb.cols || !Vec(wa, in)) {
    Backend::NormMatMul2(out_a, out_b, normed_scratch, in, norm, eps, wa, wb, rows, pre);
    return;
  }
  const JoinWay join = JoinOnTheWay(pre, true, rows, wa.cols);
  const int64_t outs = wa.rows + wb.rows;
  const TeamSplit t = TeamsPerFeature(tuning_, outs, wa.cols, LeastTeamOcts(rows, Is16Bit(wa.dtype)));
  wgsl::MatvecVariant v;
  v.rows = RowsVariant(rows);
  v.teams = t.teams;
  v.feats = 1;
  v.two = true;
  v.normed = true;
  v.vec = true;
  wgsl::MatvecParams p = ProductParams(out_a, rows, outs, wa.cols, eps);
  SetJoin(join, pre, in, v, p);
  p.first = wa.rows;
  p.dst2 = At(out_b);
  Run<wgsl::Matvec>(v, p, t.groups, {&wa, &wb, &norm, join.fused() ? &pre.norm : nullptr});
}

void WebGpuBackend::NormMatMulKvNorms(F32 out, F32 normed_scratch, F32 in, const Weight& norm, float eps,
                                      const Weight& w, int rows, const KvNorms& kv) {
  if (!kv.k_norm.present() || Bindings(kv.k_norm) > 1) {
    Backend::NormMatMulKvNorms(out, normed_scratch, in, norm, eps, w, rows, kv);
    return;
  }
  // The norms of the new keys and values: a workgroup each (row, kv head, keys or values).
  const auto [pp, fp] = RopeTables(kv.inv_freq, kv.positions);
  wgsl::KvNormsParams k;
  k.eps = eps;
  k.kv_groups = static_cast<uint32_t>(rows) * 2 * kv.kv_heads;
  k.kv_k = At(kv.k);
  k.kv_v = At(kv.v);
  k.kv_heads = kv.kv_heads;
  k.kv_half = static_cast<uint32_t>(kv.inv_freq.size());
  k.kv_positions = pp;
  k.kv_freqs = fp;
  if (rows > kMaxVecRows || !norm.present() || Bindings(norm) > 1 || Bindings(w) > 1 || !Vec(w, in)) {
    NormMatMul(out, normed_scratch, in, norm, eps, w, rows, {});
    Run<wgsl::KvNorms>({}, k, k.kv_groups, {nullptr, nullptr, nullptr, &kv.k_norm});
    return;
  }
  // Up to 8 rows: the norms by workgroups of their own in the product's dispatch, ahead of the
  // product's.
  const TeamSplit t = TeamsPerFeature(tuning_, w.rows, w.cols, LeastTeamOcts(rows, Is16Bit(w.dtype)));
  wgsl::MatvecVariant v;
  v.rows = RowsVariant(rows);
  v.teams = t.teams;
  v.feats = 1;
  v.normed = true;
  v.vec = true;
  v.kv_norms = true;
  wgsl::MatvecParams p = ProductParams(out, rows, w.rows, w.cols, eps);
  p.x = At(in);
  p.kv_groups = k.kv_groups;
  p.kv_k = k.kv_k;
  p.kv_v = k.kv_v;
  p.kv_heads = k.kv_heads;
  p.kv_half = k.kv_half;
  p.kv_positions = k.kv_positions;
  p.kv_freqs = k.kv_freqs;
  Run<wgsl::Matvec>(v, p, t.groups + k.kv_groups, {&w, nullptr, &norm, &kv.k_norm});
}

void WebGpuBackend::GateUp(F32 out, F32 up_scratch, F32 normed_scratch, F32 in, const Weight& norm, float eps,
                           const Weight& gate, const Weight& up, int rows, const ResidualAdd& pre) {
  // q4 weights take their input 8-bit (RoundOctsToInt8): made so in the kernel's workgroup
  // memory beside the join's stage where both fit, beside none (the join made apart) where only
  // the 8-bit words do, else apart before the products.
  const bool vec = Vec(gate, in);
  const bool q4 = gate.dtype == DType::kQ4;  // the 8-bit kernel's weights
  if (rows > kMaxVecRows || !norm.present() || Bindings(norm) > 1 || Bindings(gate) > 1 || Bindings(up) > 1 ||
      gate.dtype != up.dtype || gate.rows != up.rows || gate.cols != up.cols ||
      (q4 && (!vec || Q8Octs(tuning_, rows, gate.cols, 0) == 0))) {
    JoinThenNorm(pre, normed_scratch, in, norm, eps, rows, static_cast<int>(gate.cols));
    if (TakesRoundedInput(gate.dtype)) RoundOcts(normed_scratch, rows, static_cast<int>(gate.cols));
    MatMul(out, normed_scratch, gate, rows);
    MatMul(up_scratch, normed_scratch, up, rows);
    GeluMul(out, out, up_scratch, rows, static_cast<int>(gate.rows), static_cast<int>(up.rows));
    return;
  }
  // Decode and verification: the norm, both products of each output feature and their gelu
  // product in one dispatch, a team a feature (a pending join: JoinPlaceFor; with q4 weights
  // staged or made apart, as the input is made 8-bit after it).
  const JoinWay join = JoinOnTheWay(pre, vec, rows, gate.cols, /*gate_up=*/true, /*on_the_way=*/!q4,
                                    /*beside_bytes=*/q4 ? Q8Bytes(rows, gate.cols) : 0);
  wgsl::MatvecVariant v;
  v.q8 = q4 ? Q8Octs(tuning_, rows, gate.cols, join.stage) : 0;
  v.blocks = v.q8 > 0 ? kGateUpQ8Blocks : 0;
  const uint64_t features = 8 * std::max<uint64_t>(v.blocks, 1);  // a workgroup's
  v.rows = RowsVariant(rows);
  v.teams = 1;
  v.feats = 1;
  v.gate_up = true;
  v.normed = true;
  v.vec = vec;
  wgsl::MatvecParams p = ProductParams(out, rows, gate.rows, gate.cols, eps);
  SetJoin(join, pre, in, v, p);
  Run<wgsl::Matvec>(v, p, (gate.rows + features - 1) / features,
                    {&gate, &up, &norm, join.fused() ? &pre.norm : nullptr});
}

void WebGpuBackend::MatMulGeluMul(F32 out, F32 in, const Weight& w, F32 mul, int rows, int mul_stride,
                                  const ResidualAdd& pre) {
  if (rows > kMaxVecRows) {
    Backend::MatMulGeluMul(out, in, w, mul, rows, mul_stride, pre);
    return;
  }
  MatVec(out, in, w, nullptr, 0.0f, rows, mul, mul_stride, pre);
}

void WebGpuBackend::GatherMatVec(F32 out, F32 in, const Weight& w, std::span<const int32_t> rows) {
  GatherMatVecIds(out, in, w, HostIds(rows), static_cast<int>(rows.size()));
}

void WebGpuBackend::GatherMatVecIds(F32 out, F32 in, const Weight& w, F32 rows, int count) {
  wgsl::MatvecVariant v;
  v.rows = 1;
  v.teams = 1;
  v.feats = 1;
  v.vec = Vec(w, in);
  v.row_ids = true;
  wgsl::MatvecParams p = ProductParams(out, 1, count, w.cols, 0.0f);
  p.x = At(in);
  p.ids = At(rows);
  Run<wgsl::Matvec>(v, p, (count + 7) / 8, {&w});
}

}  // namespace g4::webgpu
