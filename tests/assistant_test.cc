// The MTP assistant and speculative decoding against the reference (tools/reference/
// make_assistant_goldens.py): draft steps, round-by-round traces, greedy equal to plain greedy,
// sampling that keeps the target's distribution, loading checks.
#include <cmath>
#include <filesystem>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "model/assistant.h"
#include "session/generator.h"
#include "session/speculative.h"
#include "tests/test_util.h"

namespace g4 {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// (target dir, assistant dir) pairs: every assistant_* folder beside a golden target and, with
// `trained`, every `assistant` folder too (the trained demo pair: its goldens are checked, while
// the properties that hold for any pair are tested on the small reference pairs, which run fast).
std::vector<std::pair<std::string, std::string>> Pairs(bool trained) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& dir : test::GoldenModelDirs()) {
    std::vector<std::string> found;
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string name = e.path().filename().string();
      if (e.is_directory() && (name.rfind("assistant_", 0) == 0 || (trained && name == "assistant")) &&
          fs::exists(e.path() / "golden.json")) {
        found.push_back(e.path().string());
      }
    }
    std::sort(found.begin(), found.end());
    for (auto& a : found) out.emplace_back(dir, a);
  }
  return out;
}

class AssistantTest : public ::testing::TestWithParam<std::pair<std::string, std::string>> {
 protected:
  void SetUp() override {
    be_ = MakeCpuBackend();
    auto t = Model::Load(GetParam().first, *be_);
    ASSERT_TRUE(t.ok()) << t.status().message();
    target_ = std::move(t).value();
    auto a = Assistant::Load(GetParam().second, *be_, *target_);
    ASSERT_TRUE(a.ok()) << a.status().message();
    assistant_ = std::move(a).value();
    golden_ = test::ReadJson(GetParam().second + "/golden.json");
  }
  std::vector<float> Read(F32 t, size_t n) {
    std::vector<float> out(n);
    EXPECT_TRUE(be_->Download(*t.buffer, t.offset * 4, out.data(), n * 4).ok());
    return out;
  }
  static void ExpectNear(const std::vector<float>& got, const json& want, float tol, const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    int bad = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::fabs(got[i] - want[i].get<float>()) > tol && bad++ < 5) {
        ADD_FAILURE() << what << "[" << i << "] = " << got[i] << ", reference " << want[i].get<float>();
      }
    }
  }
  // round_ahead as GenerateOptions: -1 the backend's way, 1 each round recorded before the read
  // of the one before (on the CPU, where ops run as they are recorded, the same work in order).
  GenerationResult Speculate(const std::vector<int32_t>& prompt, int k, int max_new, std::vector<int> stops = {},
                             int round_ahead = -1) {
    GenerateOptions o;
    o.max_new_tokens = max_new;
    o.round_ahead = round_ahead;
    o.stop_ids = stops.empty() ? std::vector<int>{1, 106} : stops;
    auto r = GenerateSpeculative(*target_, *assistant_, prompt, o, k);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? std::move(r).value() : GenerationResult{};
  }
  GenerationResult Plain(const std::vector<int32_t>& prompt, int max_new, std::vector<int> stops = {}) {
    GenerateOptions o;
    o.max_new_tokens = max_new;
    o.stop_ids = stops.empty() ? std::vector<int>{1, 106} : stops;
    auto r = Generate(*target_, prompt, o);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? std::move(r).value() : GenerationResult{};
  }

  std::unique_ptr<Backend> be_;
  std::unique_ptr<Model> target_;
  std::unique_ptr<Assistant> assistant_;
  json golden_;
};

// The tests against the reference's numbers, for every pair.
class AssistantGoldenTest : public AssistantTest {};

