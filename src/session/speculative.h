// Speculative decoding with the MTP assistant, as GEMMA4.md defines the round: the assistant
// drafts K tokens at one position from the target's last hidden state; one batched target
// forward verifies [seed, drafts]; the longest prefix of drafts equal to the target's own choices
// (greedy, or seeded sampling with keyed draws: see Sampler) or of drafts that pass min(1, p/q)
// (unseeded sampling) is kept, plus the target's bonus token; the cache is rolled back to what
// was kept. Greedy and seeded sampled output equal plain decoding's; sampled output follows the
// target's distribution.
#pragma once

#include <cstdint>
#include <functional>

#include "model/assistant.h"
#include "session/draft_policy.h"
#include "session/generator.h"

namespace g4 {

constexpr int kMaxDraftTokens = 8;

// Where a greedy round on the backend keeps its ids (floats), for up to k drafts: [seed, drafts]
// (k + 1), the target's tokens for them (k + 1), then the verdict (m, bonus): 2k + 4 in all.
struct GreedyRoundSlots {
  GreedyRoundSlots(F32 base, int k) : tokens(base), target(base.At(k + 1)), verdict(base.At(2 * k + 2)) {}
  static size_t Count(int k) { return 2 * static_cast<size_t>(k) + 4; }
  F32 tokens, target, verdict;
};

// Records one greedy round on the backend, nothing read back: nd drafts at position
// cache.length() from the seed in slots.tokens[0] and `state` (`spare` is the drafts' other
// state buffer), one target forward over [seed, drafts] and the acceptance into slots.verdict.
Status RecordGreedyRound(Model& target, Assistant& assistant, KvCache& cache, F32 state, F32 spare,
                         const GreedyRoundSlots& slots, int nd);

struct SpeculativeOptions {
  int max_drafts = 2;  // K: the drafts of a round, at most
  DraftPolicyKind policy = DraftPolicyKind::kAdaptive;
  // Microseconds the adaptive policy reads the cost of rounds and steps from; empty: the
  // monotonic clock. A clock that counts only this thread's work makes the choices independent
  // of what else the machine runs.
  std::function<int64_t()> clock = {};
};

// Rounds of at most K drafts as `speculative.policy` chooses them (a round with no drafts is a
// plain step); every round drafts min(K, room) with the fixed policy.
Result<GenerationResult> GenerateSpeculative(Model& target, Assistant& assistant, std::span<const int32_t> prompt,
                                             const GenerateOptions& options, const SpeculativeOptions& speculative,
                                             const std::function<void(int)>& on_token = {});
// The fixed policy with K = draft_tokens.
Result<GenerationResult> GenerateSpeculative(Model& target, Assistant& assistant, std::span<const int32_t> prompt,
                                             const GenerateOptions& options, int draft_tokens,
                                             const std::function<void(int)>& on_token = {});

}  // namespace g4
