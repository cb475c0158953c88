#include "session/generator.h"

#include <algorithm>
#include <chrono>
#include <deque>

namespace g4 {

int64_t MonotonicMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double GenerationStats::prefill_tokens_per_s() const {
  return prefill_us > 0 ? prompt_tokens * 1e6 / static_cast<double>(prefill_us) : 0.0;
}

double GenerationStats::decode_tokens_per_s() const {
  const int steps = generated_tokens - 1;  // the first token comes from the prefill
  return decode_us > 0 && steps > 0 ? steps * 1e6 / static_cast<double>(decode_us) : 0.0;
}

namespace {

// Why generation ends with the `emitted`-th token `token` ("eos", "length", "interrupted"), or
// null when it goes on. The interruption is asked last, only when nothing else ends it.
const char* EndsWith(int token, int emitted, const GenerateOptions& options, const std::vector<int>& stops) {
  if (std::find(stops.begin(), stops.end(), token) != stops.end()) return "eos";
  if (emitted >= options.max_new_tokens) return "length";
  if (options.interrupted && options.interrupted()) return "interrupted";
  return nullptr;
}

// Greedy decoding with each step's token left on the backend for the next step to embed, so the
// next step is recorded (and its dispatches handed over) while the backend still runs this one,
// and its id is read back behind it. Steps recorded past a stop token or an interruption run on
// this call's own cache, which goes with it, and their reads are dropped unfinished.
Result<GenerationResult> GenerateAhead(Model& model, std::span<const int32_t> prompt, const GenerateOptions& options,
                                       const std::vector<int>& stops, std::unique_ptr<KvCache> cache,
                                       const std::function<void(int)>& on_token) {
  GenerationResult result;
  result.stop_reason = "length";
  result.stats.prompt_tokens = static_cast<int>(prompt.size());
  Backend& be = model.backend();
  const int ahead = StepsAhead(options.decode_ahead, be);
  // Slot i % 2 holds the id of the i-th generated token: step i reads slot (i - 1) % 2 and writes
  // slot i % 2, whose read is queued right after it, before step i + 1 is recorded.
  constexpr int slots = 2;
  G4_ASSIGN_OR_RETURN(auto ids_buf, be.Allocate(slots * sizeof(float)));
  const F32 ids{ids_buf.get(), 0};
  std::deque<std::unique_ptr<PendingDownload>> reads;  // of tokens emitted + 1 .. started - 1

  const int64_t t0 = MonotonicMicros();
  G4_ASSIGN_OR_RETURN(std::span<const int32_t> tail, model.PrefillHead(prompt, *cache));
  G4_RETURN_IF_ERROR(model.ForwardArgmaxTo(tail, *cache, 1, ids.At(0)));
  float id = 0.0f;
  G4_RETURN_IF_ERROR(be.Download(*ids_buf, 0, &id, sizeof(id)));
  const int64_t t1 = MonotonicMicros();
  result.stats.prefill_us = t1 - t0;
  int started = 1;  // tokens whose step has been recorded (the first: the prefill's)
  int emitted = 0;
  while (true) {
    const int token = static_cast<int>(id);
    // The argmax of logits that are not finite is kNotFinite; the e-th token comes from the
    // logits at position prompt + e - 1.
    if (token < 0) return NotFiniteLogits(static_cast<int64_t>(prompt.size()) - 1 + emitted);
    result.tokens.push_back(token);
    ++emitted;
    if (on_token) on_token(token);
    if (const char* end = EndsWith(token, emitted, options, stops)) {
      result.stop_reason = end;
      break;
    }
    // Keep `ahead` steps recorded beyond the one whose token is read next (never past the budget).
    while (started < options.max_new_tokens && started - emitted <= ahead) {
      const int from = (started - 1) % slots, to = started % slots;
      G4_RETURN_IF_ERROR(model.ForwardArgmaxOnDevice(ids.At(from), 1, *cache, 1, ids.At(to)));
      G4_ASSIGN_OR_RETURN(auto read, be.StartDownload(*ids_buf, to * sizeof(float), sizeof(float)));
      reads.push_back(std::move(read));
      ++started;
    }
    G4_RETURN_IF_ERROR(reads.front()->Finish(&id));
    reads.pop_front();
  }
  result.stats.decode_us = MonotonicMicros() - t1;
  result.stats.generated_tokens = static_cast<int>(result.tokens.size());
  return result;
}

}  // namespace

Result<GenerationResult> Generate(Model& model, std::span<const int32_t> prompt, const GenerateOptions& options,
                                  const std::function<void(int)>& on_token) {
  if (prompt.empty()) return InvalidArgument("generate: the prompt is empty");
  if (options.max_new_tokens < 0) return InvalidArgument("generate: max_new_tokens must be >= 0");
  if (options.top_logits < 0) return InvalidArgument("generate: top_logits must be >= 0");
  G4_RETURN_IF_ERROR(ValidateSamplerOptions(options.sampler));
  const std::vector<int>& stops = options.stop_ids.empty() ? model.config().eos_ids : options.stop_ids;

  GenerationResult result;
  result.stop_reason = "length";
  result.stats.prompt_tokens = static_cast<int>(prompt.size());
  if (options.max_new_tokens == 0) return result;

  const int64_t max_positions = static_cast<int64_t>(prompt.size()) + options.max_new_tokens;
  G4_ASSIGN_OR_RETURN(std::unique_ptr<KvCache> cache, model.NewCache(max_positions));
  const Sampler sampler(options.sampler);
  std::vector<float> logits;
  std::vector<int> ids;
  // Greedy decoding without recorded logits reads back token ids only (the argmax runs on the
  // backend); otherwise whole logit rows.
  const bool ids_only = options.sampler.temperature == 0.0f && options.top_logits == 0;
  // Sampling with top-k reads back the top_k + 1 best logits (top-k on the backend) instead of a
  // vocabulary of them; the whole row only when logits tie at the k-th place.
  const int top_read = options.sampler.top_k + 1;
  const bool top_only = !ids_only && options.top_logits == 0 && options.sampler.top_k > 0 &&
                        top_read <= Backend::kMaxTopKValues && top_read <= model.config().vocab;
  std::vector<std::pair<int, float>> top;
  // The next token from the logits of the last of `tokens`; an error naming their position when
  // they are not finite (the backend's argmax or top-k, or the sampler, gives kNotFinite). Its
  // draw is keyed by its index among the generated tokens.
  auto next = [&](std::span<const int32_t> tokens) -> Result<int> {
    const uint64_t index = result.tokens.size();
    if (ids_only) {
      G4_RETURN_IF_ERROR(model.ForwardArgmax(tokens, *cache, 1, &ids));
      return ids[0];
    }
    if (top_only) {
      G4_RETURN_IF_ERROR(model.ForwardTopK(tokens, *cache, top_read, &top));
      const int t = sampler.SampleTop(top, index);
      if (t >= 0) return t;
      G4_RETURN_IF_ERROR(model.LastLogits(&logits));
      return sampler.Sample(logits, index);
    }
    G4_RETURN_IF_ERROR(model.Forward(tokens, *cache, 1, &logits));
    return sampler.Sample(logits, index);
  };
  auto step = [&](std::span<const int32_t> tokens) -> Result<int> {
    G4_ASSIGN_OR_RETURN(const int t, next(tokens));
    if (t < 0) return NotFiniteLogits(cache->length() - 1);
    return t;
  };

  if (ids_only && StepsAhead(options.decode_ahead, model.backend()) > 0) {
    return GenerateAhead(model, prompt, options, stops, std::move(cache), on_token);
  }
  const int64_t t0 = MonotonicMicros();
  G4_ASSIGN_OR_RETURN(std::span<const int32_t> tail, model.PrefillHead(prompt, *cache));
  G4_ASSIGN_OR_RETURN(int token, step(tail));
  const int64_t t1 = MonotonicMicros();
  result.stats.prefill_us = t1 - t0;

  while (true) {
    result.tokens.push_back(token);
    if (options.top_logits > 0) result.top_logits.push_back(TopK(logits, options.top_logits));
    if (on_token) on_token(token);
    if (const char* end = EndsWith(token, static_cast<int>(result.tokens.size()), options, stops)) {
      result.stop_reason = end;
      break;
    }
    const int32_t next = token;
    G4_ASSIGN_OR_RETURN(token, step(std::span<const int32_t>(&next, 1)));
  }
  result.stats.decode_us = MonotonicMicros() - t1;
  result.stats.generated_tokens = static_cast<int>(result.tokens.size());
  return result;
}

}  // namespace g4
