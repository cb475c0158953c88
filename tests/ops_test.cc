// Backend ops against small hand-checked values and naive double-precision references.
#include <cmath>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "backend/backend.h"
#include "backend/cpu/kernels.h"
#include "tests/weight_bytes.h"

namespace g4 {
namespace {

class OpsTest : public ::testing::Test {
 protected:
  void SetUp() override { be_ = MakeCpuBackend(); }

  F32 Floats(const std::vector<float>& v) {
    auto b = be_->Allocate(std::max<size_t>(1, v.size()) * 4);
    EXPECT_TRUE(b.ok());
    if (!v.empty()) {
      EXPECT_TRUE(be_->Upload(**b, 0, v.data(), v.size() * 4).ok());
    }
    owned_.push_back(std::move(b).value());
    return F32{owned_.back().get(), 0};
  }
  std::vector<float> Read(F32 t, size_t n) {
    std::vector<float> out(n);
    EXPECT_TRUE(be_->Download(*t.buffer, t.offset * 4, out.data(), n * 4).ok());
    return out;
  }
  // A weight from float values, stored as `dtype`.
  Weight MakeWeight(const std::vector<float>& v, int64_t rows, int64_t cols, DType dtype, int64_t count = 1) {
    const std::vector<uint8_t> bytes = test::WeightBytes(v, dtype);
    readers_.push_back(MakeMemoryReader(bytes, "weights"));
    auto b = be_->LoadWeights(*readers_.back(), 0, bytes.size());
    EXPECT_TRUE(b.ok());
    owned_.push_back(std::move(b).value());
    return Weight{owned_.back().get(), dtype, count, rows, cols};
  }

