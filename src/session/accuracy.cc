#include "session/accuracy.h"

#include <algorithm>
#include <cmath>

namespace g4 {
namespace {

// log-softmax of one row, in double.
std::vector<double> LogSoftmax(const float* x, int n) {
  const double mx = *std::max_element(x, x + n);
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += std::exp(x[i] - mx);
  const double lse = mx + std::log(sum);
  std::vector<double> out(n);
  for (int i = 0; i < n; ++i) out[i] = x[i] - lse;
  return out;
}

int Argmax(const float* x, int n) { return static_cast<int>(std::max_element(x, x + n) - x); }

// The logits of each next token along prompt + continuation, fed one token at a time after the
// prompt: rows[i] predicts continuation[i]. With `follow` empty the model picks the continuation
// greedily; otherwise it is fed `follow`.
Status NextTokenLogits(Model& m, const std::vector<int32_t>& prompt, int steps, const std::vector<int32_t>& follow,
                       std::vector<std::vector<float>>* rows, std::vector<int32_t>* continuation) {
  G4_ASSIGN_OR_RETURN(auto cache, m.NewCache(static_cast<int64_t>(prompt.size()) + steps));
  const int vocab = m.config().vocab;
  std::vector<float> logits;
  G4_RETURN_IF_ERROR(m.Forward(prompt, *cache, 1, &logits));
  rows->clear();
  continuation->clear();
  for (int i = 0; i < steps; ++i) {
    rows->push_back(logits);
    const int32_t next = follow.empty() ? Argmax(logits.data(), vocab) : follow[i];
    continuation->push_back(next);
    if (i + 1 < steps) G4_RETURN_IF_ERROR(m.Forward(std::span<const int32_t>(&next, 1), *cache, 1, &logits));
  }
  return Status::Ok();
}

}  // namespace

Result<AccuracyReport> CompareModels(Model& reference, Model& model, const std::vector<std::vector<int32_t>>& prompts,
                                     int steps) {
  const int vocab = reference.config().vocab;
  if (model.config().vocab != vocab) return InvalidArgument("accuracy: the two models have different vocabularies");
  if (steps < 1) return InvalidArgument("accuracy: steps must be at least 1");
  AccuracyReport r;
  double kl_sum = 0.0;
  int64_t agreed = 0;
  for (const auto& prompt : prompts) {
    std::vector<std::vector<float>> ref_rows, rows;
    std::vector<int32_t> ref_tokens, fed;
    G4_RETURN_IF_ERROR(NextTokenLogits(reference, prompt, steps, {}, &ref_rows, &ref_tokens));
    G4_RETURN_IF_ERROR(NextTokenLogits(model, prompt, steps, ref_tokens, &rows, &fed));
    bool diverged = false;
    for (int i = 0; i < steps; ++i) {
      const std::vector<double> lp = LogSoftmax(ref_rows[i].data(), vocab), lq = LogSoftmax(rows[i].data(), vocab);
      double kl = 0.0;
      for (int v = 0; v < vocab; ++v) kl += std::exp(lp[v]) * (lp[v] - lq[v]);
      kl = std::max(0.0, kl);
      kl_sum += kl;
      r.max_kl = std::max(r.max_kl, kl);
      r.positions++;
      if (!diverged && Argmax(rows[i].data(), vocab) == ref_tokens[i]) {
        agreed++;
      } else {
        diverged = true;
      }
    }
  }
  r.mean_kl = r.positions ? kl_sum / r.positions : 0.0;
  r.agreement = r.positions ? static_cast<double>(agreed) / r.positions : 0.0;
  return r;
}

std::vector<std::vector<int32_t>> SeededPrompts(int count, int vocab, uint64_t seed) {
  std::vector<std::vector<int32_t>> prompts;
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  auto next = [&s]() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  };
  for (int p = 0; p < count; ++p) {
    std::vector<int32_t> ids = {2};
    const int len = 6 + static_cast<int>(next() % 16);
    while (static_cast<int>(ids.size()) < len) ids.push_back(2 + static_cast<int32_t>(next() % (vocab - 2)));
    prompts.push_back(std::move(ids));
  }
  return prompts;
}

}  // namespace g4
