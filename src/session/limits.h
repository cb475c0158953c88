// Every option a load or a request takes, with its default and its valid range, in one table that
// every front end reads: the CLI checks its flags with it, the engine checks each request with it,
// and the JavaScript API reads it from the WebAssembly module (g4_limits) so that its checks are
// the same ones. Adding an option is one entry here and one line in kAllLimits; a numeric one
// takes a range, one of a few words (kChoice) lists them in `choices`, its default first.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "session/speculative.h"

namespace g4 {

enum class LimitKind { kInteger, kNumber, kChoice };

struct Limit {
  const char* key;   // the option in JSON requests (the wasm runtime's C API) and in the table
  const char* flag;  // the CLI's flag, without its dashes ("" where the CLI has none)
  const char* js;    // the JavaScript API's option ("" where it has none)
  LimitKind kind;
  double min, max;
  bool min_open;     // the range excludes `min`: (min, max]
  // The default where it is a fixed number; NaN where it is chosen otherwise (default_text says how).
  double fallback;
  // The CLI's default where it differs from the API's (NaN: the same).
  double cli_fallback;
  const char* default_text;
  const char* meaning;
  // kChoice: the words it takes, '|'-separated, the default first ("adaptive|fixed"); min, max,
  // min_open and the fallbacks do not apply.
  const char* choices = "";