  std::unique_ptr<Backend> be_;
  std::vector<std::unique_ptr<Buffer>> owned_;
  std::vector<std::unique_ptr<Reader>> readers_;
};

TEST_F(OpsTest, RmsNormHandChecked) {
  // x = [3, 4]: mean square 12.5, so y = x / sqrt(12.5 + eps) * w.
  F32 x = Floats({3, 4});
  F32 y = Floats({0, 0});
  be_->RmsNorm(y, x, MakeWeight({2.0f, 0.5f}, 1, 2, DType::kF32), 1, 2, 0.0f);
  auto out = Read(y, 2);
  EXPECT_NEAR(out[0], 3 / std::sqrt(12.5) * 2, 1e-6);
  EXPECT_NEAR(out[1], 4 / std::sqrt(12.5) * 0.5, 1e-6);
  be_->RmsNorm(x, x, Weight{}, 1, 2, 1e-6f);  // weightless (v_norm), in place
  auto w = Read(x, 2);
  EXPECT_NEAR(w[0], 3 / std::sqrt(12.5 + 1e-6), 1e-6);
}

TEST_F(OpsTest, RopeHandChecked) {
  // head_dim 4: pairs (0, 2) and (1, 3); inv_freq [1, 0.01]; position 1.
  F32 x = Floats({1, 2, 3, 4});
  const std::vector<float> inv = {1.0f, 0.01f};
  const std::vector<int64_t> pos = {1};
  be_->Rope(x, 1, 1, inv, pos);
  auto o = Read(x, 4);
  EXPECT_NEAR(o[0], 1 * std::cos(1.0) - 3 * std::sin(1.0), 1e-6);
  EXPECT_NEAR(o[2], 3 * std::cos(1.0) + 1 * std::sin(1.0), 1e-6);
  EXPECT_NEAR(o[1], 2 * std::cos(0.01) - 4 * std::sin(0.01), 1e-6);
  EXPECT_NEAR(o[3], 4 * std::cos(0.01) + 2 * std::sin(0.01), 1e-6);
  // A zero frequency passes its pair through (the unrotated part of proportional RoPE).
  F32 y = Floats({1, 2, 3, 4});
  const std::vector<float> partial = {1.0f, 0.0f};
  const std::vector<int64_t> far = {1000};
  be_->Rope(y, 1, 1, partial, far);
  auto p = Read(y, 4);
  EXPECT_EQ(p[1], 2.0f);
  EXPECT_EQ(p[3], 4.0f);
}

TEST_F(OpsTest, GeluTanhHandChecked) {
  EXPECT_NEAR(cpu::GeluTanh(1.0f), 0.8411919906f, 1e-6);
  EXPECT_NEAR(cpu::GeluTanh(-2.0f), -0.0454022884f, 1e-6);
  EXPECT_EQ(cpu::GeluTanh(0.0f), 0.0f);
  F32 g = Floats({1.0f, -2.0f, 0.5f, 3.0f});
  F32 u = Floats({2.0f, 9.0f, 3.0f, 9.0f, 4.0f, 9.0f});  // rows of stride 3: [2, 3], [4, ...]
  F32 o = Floats({0, 0, 0, 0});
  be_->GeluMul(o, g, u, 2, 2, 3);
  auto r = Read(o, 4);
  EXPECT_NEAR(r[0], cpu::GeluTanh(1.0f) * 2.0f, 1e-6);
  EXPECT_NEAR(r[1], cpu::GeluTanh(-2.0f) * 9.0f, 1e-6);
  EXPECT_NEAR(r[2], cpu::GeluTanh(0.5f) * 9.0f, 1e-6);
  EXPECT_NEAR(r[3], cpu::GeluTanh(3.0f) * 4.0f, 1e-6);
}

TEST_F(OpsTest, MatMulAllDtypesAndOddSizes) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  for (DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (auto [rows, out_f, in_f] : {std::tuple{1, 5, 3}, {7, 33, 17}, {6, 64, 129}, {33, 9, 40}}) {
      std::vector<float> wv(out_f * in_f), xv(rows * in_f);
      for (float& v : wv) v = nd(rng);
      for (float& v : xv) v = nd(rng);
      Weight w = MakeWeight(wv, out_f, in_f, dt);
      // Reference with the stored (rounded) weights, in double.
      for (float& v : wv) v = dt == DType::kBF16 ? Bf16ToF32(F32ToBf16(v)) : dt == DType::kF16 ? F16ToF32(F32ToF16(v)) : v;
      F32 x = Floats(xv), y = Floats(std::vector<float>(rows * out_f));
      be_->MatMul(y, x, w, rows);
      auto got = Read(y, rows * out_f);
      for (int r = 0; r < rows; ++r) {
        for (int o = 0; o < out_f; ++o) {
          double ref = 0;
          for (int i = 0; i < in_f; ++i) ref += static_cast<double>(xv[r * in_f + i]) * wv[o * in_f + i];
          ASSERT_NEAR(got[r * out_f + o], ref, 1e-4 * (1 + std::fabs(ref))) << DTypeName(dt) << " " << r << "," << o;
        }
      }
    }
  }
}

TEST_F(OpsTest, AttentionWindowSeesExactlyTheRecentPositions) {
  // q = 0 gives equal scores, so each output is the mean of the values it can see. Value of
  // position p is p (one head, head_dim 2). Positions 0..4 are cached in a ring of capacity 3
  // (so only 2, 3, 4 remain), rows for 5 and 6 are new; window 3.
  const int cap = 3;
  std::vector<float> kc(cap * 2, 0.0f), vc(cap * 2, 0.0f);
  for (int p = 2; p < 5; ++p) {
    vc[(p % cap) * 2] = static_cast<float>(p);
    vc[(p % cap) * 2 + 1] = static_cast<float>(-p);
  }
  F32 k_cache = Floats(kc), v_cache = Floats(vc);
  F32 k_new = Floats({0, 0, 0, 0}), v_new = Floats({5, -5, 6, -6});
  F32 q = Floats({0, 0, 0, 0}), out = Floats({0, 0, 0, 0});
  AttentionShape s{2, 1, 1, 2, 3, 5, 3, cap};
  be_->Attention(out, q, k_new, v_new, k_cache, v_cache, s);
  auto o = Read(out, 4);
  EXPECT_NEAR(o[0], (3 + 4 + 5) / 3.0, 1e-5);  // position 5 sees 3, 4, 5
  EXPECT_NEAR(o[1], -(3 + 4 + 5) / 3.0, 1e-5);
  EXPECT_NEAR(o[2], (4 + 5 + 6) / 3.0, 1e-5);  // position 6 sees 4, 5, 6
  // Full attention (window 0) over a full-length cache: mean of everything visible.
  std::vector<float> vfull(7 * 2, 0.0f);
  for (int p = 0; p < 5; ++p) vfull[p * 2] = static_cast<float>(p);
  F32 vcf = Floats(vfull), kcf = Floats(std::vector<float>(14, 0.0f));
  AttentionShape f{2, 1, 1, 2, 0, 5, 5, 7};
  be_->Attention(out, q, k_new, v_new, kcf, vcf, f);
  o = Read(out, 4);
  EXPECT_NEAR(o[0], (0 + 1 + 2 + 3 + 4 + 5) / 6.0, 1e-5);
  EXPECT_NEAR(o[2], (0 + 1 + 2 + 3 + 4 + 5 + 6) / 7.0, 1e-5);
}

TEST_F(OpsTest, AttentionSoftmaxAndGroupedHeads) {
  // Two query heads share one KV head; scores are q.k with scale 1.
  F32 q = Floats({1, 0, 0, 2});  // head 0: [1, 0], head 1: [0, 2]
  F32 k_new = Floats({1, 0, 0, 1});  // position 0: [1, 0], position 1: [0, 1]
  F32 v_new = Floats({10, 0, 0, 10});
  F32 empty = Floats({0, 0});
  F32 out = Floats(std::vector<float>(8, 0.0f));
  // Two rows: row 0 (position 0) sees only position 0; row 1 sees both.
  F32 q2 = Floats({1, 0, 0, 2, 1, 0, 0, 2});
  AttentionShape s{2, 2, 1, 2, 0, 0, 0, 1};
  be_->Attention(out, q2, k_new, v_new, empty, empty, s);
  auto o = Read(out, 8);
  EXPECT_NEAR(o[0], 10, 1e-5);
  EXPECT_NEAR(o[2], 10, 1e-5);
  const double e1 = std::exp(1.0), e0 = 1.0;  // head 0 of row 1: scores 1 and 0
  EXPECT_NEAR(o[4], 10 * e1 / (e1 + e0), 1e-4);
  EXPECT_NEAR(o[5], 10 * e0 / (e1 + e0), 1e-4);
  const double f2 = std::exp(2.0);  // head 1 of row 1: scores 0 and 2
  EXPECT_NEAR(o[6], 10 * 1 / (1 + f2), 1e-4);
  EXPECT_NEAR(o[7], 10 * f2 / (1 + f2), 1e-4);
  (void)q;
}

TEST_F(OpsTest, CacheAppendWritesRingSlots) {
  F32 kc = Floats(std::vector<float>(3, -1.0f)), vc = Floats(std::vector<float>(3, -1.0f));
  F32 kn = Floats({10, 11, 12, 13, 14}), vn = Floats({20, 21, 22, 23, 24});
  be_->CacheAppend(kc, vc, kn, vn, 5, 1, 4, 3);  // positions 4..8; only 6, 7, 8 land
  auto k = Read(kc, 3), v = Read(vc, 3);
  EXPECT_EQ(k[6 % 3], 12);
  EXPECT_EQ(k[7 % 3], 13);
  EXPECT_EQ(k[8 % 3], 14);
  EXPECT_EQ(v[8 % 3], 24);
}

TEST_F(OpsTest, RouterPicksTopKRenormalisesAndScales) {
  // hidden 2, x = [1, 1]: rmsnorm -> [1, 1]; scale [1, 1]; * 2^-0.5 -> r = [0.7071, 0.7071].
  // proj rows give logits r . row: e0 = 0, e1 = 1.4142, e2 = 0.7071.
  const float a = 1.0f / std::sqrt(2.0f);
  F32 x = Floats({1, 1});
  Weight scale = MakeWeight({1, 1}, 1, 2, DType::kF32);
  Weight proj = MakeWeight({0, 0, 1, 1, 0.5f, 0.5f}, 3, 2, DType::kF32);
  Weight per_expert = MakeWeight({1.0f, 2.0f, 3.0f}, 1, 3, DType::kF32);
  F32 idx = Floats({0, 0}), w = Floats({0, 0}), logits = Floats({0, 0, 0}), normed = Floats({0, 0});
  be_->MoeRoute(idx, w, logits, normed, x, scale, proj, per_expert, MoeShape{1, 2, 3, 2, 1}, 0.0f);
  auto i = Read(idx, 2), wt = Read(w, 2);
  EXPECT_EQ(i[0], 1.0f);
  EXPECT_EQ(i[1], 2.0f);
  const double p1 = std::exp(2 * a), p2 = std::exp(a);  // softmax numerators; renormalised over the two
  EXPECT_NEAR(wt[0], p1 / (p1 + p2) * 2.0, 1e-5);
  EXPECT_NEAR(wt[1], p2 / (p1 + p2) * 3.0, 1e-5);
}

TEST_F(OpsTest, ExpertsCombineWeightedOutputs) {
  // hidden 1, width 1, two experts: expert e: gate g_e, up u_e, down d_e.
  Weight gate_up = MakeWeight({1.0f, 2.0f, /*e1*/ 0.5f, 4.0f}, 2, 1, DType::kF32, 2);
  Weight down = MakeWeight({3.0f, /*e1*/ -1.0f}, 1, 1, DType::kF32, 2);
  F32 x = Floats({2.0f}), idx = Floats({1, 0}), w = Floats({0.25f, 0.75f}), out = Floats({0}), h = Floats({0, 0});
  be_->MoeExperts(out, h, x, gate_up, down, idx, w, MoeShape{1, 1, 2, 2, 1});
  const double h0 = cpu::GeluTanh(2.0f) * 4.0;  // gate 1*2, up 2*2
  const double h1 = cpu::GeluTanh(1.0f) * 8.0;  // gate 0.5*2, up 4*2
  EXPECT_NEAR(Read(out, 1)[0], 0.25 * h1 * -1.0 + 0.75 * h0 * 3.0, 1e-5);  // down -1 and 3
  const auto acts = Read(h, 2);  // the activations, in the order of the row's experts
  EXPECT_NEAR(acts[0], h1, 1e-5);
  EXPECT_NEAR(acts[1], h0, 1e-5);
}

TEST_F(OpsTest, EmbedScalesStoredRows) {
  Weight table = MakeWeight({1, 2, 3, 4, 5, 6}, 3, 2, DType::kBF16);
  F32 out = Floats({0, 0, 0, 0});
  const std::vector<int32_t> ids = {2, 0};
  be_->Embed(out, table, ids, 0.5f);
  EXPECT_EQ(Read(out, 4), (std::vector<float>{2.5f, 3.0f, 0.5f, 1.0f}));
}

TEST_F(OpsTest, ArgmaxTakesTheFirstOfEqualMaxima) {
  F32 x = Floats({1, 5, 5, -2, /*row 1*/ -3, -1, -7, -1, /*row 2*/ 0, 0, 0, 9});
  F32 ids = Floats({0, 0, 0});
  be_->Argmax(ids, x, 3, 4);
  EXPECT_EQ(Read(ids, 3), (std::vector<float>{1, 1, 3}));
}

TEST_F(OpsTest, TopKValuesAreTheBestColumnsAndTheirValues) {
  F32 x = Floats({1, 5, 5, -2, 7, 0});
  F32 out = Floats(std::vector<float>(6));
  be_->TopKValues(out, x, 6, 3);
  EXPECT_EQ(Read(out, 6), (std::vector<float>{4, 1, 2, 7, 5, 5}));
}

TEST_F(OpsTest, SoftcapAddScale) {
  F32 a = Floats({0.0f, 30.0f, -60.0f}), b = Floats({1.0f, 1.0f, 1.0f});
  be_->Softcap(a, 3, 30.0f);
  auto s = Read(a, 3);
  EXPECT_EQ(s[0], 0.0f);
  EXPECT_NEAR(s[1], 30 * std::tanh(1.0), 1e-5);
  EXPECT_NEAR(s[2], 30 * std::tanh(-2.0), 1e-5);
  be_->Add(a, a, b, 3);
  be_->Scale(a, 3, 2.0f);
  EXPECT_NEAR(Read(a, 1)[0], 2.0f, 1e-6);
}

TEST_F(OpsTest, AddRmsNormJoinsTheResidual) {
  // x = (x + rmsnorm(y) * w) * s with y = [3, 4]: y / sqrt(12.5) * w.
  F32 x = Floats({1, -1}), y = Floats({3, 4});
  be_->AddRmsNorm(x, y, MakeWeight({2.0f, 0.5f}, 1, 2, DType::kF32), 1, 2, 0.0f, 0.5f);
  auto out = Read(x, 2);
  EXPECT_NEAR(out[0], (1 + 3 / std::sqrt(12.5) * 2) * 0.5, 1e-6);
  EXPECT_NEAR(out[1], (-1 + 4 / std::sqrt(12.5) * 0.5) * 0.5, 1e-6);
}

TEST_F(OpsTest, AddRmsNormToLeavesTheOldResidual) {
  F32 x = Floats({1, -1}), y = Floats({3, 4}), out = Floats({0, 0});
  be_->AddRmsNormTo(ResidualAdd{x, y, out, MakeWeight({2.0f, 0.5f}, 1, 2, DType::kF32), 0.0f, 0.5f}, 1, 2);
  auto o = Read(out, 2), old = Read(x, 2);
  EXPECT_NEAR(o[0], (1 + 3 / std::sqrt(12.5) * 2) * 0.5, 1e-6);
  EXPECT_NEAR(o[1], (-1 + 4 / std::sqrt(12.5) * 0.5) * 0.5, 1e-6);
  EXPECT_EQ(old[0], 1.0f);
  EXPECT_EQ(old[1], -1.0f);
}

TEST_F(OpsTest, NormMatMulMakesAPendingJoinFirst) {
  // The join gives x_out = [3, 4] (x_in = [1, 2], delta = [4, 4] normed to [1, 1], scale 1); the
  // projection reads it as its input.
  F32 x = Floats({1, 2}), delta = Floats({4, 4}), x_out = Floats({0, 0}), out = Floats({0, 0}), h = Floats({0, 0});
  const ResidualAdd pre{x, delta, x_out, MakeWeight({2.0f, 2.0f}, 1, 2, DType::kF32), 0.0f, 1.0f};
  be_->NormMatMul(out, h, x_out, MakeWeight({1.0f, 0.5f}, 1, 2, DType::kF32), 0.0f,
                  MakeWeight({1, 1, 2, -1}, 2, 2, DType::kF32), 1, pre);
  auto j = Read(x_out, 2);
  EXPECT_NEAR(j[0], 3.0f, 1e-6);
  EXPECT_NEAR(j[1], 4.0f, 1e-6);
  const float h0 = 3 / std::sqrt(12.5f), h1 = 4 / std::sqrt(12.5f) * 0.5f;
  auto o = Read(out, 2);
  EXPECT_NEAR(o[0], h0 + h1, 1e-5);
  EXPECT_NEAR(o[1], 2 * h0 - h1, 1e-5);
}

TEST_F(OpsTest, GateUpIsGeluOfGateTimesUpOfTheNormedInput) {
  // x = [3, 4] normed: [3, 4] / sqrt(12.5) * [1, 0.5] = h; gate rows [1, 0], [0, 1]; up rows [2, 0], [1, 1].
  F32 x = Floats({3.0f, 4.0f}), out = Floats({0, 0}), up = Floats({0, 0}), h = Floats({0, 0});
  be_->GateUp(out, up, h, x, MakeWeight({1.0f, 0.5f}, 1, 2, DType::kF32), 0.0f, MakeWeight({1, 0, 0, 1}, 2, 2, DType::kF32),
              MakeWeight({2, 0, 1, 1}, 2, 2, DType::kF32), 1);
  const float h0 = 3 / std::sqrt(12.5f), h1 = 4 / std::sqrt(12.5f) * 0.5f;
  auto o = Read(out, 2);
  EXPECT_NEAR(o[0], cpu::GeluTanh(h0) * 2 * h0, 1e-5);
  EXPECT_NEAR(o[1], cpu::GeluTanh(h1) * (h0 + h1), 1e-5);
}

TEST_F(OpsTest, NormMatMulProjectsTheNormedInput) {
  F32 x = Floats({3.0f, 4.0f}), out = Floats({0, 0}), h = Floats({0, 0});
  be_->NormMatMul(out, h, x, MakeWeight({1.0f, 0.5f}, 1, 2, DType::kF32), 0.0f, MakeWeight({1, 1, 2, -1}, 2, 2, DType::kF32), 1);
  const float h0 = 3 / std::sqrt(12.5f), h1 = 4 / std::sqrt(12.5f) * 0.5f;
  auto o = Read(out, 2);
  EXPECT_NEAR(o[0], h0 + h1, 1e-5);
  EXPECT_NEAR(o[1], 2 * h0 - h1, 1e-5);
}

TEST_F(OpsTest, NormRopeIsRmsNormThenRope) {
  std::vector<float> v = {1, 2, 3, 4, -1, 0.5f, 2, 0};
  F32 a = Floats(v), b = Floats(v);
  const Weight w = MakeWeight({1.0f, 2.0f, 0.5f, 1.0f}, 1, 4, DType::kF32);
  const std::vector<float> inv = {1.0f, 0.1f};
  const std::vector<int64_t> pos = {3};
  be_->NormRope(a, 1, 2, w, 1e-6f, inv, pos);
  be_->RmsNorm(b, b, w, 2, 4, 1e-6f);
  be_->Rope(b, 1, 2, inv, pos);
  EXPECT_EQ(Read(a, 8), Read(b, 8));
}

}  // namespace
}  // namespace g4
