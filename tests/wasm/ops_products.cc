// ops_compare's matrix products. The cases cover every weight type in every form of the product
// (plain, normed, the MLP's gate and up, two matrices with a pending join, the keys' and values'
// norms in the queries' dispatch, gelu times a second input, rows by id), each rows variant of
// matvec.wgsl (1 to 4, and 8 for 5 to 8), 1 to 8 teams a feature, two features a team, inputs
// read 16 bytes at a time and not (odd widths, odd offsets), and matmul.wgsl's tiles, split
// columns and types for more rows: not all their combinations, but every pair of a weight type
// with a form, and of a form with a rows variant, that the kernels treat apart. Names say the
// weight type between underscores (ops_compare --types=).
#include <algorithm>
#include <cmath>
#include <tuple>

#include "tests/wasm/op_harness.h"

namespace g4::ops {
namespace {

constexpr DType kAll[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8, DType::kQ4};

std::string Shape(DType dt, int rows, int outs, int ins) {
  return std::string(DTypeName(dt)) + "_" + std::to_string(rows) + "x" + std::to_string(outs) + "x" + std::to_string(ins);
}

// out = w . x over `rows` rows; the input `offset` floats into its buffer (not a multiple of 4:
// no 16-byte reads).
void MatMul(Backend& gpu, Backend& cpu, const std::string& what, DType dt, int rows, int outs, int ins, int offset = 0) {
  Case(what + Shape(dt, rows, outs, ins), gpu, cpu, 1e-10, [&](Side& s) {
    Weight w = s.Matrix(outs, ins, dt);
    F32 x = s.Floats(Random(offset + rows * ins)).At(offset), y = s.Floats(std::vector<float>(rows * outs));
    s.be->MatMul(y, x, w, rows);
    return s.Read(y, rows * outs);
  });
}

// Products of an input rounded to 8 bits an oct (RoundOctsToInt8): where the backends' inputs
// differ in their last bit at a rounding boundary, or their reciprocals of an oct's largest
// magnitude do, a value lands a step away, an NMSE near 1e-7; a backend that did not round would
// be 1e-5 or more away.
constexpr double kRoundedBound = 2e-6;

// MatMulRoundedInput: the products, then the input (which the op leaves as it is).
void RoundedInput(Backend& gpu, Backend& cpu, const std::string& what, DType dt, int rows, int outs, int ins,
                  int offset = 0) {
  Case(what + (offset ? "offset_" : "") + Shape(dt, rows, outs, ins), gpu, cpu,
       kRoundedBound, [&](Side& s) {
         Weight w = s.Matrix(outs, ins, dt);
         F32 x = s.Floats(Random(offset + rows * ins, 2.0f)).At(offset), y = s.Floats(std::vector<float>(rows * outs));
         F32 scratch = s.Floats(std::vector<float>(rows * ins));
         s.be->MatMulRoundedInput(y, x, scratch, w, rows);
         std::vector<float> r = s.Read(y, rows * outs);
         Append(r, s.Read(x, rows * ins));
         return r;
       });
}

// The products of a normed input, with a residual join pending or not: NormMatMul, GateUp,
// NormMatMul2, MatMulGeluMul. Returns the products and, when joined, the joined input.
enum class Form { kNorm, kGateUp, kTwo, kGeluMul };
const char* FormName(Form f) {
  switch (f) {
    case Form::kNorm: return "norm_matmul";
    case Form::kGateUp: return "gate_up";
    case Form::kTwo: return "norm_matmul2";
    case Form::kGeluMul: return "matmul_gelu_mul";
  }
  return "";
}
void Normed(Backend& gpu, Backend& cpu, Form form, bool joined, DType dt, int rows, int ins, int offset = 0) {
  const int outs = form == Form::kTwo ? 24 : 45, outs_b = 40;
  const std::string name = std::string(FormName(form)) + (joined ? "_joined_" : "_") + (offset ? "offset_" : "") +
                           Shape(dt, rows, outs, ins);
  const double bound = form == Form::kGateUp && dt == DType::kQ4 ? kRoundedBound : 1e-10;
  Case(name, gpu, cpu, bound, [&](Side& s) {
    Weight w = s.Matrix(outs, ins, dt), w2 = s.Matrix(form == Form::kTwo ? outs_b : outs, ins, dt);
    Weight norm = s.MakeWeight(Random(ins), 1, 1, ins, joined ? DType::kF16 : DType::kBF16);
    F32 x = s.Floats(Random(offset + rows * ins, 3.0f)).At(offset), h = s.Floats(std::vector<float>(rows * ins));
    // y2: the second matrix's products (NormMatMul2) or GateUp's scratch for the up projection.
    F32 y = s.Floats(std::vector<float>(rows * outs)), mul = s.Floats(Random(rows * 3 * outs));
    F32 y2 = s.Floats(std::vector<float>(rows * std::max(outs, outs_b)));
    ResidualAdd pre;
    F32 in = x;
    if (joined) {
      in = s.Floats(std::vector<float>(rows * ins));
      pre = {x, s.Floats(Random(rows * ins, 2.0f)), in, s.MakeWeight(Random(ins), 1, 1, ins, DType::kBF16), 1e-6f, 0.8f};
    }
    switch (form) {
      case Form::kNorm: s.be->NormMatMul(y, h, in, norm, 1e-6f, w, rows, pre); break;
      case Form::kGateUp: s.be->GateUp(y, y2, h, in, norm, 1e-6f, w, w2, rows, pre); break;
      case Form::kTwo: s.be->NormMatMul2(y, y2, h, in, norm, 1e-6f, w, w2, rows, pre); break;
      case Form::kGeluMul: s.be->MatMulGeluMul(y, in, w, mul.At(outs), rows, 3 * outs, pre); break;
    }
    std::vector<float> out = s.Read(y, rows * outs);
    if (form == Form::kTwo) Append(out, s.Read(y2, rows * outs_b));
    if (joined) Append(out, s.Read(in, rows * ins));
    return out;
  });
}

// A layer's attention inputs as the model makes them: the keys' and values' projections making
// the pending join, then the queries' projection with the new keys' and values' norms. The
// products, the joined residual and the normed keys and values.
// With shift >= 0, the keys' positions are shifted by it (SetPositionShift).
void AttentionInputs(Backend& gpu, Backend& cpu, DType dt, int rows, int kvh, int hd, DType k_norm_type = DType::kBF16,
                     float shift = -1.0f) {
  const int ins = 96, outs = 40, kv = kvh * hd;
  const std::string name = "attention_inputs_" + Shape(dt, rows, kvh, hd) + (k_norm_type == DType::kF32 ? "_f32norm" : "") +
                           (shift >= 0.0f ? "_shift" + std::to_string(static_cast<int>(shift)) : "");
  Case(name, gpu, cpu, 1e-10, [&](Side& s) {
    Weight wk = s.Matrix(kv, ins, dt), wv = s.Matrix(kv, ins, dt), wq = s.Matrix(outs, ins, dt);
    Weight norm = s.MakeWeight(Random(ins), 1, 1, ins, DType::kBF16),
           k_norm = s.MakeWeight(Random(hd), 1, 1, hd, k_norm_type);
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
    if (shift >= 0.0f) s.be->SetPositionShift(s.Floats({shift}), 3);
    s.be->NormMatMulKvNorms(q, h, x_out, norm, 1e-6f, wq, rows, KvNorms{k, v, kvh, k_norm, inv, pos});
    s.be->ClearPositionShift();
    std::vector<float> out = s.Read(q, rows * outs);
    for (F32 t : {k, v, x_out}) Append(out, s.Read(t, rows * (t.buffer == x_out.buffer ? ins : kv)));
    return out;
  });
}

}  // namespace

void RunProducts(Backend& gpu, Backend& cpu) {
  // Every type's weights over long rows (one row: 8 teams a feature; three rows: 4), over rows
  // of whole octs from an input at an odd offset (element reads), and through the tiles.
  for (DType dt : kAll) {
    MatMul(gpu, cpu, "matmul_", dt, 1, 13, 4096);
    MatMul(gpu, cpu, "matmul_", dt, 3, 9, 2048);
    MatMul(gpu, cpu, "matmul_offset_", dt, 3, 9, 96, 1);
    MatMul(gpu, cpu, "matmul_tiled_", dt, 70, 130, 96);
  }
  // Odd widths (element reads) at every rows variant, and 16-byte reads at the rest.
  for (auto [dt, rows, outs, ins] : {std::tuple{DType::kBF16, 1, 5, 3}, {DType::kF32, 3, 33, 17}, {DType::kF16, 5, 100, 129},
                                     {DType::kBF16, 2, 19, 36}, {DType::kF32, 4, 65, 130}, {DType::kBF16, 8, 11, 22},
                                     {DType::kQ4, 2, 21, 1536}, {DType::kBF16, 4, 65, 160}, {DType::kQ8, 7, 40, 256},
                                     {DType::kBF16, 1, 70, 64}, {DType::kF16, 2, 21, 1544}}) {
    MatMul(gpu, cpu, "matmul_", dt, rows, outs, ins);
  }
  // matmul.wgsl's tiles (64 x 32, 64 x 64, 128 x 64 and 128 x 128, as picked for a fill of 264
  // workgroups), ragged in rows, outputs and inputs; long rows on few tiles split in parts of
  // columns (26 of 160 and 32 of 128 here, the first's last part ragged) and summed by split_sum;
  // odd widths (element reads).
  for (auto [dt, rows, outs, ins] : {std::tuple{DType::kBF16, 70, 132, 40}, {DType::kBF16, 130, 5620, 48},
                                     {DType::kF16, 260, 5620, 24}, {DType::kBF16, 260, 11260, 56},
                                     {DType::kBF16, 70, 36, 4104}, {DType::kQ4, 9, 260, 4096}, {DType::kF32, 33, 9, 300},
                                     {DType::kBF16, 9, 40, 37}}) {
    MatMul(gpu, cpu, "matmul_tiled_", dt, rows, outs, ins);
  }
  // Long rows on one tile where the arena's largest free range holds 3 to 6 of the 26 parts' results
  // (the rest taken by buffers of three parts each, the last given back): as many parts as fit,
  // so still two dispatches (the product and split_sum), not the product unsplit.
  const std::string short_arena = "matmul_tiled_short_arena_" + Shape(DType::kBF16, 70, 36, 4104);
  Case(short_arena, gpu, cpu, 1e-10, [&](Side& s) {
    Weight w = s.Matrix(36, 4104, DType::kBF16);
    F32 x = s.Floats(Random(70 * 4104)), y = s.Floats(std::vector<float>(70 * 36));
    std::vector<std::unique_ptr<Buffer>> filler;
    const size_t chunk = 3 * 70 * 36 * sizeof(float);
    while (s.be->gpu_fill() > 0) {  // the CPU backend has no arena
      auto b = s.be->Allocate(chunk);
      if (!b.ok()) break;
      filler.push_back(std::move(b).value());
    }
    if (!filler.empty()) filler.pop_back();
    const uint64_t before = s.be->dispatches();
    s.be->MatMul(y, x, w, 70);
    const uint64_t took = s.be->dispatches() - before;
    if (s.be->gpu_fill() > 0) Expect(short_arena + "_splits", took == 2, std::to_string(took) + " dispatches");
    return s.Read(y, 70 * 36);
  });
  // A few rows over very many features (verification's LM head): two features a team, an odd
  // count among them; plain, normed and through gelu.
  for (auto [dt, rows, outs, ins] : {std::tuple{DType::kBF16, 3, 65537, 40}, {DType::kF16, 2, 65536, 64},
                                     {DType::kBF16, 8, 65539, 16}, {DType::kQ4, 3, 65537, 128}}) {
    MatMul(gpu, cpu, "matmul_many_features_", dt, rows, outs, ins);
  }
  // The input rounded to 8 bits (the q4 LM head): q4 over a few rows takes it as 8-bit words made
  // once (one row, three, five and eight in the 8-row kernel; two features a team over very many
  // features, with rows of 36 octs: lanes 0 to 3 take the loop's unrolled step, the others its
  // tail; one feature a team with rows of 120 octs, too few for two teams: lanes 0 to 23 take the
  // unrolled step; rows long enough for two teams a feature); more rows, an input not read 16
  // bytes at a time and other types copy it, round the copy and take the plain product.
  for (auto [rows, outs, ins] : {std::tuple{1, 45, 96}, {3, 45, 96}, {5, 13, 64}, {8, 13, 64}, {9, 45, 64},
                                 {1, 45, 960}, {3, 45, 960}, {1, 45, 1536}, {3, 45, 2048}, {1, 65537, 128},
                                 {3, 65537, 128}, {1, 65537, 288}}) {
    RoundedInput(gpu, cpu, "matmul_rounded_", DType::kQ4, rows, outs, ins);
  }
  RoundedInput(gpu, cpu, "matmul_rounded_", DType::kQ4, 1, 45, 96, 3);
  RoundedInput(gpu, cpu, "matmul_rounded_", DType::kBF16, 3, 45, 96);
  // An oct holding a NaN (row 0) or an infinity (row 1) makes every product of its row NaN, as
  // the reference's rounding does; row 2 stays finite: over 8-bit words (three rows), copied and
  // rounded apart (nine rows, the tiles; an odd offset), and in GateUp's kernel, whose input is
  // finite until its norm's weight puts a NaN in one oct after the norm.
  Case("rounded_not_finite_Q4", gpu, cpu, 0.0, [&](Side& s) {
    const int outs = 45, ins = 96;
    Weight w = s.Matrix(outs, ins, DType::kQ4), w2 = s.Matrix(outs, ins, DType::kQ4);
    std::vector<float> nw = Random(ins);
    nw[50] = std::nanf("");
    Weight norm = s.MakeWeight(nw, 1, 1, ins, DType::kF32);
    std::vector<float> r;
    for (auto [rows, offset] : {std::pair{3, 0}, {9, 0}, {3, 1}}) {
      std::vector<float> v = Random(offset + rows * ins);
      v[offset + 19] = std::nanf("");
      v[offset + ins + 40] = INFINITY;
      F32 x = s.Floats(v).At(offset), y = s.Floats(std::vector<float>(rows * outs));
      s.be->MatMulRoundedInput(y, x, s.Floats(std::vector<float>(rows * ins)), w, rows);
      Append(r, s.Read(y, rows * outs));
    }
    F32 x = s.Floats(Random(ins)), g = s.Floats(std::vector<float>(outs)), up = s.Floats(std::vector<float>(outs));
    s.be->GateUp(g, up, s.Floats(std::vector<float>(ins)), x, norm, 1e-6f, w, w2, 1);
    Append(r, s.Read(g, outs));
    for (float& f : r) f = std::isnan(f) ? 1.0f : std::isfinite(f) ? 0.0f : 2.0f;
    return r;
  });
  // Over q4 weights and a few rows of whole octs the product takes the 8-bit words: two
  // dispatches (the words, the product), where copying and rounding apart takes three.
  if (Selected("rounded_takes_words_Q4")) {
    Side s{&gpu, {}, {}};
    Weight w = s.Matrix(45, 96, DType::kQ4);
    F32 x = s.Floats(Random(3 * 96)), y = s.Floats(std::vector<float>(3 * 45)),
        scratch = s.Floats(std::vector<float>(3 * 96));
    const uint64_t before = gpu.dispatches();
    gpu.MatMulRoundedInput(y, x, scratch, w, 3);
    const uint64_t took = gpu.dispatches() - before;
    s.Read(y, 3 * 45);  // the recorded work runs before its buffers go
    Expect("rounded_takes_words_Q4", took == 2, std::to_string(took) + " dispatches");
  }
  // A weight freed after a product that binds it is recorded and before anything reads: the
  // product still runs (the list is handed over first) and the read that follows succeeds.
  if (Selected("weight_freed_while_recorded")) {
    Side s{&gpu, {}, {}};
    F32 x = s.Floats(Random(64)), y = s.Floats(std::vector<float>(13));
    {
      Side t{&gpu, {}, {}};
      gpu.MatMul(y, x, t.Matrix(13, 64, DType::kBF16), 1);
    }
    std::vector<float> got(13);
    const Status st = gpu.Download(*y.buffer, y.offset * 4, got.data(), got.size() * 4);
    const bool finite = std::all_of(got.begin(), got.end(), [](float v) { return std::isfinite(v) && v != 0.0f; });
    Expect("weight_freed_while_recorded", st.ok() && finite, st.ok() ? "products not made" : st.message());
  }
  Case("norm_matmul_many_features_" + Shape(DType::kBF16, 3, 65537, 40), gpu, cpu, 1e-10, [&](Side& s) {
    Weight w = s.Matrix(65537, 40, DType::kBF16), norm = s.MakeWeight(Random(40), 1, 1, 40, DType::kBF16);
    F32 x = s.Floats(Random(3 * 40, 3.0f)), y = s.Floats(std::vector<float>(3 * 65537)),
        h = s.Floats(std::vector<float>(3 * 40));
    s.be->NormMatMul(y, h, x, norm, 1e-6f, w, 3);
    return s.Read(y, 3 * 65537);
  });
  Case("matmul_gelu_mul_many_features_" + Shape(DType::kBF16, 2, 65536, 64), gpu, cpu, 1e-10, [&](Side& s) {
    Weight w = s.Matrix(65536, 64, DType::kBF16);
    F32 x = s.Floats(Random(2 * 64)), y = s.Floats(std::vector<float>(2 * 65536)), mul = s.Floats(Random(2 * 65536));
    s.be->MatMulGeluMul(y, x, w, mul, 2, 65536);
    return s.Read(y, 2 * 65536);
  });
  // The forms of a normed input: every type at one row (each type's rows variants are those of
  // the plain products above); bf16 and q4 at three rows (verification's), bf16 at every other
  // rows variant and through the tiles; odd widths and an odd input offset. A pending join of
  // one row is summed with the products as the weights are read, except GateUp's, staged in
  // workgroup memory: bf16 (a scale of 1) and q4 (a scale a block) take it, and GateUp's row too
  // long for any device's stage (8192: 32 KiB) goes on the way (bf16; q4 joins it apart, below).
  // Several rows are joined
  // before any weight is read, the same for every type: bf16 takes it at each rows variant,
  // staged (2, 3, 4 and 6 rows), or, where the rows do not fit (two rows of 2048), joined apart,
  // as GateUp's always are. GateUp over q4 takes its input 8-bit (RoundOctsToInt8): made so in
  // the kernel's workgroup memory after a staged join (one row) or one made apart (three rows,
  // and the row of 8192), or apart before the tiles (nine rows).
  for (Form form : {Form::kNorm, Form::kGateUp, Form::kTwo, Form::kGeluMul}) {
    for (DType dt : kAll) {
      const bool all_rows = dt == DType::kBF16 || dt == DType::kQ4;
      for (int rows : {1, 3}) {
        if (rows > 1 && !all_rows) continue;
        Normed(gpu, cpu, form, false, dt, rows, 96);
        if (dt == DType::kBF16 || (dt == DType::kQ4 && rows == 1)) Normed(gpu, cpu, form, true, dt, rows, 160);
      }
    }
    for (int rows : {2, 4, 6, 9}) Normed(gpu, cpu, form, rows != 9, DType::kBF16, rows, rows == 2 ? 2048 : 64);
    Normed(gpu, cpu, form, true, DType::kBF16, 2, 64);
    Normed(gpu, cpu, form, false, DType::kBF16, 3, 37);
    Normed(gpu, cpu, form, false, DType::kF32, 1, 40, 3);
  }
  for (DType dt : {DType::kBF16, DType::kQ4}) Normed(gpu, cpu, Form::kGateUp, true, dt, 1, 8192);
  // Many rows' join and next norm in one pass (rms_norm.wgsl's mode 3), rows of more than eight
  // elements a thread.
  Normed(gpu, cpu, Form::kNorm, true, DType::kBF16, 9, 2600);
  for (int rows : {3, 9}) Normed(gpu, cpu, Form::kGateUp, true, DType::kQ4, rows, 64);
  // A q4 row whose join's stage fits the device (lavapipe's 32 KiB) but not with its 8-bit words
  // beside it: the join made apart, the input still made 8-bit in the kernel.
  Normed(gpu, cpu, Form::kGateUp, true, DType::kQ4, 1, 4800);
  // The attention inputs: one row (the join on the way in; one kv head of 256; two of 64), three
  // (apart), nine (the tiles, the norms in a dispatch of their own); an f32 key norm.
  for (DType dt : kAll) {
    AttentionInputs(gpu, cpu, dt, 1, 1, 256);
    if (dt == DType::kBF16 || dt == DType::kQ4) AttentionInputs(gpu, cpu, dt, 3, 2, 8);
  }
  for (DType dt : {DType::kBF16, DType::kQ4}) {
    AttentionInputs(gpu, cpu, dt, 9, 2, 8);
    AttentionInputs(gpu, cpu, dt, 1, 2, 64);
  }
  for (int rows : {1, 3, 9}) AttentionInputs(gpu, cpu, DType::kBF16, rows, 2, 12, DType::kF32);
  for (int rows : {3, 9}) AttentionInputs(gpu, cpu, DType::kBF16, rows, 2, 8, DType::kBF16, 3.0f);
  // Rows chosen by id (the assistant's centroids): host ids and ids on the device, and embedding rows.
  for (DType dt : kAll) {
    const int cols = IsQuantized(dt) ? 96 : 70;
    Case(std::string("embed_gather_") + DTypeName(dt), gpu, cpu, 1e-10, [&](Side& s) {
      Weight t = s.Matrix(37, cols, dt);
      const std::vector<int32_t> host = {0, 36, 5, 5, 17};
      F32 ids = s.Floats({0, 36, 5, 5, 17}), x = s.Floats(Random(cols));
      F32 a = s.Floats(std::vector<float>(5 * cols)), b = s.Floats(std::vector<float>(5 * cols));
      F32 c = s.Floats(std::vector<float>(5)), d = s.Floats(std::vector<float>(5));
      s.be->Embed(a, t, host, 1.7f);
      s.be->EmbedIds(b, t, ids, 5, 0.5f);
      s.be->GatherMatVec(c, x, t, host);
      s.be->GatherMatVecIds(d, x, t, ids, 5);
      std::vector<float> r = s.Read(a, 5 * cols);
      Append(r, s.Read(b, 5 * cols));
      Append(r, s.Read(c, 5));
      Append(r, s.Read(d, 5));
      return r;
    });
  }
}

// Weights split over three bindings of 1 KiB: products of few rows and many, odd widths and
// whole octs, embeddings and rows by id.
void RunSplitProducts(Backend& split, Backend& cpu) {
  for (DType dt : kAll) {
    const bool q = IsQuantized(dt);
    const int outs = dt == DType::kF32 ? 33 : 61, ins = dt == DType::kQ8 ? 32 : q ? 64 : 17;
    for (auto [rows, cols] : {std::pair{3, ins}, {q ? 1 : 3, q ? ins : dt == DType::kF32 ? 16 : 24}, {9, q ? ins : ins + 1}}) {
      MatMul(split, cpu, "split_matmul_", dt, rows, outs, cols);
    }
    if (dt == DType::kQ4) RoundedInput(split, cpu, "split_matmul_rounded_", dt, 3, outs, ins);
    Case(std::string("split_embed_gather_") + DTypeName(dt), split, cpu, 1e-10, [&](Side& s) {
      Weight t = s.Matrix(outs, ins, dt);
      const std::vector<int32_t> host = {0, outs - 1, outs / 2, 3};
      F32 fids = s.Floats({0.0f, static_cast<float>(outs - 1), static_cast<float>(outs / 2), 3.0f});
      F32 a = s.Floats(std::vector<float>(4 * ins)), x = s.Floats(Random(ins)), b = s.Floats(std::vector<float>(4));
      F32 c = s.Floats(std::vector<float>(4)), d = s.Floats(std::vector<float>(4 * ins));
      s.be->EmbedIds(a, t, fids, 4, 0.5f);
      s.be->GatherMatVecIds(b, x, t, fids, 4);
      s.be->GatherMatVec(c, x, t, host);
      s.be->Embed(d, t, host, 0.5f);
      std::vector<float> r = s.Read(a, 4 * ins);
      Append(r, s.Read(b, 4));
      Append(r, s.Read(c, 4));
      Append(r, s.Read(d, 4 * ins));
      return r;
    });
  }
  // The experts with gate_up over three bindings and down over two: each pass binds its weight
  // alone, as W1 and the chunks after it.
  Case("split_moe_experts_BF16", split, cpu, 1e-10, [&](Side& s) {
    const int rows = 2, hid = 32, ne = 3, k = 2, width = 8;
    F32 x = s.Floats(Random(rows * hid, 2.0f)), idx = s.Floats({2.0f, 0.0f, 1.0f, 2.0f}), wts = s.Floats(Random(rows * k));
    F32 out = s.Floats(std::vector<float>(rows * hid)), act = s.Floats(std::vector<float>(rows * k * width));
    Weight gu = s.MakeWeight(Random(ne * 2 * width * hid, 0.3f), ne, 2 * width, hid, DType::kBF16);
    Weight down = s.MakeWeight(Random(ne * hid * width, 0.3f), ne, hid, width, DType::kBF16);
    s.be->MoeExperts(out, act, x, gu, down, idx, wts, MoeShape{rows, hid, ne, k, width});
    std::vector<float> r = s.Read(out, rows * hid);
    Append(r, s.Read(act, rows * k * width));
    return r;
  });
}

}  // namespace g4::ops
