#include "session/draft_policy.h"

#include <algorithm>

namespace g4 {
namespace {

// Counts of earlier rounds weigh this much less with each new round: the acceptance followed is
// that of about the last dozen rounds.
constexpr double kDecay = 0.92;
// A position's acceptance before it is measured: one half, worth one round.
constexpr double kPriorAccepted = 0.5, kPriorReached = 1.0;
// Weight of each new cost measurement against the smoothed one.
constexpr double kCostWeight = 0.3;
// A later measurement counts as at most this many times the smoothed cost: a stall (the thread
// descheduled, a collection) is not the cost of the work, while a real change in cost, which
// comes gradually with the context's growth, still moves the estimate by kCostWeight.
constexpr double kMaxCostJump = 2.0;

// Adds a measurement of a cost, `samples` counting them: the first warms up and is dropped; the
// lower of the next two sets the cost (so that a stall in one of them does not); later ones move
// it by kCostWeight. A measurement of no time (a clock coarser than the work) is not counted.
void Smooth(double& cost, int& samples, double micros) {
  if (!(micros > 0.0)) return;
  ++samples;
  if (samples == 2) {
    cost = micros;
  } else if (samples == 3) {
    cost = std::min(cost, micros);
  } else if (samples > 3) {
    cost += kCostWeight * (std::min(micros, kMaxCostJump * cost) - cost);
  }
}

}  // namespace

Result<DraftPolicyKind> ParseDraftPolicy(const std::string& name, const std::string& option) {
  if (name == "adaptive") return DraftPolicyKind::kAdaptive;
  if (name == "fixed") return DraftPolicyKind::kFixed;
  return InvalidArgument(option + ": '" + name + "' is not one of adaptive, fixed");
}

const char* DraftPolicyName(DraftPolicyKind kind) { return kind == DraftPolicyKind::kFixed ? "fixed" : "adaptive"; }

DraftPolicy::DraftPolicy(int max_drafts, DraftPolicyKind kind)
    : max_drafts_(std::max(0, max_drafts)),
      adaptive_(kind == DraftPolicyKind::kAdaptive),
      reached_(max_drafts_ + 1, 0.0),
      accepted_(max_drafts_ + 1, 0.0),
      cost_(max_drafts_ + 1, 0.0),
      samples_(max_drafts_ + 1, 0) {}

double DraftPolicy::ExpectedTokens(int k) const {
  // The bonus token, plus draft i when drafts 1..i are all accepted.
  double tokens = 1.0, all = 1.0;
  for (int j = 1; j <= k && j <= max_drafts_; ++j) {
    all *= (accepted_[j] + kPriorAccepted) / (reached_[j] + kPriorReached);
    tokens += all;
  }
  return tokens;
}

double DraftPolicy::Cost(int k) const {
  if (k < 0 || k > max_drafts_) return -1.0;
  if (Measured(k)) return cost_[k];
  // Between two measured counts, linear: a round's cost grows by a draft step and a verified row
  // per draft.
  int lo = k - 1, hi = k + 1;
  while (lo >= 0 && !Measured(lo)) --lo;
  while (hi <= max_drafts_ && !Measured(hi)) ++hi;
  if (lo < 0 || hi > max_drafts_) return -1.0;
  return cost_[lo] + (cost_[hi] - cost_[lo]) * (k - lo) / (hi - lo);
}

int DraftPolicy::Best(int from) const {
  int best = max_drafts_;
  double best_rate = -1.0;
  for (int k = from; k <= max_drafts_; ++k) {
    const double c = Cost(k);
    if (c <= 0.0) continue;
    const double rate = ExpectedTokens(k) / c;
    if (rate > best_rate) {
      best = k;
      best_rate = rate;
    }
  }
  return best;
}

int DraftPolicy::Next() const {
  if (!adaptive_ || max_drafts_ == 0) return max_drafts_;
  // First the cost and acceptance of full rounds, then the cost of a step.
  if (!Measured(max_drafts_)) return max_drafts_;
  if (!Measured(0)) return 0;
  const int best = Best(0);
  // While drafting pays, a few plain steps now and then keep the cost of a step current.
  if (best > 0) return rounds_since_plain_ < step_interval_ ? best : 0;
  // Drafting does not pay: plain steps, and now and then a probe round with the best count.
  return plain_since_probe_ < probe_interval_ ? 0 : Best(1);
}

int DraftPolicy::NextAfterRound(int k) const {
  if (k < 1 || k > max_drafts_) return Next();
  DraftPolicy after = *this;
  ++after.rounds_since_plain_;
  after.plain_since_probe_ = 0;
  ++after.samples_[k];
  return after.Next();
}

int DraftPolicy::PlainSteps() const {
  if (!Measured(0)) return samples_[0] == 0 ? 1 : kStepSample;
  if (Best(0) > 0) return kStepSample;
  return std::max(1, probe_interval_ - plain_since_probe_);
}

void DraftPolicy::RecordRound(int k, int accepted, double micros) {
  if (k < 1 || k > max_drafts_) return;
  accepted = std::clamp(accepted, 0, k);
  for (int j = 1; j <= max_drafts_; ++j) {
    reached_[j] *= kDecay;
    accepted_[j] *= kDecay;
  }
  for (int j = 1; j <= k && j <= accepted + 1; ++j) {
    reached_[j] += 1.0;
    if (j <= accepted) accepted_[j] += 1.0;
  }
  ++rounds_since_plain_;
  Smooth(cost_[k], samples_[k], micros);
  // A round after plain steps is a probe: if drafting still does not pay, probe less often,
  // unless every draft was accepted (the drafts may have turned good: look again soon).
  const bool probe = plain_since_probe_ > 0;
  plain_since_probe_ = 0;
  if (!Measured(0) || !Measured(max_drafts_)) return;
  if (Best(0) > 0 || (probe && accepted == k)) {
    probe_interval_ = kMinProbeInterval;
  } else if (probe) {
    probe_interval_ = std::min(2 * probe_interval_, kMaxProbeInterval);
  }
}

void DraftPolicy::RecordPlain(int steps, double micros) {
  if (steps < 1) return;
  plain_since_probe_ += steps;
  rounds_since_plain_ = 0;
  const bool remeasure = Measured(0);
  Smooth(cost_[0], samples_[0], micros / steps);
  if (remeasure && Measured(max_drafts_) && Best(0) > 0) {
    step_interval_ = std::min(2 * step_interval_, kMaxProbeInterval);
  }
}

}  // namespace g4
