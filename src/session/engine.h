// The engine every front end drives (the CLI's generate and bench, the WebAssembly runtime behind
// the JavaScript API): it owns the backend, the target model, its optional MTP assistant and the
// tokenizer; loads them, failing closed; turns prompts (ids, text or chat messages) into ids; runs
// a generation, plain or speculative, with the defaults and checks of one table
// (session/limits.h); and describes itself. Front ends parse their own input and print their own
// output; only the making of the backend stays theirs (WebGPU exists only in the WebAssembly
// build), handed in as a factory.
//
// Its life: Open (config.json and the tokenizer; nothing allocated) -> Reserve (the backend, sized
// for a context) -> Load (the weights) -> Generate, as often as wanted -> Unload (the weights
// gone: back to where Reserve left it) or Reset (Unload, then Load again).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "backend/backend.h"
#include "model/assistant.h"
#include "model/config.h"
#include "model/model.h"
#include "session/draft_policy.h"
#include "session/generator.h"
#include "session/limits.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

namespace g4 {

struct EngineOptions {
  std::string target;     // the target model's folder
  std::string assistant;  // its MTP assistant's folder; "" for none
  enum class TokenizerUse {
    kIfPresent,  // `tokenizer` if given (it must load), else tokenizer.json beside the target if there
    kRequired,   // the same, but one must load: its errors start with `tokenizer_needed_by`
    kNone,       // none (ids in, ids out)
  };
  TokenizerUse tokenizer_use = TokenizerUse::kIfPresent;
  std::string tokenizer;            // tokenizer.json's path; "": beside the target
  std::string tokenizer_needed_by;  // kRequired: why, for its errors ("--prompt needs a tokenizer")
  int draft_tokens = static_cast<int>(limits::kDraftTokens.fallback);
  DraftPolicyKind draft_policy = DraftPolicyKind::kAdaptive;  // limits::kDraftPolicy's default
  int decode_ahead = -1;  // limits::kDecodeAhead; -1: the backend's default (GenerateOptions)
};

// What a backend is made for: a run of up to `positions` (the context plus a last round's drafts)
// in batches of up to `rows`, which takes an activation arena of `arena_bytes`: the K/V cache and
// activations (`least_bytes`, which the run cannot do without) and some slack.
struct BackendNeeds {
  const ModelConfig& config;
  int64_t context = 0;
  int64_t positions = 0;
  int rows = 0;
  uint64_t arena_bytes = 0;
  uint64_t least_bytes = 0;
};
using BackendFactory = std::function<Result<std::unique_ptr<Backend>>(const BackendNeeds&)>;

// One generation. Unset options take the table's defaults: the model's generation_config.json for
// sampling, the rest of the context for max_tokens, a random seed, speculative decoding when an
// assistant is loaded.
struct EngineRequest {
  std::vector<int32_t> prompt;
  std::optional<int64_t> max_tokens;
  std::optional<double> temperature;
  std::optional<int64_t> top_k;
  std::optional<double> top_p;
  std::optional<uint64_t> seed;
  std::optional<bool> speculative;
  std::optional<DraftPolicyKind> draft_policy;  // unset: EngineOptions::draft_policy
  // Drafts per round, at most; unset: EngineOptions::draft_tokens, which also bounds it (the cache
  // is sized for a last round of that many drafts).
  std::optional<int> draft_tokens;
  int top_logits = 0;
  std::vector<int> stop_ids;  // empty: the model's eos ids
  int decode_ahead = -1;      // GenerateOptions::decode_ahead; -1: the engine's (EngineOptions)
  int round_ahead = -1;       // GenerateOptions::round_ahead (bench compares 1 and 0)
};

struct EngineCallbacks {
  // Each token as it is chosen, with the text it completes (none for the model's eos tokens or
  // without a tokenizer); after the last, token -1 with the text still held back, if any.
  // false asks to stop after this token (stop_reason "interrupted").
  std::function<bool(int token, std::string_view text)> on_token;
  // Speculative decoding: after each round's verification, drafts made and accepted.
  std::function<void(int drafted, int accepted)> on_round;
  // Asked after each token: true stops there (stop_reason "interrupted").
  std::function<bool()> interrupted;
};

struct EngineAnswer {
  GenerationResult result;
  bool speculative = false;
};

class Engine {
 public:
  // Reads the target's config.json and the tokenizer and checks the options; allocates nothing.
  static Result<std::unique_ptr<Engine>> Open(const EngineOptions& options);

  // Makes the backend for a context of `context` positions (kContext's range), prefilled in
  // batches of up to `rows` (0: min(context, Model::kPrefillChunk)).
  Status Reserve(int64_t context, const BackendFactory& make_backend, int rows = 0);

  // Loads the target and the assistant. On error neither stays loaded.
  Status Load();
  // Frees the weights; Load works again after it.
  void Unload();
  // Unload, then Load the same folders again.
  Status Reset();
  bool loaded() const { return model_ != nullptr; }

  // Prompts through the tokenizer: text as it is (with the BOS the tokenizer adds) or as one user
  // turn of the vocabulary's chat format; chat messages in that format.
  Result<std::vector<int32_t>> PromptFromText(std::string_view text, bool chat) const;
  Result<std::vector<int32_t>> PromptFromMessages(const std::vector<ChatMessage>& messages) const;

  Result<EngineAnswer> Generate(const EngineRequest& request, const EngineCallbacks& callbacks = {});

  // The generated text without the stop token that ended it ("" without a tokenizer).
  std::string Text(const GenerationResult& result) const;

  // JSON: backend, context, draft_tokens, draft_policy, assistant and tokenizer (whether loaded), the model's
  // vocab, layers, hidden, eos_ids and sampling_defaults, and memory (weights, kv_cache,
  // activations, arena).
  nlohmann::json Info() const;

  const ModelConfig& config() const { return config_; }
  int64_t context() const { return context_; }
  int draft_tokens() const { return draft_tokens_; }
  DraftPolicyKind draft_policy() const { return draft_policy_; }
  uint64_t arena_bytes() const { return arena_bytes_; }
  bool has_assistant() const { return !assistant_dir_.empty(); }
  Backend* backend() { return backend_.get(); }
  Model* model() { return model_.get(); }
  Assistant* assistant() { return assistant_.get(); }
  const Tokenizer* tokenizer() const { return tokenizer_.get(); }
  // How long the last Load took for the target and for the assistant (0 without one), in us.
  int64_t target_load_us() const { return target_load_us_; }
  int64_t assistant_load_us() const { return assistant_load_us_; }

 private:
  Engine() = default;

  std::string target_dir_, assistant_dir_;
  int draft_tokens_ = 0;
  DraftPolicyKind draft_policy_ = DraftPolicyKind::kAdaptive;
  int decode_ahead_ = -1;
  int64_t context_ = 0;
  ModelConfig config_;
  Model::MemoryEstimate estimate_;
  uint64_t arena_bytes_ = 0;
  int64_t target_load_us_ = 0, assistant_load_us_ = 0;
  std::unique_ptr<Tokenizer> tokenizer_;
  // Declared before what lives in it, so destroyed after: the weights are the backend's buffers.
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<Assistant> assistant_;  // reads the target's K/V: destroyed before it
};

}  // namespace g4
