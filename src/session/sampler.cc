#include "session/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>

#include "backend/backend.h"

namespace g4 {

namespace {

// splitmix64's output function: a bijection of 64 bits that mixes every input bit into each.
uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The key of the noise of (seed, index, stream), and a uniform number in (0, 1) from 64 bits.
uint64_t NoiseKey(uint64_t seed, uint64_t index, uint64_t stream) {
  return Mix(seed + 0x9e3779b97f4a7c15ull * Mix(index + 0x632be59bd9b4e019ull * (stream + 1)));
}
double Unit(uint64_t bits) { return (static_cast<double>(bits >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

}  // namespace

static_assert(kNotFinite == static_cast<int>(Backend::kNotFiniteId), "one id for logits that are not finite");

namespace {
// A float in its shortest %g form (-1e-09, not -0.000000).
std::string Shortest(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(v));
  return buf;
}
}  // namespace

Status ValidateSamplerOptions(const SamplerOptions& o) {
  if (!(o.temperature >= 0.0f) || !std::isfinite(o.temperature)) {
    return InvalidArgument("temperature must be >= 0, not " + Shortest(o.temperature));
  }
  if (o.top_k < 0) return InvalidArgument("top_k must be >= 0, not " + std::to_string(o.top_k));
  if (!(o.top_p > 0.0f && o.top_p <= 1.0f)) return InvalidArgument("top_p must be in (0, 1], not " + Shortest(o.top_p));
  return Status::Ok();
}

uint64_t Rng::Next() { return Mix(state_ += 0x9e3779b97f4a7c15ull); }

bool AllFinite(std::span<const float> x) {
  // A sum is finite only when every term is (NaN and infinities propagate); one pass, no branch.
  float sum = 0.0f;
  for (float v : x) sum += v * 0.0f;
  return sum == 0.0f;
}

Status NotFiniteLogits(int64_t position) {
  return DataLoss("logits at position " + std::to_string(position) + " are not finite; the weights may be corrupt");
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

namespace {

// The probabilities of candidates in descending order of logit (`logit(i)`, i < n; the lower id
// first among equals; every logit finite): temperature, top-k (ties with the k-th kept, as the
// reference's filter does), top-p. Returns the first `keep` candidates' probabilities.
//
// Weights are exp((logit - largest) / T), taken from differences to the largest logit: each is
// in [0, 1] and the largest is exactly 1, so nothing overflows however small T is (a product
// logit / T may not fit a float, or even a double, and exp of it would not). A temperature too
// small to differ from greedy is greedy: when every candidate below the largest logit weighs 0
// (its difference over T is below about -745, past what a double holds), a draw could only pick
// a largest logit, and the choice is greedy's, the lowest id among them.
template <typename Logit>
std::vector<float> Shape(const SamplerOptions& o, size_t n, Logit logit) {
  size_t keep = n;
  if (o.top_k > 0 && static_cast<size_t>(o.top_k) < n) {
    const float kth = logit(o.top_k - 1);
    keep = o.top_k;
    while (keep < n && logit(keep) == kth) ++keep;
  }
  const double inv_t = 1.0 / o.temperature;  // finite: the smallest float temperature is 1.4e-45
  const double largest = logit(0);
  std::vector<double> e(keep);
  double sum = 0.0;
  bool only_largest = true;
  for (size_t i = 0; i < keep; ++i) {
    const double d = static_cast<double>(logit(i)) - largest;  // <= 0
    sum += (e[i] = std::exp(d * inv_t));
    if (d < 0.0 && e[i] > 0.0) only_largest = false;
  }
  if (only_largest) return {1.0f};
  if (o.top_p < 1.0f) {
    // Keep the smallest prefix whose probability reaches top_p (at least one token).
    double cum = 0.0;
    size_t cut = keep;
    for (size_t i = 0; i < keep; ++i) {
      cum += e[i] / sum;
      if (cum >= o.top_p) {
        cut = i + 1;
        break;
      }
    }
    keep = cut;
    sum = 0.0;
    for (size_t i = 0; i < keep; ++i) sum += e[i];
  }
  std::vector<float> p(keep);
  for (size_t i = 0; i < keep; ++i) p[i] = static_cast<float>(e[i] / sum);
  return p;
}

// A race over candidates (`prob(i)`, `id(i)`, i < n): each positive probability p races E / p
// with E = -log(u), u in (0, 1) from the noise key and the id; the least wins. kNotFinite, with
// nothing drawn, when the mass is not finite or nothing is positive.
template <typename Prob, typename Id>
int Race(size_t n, Prob prob, Id id, uint64_t key) {
  double mass = 0.0;
  for (size_t i = 0; i < n; ++i) mass += std::isnan(prob(i)) ? prob(i) : std::max(0.0f, prob(i));
  if (!std::isfinite(mass) || !(mass > 0.0)) return kNotFinite;
  int best = kNotFinite;
  double best_time = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double p = prob(i);
    if (!(p > 0.0)) continue;
    const uint64_t bits = Mix(key ^ (static_cast<uint64_t>(id(i)) * 0xd1b54a32d192ed03ull));
    const double time = -std::log(Unit(bits)) / p;
    if (best == kNotFinite || time < best_time) {
      best = id(i);
      best_time = time;
    }
  }
  return best;
}

}  // namespace

std::vector<float> Sampler::Distribution(std::span<const float> logits) const {
  const size_t n = logits.size();
  std::vector<float> p(n, 0.0f);
  if (!AllFinite(logits)) return p;
  if (options_.temperature == 0.0f) {
    p[Argmax(logits)] = 1.0f;
    return p;
  }
  // Candidates in descending order of logit.
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  const std::vector<float> kept = Shape(options_, n, [&](size_t i) { return logits[order[i]]; });
  for (size_t i = 0; i < kept.size(); ++i) p[order[i]] = kept[i];
  return p;
}

int DrawFrom(std::span<const float> probs, uint64_t seed, uint64_t index, uint64_t stream) {
  return Race(probs.size(), [&](size_t i) { return probs[i]; }, [](size_t i) { return static_cast<int>(i); },
              NoiseKey(seed, index, stream));
}

double KeyedUniform(uint64_t seed, uint64_t index, uint64_t stream) {
  return Unit(Mix(NoiseKey(seed, index, stream) ^ 0xa0761d6478bd642full));
}

int Sampler::SampleTop(std::span<const std::pair<int, float>> top, uint64_t index) const {
  const size_t k = static_cast<size_t>(options_.top_k);
  if (options_.temperature == 0.0f || k == 0 || top.size() <= k || top[k].second == top[k - 1].second) return -1;
  for (const auto& [id, logit] : top) {
    if (id < 0 || !std::isfinite(logit)) return -1;
  }
  // Sample races the whole vocabulary, where the others have probability 0.
  const std::vector<float> kept = Shape(options_, top.size(), [&](size_t i) { return top[i].second; });
  return Race(kept.size(), [&](size_t i) { return kept[i]; }, [&](size_t i) { return top[i].first; },
              NoiseKey(options_.seed, index, 0));
}

int Sampler::Sample(std::span<const float> logits, uint64_t index) const {
  if (!AllFinite(logits)) return kNotFinite;
  if (options_.temperature == 0.0f) return Argmax(logits);
  return DrawFrom(Distribution(logits), options_.seed, index);
}

}  // namespace g4
