// Speculative decoding with the MTP assistant, as GEMMA4.md defines the round: the assistant
// drafts K tokens at one position from the target's last hidden state; one batched target
// forward verifies [seed, drafts]; the longest matching prefix (greedy) or the drafts that pass
// min(1, p/q) (sampling) are kept, plus the target's bonus token; the cache is rolled back to
// what was kept. Greedy output equals plain greedy decoding; sampled output follows the target's
// distribution.
#pragma once

#include "model/assistant.h"
#include "session/generator.h"

namespace g4 {

constexpr int kMaxDraftTokens = 8;

Result<GenerationResult> GenerateSpeculative(Model& target, Assistant& assistant, std::span<const int32_t> prompt,
                                             const GenerateOptions& options, int draft_tokens,
                                             const std::function<void(int)>& on_token = {});

}  // namespace g4
