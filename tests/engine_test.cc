// The engine every front end drives (session/engine.h) and the limits table it checks with
// (session/limits.h): loading that fails closed, unload and reset back to a clean state, the
// table's defaults and ranges, seeded and unseeded sampling.
#include <set>

#include <gtest/gtest.h>

#include "session/engine.h"
#include "session/limits.h"
#include "tests/test_util.h"

namespace g4 {
namespace {

BackendFactory Cpu() {
  return [](const BackendNeeds&) -> Result<std::unique_ptr<Backend>> { return MakeCpuBackend(1); };
}

std::unique_ptr<Engine> Loaded(const std::string& assistant = "", int64_t context = 256) {
  EngineOptions o;
  o.target = test::TestData("models/e2b_mini");
  o.assistant = assistant;
  auto e = Engine::Open(o);
  EXPECT_TRUE(e.ok()) << e.status().message();
  Status s = (*e)->Reserve(context, Cpu());
  EXPECT_TRUE(s.ok()) << s.message();
  s = (*e)->Load();
  EXPECT_TRUE(s.ok()) << s.message();
  return std::move(e).value();
}

std::vector<int> Tokens(Engine& e, EngineRequest r) {
  auto a = e.Generate(r);
  EXPECT_TRUE(a.ok()) << a.status().message();
  return a.ok() ? a->result.tokens : std::vector<int>{};
}

EngineRequest GoldenRequest(const nlohmann::json& p) {
  EngineRequest r;
  r.prompt = p["prompt_ids"].get<std::vector<int32_t>>();
  r.max_tokens = static_cast<int64_t>(p["greedy_tokens"].size());
  r.temperature = 0.0;
  return r;
}

TEST(Engine, GreedyGenerationEqualsTheGoldenPlainAndSpeculative) {
  const auto golden = test::ReadJson(test::TestData("models/e2b_mini/golden.json"));
  const auto& p = golden["prompts"][2];
  auto plain = Loaded();
  EXPECT_EQ(Tokens(*plain, GoldenRequest(p)), p["greedy_tokens"].get<std::vector<int>>());
  auto spec = Loaded(test::TestData("models/e2b_mini/assistant_centroid"));
  auto a = spec->Generate(GoldenRequest(p));
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_TRUE(a->speculative);  // on by default with an assistant
  EXPECT_GT(a->result.stats.rounds, 0);
  EXPECT_EQ(a->result.tokens, p["greedy_tokens"].get<std::vector<int>>());
}

// The draft policy reaches every round: adaptive (the default) drafts K in its first three rounds
// (one to warm up, two to measure them), then takes a plain step (a round of 0 drafts) to measure
// that; fixed drafts min(K, tokens left - 1) in every round. A request may name the other policy.
TEST(Engine, TheDraftPolicyChoosesEachRoundsDrafts) {
  const auto golden = test::ReadJson(test::TestData("models/e2b_mini/golden.json"));
  const auto& p = golden["prompts"][2];
  const auto expected = p["greedy_tokens"].get<std::vector<int>>();
  ASSERT_GE(expected.size(), 12u);
  auto expect_fixed = [&](const GenerationResult& r) {
    EXPECT_EQ(r.tokens, expected);
    const std::vector<int>& drafts = r.stats.drafted_per_round;
    ASSERT_EQ(r.stats.accepted_per_round.size(), drafts.size());
    int made = 1;  // the prefill's token
    for (size_t i = 0; i < drafts.size(); ++i) {
      const int left = static_cast<int>(expected.size()) - made;
      EXPECT_EQ(drafts[i], std::min(2, left - 1)) << "round " << i;
      made += r.stats.accepted_per_round[i] + 1;
    }
    EXPECT_EQ(made, static_cast<int>(expected.size()));
  };
  auto adaptive = Loaded(test::TestData("models/e2b_mini/assistant_centroid"));
  EXPECT_EQ(adaptive->draft_policy(), DraftPolicyKind::kAdaptive);
  EXPECT_EQ(adaptive->Info()["draft_policy"], "adaptive");
  auto a = adaptive->Generate(GoldenRequest(p));
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->result.tokens, expected);
  const std::vector<int>& drafts = a->result.stats.drafted_per_round;
  ASSERT_GT(drafts.size(), 4u);
  EXPECT_EQ(drafts[0], 2);
  EXPECT_EQ(drafts[1], 2);
  EXPECT_EQ(drafts[2], 2);
  EXPECT_EQ(drafts[3], 0);
  EngineRequest fixed_request = GoldenRequest(p);
  fixed_request.draft_policy = DraftPolicyKind::kFixed;
  a = adaptive->Generate(fixed_request);
  ASSERT_TRUE(a.ok()) << a.status().message();
  expect_fixed(a->result);

