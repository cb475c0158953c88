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
};

Status ValidateSamplerOptions(const SamplerOptions& o);

// A small, portable generator (splitmix64): the same seed gives the same tokens everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next();
  double Uniform() { return static_cast<double>(Next() >> 11) * (1.0 / 9007199254740992.0); }  // [0, 1)

 private:
  uint64_t state_;
};

class Sampler {
 public:
  explicit Sampler(const SamplerOptions& options) : options_(options), rng_(options.seed) {}
  // The next token; kNotFinite when a logit is not finite.
  int Sample(std::span<const float> logits);
  // The probabilities Sample draws from (after temperature, top-k, top-p); all zero but the
  // argmax when greedy (temperature 0, or one too small to differ from it: see Shape); all zero
  // when a logit is not finite.
  std::vector<float> Distribution(std::span<const float> logits) const;
  // The token Sample would choose (the same draw) from the best of the logits only: `top` is the
  // top_k + 1 best (id, logit), largest first, lower id first among equals. -1 (nothing drawn)
  // when that is not enough: greedy or no top-k, logits tied at the k-th place, or an id or a
  // logit among them that is not finite (the whole row then tells).
  int SampleTop(std::span<const std::pair<int, float>> top);

 private:
  SamplerOptions options_;
  Rng rng_;
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
// Draws an index from probabilities that sum to 1 (the last candidate absorbs rounding);
// kNotFinite when their sum is not finite or no probability is positive.
int DrawFrom(std::span<const float> probs, Rng& rng);
// The k largest (id, logit), largest first, lower id first among equals.
std::vector<std::pair<int, float>> TopK(std::span<const float> logits, int k);

}  // namespace g4
