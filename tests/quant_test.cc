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