TEST_P(AssistantGoldenTest, DraftStepsMatchReference) {
  const int H = target_->config().hidden;
  auto s1 = be_->Allocate(H * 4), s2 = be_->Allocate(H * 4), s3 = be_->Allocate(H * 4);
  ASSERT_TRUE(s1.ok() && s2.ok() && s3.ok());
  const F32 state{s1->get(), 0}, next{s2->get(), 0}, after{s3->get(), 0};
  for (const auto& step : golden_["steps"]) {
    const std::vector<int32_t> seq = step["sequence"].get<std::vector<int32_t>>();
    const int p = step["position"].get<int>();
    auto cache = target_->NewCache(p + 1, 0, assistant_->SlidingKeep());
    ASSERT_TRUE(cache.ok());
    std::vector<float> logits;
    ASSERT_TRUE(target_->Forward(std::span<const int32_t>(seq.data(), p), **cache, 1, &logits).ok());
    be_->Copy(state, target_->hidden_rows().At(static_cast<size_t>(p - 1) * H), H);
    std::vector<float> draft;
    ASSERT_TRUE(assistant_->Draft(step["token"].get<int>(), state, p, **cache, &draft, next).ok());
    const std::string where = "position " + std::to_string(p);
    ExpectNear(draft, step["logits"], 1e-3f, where + " logits");
    ExpectNear(Read(next, H), step["next_state"], 1e-3f, where + " next state");
    ASSERT_TRUE(assistant_->Draft(step["second_token"].get<int>(), next, p, **cache, &draft, after).ok());
    ExpectNear(draft, step["second_logits"], 1e-3f, where + " second logits");
  }
}

TEST_P(AssistantGoldenTest, RoundsMatchReference) {
  for (const auto& trace : golden_["traces"]) {
    const auto prompt = trace["prompt_ids"].get<std::vector<int32_t>>();
    for (auto [k, ahead] : {std::pair{2, -1}, {4, -1}, {2, 1}, {4, 1}}) {
      const json& ref = trace["k" + std::to_string(k)];
      GenerationResult r = Speculate(prompt, k, trace["max_new_tokens"].get<int>(), {}, ahead);
      ASSERT_EQ(r.tokens, ref["tokens"].get<std::vector<int>>()) << "K=" << k << " ahead " << ahead;
      // Rounds recorded ahead: all but those the budget leaves no room for after their predecessor.
      if (ahead == 1 && r.rounds.size() > 3) {
        EXPECT_GT(r.stats.rounds_ahead, 0) << "K=" << k;
      }
      if (ahead == -1) {
        EXPECT_EQ(r.stats.rounds_ahead, 0) << "K=" << k;
      }
      ASSERT_EQ(r.rounds.size(), ref["rounds"].size()) << "K=" << k;
      for (size_t i = 0; i < r.rounds.size(); ++i) {
        const json& want = ref["rounds"][i];
        const RoundTrace& got = r.rounds[i];
        EXPECT_EQ(got.position, want["position"].get<int64_t>()) << "K=" << k << " round " << i;
        EXPECT_EQ(got.seed, want["seed"].get<int>()) << "K=" << k << " round " << i;
        EXPECT_EQ(got.drafts, want["drafts"].get<std::vector<int>>()) << "K=" << k << " round " << i;
        EXPECT_EQ(got.accepted, want["accepted"].get<int>()) << "K=" << k << " round " << i;
        EXPECT_EQ(got.bonus, want["bonus"].get<int>()) << "K=" << k << " round " << i;
      }
      // The counters say the same as the rounds (the drafts emitted).
      int drafted = 0, accepted = 0;
      for (const auto& rd : r.rounds) drafted += static_cast<int>(rd.drafts.size());
      for (int e : test::EmittedDrafts(r)) accepted += e;
      EXPECT_EQ(r.stats.accepted_per_round, test::EmittedDrafts(r)) << "K=" << k;
      EXPECT_EQ(r.stats.rounds, static_cast<int>(r.rounds.size()));
      EXPECT_EQ(r.stats.drafted, drafted);
      EXPECT_EQ(r.stats.accepted, accepted);
      EXPECT_EQ(static_cast<int>(r.stats.accepted_per_round.size()), r.stats.rounds);
    }
  }
  // Distillation made the drafts worth testing: a fair share of them is accepted.
  EXPECT_GT(golden_["acceptance_k2"].get<double>(), 0.2);
}

