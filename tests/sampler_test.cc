// Sampling: greedy, seeded determinism, the top-k / top-p filters, draws that follow the
// distribution they claim and depend on (seed, index) alone.
#include <cmath>
#include <map>
#include <random>

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
  EXPECT_EQ(s.Sample(l, 0), 1);
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
  for (int i = 0; i < n; ++i) counts[s.Sample(l, i)]++;
  double chi2 = 0;
  for (size_t i = 0; i < l.size(); ++i) {
    const double e = p[i] * n;
    chi2 += (counts[i] - e) * (counts[i] - e) / e;
  }
  EXPECT_LT(chi2, 20.5);  // 4 degrees of freedom: p < 0.0004 for a correct sampler
}

// A draw is a function of (distribution, seed, index): the same whatever was drawn before it,
// another for another index or seed; and the noise is per candidate id, so a candidate whose
// probability grows while the others' shrink is never lost by it (what makes an assistant's
// draft, drawn with the target's noise from a distribution near the target's, agree with it).
TEST(Sampler, DrawsAreKeyedBySeedAndIndex) {
  std::vector<float> l(50);
  for (size_t i = 0; i < l.size(); ++i) l[i] = std::sin(static_cast<float>(i)) * 2.0f;
  const Sampler a(SamplerOptions{1.0f, 0, 1.0f, 5}), b(SamplerOptions{1.0f, 0, 1.0f, 6});
  std::vector<int> first;
  for (int i = 0; i < 64; ++i) first.push_back(a.Sample(l, i));
  for (int i = 63; i >= 0; --i) EXPECT_EQ(a.Sample(l, i), first[i]) << i;  // another order, the same draws
  int differ_index = 0, differ_seed = 0;
  for (int i = 0; i < 64; ++i) {
    differ_index += a.Sample(l, i) != first[0];
    differ_seed += b.Sample(l, i) != first[i];
  }
  EXPECT_GT(differ_index, 32);
  EXPECT_GT(differ_seed, 32);
  for (int i = 0; i < 64; ++i) {
    std::vector<float> up = l;
    up[first[i]] += 0.5f;
    EXPECT_EQ(a.Sample(up, i), first[i]) << i;
  }
}

TEST(Sampler, RejectsBadOptions) {
  EXPECT_FALSE(ValidateSamplerOptions(SamplerOptions{-1.0f, 0, 1.0f, 0}).ok());
  EXPECT_FALSE(ValidateSamplerOptions(SamplerOptions{1.0f, -2, 1.0f, 0}).ok());
  EXPECT_FALSE(ValidateSamplerOptions(SamplerOptions{1.0f, 0, 0.0f, 0}).ok());
  EXPECT_FALSE(ValidateSamplerOptions(SamplerOptions{1.0f, 0, 1.5f, 0}).ok());
}

// Drawing from the top_k + 1 best logits gives the token the whole row would, and declines when
// logits tie at the k-th place.
TEST(Sampler, SampleTopEqualsSampleOnTheWholeRow) {
  std::mt19937 gen(11);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<float> logits(300);
    for (float& l : logits) l = std::round(normal(gen) * 8.0f) / 8.0f;  // coarse: ties happen
    const SamplerOptions o{0.3f + 0.02f * (trial % 60), 1 + trial % 70, trial % 3 ? 0.9f : 1.0f,
                           static_cast<uint64_t>(trial)};
    Sampler whole(o), top(o);
    for (int draw = 0; draw < 5; ++draw) {
      const int t = top.SampleTop(TopK(logits, o.top_k + 1), draw);
      const int w = whole.Sample(logits, draw);
      if (t < 0) {
        // A tie at the k-th place: the caller reads the whole row.
        EXPECT_EQ(logits[TopK(logits, o.top_k + 1)[o.top_k].first], logits[TopK(logits, o.top_k)[o.top_k - 1].first]);
        EXPECT_EQ(top.Sample(logits, draw), w);
      } else {
        EXPECT_EQ(t, w) << "trial " << trial << " draw " << draw;
      }
    }
  }
  Sampler greedy(SamplerOptions{0.0f, 5, 1.0f, 0}), no_k(SamplerOptions{1.0f, 0, 1.0f, 0});
  EXPECT_EQ(greedy.SampleTop(TopK(std::vector<float>{1, 2, 3, 4, 5, 6, 7}, 6), 0), -1);
  EXPECT_EQ(no_k.SampleTop(TopK(std::vector<float>{1, 2, 3}, 1), 0), -1);
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

// Generation samples with top-k from the top_k + 1 logits the backend picks: the same tokens as
// drawing from whole rows.
TEST_F(GenerateTest, TopKSamplingEqualsSamplingWholeRows) {
  for (const SamplerOptions& so : {SamplerOptions{1.5f, 40, 0.95f, 3}, SamplerOptions{0.8f, 64, 1.0f, 9},
                                   SamplerOptions{2.0f, 127, 0.9f, 1}}) {
    GenerateOptions o;
    o.max_new_tokens = 16;
    o.stop_ids = {-1};
    o.sampler = so;
    auto fast = Generate(*model_, prompt_, o);
    ASSERT_TRUE(fast.ok()) << fast.status().message();
    // The same loop on whole rows of logits.
    auto cache = model_->NewCache(static_cast<int64_t>(prompt_.size()) + o.max_new_tokens);
    ASSERT_TRUE(cache.ok());
    Sampler sampler(so);
    std::vector<float> logits;
    std::vector<int> tokens;
    std::vector<int32_t> next(prompt_.begin(), prompt_.end());
    for (int i = 0; i < o.max_new_tokens; ++i) {
      ASSERT_TRUE(model_->Forward(next, **cache, 1, &logits).ok());
      tokens.push_back(sampler.Sample(logits, i));
      next = {tokens.back()};
    }
    EXPECT_EQ(fast->tokens, tokens) << "top_k " << so.top_k;
  }
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
