// gemma4 export: deterministic artifacts that describe their source; quantized models equal to
// their own dequantized values in float32 (the whole loader and forward pass on q8/q4); the
// accuracy of each scheme against bf16; speculative decoding on artifacts; clear errors.
#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

#include "base/quant.h"
#include "convert/export.h"
#include "io/checkpoint.h"
#include "model/assistant.h"
#include "session/accuracy.h"
#include "session/generator.h"
#include "session/speculative.h"
#include "tests/test_util.h"

namespace g4 {
namespace {

namespace fs = std::filesystem;

std::string Export(const std::string& model, QuantScheme scheme, const std::string& assistant = "") {
  const std::string out = test::MakeTempDir() + "/artifact";
  auto r = ExportArtifacts(model, assistant, scheme, out);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return out;
}

// The artifact's weights as float32 values, but for q4's MLP gate and up projections and its LM
// head (the embedding, when tied), kept as they are: these take their input rounded to 8 bits
// (quant_test.cc checks GateUp and MatMulRoundedInput against the dequantized values on that
// input).
std::string Dequantized(const std::string& artifact) {
  const std::string out = test::MakeTempDir();
  auto ckpt = Checkpoint::Open(artifact);
  EXPECT_TRUE(ckpt.ok());
  std::map<std::string, std::vector<uint8_t>> bytes;
  auto read = [&](const CheckpointTensor& t) {
    std::vector<uint8_t> b(t.info.bytes);
    EXPECT_TRUE((*ckpt)->file(t.file).Read(t.info.offset, b.size(), b.data()).ok());
    return b;
  };
  auto kept = [&](const std::string& name) {
    const CheckpointTensor* t = (*ckpt)->Find(name);
    auto ends = [&](const std::string& e) {
      return name.size() >= e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0;
    };
    return t && t->info.dtype == DType::kU8 &&
           (name.find(".mlp.gate_proj.") != std::string::npos || name.find(".mlp.up_proj.") != std::string::npos ||
            ends("embed_tokens.weight") || ends("lm_head.weight"));
  };
  test::CopyCheckpoint(artifact, out, [&](test::TensorData& t) {
    const CheckpointTensor* s = (*ckpt)->Find(ScaleTensorName(t.name));
    const std::string stem = t.name.size() > 6 ? t.name.substr(0, t.name.size() - 6) : "";
    if (ScaleTensorName(stem) == t.name && (*ckpt)->Find(stem)) return kept(stem);  // the scales of `stem`
    if (!s || kept(t.name)) return true;
    const std::vector<uint8_t> scales = read(*s);
    const bool q4 = t.dtype == DType::kU8;
    const size_t n = q4 ? t.bytes.size() * 2 : t.bytes.size();
    std::vector<float> v(n);
    for (size_t g = 0; g < n / kQuantGroup; ++g) {
      uint16_t sc;
      std::memcpy(&sc, &scales[g * 2], 2);
      for (int i = 0; i < kQuantGroup; ++i) {
        v[g * kQuantGroup + i] = q4 ? DequantQ4(&t.bytes[g * 16], sc, i)
                                    : DequantQ8(reinterpret_cast<const int8_t*>(&t.bytes[g * 32]), sc, i);
      }
    }
    if (q4) t.shape.back() *= 2;
    t.dtype = DType::kF32;
    t.bytes.resize(n * 4);
    std::memcpy(t.bytes.data(), v.data(), n * 4);
    return true;
  });
  for (const char* f : {"config.json", "generation_config.json"}) {
    if (fs::exists(artifact + "/" + f)) fs::copy_file(artifact + "/" + f, out + "/" + f, fs::copy_options::overwrite_existing);
  }
  return out;
}

std::vector<uint8_t> FileBytes(const std::string& path) {
  const std::string s = test::ReadFile(path);
  return std::vector<uint8_t>(s.begin(), s.end());
}

TEST(Export, DeterministicAndDescribesItsSource) {
  const std::string model = test::Models("e2b_mini"), assistant = test::Models("e2b_mini/assistant_centroid");
  const std::string a = Export(model, QuantScheme::kQ4, assistant), b = Export(model, QuantScheme::kQ4, assistant);
  EXPECT_EQ(FileBytes(a + "/model.safetensors"), FileBytes(b + "/model.safetensors"));
  EXPECT_EQ(FileBytes(a + "/assistant/model.safetensors"), FileBytes(b + "/assistant/model.safetensors"));
  EXPECT_EQ(test::ReadFile(a + "/config.json"), test::ReadFile(model + "/config.json"));
  EXPECT_EQ(test::ReadFile(a + "/generation_config.json"), test::ReadFile(model + "/generation_config.json"));
  EXPECT_FALSE(fs::exists(a + ".partial"));

  auto reader = OpenFileReader(a + "/model.safetensors");
  ASSERT_TRUE(reader.ok());
  auto h = ParseSafetensorsHeader(**reader);
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->metadata["gemma4.quant"], "q4");
  EXPECT_EQ(h->metadata["gemma4.quant_group_size"], "32");
  EXPECT_EQ(h->metadata["gemma4.source_config"], test::ReadFile(model + "/config.json"));
  const auto sources = nlohmann::json::parse(h->metadata["gemma4.source_sha256"]);
  ASSERT_TRUE(sources.contains("model.safetensors"));
  auto digest = Sha256File(model + "/model.safetensors");
  ASSERT_TRUE(digest.ok());
  EXPECT_EQ(sources["model.safetensors"], *digest);
  // Everything large is quantized: the tied embedding and the per-layer table among them.
  EXPECT_EQ(h->tensors.at("model.language_model.embed_tokens.weight").dtype, DType::kU8);
  EXPECT_EQ(h->tensors.at("model.language_model.embed_tokens_per_layer.weight").dtype, DType::kU8);
  EXPECT_EQ(h->tensors.at("model.language_model.embed_tokens_per_layer.weight_scale").dtype, DType::kF16);
  for (const auto& [name, t] : h->tensors) {
    EXPECT_EQ(name.find("vision_tower"), std::string::npos) << "other towers are left out";
  }
}

TEST(Export, Sha256OfAKnownText) {
  const std::string dir = test::MakeTempDir();
  test::WriteFile(dir + "/abc", "abc");  // FIPS 180-2, appendix B.1
  auto d = Sha256File(dir + "/abc");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Export, BadRequestsLeaveNothingBehind) {
  const std::string out = test::MakeTempDir() + "/x";
  auto missing = ExportArtifacts(test::MakeTempDir(), "", QuantScheme::kQ8, out);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("config.json"), std::string::npos) << missing.status().message();
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out + ".partial"));
  // A bad assistant after a good target: the target is not left half exported either.
  auto bad_assistant = ExportArtifacts(test::Models("dense"), test::MakeTempDir(), QuantScheme::kQ8, out);
  EXPECT_FALSE(bad_assistant.ok());
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out + ".partial"));
  const std::string existing = test::MakeTempDir();
  auto exists = ExportArtifacts(test::Models("dense"), "", QuantScheme::kQ8, existing);
  ASSERT_FALSE(exists.ok());
  EXPECT_NE(exists.status().message().find("already exists"), std::string::npos);
  EXPECT_FALSE(ParseQuantScheme("q3").ok());
  // Exporting an artifact again would quantize twice.
  auto twice = ExportArtifacts(Export(test::Models("dense"), QuantScheme::kQ8), "", QuantScheme::kQ4, out);
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("already quantized"), std::string::npos) << twice.status().message();
}

