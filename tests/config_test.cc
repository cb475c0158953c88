// Config parsing: both config.json shapes, both ways of giving full-layer overrides, defaults,
// KV sharing and RoPE resolved as the reference resolves them, and errors that name the field.
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

#include "model/config.h"
#include "model/synthetic.h"
#include "tests/test_util.h"

namespace g4 {
namespace {

using nlohmann::json;

json BaseText() {
  return json{{"model_type", "gemma4_text"}, {"vocab_size", 64}, {"hidden_size", 16}, {"num_hidden_layers", 6},
              {"intermediate_size", 32}, {"num_attention_heads", 4}, {"num_key_value_heads", 2},
              {"head_dim", 8}, {"sliding_window", 3}, {"hidden_size_per_layer_input", 0}};
}

ModelConfig MustParse(const json& j) {
  auto r = ParseModelConfig(j.dump(), "config.json");
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r.value() : ModelConfig{};
}

void ExpectError(const json& j, const std::string& needle) {
  auto r = ParseModelConfig(j.dump(), "config.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
}

TEST(Config, DefaultLayerPatternAndGlobalHeadDim) {
  ModelConfig c = MustParse(BaseText());
  ASSERT_EQ(c.num_layers, 6);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(c.layers[i].type, AttentionType::kSliding);
    EXPECT_EQ(c.layers[i].head_dim, 8);
    EXPECT_EQ(c.layers[i].window, 3);
  }
  EXPECT_EQ(c.layers[5].type, AttentionType::kFull);
  EXPECT_EQ(c.layers[5].head_dim, 512);  // global_head_dim defaults to 512
  EXPECT_EQ(c.layers[5].window, 0);
  EXPECT_EQ(c.layers[5].kv_heads, 2);
  EXPECT_FALSE(c.final_softcap.has_value());
}

TEST(Config, LastLayerIsAlwaysFull) {
  json j = BaseText();
  j["layer_types"] = json::array();
  for (int i = 0; i < 6; ++i) j["layer_types"].push_back("sliding_attention");
  EXPECT_EQ(MustParse(j).layers[5].type, AttentionType::kFull);
}

TEST(Config, PerLayerConfigAndGlobalFormsAgree) {
  json global = BaseText();
  global["attention_k_eq_v"] = true;
  global["global_head_dim"] = 16;
  global["num_global_key_value_heads"] = 1;
  json native = BaseText();
  native["attention_k_eq_v"] = true;
  native["per_layer_config"] = {{"5", {{"head_dim", 16}, {"num_key_value_heads", 1}}}};
  ModelConfig a = MustParse(global), b = MustParse(native);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(a.layers[i].head_dim, b.layers[i].head_dim) << i;
    EXPECT_EQ(a.layers[i].kv_heads, b.layers[i].kv_heads) << i;
    EXPECT_EQ(a.layers[i].inv_freq, b.layers[i].inv_freq) << i;
  }
  EXPECT_EQ(a.layers[5].kv_heads, 1);
  EXPECT_TRUE(a.layers[5].k_eq_v);
  EXPECT_FALSE(a.layers[4].k_eq_v);
}

TEST(Config, GlobalKvHeadsNeedKEqualsV) {
  json j = BaseText();
  j["global_head_dim"] = 16;
  j["num_global_key_value_heads"] = 1;  // ignored without attention_k_eq_v, as in the reference
  EXPECT_EQ(MustParse(j).layers[5].kv_heads, 2);
}

TEST(Config, ContainerLayoutReadsTextConfig) {
  json j = {{"model_type", "gemma4"}, {"text_config", BaseText()}, {"eos_token_id", json::array({1, 50})}};
  j["text_config"]["final_logit_softcapping"] = 30.0;
  ModelConfig c = MustParse(j);
  EXPECT_EQ(c.model_type, "gemma4");
  EXPECT_EQ(c.hidden, 16);
  EXPECT_FLOAT_EQ(*c.final_softcap, 30.0f);
  EXPECT_EQ(c.eos_ids, (std::vector<int>{1, 50}));
}

TEST(Config, KvSharingSourcesAndDoubleWideMlp) {
  // E2B's real shape: the last 20 of 35 layers read layer 13 (sliding) or 14 (full).
  auto text = SyntheticConfigJson("e2b", std::nullopt);
  ASSERT_TRUE(text.ok());
  auto c = ParseModelConfig(*text, "e2b");
  ASSERT_TRUE(c.ok()) << c.status().message();
  for (int i = 0; i < 35; ++i) {
    const LayerConfig& l = c->layers[i];
    EXPECT_EQ(l.kv_shared, i >= 15) << i;
    if (l.kv_shared) {
      EXPECT_EQ(l.kv_source, l.type == AttentionType::kFull ? 14 : 13) << i;
    }
    EXPECT_EQ(l.intermediate, i >= 15 ? 12288 : 6144) << i;
    EXPECT_EQ(l.head_dim, l.type == AttentionType::kFull ? 512 : 256);
  }
  EXPECT_EQ(c->KvBytesPerPosition(), (12u * 256 + 3u * 512) * 2 * 4);
}

TEST(Config, ProportionalRopeRotatesAQuarter) {
  auto inv = RopeInverseFrequencies("proportional", 1e6, 0.25, 1.0, 512);
  ASSERT_TRUE(inv.ok());
  ASSERT_EQ(inv->size(), 256u);
  for (int i = 0; i < 256; ++i) {
    if (i < 64) {
      EXPECT_NEAR((*inv)[i], std::pow(1e6, -2.0 * i / 512), 1e-6 * std::pow(1e6, -2.0 * i / 512)) << i;
    } else {
      EXPECT_EQ((*inv)[i], 0.0f) << i;
    }
  }
  auto def = RopeInverseFrequencies("default", 1e4, 1.0, 1.0, 4);
  ASSERT_TRUE(def.ok());
  EXPECT_FLOAT_EQ((*def)[0], 1.0f);
  EXPECT_FLOAT_EQ((*def)[1], 0.01f);
}

TEST(Config, ErrorsNameTheField) {
  json j = BaseText();
  j.erase("hidden_size");
  ExpectError(j, "config.json: hidden_size: required field is missing");
  j = BaseText();
  j["num_key_value_heads"] = 3;
  ExpectError(j, "num_key_value_heads");
  j = BaseText();
  j["rope_parameters"] = {{"sliding_attention", {{"rope_type", "yarn"}, {"rope_theta", 1.0}}}};
  ExpectError(j, "rope_parameters.sliding_attention.rope_type: 'yarn' is not supported");
  j = BaseText();
  j["model_type"] = "llama";
  ExpectError(j, "model_type");
  j = {{"model_type", "gemma4"}};
  ExpectError(j, "text_config");
  j = BaseText();
  j["per_layer_config"] = {{"9", {{"head_dim", 16}}}};
  ExpectError(j, "per_layer_config: key '9'");
  j = BaseText();
  j["hidden_activation"] = "silu";
  ExpectError(j, "hidden_activation");
  j = BaseText();
  j["num_kv_shared_layers"] = 6;
  ExpectError(j, "num_kv_shared_layers");
  j = BaseText();
  j["layer_types"] = json::array({"full_attention", "full_attention", "full_attention", "full_attention",
                                  "sliding_attention", "full_attention"});
  j["num_kv_shared_layers"] = 2;  // layer 4 is sliding, but no earlier non-shared sliding layer exists
  ExpectError(j, "no earlier layer of its type");
  ExpectError(json::array(), "not a JSON object");
}

TEST(Config, RmsNormEpsMustBePositiveAndAtMostOne) {
  // 1e-50 is zero as float32, 1e300 infinite; 2 would flatten every row.
  for (double eps : {0.0, -1e-6, 1e-50, 2.0, 1e300}) {
    json j = BaseText();
    j["rms_norm_eps"] = eps;
    ExpectError(j, "config.json: rms_norm_eps: must be in (0, 1]");
    auto a = ParseAssistantConfig(json{{"model_type", "gemma4_assistant"}, {"backbone_hidden_size", 16},
                                       {"text_config", j}}.dump(), "assistant/config.json");
    ASSERT_FALSE(a.ok());
    EXPECT_NE(a.status().message().find("text_config.rms_norm_eps: must be in (0, 1]"), std::string::npos)
        << a.status().message();
  }
  json j = BaseText();
  j["rms_norm_eps"] = 1e-6;
  EXPECT_FLOAT_EQ(MustParse(j).rms_eps, 1e-6f);
}

TEST(Config, GenerationConfigSetsEos) {
  ModelConfig c = MustParse(BaseText());
  ASSERT_TRUE(ApplyGenerationConfig(R"({"eos_token_id": [1, 50]})", "generation_config.json", &c).ok());
  EXPECT_EQ(c.eos_ids, (std::vector<int>{1, 50}));
  ASSERT_TRUE(ApplyGenerationConfig(R"({"eos_token_id": 7})", "generation_config.json", &c).ok());
  EXPECT_EQ(c.eos_ids, (std::vector<int>{7}));
  Status s = ApplyGenerationConfig(R"({"eos_token_id": [1, 999]})", "generation_config.json", &c);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("generation_config.json"), std::string::npos);
}

