// Quantization: group rounding bounds, the CPU kernels on q8/q4 weights against the dequantized
// values in float32, and the loader's checks of quantized tensors.
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "backend/backend.h"
#include "base/quant.h"
#include "tests/weight_bytes.h"

namespace g4 {
namespace {

std::vector<float> Random(size_t n, uint32_t seed, float amp = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-amp, amp);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

TEST(Quant, GroupErrorWithinHalfAStep) {
  for (DType type : {DType::kQ8, DType::kQ4}) {
    const std::vector<float> v = Random(32 * 200, 7, 0.05f);
    const test::Quantized q = test::Quantize(v, type);
    for (size_t g = 0; g < 200; ++g) {
      uint16_t s;
      std::memcpy(&s, &q.scales[g * 2], 2);
      const float step = std::fabs(F16ToF32(s));
      ASSERT_GT(step, 0.0f);
      for (int i = 0; i < kQuantGroup; ++i) {
        const size_t k = g * kQuantGroup + i;
        // q4's searched scale may clip the largest value by about one step.
        EXPECT_LE(std::fabs(v[k] - q.dequantized[k]), type == DType::kQ8 ? 0.5f * step * 1.001f : step * 1.01f) << DTypeName(type);
      }
    }
  }
}

TEST(Quant, ExactValuesAndZerosSurvive) {
  std::vector<float> v(64, 0.0f);
  for (int i = 0; i < 32; ++i) v[i] = static_cast<float>(i - 16) * 0.25f;  // multiples of a power of two
  const test::Quantized q8 = test::Quantize(v, DType::kQ8);
  for (int i = 0; i < 64; ++i) EXPECT_NEAR(q8.dequantized[i], v[i], 4.0 / 127 / 2 + 1e-6) << i;
  for (int i = 32; i < 64; ++i) EXPECT_EQ(q8.dequantized[i], 0.0f);  // an all-zero group: scale 0
  std::vector<float> steps(32);
  for (int i = 0; i < 32; ++i) steps[i] = static_cast<float>(i % 16 - 8) * 0.5f;  // exactly 16 levels
  const test::Quantized q4 = test::Quantize(steps, DType::kQ4);
  for (int i = 0; i < 32; ++i) EXPECT_FLOAT_EQ(q4.dequantized[i], steps[i]) << i;
}

// The 8-bit input of q4 products: each oct on its own grid of max/127, its largest magnitude
// kept, ties to even, the short last oct and an oct of zeros as well.
TEST(Quant, OctsRoundToEightBits) {
  std::vector<float> v = Random(8 * 5 + 3, 11, 3.0f);
  for (int i = 8; i < 16; ++i) v[i] = 0.0f;
  v[16] = 127.0f;  // the oct 16..23 on a grid of 1: ties fall on even integers
  v[17] = 2.5f;
  v[18] = -3.5f;
  v[19] = 0.49f;
  std::vector<float> r = v;
  RoundOctsToInt8(r.data(), static_cast<int64_t>(r.size()));
  for (size_t at = 0; at < v.size(); at += 8) {
    const size_t end = std::min(v.size(), at + 8);
    float m = 0.0f;
    for (size_t i = at; i < end; ++i) m = std::max(m, std::fabs(v[i]));
    for (size_t i = at; i < end; ++i) {
      if (m == 0.0f) {
        EXPECT_EQ(r[i], 0.0f) << i;
        continue;
      }
      const float steps = r[i] / (m / 127.0f);
      EXPECT_NEAR(steps, std::round(steps), 1e-3) << i;
      EXPECT_LE(std::fabs(steps), 127.0f + 1e-3) << i;
      EXPECT_LE(std::fabs(r[i] - v[i]), 0.5f * m / 127.0f * 1.001f) << i;
      if (std::fabs(v[i]) == m) {
        EXPECT_FLOAT_EQ(std::fabs(r[i]), m) << i;
      }
    }
  }
  EXPECT_EQ(r[17], 2.0f);
  EXPECT_EQ(r[18], -4.0f);
  EXPECT_EQ(r[19], 0.0f);
}

class QuantOpsTest : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override { be_ = MakeCpuBackend(); }
  F32 Floats(const std::vector<float>& v) {
    auto b = be_->Allocate(std::max<size_t>(1, v.size()) * 4);
    EXPECT_TRUE(b.ok());
    EXPECT_TRUE(be_->Upload(**b, 0, v.data(), v.size() * 4).ok());
    owned_.push_back(std::move(b).value());
    return F32{owned_.back().get(), 0};
  }
  std::vector<float> Read(F32 t, size_t n) {
    std::vector<float> out(n);
    EXPECT_TRUE(be_->Download(*t.buffer, t.offset * 4, out.data(), n * 4).ok());
    return out;
  }
  // The same matrix twice: quantized, and its dequantized values in float32.
  std::pair<Weight, Weight> Make(int64_t rows, int64_t cols, uint32_t seed) {
    const test::Quantized q = test::Quantize(Random(rows * cols, seed, 0.1f), GetParam());
    readers_.push_back(MakeMemoryReader(q.values, "values"));
    const Reader& values = *readers_.back();
    readers_.push_back(MakeMemoryReader(q.scales, "scales"));
    auto qb = be_->LoadQuantizedWeights(GetParam(), rows * cols, values, 0, *readers_.back(), 0);
    EXPECT_TRUE(qb.ok()) << qb.status().message();
    owned_.push_back(std::move(qb).value());
    const Weight quantized{owned_.back().get(), GetParam(), 1, rows, cols};
    const std::vector<uint8_t> f = test::WeightBytes(q.dequantized, DType::kF32);
    readers_.push_back(MakeMemoryReader(f, "dequantized"));
    auto fb = be_->LoadWeights(*readers_.back(), 0, f.size());
    owned_.push_back(std::move(fb).value());
    return {quantized, Weight{owned_.back().get(), DType::kF32, 1, rows, cols}};
  }
  static void ExpectClose(const std::vector<float>& a, const std::vector<float>& b, const char* what) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5f + 1e-5f * std::fabs(b[i])) << what << " " << i;
  }

  std::unique_ptr<Backend> be_;
  std::vector<std::unique_ptr<Buffer>> owned_;
  std::vector<std::unique_ptr<Reader>> readers_;
};