TEST(Export, LoaderChecksQuantizedTensors) {
  const std::string art = Export(test::Models("dense"), QuantScheme::kQ4);
  auto be = MakeCpuBackend();
  auto h = Checkpoint::Open(art);
  ASSERT_TRUE(h.ok());
  std::string name;
  for (const auto& [n, t] : (*h)->tensors()) {
    if (n.find("layers.0.mlp.up_proj.weight") != std::string::npos && n.find("_scale") == std::string::npos) name = n;
  }
  ASSERT_FALSE(name.empty());
  const std::string no_scale = test::MakeTempDir();
  test::CopyCheckpoint(art, no_scale, [&](test::TensorData& t) { return t.name != ScaleTensorName(name); });
  auto m1 = Model::Load(no_scale, *be);
  ASSERT_FALSE(m1.ok());
  EXPECT_NE(m1.status().message().find(ScaleTensorName(name) + " (the scales of quantized"), std::string::npos)
      << m1.status().message();
  const std::string bad_shape = test::MakeTempDir();
  test::CopyCheckpoint(art, bad_shape, [&](test::TensorData& t) {
    if (t.name == ScaleTensorName(name)) {
      t.shape.back() += 1;
      t.bytes.resize(t.bytes.size() + 2 * t.shape[0]);
    }
    return true;
  });
  auto m2 = Model::Load(bad_shape, *be);
  ASSERT_FALSE(m2.ok());
  EXPECT_NE(m2.status().message().find("tensor " + ScaleTensorName(name) + " has shape"), std::string::npos)
      << m2.status().message();
}

