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
  // Asked after each emitted token (may be empty): true ends generation there, with stop_reason
  // "interrupted".
  std::function<bool()> interrupted;
  // Speculative decoding: told after each round's verification (may be empty), before its tokens
  // are emitted: drafted nd, accepted m (the first m drafts).
  std::function<void(int drafted, int accepted)> on_round;
  // Greedy decoding without recorded logits: how many steps to record beyond the one whose token
  // is read back next (each step embeds the previous one's id on the backend). 0: none, one step
  // at a time; -1: kDecodeAhead where the backend's reads overlap its work, else none. 0 also
  // records no speculative round ahead (round_ahead).
  int decode_ahead = -1;
  // Greedy speculative rounds without recorded logits: 1 records the next round before this
  // one's read, its positions and its seed's row taken from this round's verdict on the backend
  // (Backend::SetPositionShift, CopyRow), so that the device goes from round to round without
  // waiting for the host; 0 records each round once the read before it is in. -1: 1 where steps
  // are recorded ahead (decode_ahead). decode_ahead 0 records no round ahead either way.
  int round_ahead = -1;
};

// Steps recorded ahead by default (decode_ahead -1 on a backend whose reads overlap its work).
inline constexpr int kDecodeAhead = 1;
// The steps greedy decoding records ahead on `backend` for GenerateOptions::decode_ahead.
inline int StepsAhead(int decode_ahead, const Backend& backend) {
  return decode_ahead >= 0 ? decode_ahead : backend.DownloadsOverlap() ? kDecodeAhead : 0;
}

// One speculative round, for tests and traces.
struct RoundTrace {
  int64_t position = 0;     // where the seed token runs
  int seed = 0;             // the last emitted token, not yet run through the target
  std::vector<int> drafts;  // the assistant's drafts
  int accepted = 0;         // how many drafts verification kept (the counters count those emitted:
                            // fewer, in a last round that a stop token among them ended)
  int bonus = 0;            // the target's token after the accepted drafts
};

struct GenerationStats {
  int prompt_tokens = 0;
  int generated_tokens = 0;
  int64_t prefill_us = 0;
  int64_t decode_us = 0;
  double prefill_tokens_per_s() const;
  double decode_tokens_per_s() const;  // over the tokens after the first
  // Speculative decoding (all zero for plain decoding).
  int rounds = 0;                        // target verification forwards after the prefill
  int drafted = 0;
  // Drafts accepted and emitted: where a stop token is an accepted draft, the round's count ends
  // with it (the drafts kept after it bought nothing), and that round emits no bonus.
  int accepted = 0;
  std::vector<int> accepted_per_position;  // (K) rounds in which draft j was accepted and emitted
  std::vector<int> accepted_per_round;     // (rounds) the drafts each emitted
  std::vector<int> drafted_per_round;      // (rounds) the drafts each made: 0 for a plain step
  std::vector<int> rounds_per_k;           // (K + 1) rounds by the drafts they made
  // Greedy rounds recorded before the read of the round before them (GenerateOptions::round_ahead),
  // counted as they are read (a round after a stop token is not).
  int rounds_ahead = 0;
  double acceptance_rate() const { return drafted ? static_cast<double>(accepted) / drafted : 0.0; }
  // Tokens emitted per round (after the first, which the prefill gives).
  double tokens_per_round() const { return rounds ? static_cast<double>(generated_tokens - 1) / rounds : 0.0; }
};

struct GenerationResult {
  std::vector<int> tokens;
  std::string stop_reason;  // "eos", "length" or "interrupted"
  std::vector<std::vector<std::pair<int, float>>> top_logits;
  GenerationStats stats;
  std::vector<RoundTrace> rounds;  // speculative decoding only
};

// `on_token` (may be empty) sees each token as it is chosen.
Result<GenerationResult> Generate(Model& model, std::span<const int32_t> prompt, const GenerateOptions& options,
                                  const std::function<void(int)>& on_token = {});

int64_t MonotonicMicros();

}  // namespace g4
