// The model against outputs recorded from the reference implementation (tools/reference):
// greedy tokens identical, final logits within tolerance at every recorded position, through
// the batched prefill, the one-token decode path and chunked prefills alike.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

#include "model/model.h"
#include "session/generator.h"
#include "tests/test_util.h"

namespace g4 {
namespace {

// Max |ours - reference| allowed for a final logit (softcapped logits lie in (-30, 30)).
constexpr float kLogitTolerance = 1e-3f;

class GoldenTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    backend_ = MakeCpuBackend();
    auto m = Model::Load(GetParam(), *backend_);
    ASSERT_TRUE(m.ok()) << m.status().message();
    model_ = std::move(m).value();
    golden_ = test::ReadJson(GetParam() + "/golden.json");
  }

  // Compares one row of logits; prints the first few mismatches.
  void ExpectLogitsNear(const float* ours, const nlohmann::json& ref, const std::string& what) {
    const int vocab = model_->config().vocab;
    ASSERT_EQ(static_cast<int>(ref.size()), vocab);
    int bad = 0;
    float worst = 0.0f;
    for (int i = 0; i < vocab; ++i) {
      const float d = std::fabs(ours[i] - ref[i].get<float>());
      worst = std::max(worst, d);
      if (d > kLogitTolerance && bad++ < 5) {
        ADD_FAILURE() << what << ": logit " << i << " is " << ours[i] << ", reference " << ref[i].get<float>();
      }
    }
    EXPECT_LE(worst, kLogitTolerance) << what;
  }

  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Model> model_;
  nlohmann::json golden_;
};

// One step at a time, and with steps recorded ahead of the token read back (ids kept on the
// backend; what the WebGPU backend does by default), which must not change a token or a stop.
TEST_P(GoldenTest, GreedyTokensMatchReference) {
  for (int ahead : {0, 1, 3}) {
    for (const auto& p : golden_["prompts"]) {
      const std::vector<int32_t> prompt = p["prompt_ids"].get<std::vector<int32_t>>();
      GenerateOptions opt;
      opt.max_new_tokens = golden_["max_new_tokens"].get<int>();
      opt.stop_ids = golden_["eos_token_ids"].get<std::vector<int>>();
      opt.decode_ahead = ahead;
      std::vector<int> streamed;
      auto r = Generate(*model_, prompt, opt, [&](int t) { streamed.push_back(t); });
      ASSERT_TRUE(r.ok()) << r.status().message();
      const std::string what = "prompt of " + std::to_string(prompt.size()) + " tokens, ahead " + std::to_string(ahead);
      EXPECT_EQ(r->tokens, p["greedy_tokens"].get<std::vector<int>>()) << what;
      EXPECT_EQ(streamed, r->tokens) << what;
      EXPECT_EQ(r->stop_reason, p["stop_reason"].get<std::string>()) << what;
    }
  }
}

TEST_P(GoldenTest, BatchedLogitsMatchReference) {
  for (const auto& p : golden_["prompts"]) {
    std::vector<int32_t> seq = p["prompt_ids"].get<std::vector<int32_t>>();
    for (int t : p["greedy_tokens"]) seq.push_back(t);
    auto cache = model_->NewCache(static_cast<int64_t>(seq.size()));
    ASSERT_TRUE(cache.ok());
    std::vector<float> logits;
    const int n = static_cast<int>(seq.size());
    ASSERT_TRUE(model_->Forward(seq, **cache, n, &logits).ok());
    for (const auto& rec : p["logits"]) {
      const int pos = rec["position"].get<int>();
      ExpectLogitsNear(&logits[static_cast<size_t>(pos) * model_->config().vocab], rec["values"],
                       "batched, position " + std::to_string(pos) + " of " + std::to_string(n));
    }
  }
}

// Every position run through the cache, in chunks of `chunk` tokens (1: plain decoding).
void RunChunked(GoldenTest* t, Model& model, const nlohmann::json& p, int chunk,
                const std::function<void(int, const float*)>& check) {
  std::vector<int32_t> seq = p["prompt_ids"].get<std::vector<int32_t>>();
  for (int tok : p["greedy_tokens"]) seq.push_back(tok);
  auto cache = model.NewCache(static_cast<int64_t>(seq.size()));
  ASSERT_TRUE(cache.ok());
  std::vector<float> logits;
  for (size_t at = 0; at < seq.size(); at += chunk) {
    const size_t len = std::min<size_t>(chunk, seq.size() - at);
    ASSERT_TRUE(model.Forward(std::span<const int32_t>(seq.data() + at, len), **cache, static_cast<int>(len), &logits).ok());
    for (size_t r = 0; r < len; ++r) check(static_cast<int>(at + r), &logits[r * model.config().vocab]);
  }
}

TEST_P(GoldenTest, CachedAndChunkedLogitsMatchReference) {
  for (int chunk : {1, 3, 7}) {
    for (const auto& p : golden_["prompts"]) {
      RunChunked(this, *model_, p, chunk, [&](int pos, const float* row) {
        for (const auto& rec : p["logits"]) {
          if (rec["position"].get<int>() == pos) {
            ExpectLogitsNear(row, rec["values"], "chunk " + std::to_string(chunk) + ", position " + std::to_string(pos));
          }
        }
      });
    }
  }
}

std::string DirName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = std::filesystem::path(info.param).filename().string() + "_" + std::to_string(info.index);
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Checkpoints, GoldenTest, ::testing::ValuesIn(test::GoldenModelDirs()), DirName);

}  // namespace
}  // namespace g4
