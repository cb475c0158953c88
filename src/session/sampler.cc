#include "session/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace g4 {

Status ValidateSamplerOptions(const SamplerOptions& o) {
  if (!(o.temperature >= 0.0f) || !std::isfinite(o.temperature)) return InvalidArgument("temperature must be >= 0");
  if (o.top_k < 0) return InvalidArgument("top_k must be >= 0");
  if (!(o.top_p > 0.0f && o.top_p <= 1.0f)) return InvalidArgument("top_p must be in (0, 1]");
  return Status::Ok();
}

uint64_t Rng::Next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

int Argmax(std::span<const float> logits) {
  int best = 0;
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[best]) best = static_cast<int>(i);
  }
  return best;
}

std::vector<std::pair<int, float>> TopK(std::span<const float> logits, int k) {
  std::vector<int> idx(logits.size());
  std::iota(idx.begin(), idx.end(), 0);
  k = std::min<int>(k, static_cast<int>(idx.size()));
  auto better = [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), better);
  std::vector<std::pair<int, float>> out;
  for (int i = 0; i < k; ++i) out.emplace_back(idx[i], logits[idx[i]]);
  return out;
}

std::vector<float> Sampler::Distribution(std::span<const float> logits) const {
  const size_t n = logits.size();
  std::vector<float> p(n, 0.0f);
  if (options_.temperature == 0.0f) {
    p[Argmax(logits)] = 1.0f;
    return p;
  }
  // Candidates in descending order of logit.
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  size_t keep = n;
  if (options_.top_k > 0 && static_cast<size_t>(options_.top_k) < n) {
    // Ties with the k-th logit are kept, as the reference's top-k filter does.
    const float kth = logits[order[options_.top_k - 1]];
    keep = options_.top_k;
    while (keep < n && logits[order[keep]] == kth) ++keep;
  }
  const double inv_t = 1.0 / options_.temperature;
  const double mx = logits[order[0]] * inv_t;
  std::vector<double> e(keep);
  double sum = 0.0;
  for (size_t i = 0; i < keep; ++i) sum += (e[i] = std::exp(logits[order[i]] * inv_t - mx));
  if (options_.top_p < 1.0f) {
    // Keep the smallest prefix whose probability reaches top_p (at least one token).
    double cum = 0.0;
    size_t cut = keep;
    for (size_t i = 0; i < keep; ++i) {
      cum += e[i] / sum;
      if (cum >= options_.top_p) {
        cut = i + 1;
        break;
      }
    }
    keep = cut;
    sum = 0.0;
    for (size_t i = 0; i < keep; ++i) sum += e[i];
  }
  for (size_t i = 0; i < keep; ++i) p[order[i]] = static_cast<float>(e[i] / sum);
  return p;
}

int DrawFrom(std::span<const float> probs, Rng& rng) {
  const double u = rng.Uniform();
  double cum = 0.0;
  int last = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (probs[i] <= 0.0f) continue;
    cum += probs[i];
    last = static_cast<int>(i);
    if (u < cum) return last;
  }
  return last;  // rounding: the last candidate
}

int Sampler::Sample(std::span<const float> logits) {
  if (options_.temperature == 0.0f) return Argmax(logits);
  return DrawFrom(Distribution(logits), rng_);
}

}  // namespace g4
