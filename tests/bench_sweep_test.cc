// gemma4 bench --draft-tokens-sweep on the trained demo pair, small: every K's row with its
// fields, the speculative tokens equal to the plain ones, and clear errors for its flags; and the
// engine's per-request draft count the sweep runs on.
#include <string>

#include <gtest/gtest.h>

#include "session/engine.h"
#include "tests/test_util.h"

namespace g4 {
namespace {

using test::Cli;
using test::CliRun;

std::string PairFlags() {
  const std::string dir = test::TestData("models/demo");
  return " --model " + dir + " --assistant " + dir + "/assistant";
}

TEST(BenchSweep, ReportsEveryKAndMatchesPlainGreedy) {
  const std::string prompts = test::MakeTempDir() + "/prompts.txt";
  test::WriteFile(prompts, "\nWhat should Congress do this year?\n\n");
  CliRun r = Cli("bench" + PairFlags() + " --draft-tokens-sweep 1-2 --decode-tokens 8 --threads 1 --prompts " + prompts + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);  // --json: the object alone
  EXPECT_EQ(j["prompts"], nlohmann::json::array({"What should Congress do this year?"}));
  EXPECT_EQ(j["new_tokens"], 8);
  ASSERT_EQ(j["rows"].size(), 3u);  // K=1 fixed, K=2 fixed, K=2 adaptive
  const int ks[] = {1, 2, 2};
  const char* policies[] = {"fixed", "fixed", "adaptive"};
  for (int i = 0; i < 3; ++i) {
    const auto& row = j["rows"][i];
    SCOPED_TRACE(row.dump());
    EXPECT_EQ(row["k"], ks[i]);
    EXPECT_EQ(row["policy"], policies[i]);
    EXPECT_GT(row["plain_decode_tokens_per_s"].get<double>(), 0.0);
    EXPECT_GT(row["mtp_decode_tokens_per_s"].get<double>(), 0.0);
    EXPECT_NEAR(row["speedup"].get<double>(),
                row["mtp_decode_tokens_per_s"].get<double>() / row["plain_decode_tokens_per_s"].get<double>(), 1e-9);
    // Greedy drafting changes how the tokens are found, never which.
    EXPECT_EQ(row["same_tokens_as_plain"], true);
    const int rounds = row["rounds"];
    ASSERT_GT(rounds, 0);
    // 7 tokens after the first, in rounds of 1..K+1 tokens.
    EXPECT_NEAR(row["tokens_per_round"].get<double>(), 7.0 / rounds, 1e-9);
    EXPECT_LE(row["tokens_per_round"].get<double>(), ks[i] + 1.0);
    const auto by_position = row["acceptance_by_position"].get<std::vector<double>>();
    ASSERT_EQ(by_position.size(), static_cast<size_t>(ks[i]));
    for (double a : by_position) EXPECT_TRUE(a >= 0.0 && a <= 1.0) << a;
    const auto per_k = row["rounds_per_k"].get<std::vector<int>>();
    ASSERT_EQ(per_k.size(), static_cast<size_t>(ks[i] + 1));
    int counted = 0, drafted = 0;
    for (int d = 0; d <= ks[i]; ++d) counted += per_k[d], drafted += d * per_k[d];
    EXPECT_EQ(counted, rounds);
    EXPECT_EQ(drafted, row["drafted"].get<int>());
  }
  // The table: a header and a line per row.
  r = Cli("bench" + PairFlags() + " --draft-tokens-sweep 1 --decode-tokens 4 --threads 1 --prompts " + prompts);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("acceptance by position"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1  fixed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1  adaptive"), std::string::npos) << r.out;
}

TEST(BenchSweep, FlagErrorsNameTheFlag) {
  const std::string m = PairFlags();
  CliRun r = Cli("bench" + m + " --draft-tokens-sweep 0-4");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--draft-tokens-sweep must be A-B (or A), integers with 1 <= A <= B <= 8, not '0-4'"),
            std::string::npos) << r.out;
  for (const char* bad : {"3-2", "1-9", "x", "1-", "2-3-4"}) {
    r = Cli("bench" + m + " --draft-tokens-sweep " + bad);
    EXPECT_EQ(r.code, 1) << bad;
    EXPECT_NE(r.out.find("--draft-tokens-sweep must be"), std::string::npos) << r.out;
  }
  r = Cli("bench --model " + test::TestData("models/demo") + " --draft-tokens-sweep 1-2");
  EXPECT_NE(r.out.find("--draft-tokens-sweep needs --assistant"), std::string::npos) << r.out;
  r = Cli("bench" + m + " --prompts /nonexistent/prompts.txt");
  EXPECT_NE(r.out.find("--prompts goes with --draft-tokens-sweep"), std::string::npos) << r.out;
  r = Cli("bench" + m + " --draft-tokens-sweep 1-2 --draft-tokens 3");
  EXPECT_NE(r.out.find("--draft-tokens does not go with --draft-tokens-sweep"), std::string::npos) << r.out;
  r = Cli("bench" + m + " --draft-tokens-sweep 1-2 --prompts /nonexistent/prompts.txt");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("/nonexistent/prompts.txt"), std::string::npos) << r.out;
  const std::string empty = test::MakeTempDir() + "/empty.txt";
  test::WriteFile(empty, "\n  \n");
  r = Cli("bench" + m + " --draft-tokens-sweep 1-2 --prompts " + empty);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--prompts holds no prompt"), std::string::npos) << r.out;
}

// One load (K = 2) serves requests of fewer drafts a round, never more.
TEST(BenchSweep, EngineRequestsAtMostTheLoadsDrafts) {
  const std::string dir = test::TestData("models/demo");
  EngineOptions o;
  o.target = dir;
  o.assistant = dir + "/assistant";
  o.draft_tokens = 2;
  auto e = Engine::Open(o);
  ASSERT_TRUE(e.ok()) << e.status().message();
  Engine& engine = **e;
  Status s = engine.Reserve(64, [](const BackendNeeds&) -> Result<std::unique_ptr<Backend>> { return MakeCpuBackend(1); });
  if (s.ok()) s = engine.Load();
  ASSERT_TRUE(s.ok()) << s.message();
  auto prompt = engine.PromptFromText("What should Congress do this year?", true);
  ASSERT_TRUE(prompt.ok()) << prompt.status().message();
  EngineRequest r;
  r.prompt = *prompt;
  r.max_tokens = 8;
  r.temperature = 0.0;
  r.speculative = true;
  r.draft_policy = DraftPolicyKind::kFixed;
  for (int k : {1, 2}) {
    r.draft_tokens = k;
    auto a = engine.Generate(r);
    ASSERT_TRUE(a.ok()) << a.status().message();
    EXPECT_EQ(a->result.stats.rounds_per_k.size(), static_cast<size_t>(k + 1));
    EXPECT_GT(a->result.stats.rounds_per_k[k], 0);
  }
  for (int k : {0, 3}) {
    r.draft_tokens = k;
    auto a = engine.Generate(r);
    ASSERT_FALSE(a.ok()) << k;
    EXPECT_NE(a.status().message().find("draft_tokens must be an integer in [1, 2]"), std::string::npos)
        << a.status().message();
  }
}

}  // namespace
}  // namespace g4
