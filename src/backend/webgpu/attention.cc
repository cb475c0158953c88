// The WebGPU backend's attention and K/V cache ops.
#include <vector>

#include "backend/webgpu/webgpu_backend.h"

namespace g4::webgpu {

namespace {
// Head dims and offsets in whole vec4s: what the kernels that read 16 bytes at a time need.
bool Wide(const AttentionShape& s, std::initializer_list<uint32_t> offsets) {
  bool wide = s.head_dim % 4 == 0;
  for (uint32_t o : offsets) wide = wide && o % 4 == 0;
  return wide;
}
}  // namespace

void WebGpuBackend::Attention(F32 out, F32 q, F32 k_new, F32 v_new, F32 k_cache, F32 v_cache,
                              const AttentionShape& s) {
  Attend(out, q, k_new, v_new, k_cache, v_cache, s, nullptr, 0.0f, {});
}

void WebGpuBackend::NormRopeAttention(F32 out, F32 q, const Weight& q_norm, float eps,
                                      std::span<const float> inv_freq, std::span<const int64_t> positions, F32 k_new,
                                      F32 v_new, F32 k_cache, F32 v_cache, const AttentionShape& s) {
  // Up to 8 rows at consecutive positions (decode, drafting, verification): attention_wide norms
  // and rotates its copy of each query as it loads it. Else the norm and RoPE go first.
  bool consecutive = positions.size() == static_cast<size_t>(s.rows);
  for (size_t r = 0; consecutive && r < positions.size(); ++r) consecutive = positions[r] == s.start + int64_t(r);
  const bool fold = s.rows <= 8 && consecutive && q_norm.present() && Bindings(q_norm) == 1 &&
                    inv_freq.size() * 2 == static_cast<size_t>(s.head_dim) && s.head_dim % 8 == 0 &&
                    Wide(s, {At(out), At(q), At(k_new), At(v_new), At(k_cache), At(v_cache)});
  if (!fold) {
    Backend::NormRopeAttention(out, q, q_norm, eps, inv_freq, positions, k_new, v_new, k_cache, v_cache, s);
    return;
  }
  Attend(out, q, k_new, v_new, k_cache, v_cache, s, &q_norm, eps, inv_freq);
}

// Attention; with q_norm, attention_wide norms and rotates the queries first (up to 8 rows).
void WebGpuBackend::Attend(F32 out, F32 q, F32 k_new, F32 v_new, F32 k_cache, F32 v_cache, const AttentionShape& s,
                           const Weight* q_norm, float eps, std::span<const float> inv_freq) {
  if (s.head_dim > 512) {
    return Fail(Unimplemented("webgpu: attention with head_dim " + std::to_string(s.head_dim) + " > 512"));
  }
  if (s.cached > s.capacity) {  // the kernels find a cached position's ring slot relying on this
    return Fail(InvalidArgument("webgpu: attention over " + std::to_string(s.cached) + " cached positions in a ring of " +
                                std::to_string(s.capacity)));
  }
  // Few (row, head) pairs (decode, drafting) split their positions so that the device has
  // enough workgroups; attention_combine merges the splits.
  const uint64_t pairs = static_cast<uint64_t>(s.rows) * s.heads;
  // A position shift (SetPositionShift) may add up to its most to the positions seen.
  const uint64_t seen = static_cast<uint64_t>(s.cached) + s.rows + static_cast<uint64_t>(position_shift_most());
  const uint64_t splits = AttentionSplits(tuning_, pairs, seen, s.head_dim, Arena::kSplitBytes / 4);
  wgsl::AttentionSpanParams p;
  p.dst = At(out);
  p.q = At(q);
  p.k_new = At(k_new);
  p.v_new = At(v_new);
  p.k_cache = At(k_cache);
  p.v_cache = At(v_cache);
  p.rows = s.rows;
  p.heads = s.heads;
  p.kv_heads = s.kv_heads;
  p.head_dim = s.head_dim;
  p.window = static_cast<uint32_t>(s.window) | (s.past_only ? 0x80000000u : 0u);
  p.start = static_cast<uint32_t>(s.start);
  p.cached = static_cast<uint32_t>(s.cached);
  p.capacity = static_cast<uint32_t>(s.capacity);
  p.splits = static_cast<uint32_t>(splits);
  p.partials = static_cast<uint32_t>(arena_.split_base() / 4);
  p.shift = ShiftPlace();
  if (q_norm) {
    p.freqs = cmds_.HostWords(inv_freq.data(), inv_freq.size());
    p.eps = eps;
  }
  const bool wide = Wide(s, {p.dst, p.q, p.k_new, p.v_new, p.k_cache, p.v_cache});
  if (!q_norm && wide && s.rows > 8 && s.heads % s.kv_heads == 0) {
    // Many rows (prefill): blocks of 16 query vectors that share a kv head, each reading the
    // keys and values once.
    const uint64_t blocks = (static_cast<uint64_t>(s.rows) * (s.heads / s.kv_heads) + 15) / 16;
    p.splits = 1;
    Run<wgsl::AttentionTiled>({}, p, blocks * s.kv_heads);
    return;
  }
  if (wide) {
    wgsl::AttentionWideVariant v;
    v.normed = q_norm != nullptr;
    Run<wgsl::AttentionWide>(v, p, pairs * splits, {q_norm});
  } else {
    Run<wgsl::Attention>({}, p, pairs * splits);
  }
  if (splits > 1) Run<wgsl::AttentionCombine>({}, p, pairs * ((s.head_dim + 63) / 64));
}

void WebGpuBackend::CacheAppend(F32 k_cache, F32 v_cache, F32 k_new, F32 v_new, int rows, int row_size, int64_t start,
                                int64_t capacity) {
  const CacheAppendLayer layer{k_cache, v_cache, k_new, v_new, row_size, capacity};
  CacheAppends(std::span(&layer, 1), rows, start);
}

// One dispatch for every layer: their offsets, row sizes and capacities in a table in the host
// region (six words a layer).
void WebGpuBackend::CacheAppends(std::span<const CacheAppendLayer> layers, int rows, int64_t start) {
  std::vector<uint32_t> table;
  uint32_t widest = 0;
  for (const CacheAppendLayer& l : layers) {
    table.insert(table.end(), {At(l.k_cache), At(l.v_cache), At(l.k_new), At(l.v_new), static_cast<uint32_t>(l.row_size),
                               static_cast<uint32_t>(l.capacity)});
    widest = std::max(widest, static_cast<uint32_t>(l.row_size));
  }
  if (table.empty()) return;
  RunThreads<wgsl::CacheAppend>({}, {cmds_.HostWords(table.data(), table.size()), static_cast<uint32_t>(layers.size()),
                                     static_cast<uint32_t>(rows), static_cast<uint32_t>(start), widest, ShiftPlace()},
                                static_cast<uint64_t>(layers.size()) * rows * widest);
}

}  // namespace g4::webgpu
