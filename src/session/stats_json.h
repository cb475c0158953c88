// GenerationStats as the JSON object the CLI and the JavaScript API report.
#pragma once

#include <nlohmann/json.hpp>

#include "session/generator.h"

namespace g4 {

// prompt / generated tokens, prefill and decode ms and tokens/s, and the speculative counters
// (rounds, drafted, accepted, acceptance_rate, accepted_per_round, accepted_per_position,
// tokens_per_round; zeros for plain decoding).
nlohmann::json StatsJson(const GenerationStats& st);

}  // namespace g4