  EngineOptions o;
  o.target = test::TestData("models/e2b_mini");
  o.assistant = test::TestData("models/e2b_mini/assistant_centroid");
  o.draft_policy = DraftPolicyKind::kFixed;
  auto fixed = Engine::Open(o);
  ASSERT_TRUE(fixed.ok()) << fixed.status().message();
  ASSERT_TRUE((*fixed)->Reserve(256, Cpu()).ok());
  ASSERT_TRUE((*fixed)->Load().ok());
  EXPECT_EQ((*fixed)->Info()["draft_policy"], "fixed");
  a = (*fixed)->Generate(GoldenRequest(p));
  ASSERT_TRUE(a.ok()) << a.status().message();
  expect_fixed(a->result);
}

TEST(Engine, LoadFailsClosedAndUnloadAndResetGoBackToACleanState) {
  EngineOptions o;
  o.target = test::TestData("models/e2b_mini");
  o.assistant = test::TestData("models/dense");  // not an assistant
  auto e = Engine::Open(o);
  ASSERT_TRUE(e.ok()) << e.status().message();
  ASSERT_TRUE((*e)->Reserve(64, Cpu()).ok());
  Status s = (*e)->Load();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("assistant: ", 0), 0u) << s.message();
  // Neither the assistant nor the target it was loaded against stays.
  EXPECT_FALSE((*e)->loaded());
  EXPECT_EQ((*e)->model(), nullptr);
  EXPECT_EQ((*e)->assistant(), nullptr);
  EngineRequest r;
  r.prompt = {2, 105};
  auto g = (*e)->Generate(r);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("no model is loaded"), std::string::npos) << g.status().message();

  const auto golden = test::ReadJson(test::TestData("models/e2b_mini/golden.json"));
  const auto& p = golden["prompts"][1];
  const auto want = p["greedy_tokens"].get<std::vector<int>>();
  auto ok = Loaded();
  EXPECT_EQ(Tokens(*ok, GoldenRequest(p)), want);
  ok->Unload();
  EXPECT_FALSE(ok->loaded());
  EXPECT_FALSE(ok->Generate(GoldenRequest(p)).ok());
  ASSERT_TRUE(ok->Load().ok());
  EXPECT_EQ(Tokens(*ok, GoldenRequest(p)), want);
  EXPECT_FALSE(ok->Load().ok());  // loaded already
  ASSERT_TRUE(ok->Reset().ok());
  EXPECT_TRUE(ok->loaded());
  EXPECT_EQ(Tokens(*ok, GoldenRequest(p)), want);
}

TEST(Engine, OpenAndReserveCheckTheirOptionsWithTheTable) {
  EngineOptions o;
  o.target = test::TestData("models/e2b_mini");
  o.draft_tokens = kMaxDraftTokens + 1;
  auto e = Engine::Open(o);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(), "draft_tokens must be an integer in [1, " + std::to_string(kMaxDraftTokens) +
                                      "], not " + std::to_string(kMaxDraftTokens + 1));
  o.draft_tokens = 2;
  o.decode_ahead = 17;
  e = Engine::Open(o);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(), "decode_ahead must be an integer in [0, 16], not 17");
  o.decode_ahead = -1;  // the backend's default
  e = Engine::Open(o);
  ASSERT_TRUE(e.ok());
  Status s = (*e)->Reserve((1 << 24) + 1, Cpu());
  EXPECT_EQ(s.message(), "context must be an integer in [1, 16777216], not 16777217");
  // A backend the factory cannot make leaves no backend behind.
  s = (*e)->Reserve(64, [](const BackendNeeds& n) -> Result<std::unique_ptr<Backend>> {
    EXPECT_EQ(n.positions, 64 + 2 + 2);
    EXPECT_GT(n.arena_bytes, 0u);
    return ResourceExhausted("no room");
  });
  EXPECT_EQ(s.message(), "no room");
  EXPECT_EQ((*e)->backend(), nullptr);
  EXPECT_FALSE((*e)->Load().ok());
  EXPECT_TRUE((*e)->Reserve(64, Cpu()).ok());
}