class ArtifactTest : public ::testing::TestWithParam<std::tuple<std::string, QuantScheme>> {};

// The loader and every op of the forward pass on q8/q4 weights give the logits of the same
// model with those weights dequantized to float32.
TEST_P(ArtifactTest, EqualsItsDequantizedValues) {
  const auto& [name, scheme] = GetParam();
  const std::string art = Export(test::Models(name), scheme), deq = Dequantized(art);
  auto be = MakeCpuBackend();
  auto q = Model::Load(art, *be), f = Model::Load(deq, *be);
  ASSERT_TRUE(q.ok()) << q.status().message();
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_GT((*q)->load_report().bytes_by_dtype.count(scheme == QuantScheme::kQ8 ? "Q8" : "Q4"), 0u);
  const std::vector<int32_t> prompt = {2, 105, 36, 107, 45, 106, 17, 99, 3};
  std::vector<float> lq, lf;
  auto cq = (*q)->NewCache(16), cf = (*f)->NewCache(16);
  ASSERT_TRUE((*q)->Forward(prompt, **cq, 3, &lq).ok());
  ASSERT_TRUE((*f)->Forward(prompt, **cf, 3, &lf).ok());
  ASSERT_EQ(lq.size(), lf.size());
  for (size_t i = 0; i < lq.size(); ++i) ASSERT_NEAR(lq[i], lf[i], 2e-3f + 1e-4f * std::fabs(lf[i])) << i;
}

// Bounds measured over these random test checkpoints (whose logits swing far more with weight
// noise than a trained model's): q8 within 0.6 nats mean KL, q4 within 4.
TEST_P(ArtifactTest, AccuracyAgainstBf16) {
  const auto& [name, scheme] = GetParam();
  auto be = MakeCpuBackend();
  auto ref = Model::Load(test::Models(name), *be), q = Model::Load(Export(test::Models(name), scheme), *be);
  ASSERT_TRUE(ref.ok() && q.ok());
  auto r = CompareModels(**ref, **q, SeededPrompts(4, (*ref)->config().vocab, 1), 8);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->positions, 32);
  EXPECT_LT(r->mean_kl, scheme == QuantScheme::kQ8 ? 0.6 : 4.0);
  // The reference compared with itself: no divergence at all.
  auto same = CompareModels(**ref, **ref, SeededPrompts(2, (*ref)->config().vocab, 1), 4);
  ASSERT_TRUE(same.ok());
  EXPECT_LT(same->mean_kl, 1e-9);
  EXPECT_EQ(same->agreement, 1.0);
}

INSTANTIATE_TEST_SUITE_P(Models, ArtifactTest,
                         ::testing::Combine(::testing::Values("dense", "e2b_mini", "moe_keqv", "ple_shared"),
                                            ::testing::Values(QuantScheme::kQ8, QuantScheme::kQ4)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + QuantSchemeName(std::get<1>(info.param));
                         });

// Speculative decoding on a q4 target and assistant: greedy output equals plain greedy.
TEST(Export, SpeculativeOnArtifactsEqualsPlainGreedy) {
  const std::string art = Export(test::Models("e2b_mini"), QuantScheme::kQ4, test::Models("e2b_mini/assistant_centroid"));
  auto be = MakeCpuBackend();
  auto target = Model::Load(art, *be);
  ASSERT_TRUE(target.ok()) << target.status().message();
  auto assistant = Assistant::Load(art + "/assistant", *be, **target);
  ASSERT_TRUE(assistant.ok()) << assistant.status().message();
  GenerateOptions o;
  o.max_new_tokens = 24;
  o.stop_ids = {};
  const std::vector<int32_t> prompt = {2, 105, 236, 107, 451, 106, 107, 105, 436, 107};
  auto plain = Generate(**target, prompt, o);
  auto spec = GenerateSpeculative(**target, **assistant, prompt, o, 2);
  ASSERT_TRUE(plain.ok() && spec.ok());
  EXPECT_EQ(spec->tokens, plain->tokens);
  EXPECT_GT(spec->stats.rounds, 0);
}

}  // namespace
}  // namespace g4
