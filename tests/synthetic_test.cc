// gemma4 synth's shapes: each family's target at its real and a reduced depth, its assistant
// (which must run over the target's donor layers), --layers as given, and no model overwritten.
#include <algorithm>
#include <filesystem>

#include <gtest/gtest.h>

#include "model/assistant.h"
#include "model/config.h"
#include "model/synthetic.h"
#include "tests/test_util.h"

namespace g4 {
namespace {

namespace fs = std::filesystem;

ModelConfig Target(const std::string& shape, std::optional<int> layers) {
  auto text = SyntheticConfigJson(shape, layers);
  EXPECT_TRUE(text.ok()) << text.status().message();
  auto c = ParseModelConfig(text.ok() ? *text : "", shape);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c.ok() ? *c : ModelConfig{};
}

struct Shape {
  const char* name;
  int hidden, layers, period, kv_shared, full_kv_heads;
  bool moe, k_eq_v;
};

void PrintTo(const Shape& s, std::ostream* os) { *os << s.name; }

class SyntheticShapeTest : public ::testing::TestWithParam<Shape> {};

TEST_P(SyntheticShapeTest, TargetAndAssistantFit) {
  const Shape s = GetParam();
  for (std::optional<int> layers : {std::optional<int>{}, std::optional<int>{s.period}, std::optional<int>{2 * s.period}}) {
    const ModelConfig t = Target(s.name, layers);
    const int n = layers.value_or(s.layers);
    ASSERT_EQ(t.num_layers, n);
    EXPECT_EQ(t.hidden, s.hidden);
    EXPECT_EQ(t.vocab, 262144);
    EXPECT_EQ(t.moe, s.moe);
    if (!layers) {
      EXPECT_EQ(t.num_kv_shared_layers, s.kv_shared);
    }
    EXPECT_LT(t.num_kv_shared_layers, n);
    for (int i = 0; i < n; ++i) {
      const LayerConfig& l = t.layers[i];
      EXPECT_EQ(l.type == AttentionType::kFull, i % s.period == s.period - 1) << i;
      EXPECT_EQ(l.head_dim, l.type == AttentionType::kFull ? 512 : 256);
      if (l.type == AttentionType::kFull) {
        EXPECT_EQ(l.kv_heads, s.full_kv_heads);
        EXPECT_EQ(l.k_eq_v, s.k_eq_v);
      }
    }
    // The assistant runs over this target's donors, at its real depth and at 2 layers.
    for (std::optional<int> a_layers : {std::optional<int>{}, std::optional<int>{2}}) {
      auto text = SyntheticConfigJson(std::string(s.name) + "-assistant", a_layers);
      ASSERT_TRUE(text.ok()) << text.status().message();
      auto a = ParseAssistantConfig(*text, "assistant");
      ASSERT_TRUE(a.ok()) << a.status().message();
      EXPECT_EQ(a->backbone_hidden, s.hidden);
      EXPECT_EQ(a->text.num_layers, a_layers.value_or(4));
      EXPECT_EQ(a->text.layers.back().type, AttentionType::kFull);
      auto links = LinkDonors(*a, t, "assistant");
      ASSERT_TRUE(links.ok()) << links.status().message();
      EXPECT_EQ(links->back().kv_heads, s.full_kv_heads);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Families, SyntheticShapeTest,
                         ::testing::Values(Shape{"e2b", 1536, 35, 5, 20, 1, false, false},
                                           Shape{"e4b", 2560, 42, 6, 18, 2, false, false},
                                           Shape{"31b", 5376, 60, 6, 0, 4, false, true},
                                           Shape{"26b-a4b", 2816, 30, 6, 0, 2, true, true}),
                         [](const auto& info) {
                           std::string n = info.param.name;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return "f" + n;
                         });

TEST(Synthetic, ReducedDepthSharesKvInProportion) {
  EXPECT_EQ(Target("e2b", 10).num_kv_shared_layers, 5);   // 2 of 7 repeats: 1 shared
  EXPECT_EQ(Target("e2b", 5).num_kv_shared_layers, 0);    // one repeat keeps its own K/V
  EXPECT_EQ(Target("e4b", 18).num_kv_shared_layers, 6);   // 3 of 7 repeats: 1 shared
  EXPECT_EQ(Target("e2b", 35).num_kv_shared_layers, 20);
}

TEST(Synthetic, BadLayerCountsAreRefused) {
  for (auto [shape, layers] : std::vector<std::pair<std::string, int>>{{"e2b", 0}, {"e2b", 7}, {"31b", 66}, {"26b-a4b", 3},
                                                                        {"e4b-assistant", 0}, {"31b-assistant", 65}}) {
    auto text = SyntheticConfigJson(shape, layers);
    EXPECT_FALSE(text.ok()) << shape << " " << layers;
    if (!text.ok()) {
      EXPECT_NE(text.status().message().find("--layers"), std::string::npos) << text.status().message();
    }
  }
  auto unknown = SyntheticConfigJson("e3b", std::nullopt);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("26b-a4b-assistant"), std::string::npos) << unknown.status().message();
}

TEST(Synthetic, NeverWritesOverAModel) {
  const std::string dir = test::MakeTempDir();
  test::WriteFile(dir + "/config.json", "{\"keep\": true}");
  Status s = WriteSyntheticCheckpoint(dir, "e2b-assistant", 1, 1);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("exists and is not empty"), std::string::npos) << s.message();
  EXPECT_EQ(test::ReadFile(dir + "/config.json"), "{\"keep\": true}");
  EXPECT_FALSE(fs::exists(dir + "/model.safetensors"));
  fs::remove_all(dir);
}

TEST(Synthetic, MakesTheFoldersAboveItsOwn) {
  const std::string base = test::MakeTempDir();
  ASSERT_TRUE(WriteSyntheticCheckpoint(base + "/a/b/new", "e2b-assistant", 1, 1).ok());
  EXPECT_TRUE(fs::exists(base + "/a/b/new/model.safetensors"));
  // A file where a folder above it should be: refused, naming it, nothing written.
  test::WriteFile(base + "/file", "x");
  Status s = WriteSyntheticCheckpoint(base + "/file/new", "e2b-assistant", 1, 1);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(base + "/file: is not a folder"), std::string::npos) << s.message();
  EXPECT_EQ(test::ReadFile(base + "/file"), "x");
  fs::remove_all(base);
}

TEST(Synthetic, AnInterruptedWriteLeavesNothing) {
  const std::string base = test::MakeTempDir();
  const std::string dir = base + "/new";
  std::atomic<bool> cancel{true};
  Status s = WriteSyntheticCheckpoint(dir, "e2b-assistant", 1, 1, &cancel);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("synth: interrupted"), std::string::npos) << s.message();
  EXPECT_TRUE(fs::is_empty(base)) << "nothing at the folder, no partial folder beside it";
  cancel = false;
  ASSERT_TRUE(WriteSyntheticCheckpoint(dir, "e2b-assistant", 1, 1, &cancel).ok());
  EXPECT_TRUE(fs::exists(dir + "/model.safetensors"));
  EXPECT_EQ(std::distance(fs::directory_iterator(base), fs::directory_iterator()), 1) << "the partial folder renamed";
  fs::remove_all(base);
}

}  // namespace
}  // namespace g4
