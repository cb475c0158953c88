// ops_compare's other ops: norms, RoPE, the K/V cache, elementwise ops, argmax and top-k (ties,
// odd widths, long rows), reads in flight, greedy acceptance and the MoE router and experts.
#include <cmath>
#include <cstdlib>
#include <vector>

#include "tests/wasm/op_harness.h"

namespace g4::ops {

namespace {

// The router, then the experts it picked, over `ms`: the router's index and weights, and the
// experts' output. make(values, count, rows, cols, which) makes the router's projection (which 0),
// the experts' gate and up (1) and their down (2).
template <typename Make>
std::vector<float> MoeRouteAndExperts(Side& s, const MoeShape& ms, Make make) {
  const int rows = ms.rows, hid = ms.hidden, ne = ms.experts, k = ms.top_k, width = ms.expert_width;
  F32 x = s.Floats(Random(rows * hid, 2.0f)), idx = s.Floats(std::vector<float>(rows * k)),
      wts = s.Floats(std::vector<float>(rows * k)), out = s.Floats(std::vector<float>(rows * hid));
  Weight scale = s.MakeWeight(Random(hid), 1, 1, hid, DType::kBF16);
  Weight proj = make(Random(ne * hid), 1, ne, hid, 0);
  Weight pes = s.MakeWeight(Random(ne), 1, 1, ne, DType::kF32);
  Weight gu = make(Random(ne * 2 * width * hid, 0.3f), ne, 2 * width, hid, 1);
  Weight down = make(Random(ne * hid * width, 0.3f), ne, hid, width, 2);
  s.be->MoeRoute(idx, wts, s.Floats(std::vector<float>(rows * ne)), s.Floats(std::vector<float>(rows * hid)), x,
                 scale, proj, pes, ms, 1e-6f);
  F32 act = s.Floats(std::vector<float>(rows * k * width));
  s.be->MoeExperts(out, act, x, gu, down, idx, wts, ms);
  auto r = s.Read(idx, rows * k);
  Append(r, s.Read(wts, rows * k));
  Append(r, s.Read(out, rows * hid));
  return r;
}

}  // namespace

void RunOther(Backend& gpu, Backend& cpu) {
  Case("norm_rope", gpu, cpu, 1e-10, [&](Side& s) {
    F32 x = s.Floats(Random(3 * 4 * 12, 2.0f));
    Weight norm = s.MakeWeight(Random(12), 1, 1, 12, DType::kBF16);
    std::vector<float> inv = {1.0f, 0.3f, 0.01f, 0.0f, 0.0f, 0.0f};
    const std::vector<int64_t> pos = {0, 7, 1234};
    s.be->NormRope(x, 3, 4, norm, 1e-6f, inv, pos);
    return s.Read(x, 3 * 4 * 12);
  });
  Case("norm_rope_wide_heads", gpu, cpu, 1e-10, [&](Side& s) {
    F32 x = s.Floats(Random(2 * 8 * 512));
    Weight norm = s.MakeWeight(Random(512), 1, 1, 512, DType::kBF16);
    std::vector<float> inv(256);
    for (int i = 0; i < 256; ++i) inv[i] = i < 64 ? std::pow(10000.0f, -i / 64.0f) : 0.0f;  // partial rotary
    const std::vector<int64_t> pos = {5, 300};
    s.be->NormRope(x, 2, 8, norm, 1e-6f, inv, pos);
    return s.Read(x, 2 * 8 * 512);
  });
  for (bool weighted : {true, false}) {
    Case(std::string("add_rms_norm") + (weighted ? "" : "_no_weight"), gpu, cpu, 1e-11, [&](Side& s) {
      Weight w = weighted ? s.MakeWeight(Random(77), 1, 1, 77, DType::kBF16) : Weight{};
      F32 x = s.Floats(Random(6 * 77)), y = s.Floats(Random(6 * 77, 3.0f));
      s.be->AddRmsNorm(x, y, w, 6, 77, 1e-6f, 0.7f);
      return s.Read(x, 6 * 77);
    });
  }
  // Rows shorter than a workgroup, and rows of more than eight elements a thread (2,600).
  for (int dim : {77, 2600}) {
    const std::string len = dim == 77 ? "" : "_long";
    Case("add_rms_norm_to" + len, gpu, cpu, 1e-11, [&](Side& s) {
      const int rows = dim == 77 ? 6 : 2, n = rows * dim;
      F32 x = s.Floats(Random(n)), y = s.Floats(Random(n, 3.0f)), out = s.Floats(std::vector<float>(n));
      s.be->AddRmsNormTo(ResidualAdd{x, y, out, s.MakeWeight(Random(dim), 1, 1, dim, DType::kBF16), 1e-6f, 1.3f}, rows, dim);
      auto a = s.Read(out, n), b = s.Read(x, n);  // x_in stays as it was
      a.insert(a.end(), b.begin(), b.end());
      return a;
    });
    for (bool weighted : {true, false}) {
      Case(std::string("rms_norm") + (weighted ? "" : "_no_weight") + len, gpu, cpu, 1e-11, [&](Side& s) {
        const int rows = dim == 77 ? 6 : 2, n = rows * dim;
        Weight w = weighted ? s.MakeWeight(Random(dim), 1, 1, dim, DType::kBF16) : Weight{};
        F32 x = s.Floats(Random(n, 3.0f)), y = s.Floats(std::vector<float>(n));
        s.be->RmsNorm(y, x, w, rows, dim, 1e-6f);
        s.be->RmsNorm(x, x, w, rows, dim, 1e-6f);  // in place too
        auto a = s.Read(y, n), b = s.Read(x, n);
        a.insert(a.end(), b.begin(), b.end());
        return a;
      });
    }
  }
  // Angles of up to 100,000 radians (long contexts): sin and cos of the reduced angle.
  Case("rope", gpu, cpu, 1e-10, [&](Side& s) {
    F32 x = s.Floats(Random(4 * 4 * 12));
    std::vector<float> inv = {1.0f, 0.3f, 0.01f, 0.0f, 0.0f, 0.0f};
    const std::vector<int64_t> pos = {0, 7, 1234, 100000};
    s.be->Rope(x, 4, 4, inv, pos);
    return s.Read(x, 4 * 4 * 12);
  });
  Case("cache_append", gpu, cpu, 0.0, [&](Side& s) {
    F32 kc = s.Floats(Random(4 * 6)), vc = s.Floats(Random(4 * 6)), kn = s.Floats(Random(7 * 6)), vn = s.Floats(Random(7 * 6));
    s.be->CacheAppend(kc, vc, kn, vn, 7, 6, 11, 4);
    auto a = s.Read(kc, 24), b = s.Read(vc, 24);
    a.insert(a.end(), b.begin(), b.end());
    return a;
  });
  // Three layers' caches in one call: other row sizes and capacities (one smaller than the rows).
  Case("cache_appends", gpu, cpu, 0.0, [&](Side& s) {
    const int rows = 3;
    std::vector<CacheAppendLayer> layers;
    for (auto [rs, cap] : {std::pair{6, 4}, {10, 2}, {3, 9}}) {
      layers.push_back({s.Floats(Random(cap * rs)), s.Floats(Random(cap * rs)), s.Floats(Random(rows * rs)),
                        s.Floats(Random(rows * rs)), rs, cap});
    }
    s.be->CacheAppends(layers, rows, 9);
    std::vector<float> all;
    for (const CacheAppendLayer& l : layers) {
      for (F32 c : {l.k_cache, l.v_cache}) {
        auto a = s.Read(c, l.capacity * l.row_size);
        all.insert(all.end(), a.begin(), a.end());
      }
    }
    return all;
  });
  Case("gelu_mul_strided", gpu, cpu, 1e-11, [&](Side& s) {
    F32 g = s.Floats(Random(3 * 13, 3.0f)), u = s.Floats(Random(3 * 40)), o = s.Floats(std::vector<float>(3 * 13));
    s.be->GeluMul(o, g, u.At(5), 3, 13, 40);
    return s.Read(o, 3 * 13);
  });
  // Rows of 21: two whole octs and a short one each; row 1's first oct all zeros.
  Case("round_octs", gpu, cpu, 1e-9, [&](Side& s) {
    auto v = Random(3 * 21, 2.0f);
    for (int i = 21; i < 29; ++i) v[i] = 0.0f;
    F32 x = s.Floats(v);
    s.be->RoundOcts(x, 3, 21);
    return s.Read(x, 3 * 21);
  });
  Case("add_copy_scale_softcap", gpu, cpu, 1e-12, [&](Side& s) {
    F32 a = s.Floats(Random(101, 20.0f)), b = s.Floats(Random(101)), c = s.Floats(std::vector<float>(101));
    s.be->Add(c, a, b, 101);
    s.be->Scale(c, 101, 0.37f);
    s.be->Softcap(a, 101, 30.0f);
    s.be->Copy(b.At(1), a, 100);
    auto r = s.Read(c, 101), t = s.Read(b, 101);
    r.insert(r.end(), t.begin(), t.end());
    return r;
  });
  Case("argmax_ties_and_odd_widths", gpu, cpu, 0.0, [&](Side& s) {
    std::vector<float> v = Random(4 * 1003);
    v[2 * 1003 + 500] = v[2 * 1003 + 7] = 50.0f;  // a tie: the lower index wins
    F32 x = s.Floats(v), ids = s.Floats(std::vector<float>(4));
    s.be->Argmax(ids, x, 4, 1003);
    return s.Read(ids, 4);
  });
  Case("argmax_long_rows", gpu, cpu, 0.0, [&](Side& s) {
    std::vector<float> v = Random(3 * 20001);
    v[5000] = v[19000] = 40.0f;                  // a tie across slices: the lower index wins
    v[20001 + 20000] = 41.0f;                    // the last column
    F32 x = s.Floats(v), ids = s.Floats(std::vector<float>(3));
    s.be->Argmax(ids, x, 3, 20001);
    return s.Read(ids, 3);
  });
  Case("topk_ties", gpu, cpu, 0.0, [&](Side& s) {
    std::vector<float> v = Random(3 * 700);
    v[5] = v[9] = v[600] = 9.0f;               // three equal maxima: columns in order
    v[700 + 3] = v[700 + 699] = -9.0f;         // row of ordinary values
    for (int c = 0; c < 700; ++c) v[1400 + c] = static_cast<float>(c % 7);  // many ties
    F32 x = s.Floats(v), idx = s.Floats(std::vector<float>(3 * 40));
    s.be->TopK(idx, x, 3, 700, 40);
    return s.Read(idx, 3 * 40);
  });
  // Both top-k kernels: rows sorted whole (up to 2,048 columns: 1, odd, a power of two) and
  // picked one at a time (longer), with ties across the row and at the cut.
  for (const auto& [cols, k] : std::vector<std::pair<int, int>>{{1, 1}, {37, 37}, {2047, 32}, {2048, 32}, {2049, 33}}) {
    Case("topk_" + std::to_string(cols) + "_k" + std::to_string(k), gpu, cpu, 0.0, [&, cols = cols, k = k](Side& s) {
      std::vector<float> v = Random(2 * cols);
      for (int c = 0; c < cols; c += 3) v[c] = static_cast<float>(c % 5);  // ties, the largest among them
      v[cols + cols - 1] = 50.0f;                                          // the last column first
      F32 x = s.Floats(v), idx = s.Floats(std::vector<float>(2 * k, -1.0f));  // unwritten: not a column
      s.be->TopK(idx, x, 2, cols, k);
      return s.Read(idx, 2 * k);
    });
  }
  // Top-k with values for sampling: a whole Gemma vocabulary, odd widths, k up to the limit, ties.
  for (const auto& [cols, k] : std::vector<std::pair<int, int>>{{262144, 65}, {1003, 128}, {5000, 1}, {40000, 17}}) {
    Case("topk_values_" + std::to_string(cols) + "_k" + std::to_string(k), gpu, cpu, 0.0, [&, cols = cols, k = k](Side& s) {
      std::vector<float> v = Random(cols);
      v[cols - 1] = v[cols / 3] = v[7] = 30.0f;  // equal maxima, also across slices
      F32 x = s.Floats(v), out = s.Floats(std::vector<float>(2 * k));
      s.be->TopKValues(out, x, cols, k);
      return s.Read(out, 2 * k);
    });
  }
  Case("topk_values_many_ties", gpu, cpu, 0.0, [&](Side& s) {
    std::vector<float> v(9000);
    for (int c = 0; c < 9000; ++c) v[c] = static_cast<float>(c % 5);
    F32 x = s.Floats(v), out = s.Floats(std::vector<float>(2 * 100));
    s.be->TopKValues(out, x, 9000, 100);
    return s.Read(out, 200);
  });
  Case("argmax_keyed_ties", gpu, cpu, 0.0, [&](Side& s) {
    std::vector<float> v = Random(999), keys(999);
    for (int c = 0; c < 999; ++c) keys[c] = static_cast<float>((c * 7919) % 100003);
    v[10] = v[500] = v[900] = 20.0f;  // the lowest key among the three wins, not the lowest column
    F32 x = s.Floats(v), k = s.Floats(keys), id = s.Floats({0.0f});
    s.be->ArgmaxKeyed(id, x, k, 999);
    return s.Read(id, 1);
  });
  // Values that are not finite: argmax (one pass and two), top-k with values and the keyed argmax
  // write -1 for a row holding one; softcap keeps a NaN (as 1 here: the NMSE of NaN is not a number).
  Case("not_finite_flagged", gpu, cpu, 0.0, [&](Side& s) {
    std::vector<float> v = Random(4 * 1003), w = Random(2 * 20001), t = Random(40000), keys(999);
    v[1003 + 5] = NAN;
    v[2 * 1003 + 1002] = INFINITY;
    v[3 * 1003] = -INFINITY;
    w[20001 + 15000] = NAN;
    t[39000] = INFINITY;
    std::vector<float> kv = Random(999), caps = {NAN, -NAN};
    for (int c = 0; c < 999; ++c) keys[c] = static_cast<float>(c);
    kv[400] = NAN;
    F32 x = s.Floats(v), xl = s.Floats(w), xt = s.Floats(t), xk = s.Floats(kv), k = s.Floats(keys), c = s.Floats(caps);
    F32 ids = s.Floats(std::vector<float>(4)), idl = s.Floats(std::vector<float>(2)), top = s.Floats(std::vector<float>(2 * 8));
    F32 id = s.Floats({0.0f});
    s.be->Argmax(ids, x, 4, 1003);
    s.be->Argmax(idl, xl, 2, 20001);
    s.be->TopKValues(top, xt, 40000, 8);
    s.be->ArgmaxKeyed(id, xk, k, 999);
    s.be->Softcap(c, 2, 30.0f);
    std::vector<float> r = s.Read(ids, 4), l = s.Read(idl, 2), p = s.Read(top, 8), q = s.Read(id, 1);
    r.insert(r.end(), l.begin(), l.end());
    r.insert(r.end(), p.begin(), p.end());
    r.insert(r.end(), q.begin(), q.end());
    for (float x : s.Read(c, 2)) r.push_back(std::isnan(x) ? 1.0f : x);
    return r;
  });
  // A started download holds the bytes of the ops recorded before it, not of those after, and
  // reads finish in any order.
  Case("start_download_before_later_ops", gpu, cpu, 1e-12, [&](Side& s) {
    const size_t n = 301;
    F32 x = s.Floats(Random(n));
    s.be->Scale(x, n, 2.0f);
    auto first = s.be->StartDownload(*x.buffer, 0, n * 4);
    s.be->Scale(x, n, -3.0f);
    auto second = s.be->StartDownload(*x.buffer, 4, (n - 1) * 4);
    s.be->Softcap(x, n, 5.0f);
    auto dropped = s.be->StartDownload(*x.buffer, 0, n * 4);  // never finished
    if (!first.ok() || !second.ok() || !dropped.ok()) std::abort();
    std::vector<float> a(n), b(n - 1);
    if (!(*second)->Finish(b.data()).ok() || !(*first)->Finish(a.data()).ok()) std::abort();
    auto now = s.Read(x, n);
    a.insert(a.end(), b.begin(), b.end());
    a.insert(a.end(), now.begin(), now.end());
    return a;
  });
  Case("accept_drafts", gpu, cpu, 0.0, [&](Side& s) {
    std::vector<float> got;
    for (auto [drafts, target] : {std::pair<std::vector<float>, std::vector<float>>{{4, 5, 6}, {4, 5, 6, 7}},
                                  {{4, 5, 6}, {4, 9, 6, 7}}, {{1, 2}, {3, 2, 1}}, {{8}, {8, 8}}}) {
      const int k = static_cast<int>(drafts.size());
      F32 d = s.Floats(drafts), t = s.Floats(target), r = s.Floats({-1.0f, -1.0f});
      s.be->AcceptDrafts(r, d, t, k);
      auto one = s.Read(r, 2);
      got.insert(got.end(), one.begin(), one.end());
    }
    return got;
  });
  // The router's projection and the experts' gate and up in bf16, their down in f16.
  Case("moe_route_and_experts", gpu, cpu, 1e-10, [&](Side& s) {
    return MoeRouteAndExperts(s, MoeShape{3, 24, 6, 2, 7}, [&](const std::vector<float>& v, int n, int r, int c, int which) {
      return s.MakeWeight(v, n, r, c, which == 2 ? DType::kF16 : DType::kBF16);
    });
  });
  // The router alone at the 26B-A4B's 128 experts, top 8, over more rows than matvec.wgsl takes
  // (prefill: the norm, then the tiles).
  Case("moe_route_prefill_BF16", gpu, cpu, 1e-10, [&](Side& s) {
    const int rows = 12, hid = 64, ne = 128, k = 8;
    F32 x = s.Floats(Random(rows * hid, 2.0f)), idx = s.Floats(std::vector<float>(rows * k)),
        wts = s.Floats(std::vector<float>(rows * k));
    Weight scale = s.MakeWeight(Random(hid), 1, 1, hid, DType::kBF16);
    Weight proj = s.MakeWeight(Random(ne * hid), 1, ne, hid, DType::kBF16);
    Weight pes = s.MakeWeight(Random(ne), 1, 1, ne, DType::kF32);
    s.be->MoeRoute(idx, wts, s.Floats(std::vector<float>(rows * ne)), s.Floats(std::vector<float>(rows * hid)), x,
                   scale, proj, pes, MoeShape{rows, hid, ne, k, 1}, 1e-6f);
    auto r = s.Read(idx, rows * k);
    Append(r, s.Read(wts, rows * k));
    return r;
  });
  // The experts alone at the model's ratio (hidden = 4 x width), rows long enough that each lane
  // of a team takes octs in pairs and one more (the model's width: 88 octs), each row's experts set
  // apart so that a mix-up of rows, slots or experts shows.
  for (DType dt : {DType::kBF16, DType::kF32}) {
    Case(std::string("moe_experts_wide_") + DTypeName(dt), gpu, cpu, 1e-10, [&](Side& s) {
      const int rows = 3, hid = 1088, ne = 8, k = 4, width = 272;
      std::vector<float> ids(rows * k);
      for (int r = 0; r < rows; ++r) {
        for (int j = 0; j < k; ++j) ids[r * k + j] = static_cast<float>((r * 7 + j * 5 + 3) % ne);
      }
      F32 x = s.Floats(Random(rows * hid, 2.0f)), idx = s.Floats(ids), wts = s.Floats(Random(rows * k)),
          out = s.Floats(std::vector<float>(rows * hid));
      Weight gu = s.MakeWeight(Random(ne * 2 * width * hid, 0.3f), ne, 2 * width, hid, dt);
      Weight down = s.MakeWeight(Random(ne * hid * width, 0.3f), ne, hid, width, dt);
      F32 act = s.Floats(std::vector<float>(rows * k * width));
      s.be->MoeExperts(out, act, x, gu, down, idx, wts, MoeShape{rows, hid, ne, k, width});
      auto o = s.Read(out, rows * hid);
      Append(o, s.Read(act, rows * k * width));
      return o;
    });
  }
  for (DType dt : {DType::kQ8, DType::kQ4}) {
    const std::string q = DTypeName(dt);
    Case("moe_route_and_experts_" + q, gpu, cpu, 1e-10, [&](Side& s) {
      return MoeRouteAndExperts(s, MoeShape{3, 64, 6, 2, 32}, [&](const std::vector<float>& v, int n, int r, int c, int) {
        return s.MakeQuantized(v, n, r, c, dt);
      });
    });
  }
}

}  // namespace g4::ops