TEST_P(AssistantTest, GreedySpeculationEqualsPlainGreedy) {
  std::mt19937 rng(std::hash<std::string>{}(GetParam().second) & 0xffff);
  const int vocab = target_->config().vocab;
  for (int trial = 0; trial < 12; ++trial) {
    std::vector<int32_t> prompt = {2};
    const int len = 1 + static_cast<int>(rng() % 24);
    for (int i = 1; i < len; ++i) prompt.push_back(3 + static_cast<int32_t>(rng() % (vocab - 3)));
    for (int max_new : {1, 2, 3, 7, 25}) {
      const GenerationResult plain = Plain(prompt, max_new);
      for (int k : {1, 2, 3, 5, 8}) {
        const GenerationResult spec = Speculate(prompt, k, max_new);
        ASSERT_EQ(spec.tokens, plain.tokens) << "prompt " << trial << " K=" << k << " budget " << max_new;
        EXPECT_EQ(spec.stop_reason, plain.stop_reason);
        const GenerationResult ahead = Speculate(prompt, k, max_new, {}, 1);
        ASSERT_EQ(ahead.tokens, plain.tokens) << "rounds ahead, prompt " << trial << " K=" << k << " budget " << max_new;
        EXPECT_EQ(ahead.stop_reason, plain.stop_reason);
        for (const RoundTrace& rd : spec.rounds) EXPECT_LE(static_cast<int>(rd.drafts.size()), k);
      }
    }
    // A stop token inside accepted drafts ends generation there.
    const GenerationResult longer = Plain(prompt, 20);
    if (longer.tokens.size() > 4) {
      const std::vector<int> stops = {longer.tokens[3]};
      const GenerationResult plain = Plain(prompt, 20, stops);
      for (int k : {2, 4}) {
        EXPECT_EQ(Speculate(prompt, k, 20, stops).tokens, plain.tokens);
        EXPECT_EQ(Speculate(prompt, k, 20, stops, 1).tokens, plain.tokens);
      }
    }
  }
}

// An interruption asked for after the n-th token ends plain decoding right there, and
// speculative decoding at the end of that round: both a prefix of the uninterrupted tokens.
TEST_P(AssistantTest, InterruptionEndsGenerationEarly) {
  const std::vector<int32_t> prompt = {2, 10, 20, 30};
  const GenerationResult full = Plain(prompt, 24, {-1});  // no stop token: the whole budget
  ASSERT_EQ(full.tokens.size(), 24u);
  GenerateOptions o;
  o.max_new_tokens = 24;
  o.stop_ids = {-1};
  int seen = 0;
  auto count = [&](int) { ++seen; };
  o.interrupted = [&] { return seen >= 5; };
  for (int ahead : {0, 2}) {  // plain decoding one step at a time, and with steps recorded ahead
    seen = 0;
    o.decode_ahead = ahead;
    auto plain = Generate(*target_, prompt, o, count);
    ASSERT_TRUE(plain.ok()) << plain.status().message();
    EXPECT_EQ(plain->stop_reason, "interrupted");
    EXPECT_EQ(plain->tokens, std::vector<int>(full.tokens.begin(), full.tokens.begin() + 5)) << "ahead " << ahead;
  }
  seen = 0;
  auto spec = GenerateSpeculative(*target_, *assistant_, prompt, o, 3, count);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->stop_reason, "interrupted");
  ASSERT_GE(spec->tokens.size(), 5u);
  EXPECT_LE(spec->tokens.size(), 5u + 3u);
  EXPECT_EQ(spec->tokens, std::vector<int>(full.tokens.begin(), full.tokens.begin() + spec->tokens.size()));
}

