// Speculative decoding with the adaptive draft policy, on the CPU: greedy and sampled output equal
// to plain decoding's whatever the policy chooses, counters that say which K each round used, and drafts that
// are never accepted given up for plain steps.
#include <time.h>

#include <filesystem>
#include <numeric>

#include <gtest/gtest.h>

#include "model/assistant.h"
#include "session/generator.h"
#include "session/speculative.h"
#include "tests/test_util.h"

namespace g4 {
namespace {

namespace fs = std::filesystem;

// This thread's CPU time: the cost of the work, whatever else the machine runs (the backend
// below runs on this thread alone).
int64_t ThreadCpuMicros() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

class AdaptiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    be_ = MakeCpuBackend(1);
    auto t = Model::Load(test::TestData("models/dense"), *be_);
    ASSERT_TRUE(t.ok());
    target_ = std::move(t).value();
    auto good = Assistant::Load(test::TestData("models/dense/assistant_plain"), *be_, *target_);
    ASSERT_TRUE(good.ok());
    good_ = std::move(good).value();
    // The same assistant with a zero head: every draft is token 0, which the target never picks.
    useless_dir_ = test::MakeTempDir();
    test::CopyCheckpoint(test::TestData("models/dense/assistant_plain"), useless_dir_, [](test::TensorData& t) {
      if (t.name == "model.embed_tokens.weight") std::fill(t.bytes.begin(), t.bytes.end(), 0);
      return true;
    });
    auto useless = Assistant::Load(useless_dir_, *be_, *target_);
    ASSERT_TRUE(useless.ok());
    useless_ = std::move(useless).value();
  }
  void TearDown() override { fs::remove_all(useless_dir_); }

  static void ExpectConsistentCounters(const GenerationResult& r, int max_k) {
    const GenerationStats& st = r.stats;
    ASSERT_EQ(static_cast<int>(st.rounds_per_k.size()), max_k + 1);
    EXPECT_EQ(std::accumulate(st.rounds_per_k.begin(), st.rounds_per_k.end(), 0), st.rounds);
    ASSERT_EQ(static_cast<int>(st.drafted_per_round.size()), st.rounds);
    ASSERT_EQ(static_cast<int>(st.accepted_per_round.size()), st.rounds);
    ASSERT_EQ(static_cast<int>(r.rounds.size()), st.rounds);
    EXPECT_EQ(std::accumulate(st.drafted_per_round.begin(), st.drafted_per_round.end(), 0), st.drafted);
    std::vector<int> per_k(max_k + 1, 0);
    for (int i = 0; i < st.rounds; ++i) {
      const int k = st.drafted_per_round[i];
      ASSERT_LE(k, max_k);
      EXPECT_LE(st.accepted_per_round[i], k);
      EXPECT_EQ(static_cast<int>(r.rounds[i].drafts.size()), k);
      per_k[k]++;
    }
    EXPECT_EQ(per_k, st.rounds_per_k);
    // Every token but the prefill's comes from a round: its accepted drafts and its bonus, but
    // for a last round that ends on a stop token among its drafts (no bonus).
    // (If the stop token were the bonus, a counted draft equal to it would itself have been a
    // stop token and ended generation first.)
    const bool ends_on_draft = r.stop_reason == "eos" && st.rounds > 0 && st.accepted_per_round.back() > 0 &&
                               r.rounds.back().drafts[st.accepted_per_round.back() - 1] == r.tokens.back();
    EXPECT_EQ(st.accepted + st.rounds - (ends_on_draft ? 1 : 0), st.generated_tokens - 1);
  }

  std::unique_ptr<Backend> be_;
  std::unique_ptr<Model> target_;
  std::unique_ptr<Assistant> good_, useless_;
  std::string useless_dir_;
};

