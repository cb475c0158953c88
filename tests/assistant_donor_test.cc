// An assistant's query-only layers attend over the donor target layer's K/V as the donor has
// them: its config's own KV head fields (num_key_value_heads, per_layer_config, the global and
// K=V forms) are not used. Only a head dim that differs from the donor's, or query heads that are
// not a multiple of the donor's KV heads, are refused.
#include <filesystem>

#include <gtest/gtest.h>

#include "model/assistant.h"
#include "session/generator.h"
#include "session/speculative.h"
#include "tests/test_util.h"

namespace g4 {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Copies the assistant at `from` into a fresh folder with its config.json passed through `edit`
// (applied to text_config).
std::string CopyWithConfig(const std::string& from, const std::function<void(json&)>& edit) {
  const std::string dir = test::MakeTempDir();
  test::CopyCheckpoint(from, dir);
  json config = test::ReadJson(dir + "/config.json");
  edit(config["text_config"]);
  test::WriteFile(dir + "/config.json", config.dump(2));
  return dir;
}

// The KV head fields of an assistant config set to values no donor has: `kv` everywhere, the
// K=V flag flipped, a global count given.
void DeclareOtherKvHeads(json& text, int kv) {
  text["num_key_value_heads"] = kv;
  text["num_global_key_value_heads"] = kv;
  text["attention_k_eq_v"] = !text.value("attention_k_eq_v", false);
  if (text.contains("per_layer_config")) {
    for (auto& [key, layer] : text["per_layer_config"].items()) layer["num_key_value_heads"] = kv;
  }
}

struct Pair {
  const char* target;
  const char* assistant;
  int declared_kv;  // differs from both donors' KV heads
};

void PrintTo(const Pair& p, std::ostream* os) { *os << p.assistant << " declaring " << p.declared_kv << " KV heads"; }

class DonorKvTest : public ::testing::TestWithParam<Pair> {};

TEST_P(DonorKvTest, OwnKvHeadFieldsChangeNothing) {
  const Pair pair = GetParam();
  auto be = MakeCpuBackend();
  auto target = Model::Load(test::TestData(pair.target), *be);
  ASSERT_TRUE(target.ok()) << target.status().message();
  const std::string src = test::TestData(pair.assistant);
  const std::string other = CopyWithConfig(src, [&](json& t) { DeclareOtherKvHeads(t, pair.declared_kv); });
  auto a = Assistant::Load(src, *be, **target);
  ASSERT_TRUE(a.ok()) << a.status().message();
  auto b = Assistant::Load(other, *be, **target);
  ASSERT_TRUE(b.ok()) << b.status().message();

  // Both read the donors' KV heads; the second's config says otherwise.
  const ModelConfig& tc = (*target)->config();
  ASSERT_EQ((*b)->donors().size(), (*a)->donors().size());
  for (size_t i = 0; i < (*b)->donors().size(); ++i) {
    const DonorLink& d = (*b)->donors()[i];
    EXPECT_EQ(d.layer, (*a)->donors()[i].layer);
    EXPECT_EQ(d.kv_heads, tc.layers[d.layer].kv_heads);
    EXPECT_EQ(d.declared_kv_heads, pair.declared_kv);
    EXPECT_NE(d.kv_heads, pair.declared_kv);
    EXPECT_EQ((*b)->config().text.layers[i].kv_heads, d.kv_heads);
  }
  const std::string described = DescribeDonors((*b)->config(), (*b)->donors());
  EXPECT_NE(described.find("its config's " + std::to_string(pair.declared_kv) + " is not used"), std::string::npos)
      << described;

  const std::vector<int32_t> prompt = {2, 17, 90, 33, 41, 5, 77};
  GenerateOptions o;
  o.max_new_tokens = 18;
  o.stop_ids = {-1};
  for (int k : {2, 3}) {
    auto ra = GenerateSpeculative(**target, **a, prompt, o, k);
    auto rb = GenerateSpeculative(**target, **b, prompt, o, k);
    ASSERT_TRUE(ra.ok() && rb.ok());
    EXPECT_EQ(ra->tokens, rb->tokens);
    ASSERT_EQ(ra->rounds.size(), rb->rounds.size());
    for (size_t i = 0; i < ra->rounds.size(); ++i) {
      EXPECT_EQ(ra->rounds[i].drafts, rb->rounds[i].drafts) << "K=" << k << " round " << i;
      EXPECT_EQ(ra->rounds[i].accepted, rb->rounds[i].accepted) << "K=" << k << " round " << i;
      EXPECT_EQ(ra->rounds[i].bonus, rb->rounds[i].bonus) << "K=" << k << " round " << i;
    }
  }
  // Sampled drafts too (the draft distributions must agree for the same draws).
  o.sampler.temperature = 1.0f;
  o.sampler.seed = 7;
  auto sa = GenerateSpeculative(**target, **a, prompt, o, 2);
  auto sb = GenerateSpeculative(**target, **b, prompt, o, 2);
  ASSERT_TRUE(sa.ok() && sb.ok());
  EXPECT_EQ(sa->tokens, sb->tokens);
  EXPECT_EQ(sa->stats.accepted_per_round, sb->stats.accepted_per_round);
  fs::remove_all(other);
}

INSTANTIATE_TEST_SUITE_P(Pairs, DonorKvTest,
                         ::testing::Values(Pair{"models/moe_keqv", "models/moe_keqv/assistant_plain", 4},
                                           Pair{"models/dense", "models/dense/assistant_plain", 1},
                                           Pair{"models/e2b_mini", "models/e2b_mini/assistant_centroid", 2},
                                           // 3 divides no query head count: unused all the same.
                                           Pair{"models/ple_shared", "models/ple_shared/assistant_centroid", 3}),
                         [](const auto& info) { return std::to_string(info.index); });

// What cannot run is refused, naming both layers and shapes; the target stays usable.
TEST(DonorKv, ShapesThatCannotRunAreRefused) {
  auto be = MakeCpuBackend();
  auto target = Model::Load(test::TestData("models/moe_keqv"), *be);
  ASSERT_TRUE(target.ok());
  const std::string src = test::TestData("models/moe_keqv/assistant_plain");
  // The full layer's head dim: 16 against the donor's 32.
  const std::string dims = CopyWithConfig(src, [](json& t) { t["per_layer_config"]["1"]["head_dim"] = 16; });
  auto a = Assistant::Load(dims, *be, **target);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("assistant layer 1 (full), 4 query heads of head_dim 16, cannot attend over "
                                      "the target's donor layer 5, 1 KV heads of head_dim 32: the head dims differ"),
            std::string::npos)
      << a.status().message();
  // 3 query heads over the sliding donor's 2 KV heads.
  const std::string heads = CopyWithConfig(src, [](json& t) { t["per_layer_config"]["0"] = {{"num_attention_heads", 3}}; });
  auto b = Assistant::Load(heads, *be, **target);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("assistant layer 0 (sliding), 3 query heads of head_dim 16, cannot attend over "
                                      "the target's donor layer 4, 2 KV heads of head_dim 16: the query heads are not "
                                      "a multiple of the KV heads"),
            std::string::npos)
      << b.status().message();
  // The target goes on, with the assistant as it was.
  auto good = Assistant::Load(src, *be, **target);
  ASSERT_TRUE(good.ok()) << good.status().message();
  GenerateOptions o;
  o.max_new_tokens = 4;
  auto r = GenerateSpeculative(**target, **good, std::vector<int32_t>{2, 7}, o, 2);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->stats.generated_tokens, static_cast<int>(r->tokens.size()));
  EXPECT_GE(r->stats.rounds, 1);
  fs::remove_all(dims);
  fs::remove_all(heads);
}

