// Sampling: greedy, seeded determinism, the top-k / top-p filters, and draws that follow the
// distribution they claim.
#include <cmath>
#include <map>

#include <gtest/gtest.h>

#include "model/model.h"
#include "session/generator.h"
#include "session/sampler.h"
#include "tests/test_util.h"

namespace g4 {
namespace {

TEST(Sampler, GreedyPicksTheFirstMaximum) {
  const std::vector<float> l = {0.5f, 2.0f, -1.0f, 2.0f};
  Sampler s(SamplerOptions{});
  EXPECT_EQ(s.Sample(l), 1);
  EXPECT_EQ(Argmax(l), 1);
  auto top = TopK(l, 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].first, 1);
  EXPECT_EQ(top[1].first, 3);
  EXPECT_EQ(top[2].first, 0);
}

TEST(Sampler, FiltersFollowTemperatureTopKTopP) {
  const std::vector<float> l = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
  auto p = Sampler(SamplerOptions{1.0f, 0, 1.0f, 0}).Distribution(l);
  EXPECT_NEAR(p[0], 0.5, 1e-6);
  EXPECT_NEAR(p[3], 0.05, 1e-6);
  p = Sampler(SamplerOptions{1.0f, 2, 1.0f, 0}).Distribution(l);
  EXPECT_NEAR(p[0], 0.5 / 0.8, 1e-6);
  EXPECT_EQ(p[2], 0.0f);
  p = Sampler(SamplerOptions{1.0f, 0, 0.85f, 0}).Distribution(l);  // 0.5 + 0.3 < 0.85 <= 0.95
  EXPECT_NEAR(p[2], 0.15 / 0.95, 1e-6);
  EXPECT_EQ(p[3], 0.0f);
  p = Sampler(SamplerOptions{0.5f, 0, 1.0f, 0}).Distribution(l);  // temperature 0.5 squares the odds
  EXPECT_NEAR(p[0] / p[1], (0.5 / 0.3) * (0.5 / 0.3), 1e-4);
}

TEST(Sampler, DrawsFollowTheDistribution) {
  const std::vector<float> l = {0.0f, 1.0f, 2.0f, -1.0f, 0.5f};
  SamplerOptions o{1.0f, 0, 1.0f, 42};
  Sampler s(o);
  const auto p = s.Distribution(l);
  const int n = 200000;
  std::vector<int> counts(l.size(), 0);
  for (int i = 0; i < n; ++i) counts[s.Sample(l)]++;
  double chi2 = 0;
  for (size_t i = 0; i < l.size(); ++i) {
    const double e = p[i] * n;
    chi2 += (counts[i] - e) * (counts[i] - e) / e;
  }
  EXPECT_LT(chi2, 20.5);  // 4 degrees of freedom: p < 0.0004 for a correct sampler
}

TEST(Sampler, RejectsBadOptions) {
  EXPECT_FALSE(ValidateSamplerOptions(SamplerOptions{-1.0f, 0, 1.0f, 0}).ok());
  EXPECT_FALSE(ValidateSamplerOptions(SamplerOptions{1.0f, -2, 1.0f, 0}).ok());
  EXPECT_FALSE(ValidateSamplerOptions(SamplerOptions{1.0f, 0, 0.0f, 0}).ok());
  EXPECT_FALSE(ValidateSamplerOptions(SamplerOptions{1.0f, 0, 1.5f, 0}).ok());
}

class GenerateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    be_ = MakeCpuBackend();
    auto m = Model::Load(test::TestData("models/e2b_mini"), *be_);
    ASSERT_TRUE(m.ok()) << m.status().message();
    model_ = std::move(m).value();
  }
  std::unique_ptr<Backend> be_;
  std::unique_ptr<Model> model_;
  const std::vector<int32_t> prompt_ = {2, 105, 40, 77, 300};
};

TEST_F(GenerateTest, SameSeedSameTokensOtherSeedOthers) {
  GenerateOptions o;
  o.max_new_tokens = 20;
  o.sampler = SamplerOptions{4.0f, 50, 0.99f, 7};  // hot enough that seeds matter on this tiny model
  auto a = Generate(*model_, prompt_, o), b = Generate(*model_, prompt_, o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->tokens, b->tokens);
  o.sampler.seed = 8;
  auto c = Generate(*model_, prompt_, o);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(a->tokens, c->tokens);
}

TEST_F(GenerateTest, TopKOneIsGreedy) {
  GenerateOptions greedy;
  greedy.max_new_tokens = 12;
  GenerateOptions k1 = greedy;
  k1.sampler = SamplerOptions{0.7f, 1, 1.0f, 3};
  auto a = Generate(*model_, prompt_, greedy), b = Generate(*model_, prompt_, k1);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->tokens, b->tokens);
}

TEST_F(GenerateTest, StopsOnStopTokenAndBudget) {
  GenerateOptions o;
  o.max_new_tokens = 10;
  o.top_logits = 3;
  auto full = Generate(*model_, prompt_, o);
  ASSERT_TRUE(full.ok());
  ASSERT_EQ(full->tokens.size(), 10u);
  EXPECT_EQ(full->stop_reason, "length");
  ASSERT_EQ(full->top_logits.size(), 10u);
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(full->top_logits[i][0].first, full->tokens[i]);  // greedy: the best logit chose it
    EXPECT_GE(full->top_logits[i][0].second, full->top_logits[i][1].second);
  }
  // Make the 4th generated token a stop token: generation ends there, inclusive.
  o.stop_ids = {full->tokens[3]};
  auto stopped = Generate(*model_, prompt_, o);
  ASSERT_TRUE(stopped.ok());
  const auto first = std::find(full->tokens.begin(), full->tokens.end(), full->tokens[3]) - full->tokens.begin();
  EXPECT_EQ(stopped->tokens, std::vector<int>(full->tokens.begin(), full->tokens.begin() + first + 1));
  EXPECT_EQ(stopped->stop_reason, "eos");
  o.max_new_tokens = 0;
  auto none = Generate(*model_, prompt_, o);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->tokens.empty());
  EXPECT_FALSE(Generate(*model_, std::vector<int32_t>{}, o).ok());
}

}  // namespace
}  // namespace g4
