// Checkpoints of a real Gemma 4 shape with random weights, for benchmarks: nothing to download,
// the same bytes for the same seed.
#pragma once

#include <string>

#include "base/status.h"

namespace g4 {

// config.json text for a named shape ("e2b"), optionally cut to `layers` layers (0: all).
Result<std::string> SyntheticConfigJson(const std::string& shape, int layers);
// Writes config.json, generation_config.json and model.safetensors (bf16) into `dir`.
Status WriteSyntheticCheckpoint(const std::string& dir, const std::string& shape, int layers, uint64_t seed);

}  // namespace g4