TEST(Engine, RequestsAreCheckedWithTheTableAndTheContext) {
  auto e = Loaded();
  EngineRequest r;
  r.prompt = {2, 105, 7};
  auto expect = [&](const EngineRequest& req, const std::string& want) {
    auto a = e->Generate(req);
    ASSERT_FALSE(a.ok());
    EXPECT_EQ(a.status().message(), want);
  };
  EngineRequest bad = r;
  bad.top_p = 0.0;
  expect(bad, "top_p must be a number in (0, 1], not 0");
  bad = r;
  bad.temperature = 1e4;
  expect(bad, "temperature must be a number in [0, 1000], not 10000");
  bad = r;
  bad.max_tokens = 254;
  expect(bad, "the prompt (3 tokens) plus max_tokens (254) exceeds the context of 256 tokens");
  bad = r;
  bad.prompt = {2, 100000};
  expect(bad, "the prompt's token id 100000 is outside the model's vocabulary (0.." + std::to_string(e->config().vocab - 1) + ")");
  bad = r;
  bad.speculative = true;
  expect(bad, "speculative decoding needs an assistant");
  bad = r;
  bad.round_ahead = 2;
  expect(bad, "round_ahead must be -1 (the default), 0 or 1, not 2");
  // Unset max_tokens: the rest of the context.
  auto small = Loaded("", 8);
  r.max_tokens.reset();
  r.temperature = 0.0;
  r.stop_ids = {-1};
  auto a = small->Generate(r);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->result.tokens.size(), 8u - 3u);
  r.prompt.assign(8, 7);
  a = small->Generate(r);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message(), "the prompt is 8 tokens; the context is 8");
}

TEST(Engine, UnseededSamplingDiffersSeededRepeats) {
  auto e = Loaded();
  EngineRequest r;
  r.prompt = {2, 105, 7};
  r.max_tokens = 12;
  // Nearly uniform over the vocabulary: two unseeded runs of 12 tokens agree with a chance of
  // about vocab^-12.
  r.temperature = 100.0;
  std::set<std::vector<int>> unseeded;
  for (int i = 0; i < 3; ++i) unseeded.insert(Tokens(*e, r));
  EXPECT_EQ(unseeded.size(), 3u);
  r.seed = 1234;
  const std::vector<int> a = Tokens(*e, r);
  EXPECT_EQ(Tokens(*e, r), a);
  EXPECT_EQ(unseeded.count(a), 0u);
}

