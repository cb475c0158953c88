// The generation loop: prefill the prompt as one batch, then decode one token per step until a
// stop token or the budget.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "model/model.h"
#include "session/sampler.h"

namespace g4 {

struct GenerateOptions {
  int max_new_tokens = 32;
  SamplerOptions sampler;
  int top_logits = 0;             // record the K best final logits per generated token
  std::vector<int> stop_ids;      // empty: the model's eos ids
};

struct GenerationStats {
  int prompt_tokens = 0;
  int generated_tokens = 0;
  int64_t prefill_us = 0;
  int64_t decode_us = 0;
  double prefill_tokens_per_s() const;
  double decode_tokens_per_s() const;  // over the tokens after the first
};

struct GenerationResult {
  std::vector<int> tokens;
  std::string stop_reason;  // "eos" or "length"
  std::vector<std::vector<std::pair<int, float>>> top_logits;
  GenerationStats stats;
};

// `on_token` (may be empty) sees each token as it is chosen.
Result<GenerationResult> Generate(Model& model, std::span<const int32_t> prompt, const GenerateOptions& options,
                                  const std::function<void(int)>& on_token = {});

int64_t MonotonicMicros();

}  // namespace g4
