// Choosing the next token from final logits: greedy (temperature 0) or seeded sampling with
// temperature, top-k and top-p, in that order, as the reference's logits processors apply them.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "base/status.h"

namespace g4 {

struct SamplerOptions {
  float temperature = 0.0f;  // 0: greedy
  int top_k = 0;             // 0: no limit
  float top_p = 1.0f;        // 1: no limit
  uint64_t seed = 0;
  // Speculative decoding's rule for sampled drafts (see Sampler). true (a request that gives its
  // seed): a draft is accepted when it is the target's own draw, so the tokens are plain
  // sampling's whatever the drafts. false (a seed drawn at random): the classic rule, accepted
  // with probability min(1, p/q) and else drawn from max(0, p - q), which accepts more drafts.
  bool repeatable = true;
};

Status ValidateSamplerOptions(const SamplerOptions& o);

// A small, portable generator (splitmix64): the same seed gives the same numbers everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next();
  double Uniform() { return static_cast<double>(Next() >> 11) * (1.0 / 9007199254740992.0); }  // [0, 1)

 private:
  uint64_t state_;
};

// Seeded draws are keyed, not streamed: the index-th generated token of a request is drawn with
// noise that depends on (seed, index, candidate id) only, by an exponential race (each candidate
// with probability p > 0 draws E ~ Exp(1) from its noise; the least E / p wins, which picks
// each candidate with probability p: the Gumbel-max trick). A token thus depends on its
// distribution and its index alone, not on how many draws came before it: plain and speculative
// decoding, with any number of drafts a round, give the same tokens for the same seed when a
// draft from the assistant, drawn with the same noise, is accepted exactly when it is the token
// the target draws (SamplerOptions::repeatable).
class Sampler {
 public:
  explicit Sampler(const SamplerOptions& options) : options_(options) {}
  // The index-th generated token; kNotFinite when a logit is not finite.
  int Sample(std::span<const float> logits, uint64_t index) const;
  // The probabilities Sample draws from (after temperature, top-k, top-p); all zero but the
  // argmax when greedy (temperature 0, or one too small to differ from it: see Shape); all zero
  // when a logit is not finite.
  std::vector<float> Distribution(std::span<const float> logits) const;
  // The token Sample would choose (the same draw) from the best of the logits only: `top` is the
  // top_k + 1 best (id, logit), largest first, lower id first among equals. -1 (nothing drawn)
  // when that is not enough: greedy or no top-k, logits tied at the k-th place, or an id or a
  // logit among them that is not finite (the whole row then tells).
  int SampleTop(std::span<const std::pair<int, float>> top, uint64_t index) const;

 private:
  SamplerOptions options_;
};

// The id chosen from a row of logits that are not finite (a NaN or an infinity): Sample,
// DrawFrom (a mass that is not finite or is empty) and the backends' Argmax, ArgmaxKeyed and
// TopKValues give it; generation stops with NotFiniteLogits where it would emit it.
inline constexpr int kNotFinite = -1;
bool AllFinite(std::span<const float> x);
// "logits at position N are not finite; the weights may be corrupt", N the position in the
// sequence (prompt and generated tokens) whose forward pass gave them.
Status NotFiniteLogits(int64_t position);

int Argmax(std::span<const float> logits);  // lowest index among equal maxima
// The index-th draw of a request seeded `seed` from probabilities (the race above, over the
// positive ones); kNotFinite when their sum is not finite or no probability is positive.
// `stream` picks one of independent families of noise (0: the tokens' own).
int DrawFrom(std::span<const float> probs, uint64_t seed, uint64_t index, uint64_t stream = 0);
// A uniform number in (0, 1) for (seed, index, stream), independent of DrawFrom's noise.
double KeyedUniform(uint64_t seed, uint64_t index, uint64_t stream);
// The k largest (id, logit), largest first, lower id first among equals.
std::vector<std::pair<int, float>> TopK(std::span<const float> logits, int k);

}  // namespace g4