TEST(Engine, StreamsTextThroughTheTokenizerAndStopsWhenAsked) {
  EngineOptions o;
  o.target = test::TestData("models/e2b_mini");
  o.tokenizer = test::TestData("tokenizers/mini/tokenizer.json");
  auto e = Engine::Open(o);
  ASSERT_TRUE(e.ok()) << e.status().message();
  ASSERT_TRUE((*e)->Reserve(128, Cpu()).ok());
  ASSERT_TRUE((*e)->Load().ok());
  auto prompt = (*e)->PromptFromMessages({{"user", "Hello there"}});
  ASSERT_TRUE(prompt.ok()) << prompt.status().message();
  EngineRequest r;
  r.prompt = *prompt;
  r.max_tokens = 10;
  r.temperature = 0.0;
  std::string streamed;
  int tokens = 0;
  EngineCallbacks cb;
  cb.on_token = [&](int token, std::string_view text) {
    streamed += text;
    if (token >= 0) ++tokens;
    return true;
  };
  auto a = (*e)->Generate(r, cb);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(tokens, 10);
  EXPECT_EQ(streamed, (*e)->Text(a->result));
  cb.on_token = [&](int token, std::string_view) { return token < 0 || ++tokens < 13; };
  a = (*e)->Generate(r, cb);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->result.stop_reason, "interrupted");
  EXPECT_EQ(a->result.tokens.size(), 3u);
  auto unknown = (*e)->PromptFromMessages({{"user", "a"}, {"robot", "b"}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown role 'robot'"), std::string::npos);
}

TEST(Limits, RangesPrintIntegersAsIntegersAndErrorsNameTheOption) {
  EXPECT_EQ(RangeText(limits::kContext), "an integer in [1, 16777216]");
  EXPECT_EQ(RangeText(limits::kTopP), "a number in (0, 1]");
  EXPECT_EQ(RangeText(limits::kSeed), "an integer in [0, 9007199254740991]");
  EXPECT_EQ(CheckLimit(limits::kContext, 0, "contextLength").message(),
            "contextLength must be an integer in [1, 16777216], not 0");
  EXPECT_EQ(CheckLimit(limits::kTemperature, 0.25, "--temperature").message(), "");
  EXPECT_FALSE(CheckLimit(limits::kTopK, 1.5, "top_k").ok());
  // As JavaScript's String(number).
  for (auto [v, text] : std::initializer_list<std::pair<double, const char*>>{
           {0.1, "0.1"}, {1e-20, "1e-20"}, {-1.0000000000000002e-06, "-0.0000010000000000000002"}, {1e-7, "1e-7"},
           {1e21, "1e+21"}, {123456789012345680000.0, "123456789012345680000"}, {16777216, "16777216"},
           {9007199254740991.0, "9007199254740991"}, {-2.5, "-2.5"}, {1000.000001, "1000.000001"}, {0, "0"},
           {1.5e300, "1.5e+300"}, {0.000001, "0.000001"}}) {
    EXPECT_EQ(FormatNumber(v), text);
  }
  EXPECT_EQ(limits::kDraftTokens.max, kMaxDraftTokens);
  EXPECT_EQ(limits::kDraftTokens.fallback, 2);
}

TEST(Limits, TheJsonTableHoldsEveryOptionOnce) {
  const nlohmann::json j = LimitsJson();
  std::set<std::string> flags, js;
  for (const Limit* l : limits::kAllLimits) {
    ASSERT_TRUE(j.contains(l->key)) << l->key;
    EXPECT_EQ(FindLimit(l->key), l);
    EXPECT_EQ(j[l->key]["range"], RangeText(*l));
    if (l->choice()) {
      EXPECT_EQ(j[l->key]["choices"], nlohmann::json(Choices(*l)));
      EXPECT_EQ(j[l->key]["default"], Choices(*l)[0]);
    } else {
      EXPECT_EQ(j[l->key]["min"], l->min);
      EXPECT_EQ(j[l->key]["max"], l->max);
    }
    if (*l->flag) {
      EXPECT_TRUE(flags.insert(l->flag).second) << l->flag;
    }
    if (*l->js) {
      EXPECT_TRUE(js.insert(l->js).second) << l->js;
    }
  }
  EXPECT_EQ(j.size(), std::size(limits::kAllLimits));
  EXPECT_EQ(j["draft_tokens"]["default"], 2);
  EXPECT_TRUE(j["seed"]["default"].is_null());
  EXPECT_EQ(j["draft_policy"]["choices"], nlohmann::json::array({"adaptive", "fixed"}));
  EXPECT_EQ(j["draft_policy"]["js"], "draftPolicy");
  EXPECT_EQ(FindLimit("nope"), nullptr);
}

TEST(Limits, AChoiceTakesItsWordsAndDefaultsToTheFirst) {
  constexpr Limit kPolicy{"draft_policy", "draft-policy", "draftPolicy", LimitKind::kChoice, 0, 0, false, kNoDefault,
                          kNoDefault, "adaptive", "how many drafts a round makes", "adaptive|fixed"};
  EXPECT_EQ(Choices(kPolicy), (std::vector<std::string>{"adaptive", "fixed"}));
  EXPECT_EQ(RangeText(kPolicy), "one of 'adaptive', 'fixed'");
  EXPECT_TRUE(CheckChoice(kPolicy, "fixed", "draftPolicy").ok());
  EXPECT_EQ(CheckChoice(kPolicy, "greedy", "--draft-policy").message(),
            "--draft-policy must be one of 'adaptive', 'fixed', not 'greedy'");
  const nlohmann::json j = LimitJson(kPolicy);
  EXPECT_EQ(j["choices"], nlohmann::json::array({"adaptive", "fixed"}));
  EXPECT_EQ(j["default"], "adaptive");
  EXPECT_EQ(j["range"], "one of 'adaptive', 'fixed'");
  EXPECT_FALSE(j.contains("min"));
}

TEST(Limits, RandomSeedsAreInRangeAndDiffer) {
  std::set<uint64_t> seen;
  for (int i = 0; i < 4; ++i) {
    auto s = RandomSeed();
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_TRUE(limits::kSeed.Contains(static_cast<double>(*s)));
    seen.insert(*s);
  }
  EXPECT_EQ(seen.size(), 4u);
}

}  // namespace
}  // namespace g4
