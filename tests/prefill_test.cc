// Long prompts prefill in chunks of Model::kPrefillChunk: the same tokens as one batch, plain and
// speculative; the memory estimate counts the cache a context really takes.
#include <gtest/gtest.h>

#include "model/assistant.h"
#include "model/model.h"
#include "session/generator.h"
#include "session/speculative.h"
#include "tests/test_util.h"

namespace g4 {
namespace {

std::vector<int32_t> LongPrompt(int n, int vocab) {
  std::vector<int32_t> p = {2};
  for (int i = 1; i < n; ++i) p.push_back(3 + (i * 7919) % (vocab - 3));
  return p;
}

TEST(Prefill, ChunksGiveTheTokensOfOneBatch) {
  const std::string dir = test::TestData("models/e2b_mini");
  auto be = MakeCpuBackend();
  auto m = Model::Load(dir, *be);
  ASSERT_TRUE(m.ok());
  const std::vector<int32_t> prompt = LongPrompt(Model::kPrefillChunk * 2 + 37, (*m)->config().vocab);
  // One batch, by hand.
  auto cache = (*m)->NewCache(static_cast<int64_t>(prompt.size()) + 8);
  ASSERT_TRUE(cache.ok());
  std::vector<int> ids;
  std::vector<int> want;
  ASSERT_TRUE((*m)->ForwardArgmax(prompt, **cache, 1, &ids).ok());
  want.push_back(ids[0]);
  for (int i = 1; i < 8; ++i) {
    const int32_t t = want.back();
    ASSERT_TRUE((*m)->ForwardArgmax(std::span<const int32_t>(&t, 1), **cache, 1, &ids).ok());
    want.push_back(ids[0]);
  }
  GenerateOptions o;
  o.max_new_tokens = 8;
  o.stop_ids = {-1};
  auto plain = Generate(**m, prompt, o);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(plain->tokens, want);
  auto a = Assistant::Load(dir + "/assistant_centroid", *be, **m);
  ASSERT_TRUE(a.ok());
  auto spec = GenerateSpeculative(**m, **a, prompt, o, 2);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->tokens, want);
}

TEST(Prefill, MemoryEstimateCountsTheCache) {
  auto be = MakeCpuBackend();
  auto m = Model::Load(test::TestData("models/e2b_mini"), *be);
  ASSERT_TRUE(m.ok());
  for (int64_t positions : {5, 700, 4096}) {
    auto cache = (*m)->NewCache(positions);
    ASSERT_TRUE(cache.ok());
    const Model::MemoryEstimate e = (*m)->EstimateMemory(positions);
    EXPECT_EQ(e.kv_cache, (*cache)->bytes()) << positions;
    EXPECT_GT(e.activations, 0u);
    uint64_t weights = 0;
    for (const auto& [d, b] : (*m)->load_report().bytes_by_dtype) weights += b;
    EXPECT_EQ(e.weights, weights);
  }
  EXPECT_EQ((*m)->EstimateMemory(4096).activations, (*m)->EstimateMemory(100000).activations);  // chunked
}

}  // namespace
}  // namespace g4
