// Checkpoints of a real Gemma 4 shape with random weights, for benchmarks: nothing to download,
// the same bytes for the same seed. Targets: e2b, e4b, 31b, 26b-a4b (the real widths, GEMMA4.md);
// each with an assistant shape NAME-assistant (E2B's as published; the others' widths assumed:
// see SyntheticShapes()).
#pragma once

#include <atomic>

#include <optional>
#include <string>

#include "base/status.h"

namespace g4 {

// One line per shape: its name and what it is.
std::string SyntheticShapes();
// config.json text for a named shape. `layers`: a target cut to that many layers (a multiple of
// its layer pattern, sharing K/V in proportion), or an assistant of that many layers (the last
// full, the others sliding); none: the real depth.
Result<std::string> SyntheticConfigJson(const std::string& shape, std::optional<int> layers);
// Writes config.json, generation_config.json (targets) and model.safetensors (bf16) into `dir`,
// which must not exist or be empty: an existing model is never overwritten. They are written into
// DIR.partial-N beside it (N the process id, or a random number in WebAssembly), renamed to `dir`
// when complete: a failure, or `cancel` set (checked between chunks), leaves nothing at `dir` and
// removes the partial folder.
Status WriteSyntheticCheckpoint(const std::string& dir, const std::string& shape, std::optional<int> layers,
                                uint64_t seed, const std::atomic<bool>* cancel = nullptr);

}  // namespace g4