TEST_F(AdaptiveTest, GreedyOutputEqualsPlainGreedy) {
  const std::vector<std::vector<int32_t>> prompts = {{2, 40, 41, 42}, {2, 9, 100, 7, 31, 250, 18}};
  for (const auto& prompt : prompts) {
    GenerateOptions o;
    o.max_new_tokens = 60;
    o.stop_ids = {-1};
    auto plain = Generate(*target_, prompt, o);
    ASSERT_TRUE(plain.ok());
    for (Assistant* as : {good_.get(), useless_.get()}) {
      for (int k : {1, 2, 4}) {
        auto r = GenerateSpeculative(*target_, *as, prompt, o, SpeculativeOptions{k, DraftPolicyKind::kAdaptive});
        ASSERT_TRUE(r.ok()) << r.status().message();
        EXPECT_EQ(r->tokens, plain->tokens) << "K=" << k;
        ExpectConsistentCounters(*r, k);
        // Rounds recorded before the read of the one before (the CPU runs them as recorded): the
        // same tokens, through plain steps and rounds as the policy turns between them.
        GenerateOptions ahead = o;
        ahead.round_ahead = 1;
        auto a = GenerateSpeculative(*target_, *as, prompt, ahead, SpeculativeOptions{k, DraftPolicyKind::kAdaptive});
        ASSERT_TRUE(a.ok()) << a.status().message();
        EXPECT_EQ(a->tokens, plain->tokens) << "rounds ahead, K=" << k;
        ExpectConsistentCounters(*a, k);
      }
    }
    // Logits recorded: the rounds run off the backend, the plain steps one at a time.
    o.top_logits = 2;
    auto with_logits = GenerateSpeculative(*target_, *useless_, prompt, o, SpeculativeOptions{2, DraftPolicyKind::kAdaptive});
    ASSERT_TRUE(with_logits.ok());
    EXPECT_EQ(with_logits->tokens, plain->tokens);
    EXPECT_EQ(with_logits->top_logits.size(), plain->tokens.size());
    ExpectConsistentCounters(*with_logits, 2);
  }
}

// Sampling: rounds of any K and plain steps, whatever the policy chooses, give the tokens plain
// sampling gives for the seed (each token's draw is keyed by its index, and a draft is accepted
// when it is the target's draw), over seeds, temperatures, K and both policies.
TEST_F(AdaptiveTest, SampledOutputEqualsPlainSampling) {
  const std::vector<int32_t> prompt = {2, 40, 41, 42};
  GenerateOptions o;
  o.max_new_tokens = 40;
  o.stop_ids = {-1};
  int accepted = 0, drafted = 0;
  for (const SamplerOptions& so : {SamplerOptions{1.0f, 8, 1.0f, 3}, SamplerOptions{0.7f, 0, 0.9f, 11},
                                   SamplerOptions{1.5f, 40, 1.0f, 12345}}) {
    o.sampler = so;
    auto plain = Generate(*target_, prompt, o);
    ASSERT_TRUE(plain.ok()) << plain.status().message();
    for (Assistant* as : {good_.get(), useless_.get()}) {
      for (int k : {1, 2, 3}) {
        for (DraftPolicyKind policy : {DraftPolicyKind::kFixed, DraftPolicyKind::kAdaptive}) {
          SCOPED_TRACE("seed " + std::to_string(so.seed) + " k " + std::to_string(k) +
                       (as == good_.get() ? " trained" : " useless") + (policy == DraftPolicyKind::kFixed ? " fixed" : " adaptive"));
          auto r = GenerateSpeculative(*target_, *as, prompt, o, SpeculativeOptions{k, policy});
          ASSERT_TRUE(r.ok()) << r.status().message();
          EXPECT_EQ(r->tokens, plain->tokens);
          ExpectConsistentCounters(*r, k);
          if (as == good_.get()) {
            accepted += r->stats.accepted;
            drafted += r->stats.drafted;
          }
        }
      }
    }
  }
  // Drafts took part: the assistant's, drawn with the target's noise, are accepted now and then
  // (it is not trained on this random target).
  EXPECT_GE(accepted, 10);
  EXPECT_GT(drafted, 100);
}

// The classic rule (a request without a seed): rounds of any K and plain steps, consistent
// counters, and the same tokens again for the same seed and the same rounds.
TEST_F(AdaptiveTest, ClassicSamplingRunsEveryKindOfRound) {
  GenerateOptions o;
  o.max_new_tokens = 80;
  o.stop_ids = {-1};
  o.sampler = SamplerOptions{1.0f, 8, 1.0f, 3};
  o.sampler.repeatable = false;
  for (Assistant* as : {good_.get(), useless_.get()}) {
    auto r = GenerateSpeculative(*target_, *as, std::vector<int32_t>{2, 40, 41, 42}, o,
                                 SpeculativeOptions{2, DraftPolicyKind::kAdaptive});
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->tokens.size(), 80u);
    ExpectConsistentCounters(*r, 2);
    // Under the fixed policy the rounds, and so the tokens, repeat.
    auto fixed = GenerateSpeculative(*target_, *as, std::vector<int32_t>{2, 40, 41, 42}, o, 2);
    auto again = GenerateSpeculative(*target_, *as, std::vector<int32_t>{2, 40, 41, 42}, o, 2);
    ASSERT_TRUE(again.ok() && fixed.ok());
    EXPECT_EQ(again->tokens, fixed->tokens);
    EXPECT_EQ(again->stats.accepted_per_round, fixed->stats.accepted_per_round);
  }
}

