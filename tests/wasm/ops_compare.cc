// Every backend op on the WebGPU backend against the CPU reference, both inside the WebAssembly
// module: random inputs of odd sizes, NMSE per op against a per-op bound. Prints one JSON line per
// case and exits non-zero when any case fails (an argument: only the cases whose names contain it;
// --types=BF16,Q4: of the cases over a weight type, only those of these types; --skip=S: not the
// cases whose names contain S).
// Run by tests/js/webgpu_ops.test.mjs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "io/reader.h"
#include "tests/weight_bytes.h"

namespace g4 {
namespace {

std::mt19937 rng(7);

std::vector<float> Random(size_t n, float scale = 1.0f) {
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

// One backend's view of a test case: buffers made from host vectors.
struct Side {
  Backend* be;
  std::vector<std::unique_ptr<Buffer>> owned;
  std::vector<std::unique_ptr<Reader>> readers;
  F32 Floats(const std::vector<float>& v) {
    auto b = be->Allocate(std::max<size_t>(1, v.size()) * 4);
    if (!b.ok()) std::abort();
    if (!v.empty() && !be->Upload(**b, 0, v.data(), v.size() * 4).ok()) std::abort();
    owned.push_back(std::move(b).value());
    return F32{owned.back().get(), 0};
  }
  Weight MakeWeight(const std::vector<float>& v, int64_t count, int64_t rows, int64_t cols, DType dt) {
    const std::vector<uint8_t> bytes = test::WeightBytes(v, dt);
    readers.push_back(MakeMemoryReader(bytes, "w"));
    auto b = be->LoadWeights(*readers.back(), 0, bytes.size());
    if (!b.ok()) std::abort();
    owned.push_back(std::move(b).value());
    return Weight{owned.back().get(), dt, count, rows, cols};
  }
  // Float values quantized as `type` (kQ8, kQ4): the same stored bytes on both backends.
  Weight MakeQuantized(const std::vector<float>& v, int64_t count, int64_t rows, int64_t cols, DType type) {
    const test::Quantized q = test::Quantize(v, type);
    readers.push_back(MakeMemoryReader(q.values, "values"));
    const Reader& values = *readers.back();
    readers.push_back(MakeMemoryReader(q.scales, "scales"));
    auto b = be->LoadQuantizedWeights(type, v.size(), values, 0, *readers.back(), 0);
    if (!b.ok()) {
      std::fprintf(stderr, "%s\n", b.status().message().c_str());
      std::abort();
    }
    owned.push_back(std::move(b).value());
    return Weight{owned.back().get(), type, count, rows, cols};
  }
  std::vector<float> Read(F32 t, size_t n) {
    std::vector<float> out(n);
    if (!be->Download(*t.buffer, t.offset * 4, out.data(), n * 4).ok()) std::abort();
    return out;
  }
};

int failures = 0;
std::string only;  // run only the cases whose names contain this (the first argument), when set
// --types=A,B: of the cases whose names name a weight type (a part between underscores: F32,
// F16, BF16, Q8, Q4), run only those of these types.
std::vector<std::string> types;
std::vector<std::string> skipped;  // --skip=S (any number): not the cases whose names contain S

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  for (size_t start = 0; start <= s.size();) {
    const size_t end = std::min(s.find(sep, start), s.size());
    parts.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

bool Selected(const std::string& name) {
  if (!only.empty() && name.find(only) == std::string::npos) return false;
  for (const std::string& s : skipped) {
    if (name.find(s) != std::string::npos) return false;
  }
  if (types.empty()) return true;
  bool typed = false;
  for (const std::string& part : Split(name, '_')) {
    if (part != "F32" && part != "F16" && part != "BF16" && part != "Q8" && part != "Q4") continue;
    typed = true;
    if (std::find(types.begin(), types.end(), part) != types.end()) return true;
  }
  return !typed;
}

void Check(const std::string& name, const std::vector<float>& got, const std::vector<float>& want, double bound) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (got[i] - want[i]) * static_cast<double>(got[i] - want[i]);
    den += want[i] * static_cast<double>(want[i]);
  }
  const double nmse = den > 0 ? num / den : num;
  const bool ok = nmse <= bound && got.size() == want.size();
  if (!ok) ++failures;
  std::printf("{\"op\": \"%s\", \"nmse\": %.3g, \"bound\": %.3g, \"norm\": %.3g, \"ok\": %s}\n", name.c_str(), nmse, bound, den, ok ? "true" : "false");
  std::fflush(stdout);  // a case a line as it ends, so that a run cut short shows how far it got
}

// Runs `body` on both backends with the same random draws; compares what it returns.
void Case(const std::string& name, Backend& gpu, Backend& cpu, double bound,
          const std::function<std::vector<float>(Side&)>& body) {
  if (!Selected(name)) return;
  const auto state = rng;
  Side g{&gpu, {}, {}}, c{&cpu, {}, {}};
  const auto got = body(g);
  rng = state;
  const auto want = body(c);
  Check(name, got, want, bound);
}

// Weights split across bindings: a backend that allows only 1 KiB per weight binding.
void RunSplit(Backend& gpu, Backend& cpu) {
  for (DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
    const int outs = dt == DType::kF32 ? 33 : 61, ins = 17;  // 2.2 to 2.1 KiB: three chunks
    // Odd and even row lengths (element and pair reads), few rows and many (tiled kernel).
    for (auto [rows, cols] : {std::pair{3, ins}, {3, ins + 1}, {9, ins + 1}}) {
      Case(std::string("split_matmul_") + DTypeName(dt) + "_" + std::to_string(rows) + "x" + std::to_string(cols), gpu,
           cpu, 1e-10, [&](Side& s) {
             Weight w = s.MakeWeight(Random(outs * cols), 1, outs, cols, dt);
             F32 x = s.Floats(Random(rows * cols)), y = s.Floats(std::vector<float>(rows * outs));
             s.be->MatMul(y, x, w, rows);
             return s.Read(y, rows * outs);
           });
    }
    Case(std::string("split_embed_gather_") + DTypeName(dt), gpu, cpu, 1e-10, [&](Side& s) {
      Weight t = s.MakeWeight(Random(outs * ins), 1, outs, ins, dt);
      F32 out = s.Floats(std::vector<float>(4 * ins)), x = s.Floats(Random(ins)), y = s.Floats(std::vector<float>(4));
      const std::vector<int32_t> ids = {0, outs - 1, outs / 2, 3};
      s.be->Embed(out, t, ids, 0.5f);
      s.be->GatherMatVec(y, x, t, ids);
      F32 fids = s.Floats({0.0f, static_cast<float>(outs - 1), static_cast<float>(outs / 2), 3.0f});
      F32 out2 = s.Floats(std::vector<float>(4 * ins)), y2 = s.Floats(std::vector<float>(4));
      s.be->EmbedIds(out2, t, fids, 4, 0.5f);
      s.be->GatherMatVecIds(y2, x, t, fids, 4);
      auto a = s.Read(out, 4 * ins), b = s.Read(y, 4), c = s.Read(out2, 4 * ins), e = s.Read(y2, 4);
      a.insert(a.end(), b.begin(), b.end());
      a.insert(a.end(), c.begin(), c.end());
      a.insert(a.end(), e.begin(), e.end());
      return a;
    });
  }
}

// Quantized weights over three bindings of 1 KiB: 15 (q8) or 28 (q4) superblocks of 64 each.
void RunSplitQuantized(Backend& gpu, Backend& cpu) {
  for (DType dt : {DType::kQ8, DType::kQ4}) {
    const int outs = 61, cols = dt == DType::kQ8 ? 32 : 64;
    for (int rows : {3, 9}) {
      Case(std::string("split_matmul_") + DTypeName(dt) + "_" + std::to_string(rows), gpu, cpu, 1e-10, [&](Side& s) {
        Weight w = s.MakeQuantized(Random(outs * cols), 1, outs, cols, dt);
        F32 x = s.Floats(Random(rows * cols)), y = s.Floats(std::vector<float>(rows * outs));
        s.be->MatMul(y, x, w, rows);
        return s.Read(y, rows * outs);
      });
    }
    Case(std::string("split_embed_gather_") + DTypeName(dt), gpu, cpu, 1e-10, [&](Side& s) {
      Weight t = s.MakeQuantized(Random(outs * cols), 1, outs, cols, dt);
      F32 fids = s.Floats({0.0f, static_cast<float>(outs - 1), static_cast<float>(outs / 2), 3.0f});
      F32 out = s.Floats(std::vector<float>(4 * cols)), x = s.Floats(Random(cols)), y = s.Floats(std::vector<float>(4));
      s.be->EmbedIds(out, t, fids, 4, 0.5f);
      s.be->GatherMatVecIds(y, x, t, fids, 4);
      auto a = s.Read(out, 4 * cols), b = s.Read(y, 4);
      a.insert(a.end(), b.begin(), b.end());
      return a;
    });
  }
}

// q8 and q4 weights (rows of whole groups of 32, some ending mid-superblock) in every kernel
// that reads matrices.
void RunQuantized(Backend& gpu, Backend& cpu) {
  for (DType dt : {DType::kQ8, DType::kQ4}) {
    const std::string q = DTypeName(dt);
    for (auto [rows, outs, ins] : {std::tuple{1, 5, 32}, {2, 19, 96}, {3, 33, 64}, {4, 65, 160}, {5, 70, 96},
                                   {8, 11, 256}, {1, 9, 1056}, {3, 7, 2048}, {9, 40, 64}, {70, 130, 96},
                                   {1, 13, 4096}}) {  // 2, 4 and 8 teams a feature in matvec_q
      Case("matmul_" + q + "_" + std::to_string(rows) + "x" + std::to_string(outs) + "x" + std::to_string(ins), gpu, cpu,
           1e-10, [&](Side& s) {
             Weight w = s.MakeQuantized(Random(outs * ins), 1, outs, ins, dt);
             F32 x = s.Floats(Random(rows * ins)), y = s.Floats(std::vector<float>(rows * outs));
             s.be->MatMul(y, x, w, rows);
             return s.Read(y, rows * outs);
           });
    }
    Case("embed_gather_" + q, gpu, cpu, 1e-10, [&](Side& s) {
      Weight t = s.MakeQuantized(Random(37 * 96), 1, 37, 96, dt);
      const std::vector<int32_t> host = {0, 36, 5, 5, 17};
      F32 ids = s.Floats({0, 36, 5, 5, 17}), x = s.Floats(Random(96));
      F32 a = s.Floats(std::vector<float>(5 * 96)), b = s.Floats(std::vector<float>(5 * 96));
      F32 c = s.Floats(std::vector<float>(5)), d = s.Floats(std::vector<float>(5));
      s.be->Embed(a, t, host, 1.7f);
      s.be->EmbedIds(b, t, ids, 5, 0.5f);
      s.be->GatherMatVec(c, x, t, host);
      s.be->GatherMatVecIds(d, x, t, ids, 5);
      std::vector<float> r;
      for (auto [f, n] : {std::pair{a, 5 * 96}, {b, 5 * 96}, {c, 5}, {d, 5}}) {
        auto part = s.Read(f, n);
        r.insert(r.end(), part.begin(), part.end());
      }
      return r;
    });
    Case("moe_route_and_experts_" + q, gpu, cpu, 1e-10, [&](Side& s) {
      const int rows = 3, hid = 64, ne = 6, k = 2, width = 32;
      F32 x = s.Floats(Random(rows * hid, 2.0f)), idx = s.Floats(std::vector<float>(rows * k)),
          wts = s.Floats(std::vector<float>(rows * k)), out = s.Floats(std::vector<float>(rows * hid));
      Weight scale = s.MakeWeight(Random(hid), 1, 1, hid, DType::kBF16);
      Weight proj = s.MakeQuantized(Random(ne * hid), 1, ne, hid, dt);
      Weight pes = s.MakeWeight(Random(ne), 1, 1, ne, DType::kF32);
      Weight gu = s.MakeQuantized(Random(ne * 2 * width * hid, 0.3f), ne, 2 * width, hid, dt);
      Weight down = s.MakeQuantized(Random(ne * hid * width, 0.3f), ne, hid, width, dt);
      const MoeShape ms{rows, hid, ne, k, width};
      s.be->MoeRoute(idx, wts, x, scale, proj, pes, ms, 1e-6f);
      s.be->MoeExperts(out, x, gu, down, idx, wts, ms);
      auto r = s.Read(idx, rows * k), w = s.Read(wts, rows * k), o = s.Read(out, rows * hid);
      r.insert(r.end(), w.begin(), w.end());
      r.insert(r.end(), o.begin(), o.end());
      return r;
    });
  }
}

void RunAll(Backend& gpu, Backend& cpu) {
  const DType dtypes[] = {DType::kF32, DType::kBF16, DType::kF16};
  for (DType dt : dtypes) {
    for (auto [rows, outs, ins] : {std::tuple{1, 5, 3}, {3, 33, 17}, {5, 100, 129}, {33, 9, 300}, {1, 70, 64},
                                   {2, 19, 36}, {4, 65, 130}, {7, 40, 48}, {8, 11, 22}, {70, 130, 40}, {2, 21, 1544},
                                   {1, 13, 4096}, {3, 9, 2048}}) {  // the last three: 2, 8 and 4 teams a feature
      Case(std::string("matmul_") + DTypeName(dt) + "_" + std::to_string(rows) + "x" + std::to_string(outs) + "x" +
               std::to_string(ins),
           gpu, cpu, 1e-10, [&](Side& s) {
             Weight w = s.MakeWeight(Random(outs * ins), 1, outs, ins, dt);
             F32 x = s.Floats(Random(rows * ins)), y = s.Floats(std::vector<float>(rows * outs));
             s.be->MatMul(y, x, w, rows);
             return s.Read(y, rows * outs);
           });
    }
    // Products over a few rows with very many output features (verification's LM head), an odd
    // count among them: two features a team (matvec_rows), plain, normed and through gelu.
    for (auto [rows, outs, ins] : {std::tuple{3, 65537, 40}, {2, 65536, 64}, {8, 65539, 16}}) {
      if (dt == DType::kF32) break;
      const std::string shape = std::string(DTypeName(dt)) + "_" + std::to_string(rows) + "x" + std::to_string(outs) +
                                "x" + std::to_string(ins);
      Case("matmul_many_features_" + shape, gpu, cpu, 1e-10, [&](Side& s) {
        Weight w = s.MakeWeight(Random(outs * ins), 1, outs, ins, dt);
        F32 x = s.Floats(Random(rows * ins)), y = s.Floats(std::vector<float>(rows * outs));
        s.be->MatMul(y, x, w, rows);
        return s.Read(y, rows * outs);
      });
      Case("norm_matmul_many_features_" + shape, gpu, cpu, 1e-10, [&](Side& s) {
        Weight w = s.MakeWeight(Random(outs * ins), 1, outs, ins, dt), norm = s.MakeWeight(Random(ins), 1, 1, ins, dt);
        F32 x = s.Floats(Random(rows * ins, 3.0f)), y = s.Floats(std::vector<float>(rows * outs)),
            h = s.Floats(std::vector<float>(rows * ins));
        s.be->NormMatMul(y, h, x, norm, 1e-6f, w, rows);
        return s.Read(y, rows * outs);
      });
      Case("matmul_gelu_mul_many_features_" + shape, gpu, cpu, 1e-10, [&](Side& s) {
        Weight w = s.MakeWeight(Random(outs * ins), 1, outs, ins, dt);
        F32 x = s.Floats(Random(rows * ins)), y = s.Floats(std::vector<float>(rows * outs)),
            mul = s.Floats(Random(rows * outs));
        s.be->MatMulGeluMul(y, x, w, mul, rows, outs);
        return s.Read(y, rows * outs);
      });
    }
    // The tiled kernel for 16-bit weights, at each of its tile sizes (64 x 32, 64 x 64, 128 x 64
    // and 128 x 128, as picked for a fill of 264 workgroups), ragged in rows, outputs and inputs;
    // the last two with long rows on few tiles, split in four parts of columns (in the first, the
    // last part ragged) and summed by split_sum.
    for (auto [rows, outs, ins] : {std::tuple{70, 132, 40}, {130, 5620, 48}, {260, 5620, 24}, {260, 11260, 56},
                                   {70, 36, 4104}, {9, 260, 4096}}) {
      if (dt == DType::kF32) break;
      Case(std::string("matmul_tiled_") + DTypeName(dt) + "_" + std::to_string(rows) + "x" + std::to_string(outs) +
               "x" + std::to_string(ins),
           gpu, cpu, 1e-10, [&](Side& s) {
             Weight w = s.MakeWeight(Random(outs * ins), 1, outs, ins, dt);
             F32 x = s.Floats(Random(rows * ins)), y = s.Floats(std::vector<float>(rows * outs));
             s.be->MatMul(y, x, w, rows);
             return s.Read(y, rows * outs);
           });
      if (outs > 6000) continue;
      // GateUp over many rows: the norm, both tiled products and their gelu product.
      Case(std::string("gate_up_tiled_") + DTypeName(dt) + "_" + std::to_string(rows) + "x" + std::to_string(outs) +
               "x" + std::to_string(ins),
           gpu, cpu, 1e-10, [&](Side& s) {
             Weight g = s.MakeWeight(Random(outs * ins), 1, outs, ins, dt);
             Weight u = s.MakeWeight(Random(outs * ins), 1, outs, ins, dt);
             Weight norm = s.MakeWeight(Random(ins), 1, 1, ins, DType::kBF16);
             F32 x = s.Floats(Random(rows * ins, 3.0f)), y = s.Floats(std::vector<float>(rows * outs)),
                 up = s.Floats(std::vector<float>(rows * outs)), h = s.Floats(std::vector<float>(rows * ins));
             s.be->GateUp(y, up, h, x, norm, 1e-6f, g, u, rows);
             return s.Read(y, rows * outs);
           });
    }
    Case(std::string("embed_") + DTypeName(dt), gpu, cpu, 1e-12, [&](Side& s) {
      Weight t = s.MakeWeight(Random(37 * 11), 1, 37, 11, dt);
      F32 out = s.Floats(std::vector<float>(5 * 11));
      const std::vector<int32_t> ids = {0, 36, 5, 5, 17};
      s.be->Embed(out, t, ids, 1.7f);
      return s.Read(out, 5 * 11);
    });
    Case(std::string("embed_ids_gather_ids_") + DTypeName(dt), gpu, cpu, 1e-10, [&](Side& s) {
      Weight t = s.MakeWeight(Random(37 * 70), 1, 37, 70, dt);
      F32 out = s.Floats(std::vector<float>(5 * 70)), ids = s.Floats({0, 36, 5, 5, 17});
      F32 x = s.Floats(Random(70)), y = s.Floats(std::vector<float>(5));
      s.be->EmbedIds(out, t, ids, 5, 1.7f);
      s.be->GatherMatVecIds(y, x, t, ids, 5);
      auto a = s.Read(out, 5 * 70), b = s.Read(y, 5);
      a.insert(a.end(), b.begin(), b.end());
      return a;
    });
    Case(std::string("gather_matvec_") + DTypeName(dt), gpu, cpu, 1e-10, [&](Side& s) {
      Weight w = s.MakeWeight(Random(50 * 19), 1, 50, 19, dt);
      F32 x = s.Floats(Random(19)), y = s.Floats(std::vector<float>(7));
      const std::vector<int32_t> rows = {49, 0, 3, 3, 22, 7, 31};
      s.be->GatherMatVec(y, x, w, rows);
      return s.Read(y, 7);
    });
  }
  // Projections of a normed input (the norm folded into decode-sized products, apart for more
  // rows) and the fused MLP input (norm, gate . h, up . h, gelu product): odd row lengths,
  // f32/f16/bf16 and the block types.
  for (DType dt : {DType::kF32, DType::kBF16, DType::kF16, DType::kQ8, DType::kQ4}) {
    for (auto [rows, ins] : {std::pair{1, 96}, {3, 160}, {5, 64}, {8, 1056}, {9, 96}, {2, 37}, {1, 2048}}) {
      if (IsQuantized(dt) && ins % 32) continue;
      const std::string shape = std::string(DTypeName(dt)) + "_" + std::to_string(rows) + "x" + std::to_string(ins);
      auto make = [&](Side& s, int outs) {
        const std::vector<float> v = Random(outs * ins);
        return IsQuantized(dt) ? s.MakeQuantized(v, 1, outs, ins, dt) : s.MakeWeight(v, 1, outs, ins, dt);
      };
      Case("gate_up_" + shape, gpu, cpu, 1e-10, [&](Side& s) {
        const int outs = 45;
        Weight g = make(s, outs), u = make(s, outs), norm = s.MakeWeight(Random(ins), 1, 1, ins, DType::kBF16);
        F32 x = s.Floats(Random(rows * ins, 3.0f)), y = s.Floats(std::vector<float>(rows * outs)),
            up = s.Floats(std::vector<float>(rows * outs)), h = s.Floats(std::vector<float>(rows * ins));
        s.be->GateUp(y, up, h, x, norm, 1e-6f, g, u, rows);
        return s.Read(y, rows * outs);
      });
      // An input not at a multiple of 4 floats: the general gate_up kernel, not gate_up_q.
      if (IsQuantized(dt) && rows == 3) {
        Case("gate_up_offset_input_" + shape, gpu, cpu, 1e-10, [&](Side& s) {
          const int outs = 21;
          Weight g = make(s, outs), u = make(s, outs), norm = s.MakeWeight(Random(ins), 1, 1, ins, DType::kBF16);
          F32 x = s.Floats(Random(rows * ins + 1, 3.0f)).At(1), y = s.Floats(std::vector<float>(rows * outs)),
              up = s.Floats(std::vector<float>(rows * outs)), h = s.Floats(std::vector<float>(rows * ins));
          s.be->GateUp(y, up, h, x, norm, 1e-6f, g, u, rows);
          return s.Read(y, rows * outs);
        });
      }
      Case("norm_matmul_" + shape, gpu, cpu, 1e-10, [&](Side& s) {
        const int outs = 29;
        Weight w = make(s, outs), norm = s.MakeWeight(Random(ins), 1, 1, ins, DType::kBF16);
        F32 x = s.Floats(Random(rows * ins, 3.0f)), y = s.Floats(std::vector<float>(rows * outs)),
            h = s.Floats(std::vector<float>(rows * ins));
        s.be->NormMatMul(y, h, x, norm, 1e-6f, w, rows);
        return s.Read(y, rows * outs);
      });
      if (rows == 5 || rows == 2 || rows == 8) continue;  // fewer shapes below: the same kernels
      Case("norm_matmul2_" + shape, gpu, cpu, 1e-10, [&](Side& s) {
        const int outs_a = 24, outs_b = 40;
        Weight wa = make(s, outs_a), wb = make(s, outs_b), norm = s.MakeWeight(Random(ins), 1, 1, ins, DType::kBF16);
        F32 x = s.Floats(Random(rows * ins, 3.0f)), ya = s.Floats(std::vector<float>(rows * outs_a)),
            yb = s.Floats(std::vector<float>(rows * outs_b)), h = s.Floats(std::vector<float>(rows * ins));
        s.be->NormMatMul2(ya, yb, h, x, norm, 1e-6f, wa, wb, rows);
        auto a = s.Read(ya, rows * outs_a), b = s.Read(yb, rows * outs_b);
        a.insert(a.end(), b.begin(), b.end());
        return a;
      });
      // The same with a pending residual join (made on the way in for one row, apart for more):
      // the products and the joined residual.
      auto joined = [&](Side& s, const std::function<void(Side&, F32 in, const ResidualAdd&)>& op, F32 y, int outs) {
        F32 x = s.Floats(Random(rows * ins, 3.0f)), delta = s.Floats(Random(rows * ins, 2.0f)),
            x_out = s.Floats(std::vector<float>(rows * ins));
        const ResidualAdd pre{x, delta, x_out, s.MakeWeight(Random(ins), 1, 1, ins, DType::kBF16), 1e-6f, 0.8f};
        op(s, x_out, pre);
        auto a = s.Read(y, rows * outs), b = s.Read(x_out, rows * ins);
        a.insert(a.end(), b.begin(), b.end());
        return a;
      };
      Case("gate_up_joined_" + shape, gpu, cpu, 1e-10, [&](Side& s) {
        const int outs = 48;
        Weight g = make(s, outs), u = make(s, outs), norm = s.MakeWeight(Random(ins), 1, 1, ins, DType::kBF16);
        F32 y = s.Floats(std::vector<float>(rows * outs)), up = s.Floats(std::vector<float>(rows * outs)),
            h = s.Floats(std::vector<float>(rows * ins));
        return joined(s, [&](Side& s, F32 in, const ResidualAdd& pre) {
          s.be->GateUp(y, up, h, in, norm, 1e-6f, g, u, rows, pre);
        }, y, outs);
      });
      Case("norm_matmul_joined_" + shape, gpu, cpu, 1e-10, [&](Side& s) {
        const int outs = 24;
        Weight w = make(s, outs), norm = s.MakeWeight(Random(ins), 1, 1, ins, DType::kF16);
        F32 y = s.Floats(std::vector<float>(rows * outs)), h = s.Floats(std::vector<float>(rows * ins));
        return joined(s, [&](Side& s, F32 in, const ResidualAdd& pre) {
          s.be->NormMatMul(y, h, in, norm, 1e-6f, w, rows, pre);
        }, y, outs);
      });
      Case("matmul_gelu_mul_joined_" + shape, gpu, cpu, 1e-10, [&](Side& s) {
        const int outs = 16;
        Weight w = make(s, outs);
        F32 y = s.Floats(std::vector<float>(rows * outs)), mul = s.Floats(Random(rows * outs));
        return joined(s, [&](Side& s, F32 in, const ResidualAdd& pre) {
          s.be->MatMulGeluMul(y, in, w, mul, rows, outs, pre);
        }, y, outs);
      });
    }
  }
  // A layer's attention inputs as the model makes them: the key and value projections making the
  // pending join (one row: on the way in; 3 and 9 rows: apart), then the query projection with the
  // new keys' and values' norms (up to 8 rows of 16-bit or block weights: workgroups of their own
  // in its dispatch; 9 rows, and f32 weights: apart). The products, the joined residual and the
  // normed keys and values.
  for (DType dt : {DType::kBF16, DType::kF32, DType::kQ8, DType::kQ4}) {
    for (auto [rows, kvh, hd] : {std::tuple{1, 1, 256}, {3, 2, 8}, {9, 2, 8}, {1, 2, 64}}) {
      const std::string shape = std::string(DTypeName(dt)) + "_" + std::to_string(rows) + "x" + std::to_string(kvh) +
                                "x" + std::to_string(hd);
      Case("attention_inputs_" + shape, gpu, cpu, 1e-10, [&](Side& s) {
        const int ins = 96, outs = 40, kv = kvh * hd;
        auto make = [&](int n) {
          const std::vector<float> v = Random(n * ins);
          return IsQuantized(dt) ? s.MakeQuantized(v, 1, n, ins, dt) : s.MakeWeight(v, 1, n, ins, dt);
        };
        Weight wk = make(kv), wv = make(kv), wq = make(outs);
        Weight norm = s.MakeWeight(Random(ins), 1, 1, ins, DType::kBF16),
               k_norm = s.MakeWeight(Random(hd), 1, 1, hd, DType::kBF16);
        F32 x = s.Floats(Random(rows * ins, 3.0f)), delta = s.Floats(Random(rows * ins, 2.0f)),
            x_out = s.Floats(std::vector<float>(rows * ins)), h = s.Floats(std::vector<float>(rows * ins));
        F32 k = s.Floats(std::vector<float>(rows * kv)), v = s.Floats(std::vector<float>(rows * kv)),
            q = s.Floats(std::vector<float>(rows * outs));
        std::vector<float> inv(hd / 2);
        for (int i = 0; i < hd / 2; ++i) inv[i] = std::pow(10000.0f, -2.0f * i / hd);
        std::vector<int64_t> pos(rows);
        for (int r = 0; r < rows; ++r) pos[r] = 700 + 3 * r;
        const ResidualAdd pre{x, delta, x_out, s.MakeWeight(Random(ins), 1, 1, ins, DType::kBF16), 1e-6f, 0.8f};
        s.be->NormMatMul2(k, v, h, x_out, norm, 1e-6f, wk, wv, rows, pre);
        s.be->NormMatMulKvNorms(q, h, x_out, norm, 1e-6f, wq, rows, KvNorms{k, v, kvh, k_norm, inv, pos});
        std::vector<float> out = s.Read(q, rows * outs);
        for (F32 t : {k, v}) {
          const std::vector<float> b = s.Read(t, rows * kv);
          out.insert(out.end(), b.begin(), b.end());
        }
        const std::vector<float> b = s.Read(x_out, rows * ins);
        out.insert(out.end(), b.begin(), b.end());
        return out;
      });
    }
  }
  // The per-layer embedding's gate: a product through gelu times a strided second input.
  for (DType dt : {DType::kF32, DType::kBF16, DType::kF16, DType::kQ8, DType::kQ4}) {
    for (auto [rows, ins] : {std::pair{1, 1536}, {3, 64}, {9, 96}}) {
      const int outs = 37, stride = 3 * outs;
      Case(std::string("matmul_gelu_mul_") + DTypeName(dt) + "_" + std::to_string(rows) + "x" + std::to_string(ins), gpu,
           cpu, 1e-10, [&](Side& s) {
             const std::vector<float> v = Random(outs * ins);
             Weight w = IsQuantized(dt) ? s.MakeQuantized(v, 1, outs, ins, dt) : s.MakeWeight(v, 1, outs, ins, dt);
             F32 x = s.Floats(Random(rows * ins)), mul = s.Floats(Random(rows * stride)),
                 y = s.Floats(std::vector<float>(rows * outs));
             s.be->MatMulGeluMul(y, x, w, mul.At(outs), rows, stride);
             return s.Read(y, rows * outs);
           });
    }
  }
  // The keys' and values' norms with an f32 norm weight and an odd head dim (with the queries'
  // product of 16-bit weights: one dispatch for up to 8 rows; 9 rows: a kv_norms dispatch).
  for (int rows : {1, 3, 9}) {
    Case("kv_norms_" + std::to_string(rows), gpu, cpu, 1e-10, [&](Side& s) {
      const int kvh = 2, d = 12, ins = 16, outs = 8;
      F32 k = s.Floats(Random(rows * kvh * d, 2.0f)), v = s.Floats(Random(rows * kvh * d, 2.0f)),
          x = s.Floats(Random(rows * ins)), q = s.Floats(std::vector<float>(rows * outs)),
          h = s.Floats(std::vector<float>(rows * ins));
      Weight w = s.MakeWeight(Random(outs * ins), 1, outs, ins, DType::kBF16),
             norm = s.MakeWeight(Random(ins), 1, 1, ins, DType::kBF16), kn = s.MakeWeight(Random(d), 1, 1, d, DType::kF32);
      const std::vector<float> inv = {1.0f, 0.3f, 0.01f, 0.0f, 0.0f, 0.0f};
      std::vector<int64_t> pos(rows);
      for (int r = 0; r < rows; ++r) pos[r] = r == 2 ? 1234 : 5 + 2 * r;
      s.be->NormMatMulKvNorms(q, h, x, norm, 1e-6f, w, rows, KvNorms{k, v, kvh, kn, inv, pos});
      auto a = s.Read(q, rows * outs), b = s.Read(k, rows * kvh * d), c = s.Read(v, rows * kvh * d);
      a.insert(a.end(), b.begin(), b.end());
      a.insert(a.end(), c.begin(), c.end());
      return a;
    });
  }
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
  Case("add_rms_norm_to", gpu, cpu, 1e-11, [&](Side& s) {
    F32 x = s.Floats(Random(6 * 77)), y = s.Floats(Random(6 * 77, 3.0f)), out = s.Floats(std::vector<float>(6 * 77));
    s.be->AddRmsNormTo(ResidualAdd{x, y, out, s.MakeWeight(Random(77), 1, 1, 77, DType::kBF16), 1e-6f, 1.3f}, 6, 77);
    auto a = s.Read(out, 6 * 77), b = s.Read(x, 6 * 77);  // x_in stays as it was
    a.insert(a.end(), b.begin(), b.end());
    return a;
  });
  for (bool weighted : {true, false}) {
    Case(std::string("rms_norm") + (weighted ? "" : "_no_weight"), gpu, cpu, 1e-11, [&](Side& s) {
      Weight w = weighted ? s.MakeWeight(Random(77), 1, 1, 77, DType::kBF16) : Weight{};
      F32 x = s.Floats(Random(6 * 77, 3.0f)), y = s.Floats(std::vector<float>(6 * 77));
      s.be->RmsNorm(y, x, w, 6, 77, 1e-6f);
      s.be->RmsNorm(x, x, w, 6, 77, 1e-6f);  // in place too
      auto a = s.Read(y, 6 * 77), b = s.Read(x, 6 * 77);
      a.insert(a.end(), b.begin(), b.end());
      return a;
    });
  }
  // Angles of up to 100,000 radians (long contexts): sin and cos of the reduced angle.
  Case("rope", gpu, cpu, 1e-10, [&](Side& s) {
    F32 x = s.Floats(Random(4 * 4 * 12));
    std::vector<float> inv = {1.0f, 0.3f, 0.01f, 0.0f, 0.0f, 0.0f};
    const std::vector<int64_t> pos = {0, 7, 1234, 100000};
    s.be->Rope(x, 4, 4, inv, pos);
    return s.Read(x, 4 * 4 * 12);
  });
  for (auto [window, past_only] : {std::pair{0, false}, {3, false}, {4, true}, {0, true}}) {
    Case("attention_w" + std::to_string(window) + (past_only ? "_past" : ""), gpu, cpu, 1e-10, [&](Side& s) {
      const int heads = 4, kvh = 2, d = 10, rows = past_only ? 1 : 3, cap = 6, start = 9;
      F32 q = s.Floats(Random(rows * heads * d)), kn = s.Floats(Random(rows * kvh * d)), vn = s.Floats(Random(rows * kvh * d));
      F32 kc = s.Floats(Random(cap * kvh * d)), vc = s.Floats(Random(cap * kvh * d));
      F32 out = s.Floats(std::vector<float>(rows * heads * d));
      AttentionShape sh{rows, heads, kvh, d, window, start, cap, cap, past_only};
      s.be->Attention(out, q, kn, vn, kc, vc, sh);
      return s.Read(out, rows * heads * d);
    });
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
  // each query it loads; 9 rows: apart), with splits over a long cache.
  for (auto [rows, d, cached] :
       {std::tuple{1, 256, 300}, {1, 512, 40}, {1, 8, 5}, {3, 64, 20}, {3, 256, 300}, {9, 64, 20}}) {
    Case("norm_rope_attention_r" + std::to_string(rows) + "_d" + std::to_string(d), gpu, cpu, 1e-10, [&](Side& s) {
      const int heads = 8, kvh = 2, cap = 320, start = cached;
      F32 q = s.Floats(Random(rows * heads * d)), kn = s.Floats(Random(rows * kvh * d)),
          vn = s.Floats(Random(rows * kvh * d));
      F32 kc = s.Floats(Random(cap * kvh * d)), vc = s.Floats(Random(cap * kvh * d));
      F32 out = s.Floats(std::vector<float>(rows * heads * d));
      Weight norm = s.MakeWeight(Random(d), 1, 1, d, DType::kBF16);
      std::vector<float> inv(d / 2);
      for (int i = 0; i < d / 2; ++i) inv[i] = i < d / 4 ? std::pow(10000.0f, -2.0f * i / d) : 0.0f;
      std::vector<int64_t> pos(rows);
      for (int r = 0; r < rows; ++r) pos[r] = start + r;
      AttentionShape sh{rows, heads, kvh, d, 0, start, cached, cap, false};
      s.be->NormRopeAttention(out, q, norm, 1e-6f, inv, pos, kn, vn, kc, vc, sh);
      return s.Read(out, rows * heads * d);
    });
  }
  // Many rows (prefill's tiled kernel): blocks of 16 query vectors over shared kv heads, ragged
  // last blocks, a cache ring before the new rows, windows and past-only queries.
  struct Tiled { int rows, heads, kvh, d, window, start, cached, cap; bool past_only; };
  for (const Tiled& t : {Tiled{40, 8, 1, 256, 0, 0, 0, 64, false}, {20, 4, 2, 12, 16, 30, 30, 32, false},
                         {12, 2, 1, 8, 0, 5, 5, 8, true}, {70, 8, 1, 512, 0, 100, 100, 128, false},
                         {9, 6, 3, 64, 7, 3, 3, 5, false}}) {
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
  Case("moe_route_and_experts", gpu, cpu, 1e-10, [&](Side& s) {
    const int rows = 3, hid = 24, ne = 6, k = 2, width = 7;
    F32 x = s.Floats(Random(rows * hid, 2.0f)), idx = s.Floats(std::vector<float>(rows * k)),
        wts = s.Floats(std::vector<float>(rows * k)), out = s.Floats(std::vector<float>(rows * hid));
    Weight scale = s.MakeWeight(Random(hid), 1, 1, hid, DType::kBF16);
    Weight proj = s.MakeWeight(Random(ne * hid), 1, ne, hid, DType::kBF16);
    Weight pes = s.MakeWeight(Random(ne), 1, 1, ne, DType::kF32);
    Weight gu = s.MakeWeight(Random(ne * 2 * width * hid, 0.3f), ne, 2 * width, hid, DType::kBF16);
    Weight down = s.MakeWeight(Random(ne * hid * width, 0.3f), ne, hid, width, DType::kF16);
    const MoeShape ms{rows, hid, ne, k, width};
    s.be->MoeRoute(idx, wts, x, scale, proj, pes, ms, 1e-6f);
    s.be->MoeExperts(out, x, gu, down, idx, wts, ms);
    auto r = s.Read(idx, rows * k), w = s.Read(wts, rows * k), o = s.Read(out, rows * hid);
    r.insert(r.end(), w.begin(), w.end());
    r.insert(r.end(), o.begin(), o.end());
    return r;
  });
}

}  // namespace
}  // namespace g4

extern "C" __attribute__((export_name("g4_main"))) int g4_main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--types=", 0) == 0) {
      g4::types = g4::Split(arg.substr(8), ',');
    } else if (arg.rfind("--skip=", 0) == 0) {
      g4::skipped.push_back(arg.substr(7));
    } else {
      g4::only = arg;
    }
  }
  auto gpu = g4::MakeWebGpuBackend(64ull << 20);
  if (!gpu.ok()) {
    std::fprintf(stderr, "%s\n", gpu.status().message().c_str());
    return 1;
  }
  auto cpu = g4::MakeCpuBackend();
  g4::RunAll(**gpu, *cpu);
  g4::RunQuantized(**gpu, *cpu);
  auto split = g4::MakeWebGpuBackend(16ull << 20, 1024);
  if (!split.ok()) {
    std::fprintf(stderr, "%s\n", split.status().message().c_str());
    return 1;
  }
  g4::RunSplit(**split, *cpu);
  g4::RunSplitQuantized(**split, *cpu);
  std::printf("{\"failures\": %d}\n", g4::failures);
  return g4::failures ? 1 : 0;
}
extern "C" __attribute__((export_name("g4_flush"))) void g4_flush() {
  std::fflush(stdout);
  std::fflush(stderr);
}