TEST_P(AssistantTest, PlainDecodingHasZeroCounters) {
  const GenerationResult plain = Plain({2, 10, 20}, 5);
  EXPECT_EQ(plain.stats.rounds, 0);
  EXPECT_EQ(plain.stats.drafted, 0);
  EXPECT_EQ(plain.stats.accepted, 0);
  EXPECT_EQ(plain.stats.acceptance_rate(), 0.0);
}

std::string PairName(const ::testing::TestParamInfo<std::pair<std::string, std::string>>& info) {
  std::string n = fs::path(info.param.first).filename().string() + "_" + fs::path(info.param.second).filename().string();
  for (char& ch : n) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return n + "_" + std::to_string(info.index);
}

INSTANTIATE_TEST_SUITE_P(Pairs, AssistantGoldenTest, ::testing::ValuesIn(Pairs(true)), PairName);
INSTANTIATE_TEST_SUITE_P(Pairs, AssistantTest, ::testing::ValuesIn(Pairs(false)), PairName);

TEST(AssistantLoad, MismatchIsAnErrorAndTheTargetStaysUsable) {
  auto be = MakeCpuBackend();
  auto target = Model::Load(test::TestData("models/ple_shared"), *be);
  ASSERT_TRUE(target.ok());
  // A head dim other than the donor's: ple_shared's full layers have head_dim 32.
  const std::string dir = test::MakeTempDir();
  test::CopyCheckpoint(test::TestData("models/dense/assistant_plain"), dir);
  std::string config = test::ReadFile(dir + "/config.json");
  config.replace(config.find("\"head_dim\": 32"), 15, "\"head_dim\": 64");
  test::WriteFile(dir + "/config.json", config);
  auto a = Assistant::Load(dir, *be, **target);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("cannot attend over the target's donor layer 2"), std::string::npos)
      << a.status().message();
  fs::remove_all(dir);
  auto b = Assistant::Load(test::TestData("models/e2b_mini/assistant_centroid"), *be, **target);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("backbone_hidden_size 128 differs from the target's hidden size 64"), std::string::npos)
      << b.status().message();
  GenerateOptions o;
  o.max_new_tokens = 3;
  auto r = Generate(**target, std::vector<int32_t>{2, 7}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tokens.size(), 3u);
  auto good = Assistant::Load(test::TestData("models/ple_shared/assistant_centroid"), *be, **target);
  EXPECT_TRUE(good.ok()) << good.status().message();
}

TEST(AssistantLoad, BadTokenOrderingIsNamed) {
  const std::string dir = test::MakeTempDir();
  const std::string src = test::TestData("models/e2b_mini/assistant_centroid");
  test::CopyCheckpoint(src, dir, [](test::TensorData& t) {
    if (t.name == "masked_embedding.token_ordering") std::memcpy(t.bytes.data(), t.bytes.data() + 8, 8);  // a duplicate
    return true;
  });
  auto be = MakeCpuBackend();
  auto target = Model::Load(test::TestData("models/e2b_mini"), *be);
  ASSERT_TRUE(target.ok());
  auto a = Assistant::Load(dir, *be, **target);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("token_ordering is not a permutation"), std::string::npos) << a.status().message();
  fs::remove_all(dir);
}

TEST(AssistantLoad, CentroidTensorsAConfigWithoutThemLeavesAreAnError) {
  // use_ordered_embeddings off: the checkpoint's centroids and ordering would go unused.
  const std::string dir = test::MakeTempDir();
  test::CopyCheckpoint(test::TestData("models/e2b_mini/assistant_centroid"), dir);
  nlohmann::json c = nlohmann::json::parse(test::ReadFile(dir + "/config.json"));
  c["use_ordered_embeddings"] = false;
  test::WriteFile(dir + "/config.json", c.dump());
  auto be = MakeCpuBackend();
  auto target = Model::Load(test::TestData("models/e2b_mini"), *be);
  ASSERT_TRUE(target.ok());
  auto a = Assistant::Load(dir, *be, **target);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("is not part of the model its config.json describes"), std::string::npos)
      << a.status().message();
  EXPECT_NE(a.status().message().find("masked_embedding."), std::string::npos) << a.status().message();
  fs::remove_all(dir);
}