TEST_P(QuantOpsTest, MatMulEqualsDequantized) {
  // Rows of 96 (three groups: a row may end mid-superblock) and 256; 1..9 input rows cover
  // every blocking of the CPU kernel.
  for (int64_t cols : {96, 256}) {
    auto [q, f] = Make(37, cols, static_cast<uint32_t>(cols));
    for (int rows : {1, 2, 3, 4, 5, 9}) {
      F32 x = Floats(Random(rows * cols, rows));
      F32 a = Floats(std::vector<float>(rows * 37)), b = Floats(std::vector<float>(rows * 37));
      be_->MatMul(a, x, q, rows);
      be_->MatMul(b, x, f, rows);
      ExpectClose(Read(a, rows * 37), Read(b, rows * 37), "matmul");
    }
  }
}

TEST_P(QuantOpsTest, RowOpsEqualDequantized) {
  auto [q, f] = Make(50, 160, 3);
  const std::vector<int32_t> ids = {49, 0, 17, 17, 3};
  F32 a = Floats(std::vector<float>(5 * 160)), b = Floats(std::vector<float>(5 * 160));
  be_->Embed(a, q, ids, 1.5f);
  be_->Embed(b, f, ids, 1.5f);
  ExpectClose(Read(a, 5 * 160), Read(b, 5 * 160), "embed");
  F32 idf = Floats({49, 0, 17, 17, 3});
  be_->EmbedIds(a, q, idf, 5, 0.5f);
  be_->EmbedIds(b, f, idf, 5, 0.5f);
  ExpectClose(Read(a, 5 * 160), Read(b, 5 * 160), "embed ids");
  F32 x = Floats(Random(160, 9));
  be_->GatherMatVec(a, x, q, ids);
  be_->GatherMatVec(b, x, f, ids);
  ExpectClose(Read(a, 5), Read(b, 5), "gather matvec");
  be_->GatherMatVecIds(a, x, q, idf, 5);
  be_->GatherMatVecIds(b, x, f, idf, 5);
  ExpectClose(Read(a, 5), Read(b, 5), "gather matvec ids");
}

