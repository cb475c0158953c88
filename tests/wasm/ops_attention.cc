// ops_compare's attention: windows and past-only queries over a cache ring and new rows, long
// contexts split over several workgroups, the query norm and RoPE folded in, and prefill's tiles.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "tests/wasm/op_harness.h"

namespace g4::ops {

namespace {

// A word holding `shift` for SetPositionShift, or none (no shift set) when shift < 0.
struct Shift {
  float shift = -1.0f;
  void Set(Side& s) const {
    if (shift >= 0.0f) s.be->SetPositionShift(s.Floats({shift}), 2);
  }
  void Clear(Side& s) const {
    if (shift >= 0.0f) s.be->ClearPositionShift();
  }
};

// Attention of `rows` rows (1 where past-only) of 4 heads over 2 KV heads of dim d, at position 9
// after `cached` positions in a ring of `cap`.
std::vector<float> SmallAttention(Side& s, int d, int window, bool past_only, int cached, int cap, Shift shift) {
  const int heads = 4, kvh = 2, rows = past_only ? 1 : 3, start = 9;
  F32 q = s.Floats(Random(rows * heads * d)), kn = s.Floats(Random(rows * kvh * d)), vn = s.Floats(Random(rows * kvh * d));
  F32 kc = s.Floats(Random(cap * kvh * d)), vc = s.Floats(Random(cap * kvh * d));
  F32 out = s.Floats(std::vector<float>(rows * heads * d));
  shift.Set(s);
  AttentionShape sh{rows, heads, kvh, d, window, start, cached, cap, past_only};
  s.be->Attention(out, q, kn, vn, kc, vc, sh);
  shift.Clear(s);
  return s.Read(out, rows * heads * d);
}

// The queries' norm and RoPE folded into attention: `rows` rows of 8 heads over 2 KV heads of
// dim d after `cached` positions in a ring of `cap`; with `partial`, RoPE turns only the first
// half of each head's pairs (the others' frequencies 0).
std::vector<float> NormRopeAttention(Side& s, int rows, int d, int cached, int cap, bool partial, Shift shift) {
  const int heads = 8, kvh = 2, start = cached;
  F32 q = s.Floats(Random(rows * heads * d)), kn = s.Floats(Random(rows * kvh * d)), vn = s.Floats(Random(rows * kvh * d));
  F32 kc = s.Floats(Random(cap * kvh * d)), vc = s.Floats(Random(cap * kvh * d));
  F32 out = s.Floats(std::vector<float>(rows * heads * d));
  Weight norm = s.MakeWeight(Random(d), 1, 1, d, DType::kBF16);
  std::vector<float> inv(d / 2);
  for (int i = 0; i < d / 2; ++i) inv[i] = !partial || i < d / 4 ? std::pow(10000.0f, -2.0f * i / d) : 0.0f;
  std::vector<int64_t> pos(rows);
  for (int r = 0; r < rows; ++r) pos[r] = start + r;
  shift.Set(s);
  AttentionShape sh{rows, heads, kvh, d, 0, start, cached, cap, false};
  s.be->NormRopeAttention(out, q, norm, 1e-6f, inv, pos, kn, vn, kc, vc, sh);
  shift.Clear(s);
  return s.Read(out, rows * heads * d);
}

}  // namespace

void RunAttention(Backend& gpu, Backend& cpu) {
  for (auto [window, past_only] : {std::pair{0, false}, {3, false}, {4, true}, {0, true}}) {
    Case("attention_w" + std::to_string(window) + (past_only ? "_past" : ""), gpu, cpu, 1e-10,
         [&](Side& s) { return SmallAttention(s, 10, window, past_only, 6, 6, {}); });
  }
  // Long contexts (several key tiles) and wide heads sharing one KV head, as in E2B.
  for (auto [rows, d, window] : {std::tuple{1, 256, 0}, {3, 512, 0}, {2, 256, 100}}) {
    Case("attention_long_d" + std::to_string(d) + "_w" + std::to_string(window), gpu, cpu, 1e-10, [&](Side& s) {
      const int heads = 8, kvh = 1, cap = 300, start = 400;
      F32 q = s.Floats(Random(rows * heads * d, 0.1f)), kn = s.Floats(Random(rows * kvh * d)),
          vn = s.Floats(Random(rows * kvh * d));
      F32 kc = s.Floats(Random(cap * kvh * d)), vc = s.Floats(Random(cap * kvh * d));
      F32 out = s.Floats(std::vector<float>(rows * heads * d));
      AttentionShape sh{rows, heads, kvh, d, window, start, cap, cap, false};
      s.be->Attention(out, q, kn, vn, kc, vc, sh);
      return s.Read(out, rows * heads * d);
    });
  }
  // The query norm and RoPE folded into attention (up to 8 rows: attention_wide norms and rotates
  // each query it loads; 9 rows: apart), with splits over a long cache: several key tiles a split
  // (3 rows over 1,000 positions) and more than 16 splits for attention_combine (1 row over 2,200).
  for (auto [rows, d, cached] : {std::tuple{1, 256, 300}, {1, 512, 40}, {1, 8, 5}, {3, 64, 20}, {3, 256, 300},
                                 {9, 64, 20}, {3, 256, 1000}, {1, 64, 2200}}) {
    Case("norm_rope_attention_r" + std::to_string(rows) + "_d" + std::to_string(d) + "_c" + std::to_string(cached),
         gpu, cpu, 1e-10,
         [&](Side& s) { return NormRopeAttention(s, rows, d, cached, std::max(320, cached), true, {}); });
  }
  // Many rows (prefill's tiled kernel): blocks of 16 query vectors over shared kv heads, ragged
  // last blocks, a cache ring before the new rows, windows and past-only queries (the first row
  // of a prompt then sees nothing: with 16 heads to a kv head, a whole block), and blocks that
  // walk many tiles of 64 positions, a window's starting mid-tile.
  struct Tiled { int rows, heads, kvh, d, window, start, cached, cap; bool past_only; };
  for (const Tiled& t : {Tiled{40, 8, 1, 256, 0, 0, 0, 64, false}, {20, 4, 2, 12, 16, 30, 30, 32, false},
                         {12, 2, 1, 8, 0, 5, 5, 8, true}, {70, 8, 1, 512, 0, 100, 100, 128, false},
                         {9, 6, 3, 64, 7, 3, 3, 5, false}, {20, 2, 1, 8, 0, 0, 0, 8, true},
                         {4, 16, 1, 8, 0, 0, 0, 8, true}, {300, 2, 1, 16, 0, 0, 0, 8, false},
                         {150, 4, 2, 64, 200, 60, 60, 64, true}, {96, 8, 1, 256, 0, 420, 420, 512, false}}) {
    Case("attention_tiled_r" + std::to_string(t.rows) + "_d" + std::to_string(t.d) + "_w" + std::to_string(t.window) +
             (t.past_only ? "_past" : ""),
         gpu, cpu, 1e-10, [&](Side& s) {
           const int rows = t.rows, heads = t.heads, kvh = t.kvh, d = t.d;
           F32 q = s.Floats(Random(rows * heads * d, 0.1f)), kn = s.Floats(Random(rows * kvh * d)),
               vn = s.Floats(Random(rows * kvh * d));
           F32 kc = s.Floats(Random(t.cap * kvh * d)), vc = s.Floats(Random(t.cap * kvh * d));
           F32 out = s.Floats(std::vector<float>(rows * heads * d));
           AttentionShape sh{rows, heads, kvh, d, t.window, t.start, t.cached, t.cap, t.past_only};
           s.be->Attention(out, q, kn, vn, kc, vc, sh);
           return s.Read(out, rows * heads * d);
         });
  }
}

// Positions held on the device (SetPositionShift): the same ops at positions shifted by a float
// in a buffer, with the cached positions capped at the ring's capacity; CopyRow's row from a
// float too. A shift of 0 gives the unshifted positions.
void RunPositionShift(Backend& gpu, Backend& cpu) {
  for (float shift : {0.0f, 2.0f}) {
    const std::string at = "_shift" + std::to_string(static_cast<int>(shift));
    // RoPE apart, and the queries' norm and RoPE folded into attention (3 rows, splits over a
    // long cache) or apart (9 rows: the verification of 8 drafts, prefill's tiled kernel),
    // attention's other kernels (a head dim of 10; past-only queries as drafting's), and a ring
    // that the shift fills (cached capped at its capacity).
    Case("rope" + at, gpu, cpu, 1e-10, [&](Side& s) {
      F32 x = s.Floats(Random(3 * 4 * 12)), word = s.Floats({shift});
      s.be->SetPositionShift(word, 2);
      s.be->Rope(x, 3, 4, std::vector<float>{1.0f, 0.3f, 0.01f, 0.0f, 0.0f, 0.0f}, std::vector<int64_t>{5, 6, 7});
      s.be->ClearPositionShift();
      return s.Read(x, 3 * 4 * 12);
    });
    for (auto [rows, d, cached, cap] : {std::tuple{3, 64, 298, 320}, {1, 256, 40, 41}, {3, 256, 300, 302}, {9, 64, 70, 71}}) {
      Case("norm_rope_attention_r" + std::to_string(rows) + "_d" + std::to_string(d) + "_cap" + std::to_string(cap) + at,
           gpu, cpu, 1e-10, [&](Side& s) { return NormRopeAttention(s, rows, d, cached, cap, false, {shift}); });
    }
    for (auto [d, window, past_only] : {std::tuple{10, 0, false}, {10, 3, true}, {64, 5, true}}) {
      Case("attention_d" + std::to_string(d) + "_w" + std::to_string(window) + (past_only ? "_past" : "") + at, gpu,
           cpu, 1e-10, [&](Side& s) { return SmallAttention(s, d, window, past_only, 6, 8, {shift}); });
    }
    Case("cache_appends" + at, gpu, cpu, 0.0, [&](Side& s) {
      const int rows = 3;
      F32 word = s.Floats({shift});
      std::vector<CacheAppendLayer> layers;
      for (auto [rs, cap] : {std::pair{6, 5}, {3, 9}}) {
        layers.push_back({s.Floats(Random(cap * rs)), s.Floats(Random(cap * rs)), s.Floats(Random(rows * rs)),
                          s.Floats(Random(rows * rs)), rs, cap});
      }
      s.be->SetPositionShift(word, 2);
      s.be->CacheAppends(layers, rows, 9);
      s.be->ClearPositionShift();
      std::vector<float> all;
      for (const CacheAppendLayer& l : layers) {
        for (F32 c : {l.k_cache, l.v_cache}) Append(all, s.Read(c, l.capacity * l.row_size));
      }
      return all;
    });
    Case("copy_row" + at, gpu, cpu, 0.0, [&](Side& s) {
      F32 src = s.Floats(Random(3 * 37)), dst = s.Floats(std::vector<float>(37)), word = s.Floats({shift});
      s.be->CopyRow(dst, src, 37, word);
      return s.Read(dst, 37);
    });
  }
}

// More positions said cached than the ring holds: refused with an error that says so (the
// kernels find a cached position's ring slot relying on cached <= capacity), not read past it.
void RunAttentionRefusal(Backend& gpu) {
  const std::string name = "attention_refuses_more_cached_than_its_ring";
  if (!Selected(name)) return;
  const int heads = 2, kvh = 1, d = 64, cap = 32;
  Side s{&gpu, {}, {}};
  F32 q = s.Floats(Random(heads * d)), kn = s.Floats(Random(kvh * d)), vn = s.Floats(Random(kvh * d));
  F32 kc = s.Floats(Random(cap * kvh * d)), vc = s.Floats(Random(cap * kvh * d));
  F32 out = s.Floats(std::vector<float>(heads * d));
  AttentionShape sh{1, heads, kvh, d, 0, 100, cap + 1, cap, false};
  gpu.Attention(out, q, kn, vn, kc, vc, sh);
  std::vector<float> got(heads * d);
  const Status st = gpu.Download(*out.buffer, out.offset * 4, got.data(), got.size() * 4);
  Expect(name, st.code() == StatusCode::kInvalidArgument && st.message().find("ring of 32") != std::string::npos,
         st.ok() ? std::string("no error") : st.message());
}

}  // namespace g4::ops
