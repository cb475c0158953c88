// Numerics of choosing tokens: temperatures from the smallest float to 1000 in the sampler, in
// generation and in speculative decoding (a temperature too small to differ from greedy gives
// greedy's tokens); logits that are not finite give no token, and generation stops with an error
// naming their position; drafts from an assistant whose logits are not finite are rejected.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "model/assistant.h"
#include "session/generator.h"
#include "session/sampler.h"
#include "session/speculative.h"
#include "tests/test_util.h"

namespace g4 {
namespace {

namespace fs = std::filesystem;

// Temperatures from the smallest float (a subnormal, 1.4e-45) to the largest allowed.
const std::vector<float> kTemperatures = {std::numeric_limits<float>::denorm_min(), 1e-44f, 1e-40f, 1e-38f, 1e-30f,
                                          1e-20f, 1e-18f, 1e-12f, 1e-6f, 1e-3f, 0.1f, 1.0f, 10.0f, 1000.0f};

// Whether every token below the row's largest logit weighs 0 at temperature t, as a double holds
// exp((logit - largest) / t): then sampling is greedy.
bool GreedyAt(std::span<const float> l, float t) {
  const float top = l[Argmax(l)];
  for (float v : l) {
    if (v < top && std::exp((static_cast<double>(v) - top) / t) > 0.0) return false;
  }
  return true;
}

TEST(Numerics, SamplerAtEveryTemperature) {
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> logit(-30.0f, 30.0f);
  for (int row = 0; row < 6; ++row) {
    std::vector<float> l(300);
    for (float& v : l) v = logit(gen);
    if (row % 2) l[17] = l[Argmax(l)];  // a tie at the top
    if (row == 4) l[40] = l[Argmax(l)] - 1e-5f;  // a near tie
    for (float t : kTemperatures) {
      for (const SamplerOptions& o : {SamplerOptions{t, 0, 1.0f, 3}, SamplerOptions{t, 40, 0.9f, 3}}) {
        SCOPED_TRACE("row " + std::to_string(row) + " temperature " + std::to_string(t) + " top_k " +
                     std::to_string(o.top_k));
        Sampler s(o), whole(o);
        const std::vector<float> p = s.Distribution(l);
        double sum = 0.0;
        for (size_t i = 0; i < p.size(); ++i) {
          ASSERT_TRUE(p[i] >= 0.0f && p[i] <= 1.0f) << i << ": " << p[i];
          sum += p[i];
        }
        EXPECT_NEAR(sum, 1.0, 1e-5);
        // A larger logit never has a smaller probability.
        for (size_t i = 0; i < l.size(); ++i) {
          for (size_t j = 0; j < l.size(); ++j) {
            if (l[i] > l[j]) {
              ASSERT_GE(p[i], p[j]) << i << " " << j;
            }
          }
        }
        if (GreedyAt(l, t)) {
          EXPECT_EQ(p[Argmax(l)], 1.0f);
        }
        for (int draw = 0; draw < 20; ++draw) {
          const int a = s.Sample(l, draw);
          ASSERT_TRUE(a >= 0 && a < static_cast<int>(l.size()));
          EXPECT_GT(p[a], 0.0f);
          if (GreedyAt(l, t)) {
            EXPECT_EQ(a, Argmax(l));
          }
          if (o.top_k > 0) {  // the backend's top-k path draws the same token
            const int b = whole.SampleTop(TopK(l, o.top_k + 1), draw);
            EXPECT_EQ(b, a);
          }
        }
      }
    }
  }
}

TEST(Numerics, LogitsThatAreNotFiniteGiveNoToken) {
  for (float bad : {NAN, INFINITY, -INFINITY}) {
    std::vector<float> l = {0.5f, 2.0f, -1.0f, 1.0f};
    l[2] = bad;
    EXPECT_FALSE(AllFinite(l));
    for (float t : {0.0f, 1e-30f, 1.0f}) {
      Sampler s(SamplerOptions{t, 0, 1.0f, 1});
      EXPECT_EQ(s.Sample(l, 0), kNotFinite) << bad << " " << t;
      for (float p : s.Distribution(l)) EXPECT_EQ(p, 0.0f);
      // From the backend's top-k: ids it flagged, or a value that is not finite, are not enough
      // (the whole row then decides).
      Sampler k(SamplerOptions{t, 2, 1.0f, 1});
      const std::vector<std::pair<int, float>> flagged = {{-1, 2.0f}, {-1, 1.0f}, {-1, 0.5f}};
      const std::vector<std::pair<int, float>> with_bad = {{1, 2.0f}, {3, bad}, {0, 0.5f}};
      if (t > 0.0f) {
        EXPECT_EQ(k.SampleTop(flagged, 0), -1);
        EXPECT_EQ(k.SampleTop(with_bad, 0), -1);
      }
    }
  }
  EXPECT_EQ(DrawFrom(std::vector<float>{0.0f, 0.0f}, 1, 0), kNotFinite);
  EXPECT_EQ(DrawFrom(std::vector<float>{0.5f, NAN, 0.5f}, 1, 0), kNotFinite);
  EXPECT_EQ(DrawFrom(std::vector<float>{0.5f, INFINITY}, 1, 0), kNotFinite);
  EXPECT_EQ(DrawFrom(std::vector<float>{0.0f, 1.0f}, 1, 0), 1);
  EXPECT_EQ(NotFiniteLogits(12).message(), "logits at position 12 are not finite; the weights may be corrupt");
}

// The CPU backend's argmax and top-k write kNotFiniteId for a row that is not finite, and read
// row 0 for ids outside a table.
TEST(Numerics, CpuBackendFlagsRowsThatAreNotFinite) {
  auto be = MakeCpuBackend();
  const std::vector<float> rows = {1.0f, 3.0f, 2.0f, 0.0f, /* row 1 */ 1.0f, NAN, 5.0f, 0.0f};
  auto x = be->Allocate(rows.size() * sizeof(float));
  auto out = be->Allocate(16 * sizeof(float));
  ASSERT_TRUE(x.ok() && out.ok());
  ASSERT_TRUE(be->Upload(**x, 0, rows.data(), rows.size() * sizeof(float)).ok());
  const F32 xs{x->get(), 0}, o{out->get(), 0};
  std::vector<float> got(16);
  be->Argmax(o, xs, 2, 4);
  ASSERT_TRUE(be->Download(**out, 0, got.data(), 2 * sizeof(float)).ok());
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_EQ(got[1], Backend::kNotFiniteId);
  be->TopKValues(o, xs.At(4), 4, 2);
  ASSERT_TRUE(be->Download(**out, 0, got.data(), 4 * sizeof(float)).ok());
  EXPECT_EQ(got[0], Backend::kNotFiniteId);
  EXPECT_EQ(got[1], Backend::kNotFiniteId);
  be->TopKValues(o, xs, 4, 2);
  ASSERT_TRUE(be->Download(**out, 0, got.data(), 4 * sizeof(float)).ok());
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_EQ(got[1], 2.0f);
  be->ArgmaxKeyed(o, xs.At(4), xs, 4);
  ASSERT_TRUE(be->Download(**out, 0, got.data(), sizeof(float)).ok());
  EXPECT_EQ(got[0], Backend::kNotFiniteId);
}

// Weights with element `i` of tensor `name` (bf16) set to `v`, written to a fresh folder.
std::string Poisoned(const std::string& model, const std::string& name, float v, size_t first, size_t count) {
  const std::string dir = test::MakeTempDir();
  test::CopyCheckpoint(test::TestData("models/" + model), dir, [&](test::TensorData& t) {
    if (t.name != name) return true;
    EXPECT_EQ(t.dtype, DType::kBF16);
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    const uint16_t h = static_cast<uint16_t>(bits >> 16);
    for (size_t i = first; i < first + count; ++i) std::memcpy(&t.bytes[2 * i], &h, 2);
    return true;
  });
  return dir;
}

class NumericsGenerate : public ::testing::Test {
 protected:
  void SetUp() override { be_ = MakeCpuBackend(); }
  std::unique_ptr<Model> Load(const std::string& dir) {
    auto m = Model::Load(dir, *be_);
    EXPECT_TRUE(m.ok()) << m.status().message();
    return m.ok() ? std::move(m).value() : nullptr;
  }
  std::unique_ptr<Assistant> LoadAssistant(const std::string& dir, Model& target) {
    auto a = Assistant::Load(dir, *be_, target);
    EXPECT_TRUE(a.ok()) << a.status().message();
    return a.ok() ? std::move(a).value() : nullptr;
  }
  static GenerateOptions Options(float t, int top_k = 0, int n = 8) {
    GenerateOptions o;
    o.max_new_tokens = n;
    o.stop_ids = {-1};
    o.sampler = SamplerOptions{t, top_k, 1.0f, 1};
    return o;
  }
  std::unique_ptr<Backend> be_;
  const std::vector<int32_t> prompt_ = {2, 105, 40, 77, 200};
};

// Every temperature gives tokens inside the vocabulary, the same ones for the same seed; small
// ones give greedy's, plainly and with an assistant (whose drafts are then accepted only where
// they are greedy's).
TEST_F(NumericsGenerate, EveryTemperatureOnTheCpu) {
  auto model = Load(test::TestData("models/dense"));
  auto assistant = LoadAssistant(test::TestData("models/dense/assistant_plain"), *model);
  ASSERT_TRUE(model && assistant);
  auto greedy = Generate(*model, prompt_, Options(0.0f));
  ASSERT_TRUE(greedy.ok());
  for (float t : kTemperatures) {
    for (int top_k : {0, 40}) {
      SCOPED_TRACE("temperature " + std::to_string(t) + " top_k " + std::to_string(top_k));
      const GenerateOptions o = Options(t, top_k);
      auto plain = Generate(*model, prompt_, o);
      auto again = Generate(*model, prompt_, o);
      auto spec = GenerateSpeculative(*model, *assistant, prompt_, o, 2);
      ASSERT_TRUE(plain.ok() && again.ok()) << plain.status().message();
      ASSERT_TRUE(spec.ok()) << spec.status().message();
      EXPECT_EQ(plain->tokens, again->tokens);
      for (const auto* r : {&*plain, &*spec}) {
        ASSERT_EQ(r->tokens.size(), 8u);
        for (int tok : r->tokens) EXPECT_TRUE(tok >= 0 && tok < model->config().vocab) << tok;
      }
      if (t <= 1e-12f) {
        EXPECT_EQ(plain->tokens, greedy->tokens);
        EXPECT_EQ(spec->tokens, greedy->tokens);
      }
    }
  }
}

// A NaN or an infinity in the target's weights stops every kind of generation at the prompt's
// last position with the error, on every path that chooses a token.
TEST_F(NumericsGenerate, WeightsThatAreNotFiniteStopGeneration) {
  for (float bad : {NAN, INFINITY}) {
    const std::string dir = Poisoned("dense", "model.layers.1.mlp.down_proj.weight", bad, 0, 1);
    auto model = Load(dir);
    auto assistant = LoadAssistant(test::TestData("models/dense/assistant_plain"), *model);
    ASSERT_TRUE(model && assistant);
    const std::string want = "logits at position 4 are not finite; the weights may be corrupt";
    GenerateOptions with_logits = Options(0.0f);
    with_logits.top_logits = 2;
    for (const GenerateOptions& o : {Options(0.0f), with_logits, Options(1.0f), Options(1.0f, 5), Options(1e-30f)}) {
      SCOPED_TRACE("value " + std::to_string(bad) + " temperature " + std::to_string(o.sampler.temperature) +
                   " top_k " + std::to_string(o.sampler.top_k) + " top_logits " + std::to_string(o.top_logits));
      auto plain = Generate(*model, prompt_, o);
      ASSERT_FALSE(plain.ok());
      EXPECT_EQ(plain.status().message(), want);
      auto spec = GenerateSpeculative(*model, *assistant, prompt_, o, 2);
      ASSERT_FALSE(spec.ok());
      EXPECT_EQ(spec.status().message(), want);
    }
    fs::remove_all(dir);
  }
}

// A NaN in the per-layer embedding of one token makes the logits at the positions that token is
// read from NaN: generation stops at the first of them, after the tokens before it.
TEST_F(NumericsGenerate, TheErrorNamesThePosition) {
  auto clean = Load(test::TestData("models/e2b_mini"));
  ASSERT_TRUE(clean);
  auto greedy = Generate(*clean, prompt_, Options(0.0f));
  ASSERT_TRUE(greedy.ok());
  // The first generated token not seen before it: its position is the prompt's length plus its index.
  size_t at = 1;
  auto seen = [&](size_t i) {
    const int t = greedy->tokens[i];
    return std::count(prompt_.begin(), prompt_.end(), t) > 0 ||
           std::count(greedy->tokens.begin(), greedy->tokens.begin() + i, t) > 0;
  };
  while (at < greedy->tokens.size() && seen(at)) ++at;
  ASSERT_LT(at, greedy->tokens.size() - 1);
  const int token = greedy->tokens[at];
  const std::string dir = Poisoned("e2b_mini", "model.language_model.embed_tokens_per_layer.weight", NAN,
                                   static_cast<size_t>(token) * 160, 160);
  auto model = Load(dir);
  auto assistant = LoadAssistant(test::TestData("models/e2b_mini/assistant_centroid"), *model);
  ASSERT_TRUE(model && assistant);
  const std::string want = "logits at position " + std::to_string(prompt_.size() + at) +
                           " are not finite; the weights may be corrupt";
  int streamed = 0;
  for (const GenerateOptions& o : {Options(0.0f), Options(1e-30f), Options(1e-30f, 5)}) {
    SCOPED_TRACE("temperature " + std::to_string(o.sampler.temperature) + " top_k " + std::to_string(o.sampler.top_k));
    streamed = 0;
    auto plain = Generate(*model, prompt_, o, [&](int) { ++streamed; });
    ASSERT_FALSE(plain.ok());
    EXPECT_EQ(plain.status().message(), want);
    EXPECT_EQ(streamed, static_cast<int>(at) + 1);  // up to and including the token that reads the NaN
    auto spec = GenerateSpeculative(*model, *assistant, prompt_, o, 2);
    ASSERT_FALSE(spec.ok());
    EXPECT_EQ(spec.status().message(), want);
  }
  fs::remove_all(dir);
}

// An assistant whose logits are NaN has no draft accepted, greedy (on the backend and on the
// host) or sampling; the target's tokens are what they are without it.
TEST_F(NumericsGenerate, DraftsThatAreNotFiniteAreRejected) {
  struct Case {
    std::string target, assistant, tensor;
  };
  for (const Case& c : {Case{"dense", "dense/assistant_plain", "model.layers.0.mlp.down_proj.weight"},
                        Case{"e2b_mini", "e2b_mini/assistant_centroid", "model.layers.0.mlp.down_proj.weight"}}) {
    SCOPED_TRACE(c.assistant);
    auto model = Load(test::TestData("models/" + c.target));
    const std::string dir = Poisoned(c.assistant, c.tensor, NAN, 0, 1);
    auto assistant = LoadAssistant(dir, *model);
    ASSERT_TRUE(model && assistant);
    GenerateOptions with_logits = Options(0.0f, 0, 8);
    with_logits.top_logits = 1;
    for (const GenerateOptions& o : {Options(0.0f, 0, 8), with_logits, Options(1.0f, 0, 8), Options(1e-30f, 0, 8)}) {
      SCOPED_TRACE("temperature " + std::to_string(o.sampler.temperature) + " top_logits " +
                   std::to_string(o.top_logits));
      auto spec = GenerateSpeculative(*model, *assistant, prompt_, o, SpeculativeOptions{2, DraftPolicyKind::kFixed});
      ASSERT_TRUE(spec.ok()) << spec.status().message();
      EXPECT_GT(spec->stats.drafted, 0);
      EXPECT_EQ(spec->stats.accepted, 0);
      if (o.sampler.temperature < 1.0f) {
        auto plain = Generate(*model, prompt_, o);
        ASSERT_TRUE(plain.ok());
        EXPECT_EQ(spec->tokens, plain->tokens);
      }
    }
    fs::remove_all(dir);
  }
}

}  // namespace
}  // namespace g4
