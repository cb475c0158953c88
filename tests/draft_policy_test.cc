// The adaptive draft policy against a fake decoder whose round costs and acceptance are known:
// its choices, and the time it spends against plain decoding, are checked without a clock.
#include <random>
#include <set>
#include <utility>

#include <gtest/gtest.h>

#include "session/draft_policy.h"

namespace g4 {
namespace {

// A decoder with a plain step of `step` us, a round of k drafts of step + verify + k * draft us,
// and draft j (of a round whose drafts before it were accepted) accepted with alpha[j - 1]. The
// first time each kind of work runs it takes 20 times longer (kernels compiling); the runs named
// in `stalls` (k, and the run of that kind counted from 0) take `stall` longer, 500 steps (the
// thread descheduled).
struct FakeDecoder {
  double step = 10.0, verify = 2.0, draft = 3.0;
  std::vector<double> alpha;
  std::mt19937 rng{1234};
  std::vector<bool> warm = std::vector<bool>(16, false);
  std::vector<int> runs = std::vector<int>(16, 0);
  double compiling = 0.0;  // the time spent on first runs beyond their steady time
  std::set<std::pair<int, int>> stalls;
  double stall = 500.0 * step, stalled = 0.0;

  double Time(int k) {
    double t = k == 0 ? step : step + verify + draft * k;
    if (!warm[k]) {
      warm[k] = true;
      compiling += 19.0 * t;
      t *= 20.0;
    }
    if (stalls.count({k, runs[k]++})) {
      t += stall;
      stalled += stall;
    }
    return t;
  }
  int Accepted(int k) {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    int m = 0;
    while (m < k && u(rng) < alpha[std::min<size_t>(m, alpha.size() - 1)]) ++m;
    return m;
  }
};

struct Trace {
  double time = 0.0;
  int tokens = 0;
  std::vector<int> ks;      // the drafts of each round (0: a plain step)
  std::vector<int> starts;  // the tokens emitted before each
};

// Decodes `tokens` tokens as the policy chooses, calling `change` before each round.
Trace Decode(DraftPolicy& policy, FakeDecoder& d, int tokens, const std::function<void(int)>& change = {}) {
  Trace r;
  while (r.tokens < tokens) {
    if (change) change(r.tokens);
    const int k = policy.Next();
    EXPECT_GE(k, 0);
    EXPECT_LE(k, policy.max_drafts());
    if (k == 0) {
      const int n = std::min(policy.PlainSteps(), tokens - r.tokens);
      EXPECT_GE(n, 1);
      double t = 0.0;
      for (int i = 0; i < n; ++i) t += d.Time(0);
      policy.RecordPlain(n, t);
      r.time += t;
      for (int i = 0; i < n; ++i) r.starts.push_back(r.tokens + i);
      r.tokens += n;
      r.ks.insert(r.ks.end(), n, 0);
      continue;
    }
    const double t = d.Time(k);
    const int m = d.Accepted(k);
    policy.RecordRound(k, m, t);
    r.time += t;
    r.starts.push_back(r.tokens);
    r.tokens += m + 1;
    r.ks.push_back(k);
  }
  return r;
}

// A round recorded before the one before it is read asks NextAfterRound: with drafts never
// accepted (measuring, then probes among plain steps) and with drafts nearly always accepted
// (rounds, and a few plain steps now and then), it answers what Next() answers once that round
// is recorded, so no probe is followed by a second round and no measurement overshoots.
TEST(DraftPolicy, NextAfterRoundForetellsNext) {
  for (double alpha : {0.0, 0.9}) {
    DraftPolicy policy(2, DraftPolicyKind::kAdaptive);
    FakeDecoder d;
    d.alpha = {alpha};
    int rounds = 0, probes = 0;
    for (int tokens = 0; tokens < 600;) {
      const int k = policy.Next();
      if (k == 0) {
        const int n = policy.PlainSteps();
        double t = 0.0;
        for (int i = 0; i < n; ++i) t += d.Time(0);
        policy.RecordPlain(n, t);
        tokens += n;
        continue;
      }
      const int foretold = policy.NextAfterRound(k);
      const int m = d.Accepted(k);
      policy.RecordRound(k, m, d.Time(k));
      ASSERT_EQ(foretold, policy.Next()) << "alpha " << alpha << ", round " << rounds;
      ++rounds;
      if (alpha == 0.0 && rounds > 3) {
        ++probes;
        EXPECT_EQ(foretold, 0) << "a probe is one round";
      }
      tokens += m + 1;
    }
    EXPECT_GT(rounds, 3);
    if (alpha == 0.0) {
      EXPECT_GT(probes, 0);
    }
  }
}

TEST(DraftPolicy, FixedAlwaysDraftsTheMaximum) {
  DraftPolicy policy(3, DraftPolicyKind::kFixed);
  FakeDecoder d;
  d.alpha = {0.0};
  const Trace r = Decode(policy, d, 200);
  for (int k : r.ks) ASSERT_EQ(k, 3);
}

// Drafts that are never accepted: after measuring, plain steps with rare probes; the whole
// request within 4% of plain decoding's time (besides compiling what it ran), and the probes
// keep coming.
TEST(DraftPolicy, UselessDraftsCostAlmostNothing) {
  for (int max_k : {1, 2, 4, 8}) {
    DraftPolicy policy(max_k, DraftPolicyKind::kAdaptive);
    FakeDecoder d;
    d.alpha = {0.0};
    const int tokens = 1000;
    const Trace r = Decode(policy, d, tokens);
    EXPECT_LT(r.time - d.compiling, 1.04 * tokens * d.step) << "K=" << max_k;
    int rounds = 0, last = -1, widest = 0;
    for (size_t i = 0; i < r.ks.size(); ++i) {
      if (r.ks[i] == 0) continue;
      ++rounds;
      if (last >= 0) widest = std::max(widest, static_cast<int>(i) - last);
      last = static_cast<int>(i);
    }
    EXPECT_LT(rounds, 30) << "K=" << max_k;
    EXPECT_GT(last, static_cast<int>(r.ks.size()) - 2 * DraftPolicy::kMaxProbeInterval) << "probes stopped";
    EXPECT_LE(widest, DraftPolicy::kMaxProbeInterval + 1);
    EXPECT_LT(policy.ExpectedTokens(1), 1.1);
  }
}

// A stall in one of the first two timed samples of a step (plain steps 1 to 4 and 5 to 8), or in
// a later one, does not make useless drafts look worth it: plain steps, within 4% of plain
// decoding's time besides the stalls.
TEST(DraftPolicy, AStallDoesNotBringDraftsBack) {
  for (int first : {1, 5}) {
    DraftPolicy policy(2, DraftPolicyKind::kAdaptive);
    FakeDecoder d;
    d.alpha = {0.0};
    d.stalls = {{0, first}, {0, 400}};
    const int tokens = 1000;
    const Trace r = Decode(policy, d, tokens);
    EXPECT_EQ(d.stalled, 1000 * d.step);
    int rounds = 0;
    for (int k : r.ks) rounds += k > 0;
    EXPECT_LT(rounds, 30) << "first stall at step " << first;
    EXPECT_LT(r.time - d.compiling - d.stalled, 1.04 * tokens * d.step) << "first stall at step " << first;
  }
}

// A stall in one of the first two timed rounds of K drafts does not keep good drafts from K.
TEST(DraftPolicy, AStallDoesNotKeepGoodDraftsFromTheMaximum) {
  for (int first : {1, 2}) {
    DraftPolicy policy(4, DraftPolicyKind::kAdaptive);
    FakeDecoder d;
    d.alpha = {0.95};
    d.stalls = {{4, first}};
    const Trace r = Decode(policy, d, 1000);
    EXPECT_EQ(d.stalled, 500 * d.step);
    int full = 0, rounds = 0;
    for (int k : r.ks) {
      full += k == 4;
      rounds += k > 0;
    }
    EXPECT_GT(full, 0.95 * rounds) << "stall in round " << first;
  }
}

// A measurement of no time (a clock coarser than the work) is not counted: before any cost is
// known the policy drafts the maximum, and a known cost stays what was measured.
TEST(DraftPolicy, MeasurementsOfNoTimeAreNotCounted) {
  DraftPolicy policy(2, DraftPolicyKind::kAdaptive);
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(policy.Next(), 2);
    policy.RecordRound(2, 0, 0.0);
  }
  EXPECT_LT(policy.Cost(2), 0.0);
  for (int i = 0; i < 3; ++i) policy.RecordRound(2, 0, 30.0);
  ASSERT_EQ(policy.Next(), 0);
  for (int i = 0; i < 3; ++i) policy.RecordPlain(4, 40.0);
  policy.RecordPlain(4, 0.0);
  policy.RecordRound(2, 0, -5.0);
  EXPECT_EQ(policy.Cost(0), 10.0);
  EXPECT_EQ(policy.Cost(2), 30.0);
  EXPECT_EQ(policy.Next(), 0);
}

// Drafts that are nearly always accepted: full rounds, within 3% of the fixed policy's time
// (besides compiling).
TEST(DraftPolicy, GoodDraftsDraftTheMaximum) {
  DraftPolicy policy(4, DraftPolicyKind::kAdaptive), fixed(4, DraftPolicyKind::kFixed);
  FakeDecoder d, f;
  d.alpha = f.alpha = {0.95};
  const Trace r = Decode(policy, d, 1000), rf = Decode(fixed, f, 1000);
  int full = 0, rounds = 0, plain = 0;
  for (int k : r.ks) {
    full += k == 4;
    rounds += k > 0;
    plain += k == 0;
  }
  EXPECT_GT(full, 0.95 * rounds);
  // Plain steps only to measure one's cost: twice at first, then after 8, 16 and 32 rounds, then
  // every kMaxProbeInterval rounds.
  EXPECT_LE(plain, 1 + DraftPolicy::kStepSample * (5 + rounds / DraftPolicy::kMaxProbeInterval));
  EXPECT_LT(r.time - d.compiling, 1.03 * (rf.time - f.compiling));
  EXPECT_LT(rf.time - f.compiling, 0.6 * 1000 * d.step);  // drafting pays here
}

// A first draft often right and a second rarely: one draft a round, which the costs favour.
TEST(DraftPolicy, ChoosesTheCountThatPays) {
  DraftPolicy policy(3, DraftPolicyKind::kAdaptive);
  FakeDecoder d;
  d.alpha = {0.8, 0.1};
  const Trace r = Decode(policy, d, 2000);
  // Expected tokens per us: plain 1/10; k=1 1.8/15; k=2 1.88/18; k=3 1.888/21.
  int ones = 0, rounds = 0;
  for (size_t i = r.ks.size() / 2; i < r.ks.size(); ++i) {
    rounds += r.ks[i] > 0;
    ones += r.ks[i] == 1;
  }
  EXPECT_GT(ones, 0.8 * rounds);
  EXPECT_NEAR(policy.ExpectedTokens(1), 1.8, 0.3);  // over the last dozen rounds or so
  EXPECT_NEAR(policy.Cost(1), 15.0, 1e-9);
  EXPECT_NEAR(policy.Cost(0), 10.0, 1e-9);
}

// Drafts that turn good after a bad start: a probe notices, and drafting resumes.
TEST(DraftPolicy, ProbesNoticeBetterDrafts) {
  DraftPolicy policy(2, DraftPolicyKind::kAdaptive);
  FakeDecoder d;
  d.alpha = {0.0};
  const Trace r = Decode(policy, d, 1200, [&](int tokens) {
    if (tokens >= 600) d.alpha = {0.95};
  });
  // Two full rounds in a row after the change.
  int resumed_at = -1;
  for (size_t i = 0; i + 1 < r.ks.size() && resumed_at < 0; ++i) {
    if (r.starts[i] >= 600 && r.ks[i] == 2 && r.ks[i + 1] == 2) resumed_at = r.starts[i];
  }
  ASSERT_GE(resumed_at, 0);
  EXPECT_LT(resumed_at, 600 + 2 * DraftPolicy::kMaxProbeInterval);
}

TEST(DraftPolicy, ParsesItsNames) {
  EXPECT_EQ(ParseDraftPolicy("adaptive", "--draft-policy").value(), DraftPolicyKind::kAdaptive);
  EXPECT_EQ(ParseDraftPolicy("fixed", "--draft-policy").value(), DraftPolicyKind::kFixed);
  auto bad = ParseDraftPolicy("fast", "--draft-policy");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "--draft-policy: 'fast' is not one of adaptive, fixed");
  EXPECT_STREQ(DraftPolicyName(DraftPolicyKind::kFixed), "fixed");
}

}  // namespace
}  // namespace g4
