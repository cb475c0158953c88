#include "session/stats_json.h"

namespace g4 {

nlohmann::json StatsJson(const GenerationStats& st) {
  return {{"prompt_tokens", st.prompt_tokens},
          {"generated_tokens", st.generated_tokens},
          {"prefill_ms", st.prefill_us / 1000.0},
          {"decode_ms", st.decode_us / 1000.0},
          {"prefill_tokens_per_s", st.prefill_tokens_per_s()},
          {"decode_tokens_per_s", st.decode_tokens_per_s()},
          {"rounds", st.rounds},
          {"drafted", st.drafted},
          {"accepted", st.accepted},
          {"acceptance_rate", st.acceptance_rate()},
          {"accepted_per_round", st.accepted_per_round},
          {"drafted_per_round", st.drafted_per_round},
          {"rounds_per_k", st.rounds_per_k},
          {"accepted_per_position", st.accepted_per_position},
          {"tokens_per_round", st.tokens_per_round()},
          {"rounds_ahead", st.rounds_ahead}};
}

}  // namespace g4
