// How many drafts each speculative round makes. Fixed: always the maximum K. Adaptive: the number
// that emits the most tokens per unit of time, from the acceptance measured so far and the
// measured cost of a round against a plain step, down to no drafting at all (plain steps), with
// a probe round now and then so that a better acceptance is noticed. Costs are measured twice
// before they are used (the lower counts), and a later measurement counts as at most twice the
// estimate, so that a stall does not pass for the cost of the work. Greedy output does not
// depend on the choice; sampled output keeps the target's distribution whatever is chosen (the
// choice is made before the round's draws).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace g4 {

enum class DraftPolicyKind { kAdaptive, kFixed };

// "adaptive" or "fixed"; the error names `option`.
Result<DraftPolicyKind> ParseDraftPolicy(const std::string& name, const std::string& option);
const char* DraftPolicyName(DraftPolicyKind kind);

class DraftPolicy {
 public:
  // Plain steps between probe rounds while no drafting pays: doubled after each probe that does
  // not change that, back to the least once drafting pays again. While drafting pays, a few plain
  // steps re-measure the cost of a step after as many rounds, doubled after each re-measure that
  // leaves drafting paying (so that a first measurement that caught a stall is soon replaced).
  static constexpr int kMinProbeInterval = 8;
  static constexpr int kMaxProbeInterval = 64;
  // Plain steps timed together for each measurement of a step's cost (after one to warm up).
  static constexpr int kStepSample = 4;

  DraftPolicy(int max_drafts, DraftPolicyKind kind);

  // Drafts for the next round: 0..max_drafts, 0 being plain steps (PlainSteps() of them).
  int Next() const;
  int PlainSteps() const;
  // What Next() will answer after a round of k drafts whose outcome is not known yet (a round
  // recorded before the one before it is read): the counts move as that round moves them, the
  // estimates stay as they are.
  int NextAfterRound(int k) const;
  // A round with k >= 1 drafts, `accepted` of them kept, took `micros`.
  void RecordRound(int k, int accepted, double micros);
  // `steps` plain steps took `micros` altogether.
  void RecordPlain(int steps, double micros);

  // Estimates behind the choice (for tests and traces). Tokens a round with k drafts emits, its
  // bonus token included (k = 0: 1); its cost in microseconds (k = 0: a plain step), negative
  // while unknown.
  double ExpectedTokens(int k) const;
  double Cost(int k) const;
  int max_drafts() const { return max_drafts_; }

 private:
  // The drafts that emit the most tokens per microsecond, among `from`..max_drafts_.
  int Best(int from) const;
  // The first sample of each k warms up; the lower of the next two sets its cost.
  bool Measured(int k) const { return samples_[k] >= 3; }

  int max_drafts_;
  bool adaptive_;
  // Per draft position j (1..K): how often it was reached and accepted, decayed so that recent
  // rounds count most.
  std::vector<double> reached_, accepted_;
  std::vector<double> cost_;  // (K + 1) smoothed micros of a round with k drafts (k = 0: a step)
  std::vector<int> samples_;
  int plain_since_probe_ = 0;   // plain steps since the last round with drafts
  int rounds_since_plain_ = 0;  // rounds with drafts since the last plain step
  int probe_interval_ = kMinProbeInterval;
  int step_interval_ = kMinProbeInterval;  // rounds between re-measures of a step while drafting pays
};

}  // namespace g4