// Speculative sampling must keep the target's distribution. The second generated token's
// distribution is computed exactly from the target (sum over the first token), then compared with
// many seeded speculative runs, under each rule for sampled drafts; a biased acceptance rule fails
// this test.
TEST(SpeculativeSampling, FollowsTheTargetDistribution) {
  auto be = MakeCpuBackend();
  auto target = Model::Load(test::TestData("models/dense"), *be);
  ASSERT_TRUE(target.ok());
  auto assistant = Assistant::Load(test::TestData("models/dense/assistant_plain"), *be, **target);
  ASSERT_TRUE(assistant.ok());
  const std::vector<int32_t> prompt = {2, 40, 41, 42};
  SamplerOptions so{1.0f, 8, 1.0f, 0};  // top-8 keeps the support small enough to test
  const Sampler shaper(so);
  const int V = (*target)->config().vocab;
  // Exact: P(t2) = sum_t1 P(t1) P(t2 | t1).
  auto next_dist = [&](const std::vector<int32_t>& seq) {
    auto cache = (*target)->NewCache(static_cast<int64_t>(seq.size()));
    std::vector<float> logits;
    EXPECT_TRUE((*target)->Forward(seq, **cache, 1, &logits).ok());
    return shaper.Distribution(logits);
  };
  const auto p1 = next_dist(prompt);
  std::vector<double> p2(V, 0.0);
  for (int t1 = 0; t1 < V; ++t1) {
    if (p1[t1] <= 0.0f) continue;
    std::vector<int32_t> seq = prompt;
    seq.push_back(t1);
    const auto d = next_dist(seq);
    for (int t = 0; t < V; ++t) p2[t] += p1[t1] * d[t];
  }
  // Both rules for sampled drafts: the repeatable one (a draft accepted when it is the target's
  // own draw) and the classic one (accepted with probability min(1, p/q)).
  for (bool repeatable : {true, false}) {
    SCOPED_TRACE(repeatable ? "repeatable" : "classic");
    const int runs = 10000;
    std::vector<int> counts(V, 0);
    GenerateOptions o;
    o.max_new_tokens = 3;
    o.stop_ids = {-1};
    o.sampler = so;
    o.sampler.repeatable = repeatable;
    int accepted = 0, drafted = 0;
    for (int s = 0; s < runs; ++s) {
      o.sampler.seed = 1000 + s;
      auto r = GenerateSpeculative(**target, **assistant, prompt, o, 2);
      ASSERT_TRUE(r.ok()) << r.status().message();
      counts[r->tokens[1]]++;
      accepted += r->stats.accepted;
      drafted += r->stats.drafted;
    }
    // Chi-square over the tokens with enough expected mass; the rest pooled.
    double chi2 = 0.0, pooled_e = 0.0, pooled_o = 0.0;
    int bins = 0;
    for (int t = 0; t < V; ++t) {
      const double e = p2[t] * runs;
      if (e >= 10.0) {
        chi2 += (counts[t] - e) * (counts[t] - e) / e;
        ++bins;
      } else {
        pooled_e += e;
        pooled_o += counts[t];
      }
    }
    if (pooled_e > 0) {
      chi2 += (pooled_o - pooled_e) * (pooled_o - pooled_e) / pooled_e;
      ++bins;
    }
    ASSERT_GE(bins, 4) << "the distribution is too peaked to test";
    // 99.99th percentile of chi-square with (bins - 1) degrees of freedom, Wilson-Hilferty.
    const double df = bins - 1, z = 3.719;
    const double limit = df * std::pow(1.0 - 2.0 / (9.0 * df) + z * std::sqrt(2.0 / (9.0 * df)), 3.0);
    EXPECT_LT(chi2, limit) << bins << " bins";
    // The drafts took part: some accepted, some rejected.
    EXPECT_GT(accepted, drafted / 40);
    EXPECT_LT(accepted, drafted);
  }
}

}  // namespace
}  // namespace g4