  bool integer() const { return kind == LimitKind::kInteger; }
  bool choice() const { return kind == LimitKind::kChoice; }
  bool has_fallback() const { return !std::isnan(fallback); }
  double CliFallback() const { return std::isnan(cli_fallback) ? fallback : cli_fallback; }
  // An open lower bound holds for the value as the float32 it is used as (1e-50 is 0 there).
  bool Contains(double v) const {
    return std::isfinite(v) && v <= max &&
           (min_open ? v > min && static_cast<float>(v) > static_cast<float>(min) : v >= min) &&
           (!integer() || v == std::floor(v));
  }
};

inline constexpr double kNoDefault = std::numeric_limits<double>::quiet_NaN();

namespace limits {

// The longest context a load may ask for (positions of the K/V cache).
inline constexpr Limit kContext{"context", "context", "contextLength", LimitKind::kInteger, 1, 1 << 24, false,
                                4096, kNoDefault, "4096", "positions the K/V cache holds"};
inline constexpr Limit kDraftTokens{"draft_tokens", "draft-tokens", "draftTokens", LimitKind::kInteger, 1, kMaxDraftTokens, false,
                                    2, kNoDefault, "2", "drafts per speculative round (with an assistant)"};
inline constexpr Limit kDraftPolicy{"draft_policy", "draft-policy", "draftPolicy", LimitKind::kChoice, 0, 0, false,
                                    kNoDefault, kNoDefault, "adaptive",
                                    "how many drafts each round makes: adaptive (from the acceptance and cost measured "
                                    "so far, down to plain steps) or fixed (always draft_tokens)",
                                    "adaptive|fixed"};
// The measured fill shapes how the WebGPU backend splits work of few rows, and so the rounding of
// its sums: two loads that share it compute the same logits, bit for bit.
inline constexpr Limit kGpuFill{"gpu_fill", "gpu-fill", "gpuFill", LimitKind::kInteger, 0, 1 << 16, false, 0, kNoDefault,
                                "0 (measured at load)",
                                "WebGPU workgroups that keep the device busy, which decide how work is split: 0 "
                                "measures it; the value a load reports repeats its sums, and seeded sampling, exactly"};
// Recording ahead of reads keeps the GPU fed while the host waits on a read (greedy steps and
// rounds: sampled ones read each token first); 0 turns it off, each step or round recorded once
// the read before it is in, to measure what it buys.
inline constexpr Limit kDecodeAhead{"decode_ahead", "decode-ahead", "decodeAhead", LimitKind::kInteger, 0, 16, false,
                                    kNoDefault, kNoDefault, "1 where the backend's reads overlap its work (WebGPU), else 0",
                                    "decode steps recorded ahead of the read before them (greedy speculative rounds: one "
                                    "recorded ahead unless 0)"};
inline constexpr Limit kMaxTokens{"max_tokens", "max-new-tokens", "max_tokens", LimitKind::kInteger, 0, 1 << 24, false,
                                  kNoDefault, 32, "the rest of the context (API); 32 (CLI)",
                                  "tokens to generate at most"};
// Gemma 4's final logits are softcapped to [-30, 30]: at a temperature of 1000 every token's
// weight is within 6% of uniform, and a higher one changes nothing.
inline constexpr Limit kTemperature{"temperature", "temperature", "temperature", LimitKind::kNumber, 0, 1000, false,
                                    kNoDefault, 0, "the model's generation_config.json (API); 0 (CLI)",
                                    "0 is greedy; else the logits are divided by it before sampling"};
inline constexpr Limit kTopK{"top_k", "top-k", "top_k", LimitKind::kInteger, 0, 1 << 30, false, kNoDefault, 0,
                             "the model's generation_config.json (API); 0 (CLI)",
                             "sample among the k most likely tokens (0: all)"};
inline constexpr Limit kTopP{"top_p", "top-p", "top_p", LimitKind::kNumber, 0, 1, true, kNoDefault, 1,
                             "the model's generation_config.json (API); 1 (CLI)",
                             "sample among the most likely tokens whose probabilities add up to p"};
// Seeds are integers a JavaScript number holds exactly, so both front ends take the same ones.
inline constexpr Limit kSeed{"seed", "seed", "seed", LimitKind::kInteger, 0, 9007199254740991.0, false, kNoDefault,
                             kNoDefault, "random", "the sampler's seed: the same seed gives the same tokens"};
inline constexpr Limit kThreads{"threads", "threads", "", LimitKind::kInteger, 0, 1024, false, 0, kNoDefault,
                                "0 (every core)", "CPU backend threads"};
inline constexpr Limit kTopLogits{"top_logits", "top-logits", "", LimitKind::kInteger, 0, 1 << 20, false, 0,
                                  kNoDefault, "0", "the k best final logits recorded per generated token"};

inline constexpr const Limit* kAllLimits[] = {&kContext, &kDraftTokens, &kDraftPolicy, &kGpuFill, &kDecodeAhead, &kMaxTokens,
                                              &kTemperature, &kTopK, &kTopP, &kSeed, &kThreads, &kTopLogits};

}  // namespace limits

// The table by key; null for an unknown key.
const Limit* FindLimit(const std::string& key);

// "an integer in [1, 16777216]", "a number in (0, 1]": integers print as integers; "one of
// 'adaptive', 'fixed'" for a choice.
std::string RangeText(const Limit& limit);
// A choice's words, its default first.
std::vector<std::string> Choices(const Limit& limit);
// A number as JavaScript prints it (the API prints the same errors): the fewest digits that read
// back as it, integers without a fraction, exponents below 1e-6 and from 1e21.
std::string FormatNumber(double v);
// For a value the limit refuses only as a float32 (above an open lower bound, but that bound
// once converted: 1e-50 for (0, 1]), " (which is 0 as a float32)"; else "".
std::string Float32Note(const Limit& limit, double v);

// Ok when `v` is in the range; else "<name> must be <range>, not <v>" (`name` as the caller's
// front end spells the option: "--top-p", "top_p", "contextLength").
Status CheckLimit(const Limit& limit, double v, const std::string& name);
// The same for a choice: "<name> must be one of 'adaptive', 'fixed', not 'x'".
Status CheckChoice(const Limit& limit, const std::string& v, const std::string& name);

// The table as JSON, keyed by `key`: {flag, js, integer, min, max, min_open, default (null where
// not a number), default_text, range (RangeText), meaning}; a choice has choices (its words,
// the default first) and default its first word instead of the numbers.
nlohmann::json LimitsJson();
nlohmann::json LimitJson(const Limit& limit);  // one entry of it

// A seed from the system's random source (std::random_device; under WASI the random_get import),
// inside kSeed's range.
Result<uint64_t> RandomSeed();

}  // namespace g4