TEST(Config, EosIdsAreNonNegativeIntegersThatFitAnId) {
  ModelConfig c = MustParse(BaseText());
  // 4294967510 is 214 past 2^32: taken modulo, it would be a valid id nobody named.
  for (const char* bad : {R"({"eos_token_id": 4294967510})", R"({"eos_token_id": [1, 4294967510]})",
                          R"({"eos_token_id": -3})", R"({"eos_token_id": [-3]})", R"({"eos_token_id": 2147483648})",
                          R"({"eos_token_id": 1.5})", R"({"eos_token_id": "1"})"}) {
    Status s = ApplyGenerationConfig(bad, "generation_config.json", &c);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find("generation_config.json: eos_token_id"), std::string::npos) << s.message();
  }
  json j = BaseText();
  j["eos_token_id"] = 4294967297;
  ExpectError(j, "eos_token_id: 4294967297 is not a token id");
}

TEST(Config, ErrorsSayWhereJsonBreaksAndWhatAFieldHeld) {
  auto r = ParseModelConfig(R"({"vocab_size": 64, "rms_norm_eps": NaN})", "config.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("config.json: not valid JSON: it breaks at byte 36"), std::string::npos)
      << r.status().message();
  r = ParseModelConfig("[1, 2]", "config.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "config.json: not a JSON object");
  json j = BaseText();
  j["vocab_size"] = 18446744073709551615ull;  // -1 if read as int64
  ExpectError(j, "vocab_size: value 18446744073709551615 is out of range [1, 1073741824]");
}

TEST(Config, RopeAndSoftcapKeepFloatsFinite) {
  struct Bad { const char* key; double value; };
  for (Bad b : {Bad{"rope_theta", 1e-300}, Bad{"rope_theta", 0.5}, Bad{"rope_theta", 1e300}, Bad{"factor", 1e-300},
                Bad{"factor", 1e300}, Bad{"partial_rotary_factor", 1.5}}) {
    json j = BaseText();
    j["rope_parameters"] = {{"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}}};
    j["rope_parameters"]["sliding_attention"][b.key] = b.value;
    ExpectError(j, std::string("rope_parameters.sliding_attention.") + b.key + ": ");
  }
  for (double cap : {1e300, -1.0, 0.0}) {
    json j = BaseText();
    j["final_logit_softcapping"] = cap;
    ExpectError(j, "final_logit_softcapping: must be positive and finite");
  }
}

TEST(Config, GenerationConfigSetsSamplingDefaults) {
  ModelConfig c = MustParse(BaseText());
  ASSERT_TRUE(ApplyGenerationConfig(R"({"eos_token_id": 1})", "generation_config.json", &c).ok());
  EXPECT_EQ(c.default_temperature, 0.0f);  // no do_sample: greedy, as the reference's generate()
  ASSERT_TRUE(ApplyGenerationConfig(R"({"do_sample": true, "top_k": 64, "top_p": 0.95})", "g.json", &c).ok());
  EXPECT_EQ(c.default_temperature, 1.0f);
  EXPECT_EQ(c.default_top_k, 64);
  EXPECT_FLOAT_EQ(c.default_top_p, 0.95f);
  ASSERT_TRUE(ApplyGenerationConfig(R"({"do_sample": true, "temperature": 0.7})", "g.json", &c).ok());
  EXPECT_FLOAT_EQ(c.default_temperature, 0.7f);
  ASSERT_TRUE(ApplyGenerationConfig(R"({"do_sample": false, "temperature": 0.7})", "g.json", &c).ok());
  EXPECT_EQ(c.default_temperature, 0.0f);
  for (const char* bad : {R"({"do_sample": 1})", R"({"top_k": 2.5})", R"({"top_p": 0})", R"({"temperature": "hot"})"}) {
    Status s = ApplyGenerationConfig(bad, "gen.json", &c);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find("gen.json: "), std::string::npos) << s.message();
  }
}

TEST(Config, AGenerationConfigThatCannotBeReadIsAnErrorNotAbsent) {
  // A link to nowhere, and a link to itself: there, but unreadable.
  for (const char* target : {"missing.json", "generation_config.json"}) {
    const std::string dir = test::MakeTempDir();
    test::WriteFile(dir + "/config.json", BaseText().dump());
    ASSERT_EQ(symlink(target, (dir + "/generation_config.json").c_str()), 0);
    auto c = LoadModelConfig(dir);
    EXPECT_FALSE(c.ok()) << target;
    if (!c.ok()) {
      EXPECT_NE(c.status().message().find(dir + "/generation_config.json"), std::string::npos) << c.status().message();
    }
    std::filesystem::remove_all(dir);
  }
}

TEST(Config, GoldenCheckpointsResolveAsTheReference) {
  // golden.json records the per-layer head dims and KV heads transformers resolved.
  for (const std::string& dir : test::GoldenModelDirs()) {
    auto c = LoadModelConfig(dir);
    ASSERT_TRUE(c.ok()) << c.status().message();
    const json g = test::ReadJson(dir + "/golden.json");
    for (int i = 0; i < c->num_layers; ++i) {
      const json& rec = g["per_layer_config"][std::to_string(i)];
      EXPECT_EQ(c->layers[i].head_dim, rec["head_dim"].get<int>()) << dir << " layer " << i;
      EXPECT_EQ(c->layers[i].kv_heads, rec["num_key_value_heads"].get<int>()) << dir << " layer " << i;
    }
  }
}

}  // namespace
}  // namespace g4
