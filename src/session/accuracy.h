// How far a model (a quantized artifact) is from a reference (the same checkpoint in bf16):
// along the reference's greedy continuation of each prompt, the KL divergence of the next-token
// distributions, and how many greedy tokens agree before the first that differs.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "model/model.h"

namespace g4 {

struct AccuracyReport {
  double mean_kl = 0.0;      // mean over positions of KL(p_reference || p_model), in nats
  double max_kl = 0.0;
  double agreement = 0.0;    // greedy tokens equal before the first divergence / tokens compared
  int positions = 0;         // next-token distributions compared
};

// For each prompt the reference generates `steps` greedy tokens; the model runs the same tokens
// (teacher forcing) and its distribution at each position is compared with the reference's.
// Its greedy tokens equal the reference's up to the first position whose argmax differs.
Result<AccuracyReport> CompareModels(Model& reference, Model& model, const std::vector<std::vector<int32_t>>& prompts,
                                     int steps);

// `count` prompts of 6..21 ids drawn from a vocabulary (ids 2.. vocab - 1) with a fixed seed.
std::vector<std::vector<int32_t>> SeededPrompts(int count, int vocab, uint64_t seed);

}  // namespace g4