// Drafts never accepted: after the first rounds measure that, plain steps; now and then a probe.
TEST_F(AdaptiveTest, UselessDraftsGiveWayToPlainSteps) {
  GenerateOptions o;
  o.max_new_tokens = 200;
  o.stop_ids = {-1};
  auto r = GenerateSpeculative(*target_, *useless_, std::vector<int32_t>{2, 40, 41, 42}, o,
                               SpeculativeOptions{2, DraftPolicyKind::kAdaptive, ThreadCpuMicros});
  ASSERT_TRUE(r.ok());
  ExpectConsistentCounters(*r, 2);
  // Costs come from this thread's CPU time, so no other load makes a step look dear: a round of
  // two drafts and a 3-row verification costs more than a step by far; plain steps must make up
  // most of the rounds, and a probe must come late on.
  EXPECT_GT(r->stats.rounds_per_k[0], 0.8 * r->stats.rounds);
  int last_probe = -1;
  for (int i = 0; i < r->stats.rounds; ++i) {
    if (r->stats.drafted_per_round[i] > 0) last_probe = i;
  }
  EXPECT_GT(last_probe, r->stats.rounds / 2);
  // The fixed policy drafts every round.
  auto fixed = GenerateSpeculative(*target_, *useless_, std::vector<int32_t>{2, 40, 41, 42}, o, 2);
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(fixed->tokens, r->tokens);
  EXPECT_EQ(fixed->stats.rounds_per_k[0], 1);  // the last, with room for no draft
  EXPECT_GE(fixed->stats.rounds_per_k[2], fixed->stats.rounds - 2);
}

// The policy reads its costs from the clock it is given: one that does not move measures nothing,
// and the policy drafts K every round, as before any cost is known (on the wall clock it gives
// useless drafts up, above).
TEST_F(AdaptiveTest, CostsComeFromTheGivenClock) {
  GenerateOptions o;
  o.max_new_tokens = 60;
  o.stop_ids = {-1};
  auto r = GenerateSpeculative(*target_, *useless_, std::vector<int32_t>{2, 40, 41, 42}, o,
                               SpeculativeOptions{2, DraftPolicyKind::kAdaptive, [] { return int64_t{7}; }});
  auto fixed = GenerateSpeculative(*target_, *useless_, std::vector<int32_t>{2, 40, 41, 42}, o, 2);
  ASSERT_TRUE(r.ok() && fixed.ok());
  ExpectConsistentCounters(*r, 2);
  EXPECT_EQ(r->stats.drafted_per_round, fixed->stats.drafted_per_round);
  EXPECT_GE(r->stats.rounds_per_k[2], r->stats.rounds - 2);
}

// The first rounds draft the maximum (they measure acceptance and cost), as the fixed policy
// does: on a prompt the assistant was distilled on, with drafts accepted.
TEST_F(AdaptiveTest, FirstRoundsDraftTheMaximum) {
  GenerateOptions o;
  o.max_new_tokens = 20;
  o.stop_ids = {1, 106};
  const std::vector<int32_t> prompt = {2, 128, 253};
  auto r = GenerateSpeculative(*target_, *good_, prompt, o, SpeculativeOptions{2, DraftPolicyKind::kAdaptive});
  auto fixed = GenerateSpeculative(*target_, *good_, prompt, o, 2);
  ASSERT_TRUE(r.ok() && fixed.ok());
  ExpectConsistentCounters(*r, 2);
  ASSERT_GE(r->rounds.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(r->rounds[i].drafts, fixed->rounds[i].drafts);
    EXPECT_EQ(r->rounds[i].accepted, fixed->rounds[i].accepted);
  }
  EXPECT_GT(r->rounds[0].accepted + r->rounds[1].accepted, 0);
  EXPECT_EQ(r->tokens, fixed->tokens);
}

}  // namespace
}  // namespace g4