// The reference pair (tools/reference/make_assistant_goldens.py, kind kv2): moe_keqv's full
// layers have one KV head (K=V); its assistant's saved config keeps two. transformers ran that
// config (its sdpa attention; eager refuses the shapes) and its assisted generation gave the
// plain greedy tokens; this runtime gives them too, with the reference's rounds.
TEST(DonorKv, KeqvTargetWithTwoKvHeadAssistantMatchesTransformers) {
  const std::string dir = test::TestData("models/moe_keqv/assistant_kv2");
  const json golden = test::ReadJson(dir + "/golden.json");
  const json text = test::ReadJson(dir + "/config.json")["text_config"];
  ASSERT_EQ(text["num_key_value_heads"], 2);
  ASSERT_EQ(text["per_layer_config"]["1"]["num_key_value_heads"], 2);
  ASSERT_TRUE(golden["declared_config"]["sdpa"]["argmax_equal"].get<bool>());
  auto be = MakeCpuBackend();
  auto target = Model::Load(test::TestData("models/moe_keqv"), *be);
  ASSERT_TRUE(target.ok());
  auto as = Assistant::Load(dir, *be, **target);
  ASSERT_TRUE(as.ok()) << as.status().message();
  ASSERT_EQ((*as)->donors().size(), 2u);
  EXPECT_EQ((*as)->donors()[1].layer, 5);
  EXPECT_EQ((*as)->donors()[1].kv_heads, 1);
  EXPECT_EQ((*as)->donors()[1].declared_kv_heads, 2);
  int accepted = 0;
  for (const json& trace : golden["traces"]) {
    const auto prompt = trace["prompt_ids"].get<std::vector<int32_t>>();
    GenerateOptions o;
    o.max_new_tokens = trace["max_new_tokens"].get<int>();
    o.stop_ids = {1, 106};
    auto r = GenerateSpeculative(**target, **as, prompt, o, 2);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->tokens, trace["transformers_assisted_tokens"].get<std::vector<int>>());
    EXPECT_EQ(r->tokens, trace["plain_tokens"].get<std::vector<int>>());
    std::vector<int> want, got;
    for (const json& round : trace["k2"]["rounds"]) want.push_back(round["accepted"].get<int>());
    for (const RoundTrace& round : r->rounds) got.push_back(round.accepted);
    EXPECT_EQ(got, want);
    EXPECT_EQ(r->stats.accepted_per_round, test::EmittedDrafts(*r));
    accepted += r->stats.accepted;
  }
  EXPECT_GT(accepted, 0);
}

}  // namespace
}  // namespace g4