// GateUp over q8 equals the dequantized matrices'; over q4 it takes its normed input rounded to 8
// bits an oct first (RoundOctsToInt8), and equals the dequantized matrices' on that input.
TEST_P(QuantOpsTest, GateUpEqualsDequantizedOnItsInput) {
  auto [qg, fg] = Make(37, 96, 5);
  auto [qu, fu] = Make(37, 96, 6);
  const std::vector<float> nw = Random(96, 8, 1.0f);
  readers_.push_back(MakeMemoryReader(test::WeightBytes(nw, DType::kF32), "norm"));
  auto nb = be_->LoadWeights(*readers_.back(), 0, 96 * 4);
  owned_.push_back(std::move(nb).value());
  const Weight norm{owned_.back().get(), DType::kF32, 1, 1, 96};
  for (int rows : {1, 3, 9}) {
    F32 x = Floats(Random(rows * 96, 20 + rows, 3.0f));
    F32 a = Floats(std::vector<float>(rows * 37)), b = Floats(std::vector<float>(rows * 37));
    F32 up = Floats(std::vector<float>(rows * 37)), h = Floats(std::vector<float>(rows * 96));
    be_->GateUp(a, up, h, x, norm, 1e-6f, qg, qu, rows);
    // The reference: the normed input, rounded for q4, through the dequantized matrices.
    be_->RmsNorm(h, x, norm, rows, 96, 1e-6f);
    std::vector<float> hv = Read(h, rows * 96);
    if (GetParam() == DType::kQ4) {
      for (int r = 0; r < rows; ++r) RoundOctsToInt8(hv.data() + r * 96, 96);
    }
    F32 hr = Floats(hv);
    be_->MatMul(b, hr, fg, rows);
    be_->MatMul(up, hr, fu, rows);
    be_->GeluMul(b, b, up, rows, 37, 37);
    ExpectClose(Read(a, rows * 37), Read(b, rows * 37), "gate up");
  }
}

TEST_P(QuantOpsTest, RoundedInputProductEqualsDequantizedOnItsRoundedInput) {
  auto [q, f] = Make(37, 96, 7);
  for (int rows : {1, 3, 9}) {
    const std::vector<float> xv = Random(rows * 96, 30 + rows, 2.0f);
    F32 x = Floats(xv), scratch = Floats(std::vector<float>(rows * 96));
    F32 a = Floats(std::vector<float>(rows * 37)), b = Floats(std::vector<float>(rows * 37));
    be_->MatMulRoundedInput(a, x, scratch, q, rows);
    EXPECT_EQ(Read(x, rows * 96), xv) << "the input is left as it was";
    std::vector<float> rounded = xv;
    for (int r = 0; r < rows; ++r) RoundOctsToInt8(rounded.data() + r * 96, 96);
    ASSERT_NE(rounded, xv);
    be_->MatMul(b, Floats(rounded), f, rows);
    ExpectClose(Read(a, rows * 37), Read(b, rows * 37), "rounded input");
  }
}

TEST_P(QuantOpsTest, BadSourcesAreErrors) {
  const std::vector<uint8_t> bytes(64, 0);
  auto values = MakeMemoryReader(bytes, "v.safetensors"), scales = MakeMemoryReader(bytes, "s.safetensors");
  auto odd = be_->LoadQuantizedWeights(GetParam(), 48, *values, 0, *scales, 0);
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.status().message().find("groups of 32"), std::string::npos) << odd.status().message();
  auto past = be_->LoadQuantizedWeights(GetParam(), 32 * 40, *values, 0, *scales, 0);
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.status().message().find("outside the file"), std::string::npos) << past.status().message();
  auto not_quant = be_->LoadQuantizedWeights(DType::kBF16, 32, *values, 0, *scales, 0);
  EXPECT_FALSE(not_quant.ok());
}

INSTANTIATE_TEST_SUITE_P(Schemes, QuantOpsTest, ::testing::Values(DType::kQ8, DType::kQ4),
                         [](const auto& info) { return std::string(DTypeName(info.param)); });

}  // namespace
}  // namespace g4
