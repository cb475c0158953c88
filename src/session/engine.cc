#include "session/engine.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "io/reader.h"
#include "session/speculative.h"

namespace g4 {

Result<std::unique_ptr<Engine>> Engine::Open(const EngineOptions& options) {
  if (options.target.empty()) return InvalidArgument("a target model's folder is required");
  G4_RETURN_IF_ERROR(CheckLimit(limits::kDraftTokens, options.draft_tokens, limits::kDraftTokens.key));
  if (options.decode_ahead != -1) {
    G4_RETURN_IF_ERROR(CheckLimit(limits::kDecodeAhead, options.decode_ahead, limits::kDecodeAhead.key));
  }
  std::unique_ptr<Engine> e(new Engine());
  e->target_dir_ = options.target;
  e->assistant_dir_ = options.assistant;
  e->draft_tokens_ = options.draft_tokens;
  e->draft_policy_ = options.draft_policy;
  e->decode_ahead_ = options.decode_ahead;
  G4_ASSIGN_OR_RETURN(e->config_, LoadModelConfig(options.target));
  using Use = EngineOptions::TokenizerUse;
  if (options.tokenizer_use != Use::kNone) {
    const std::string path = options.tokenizer.empty() ? JoinPath(options.target, "tokenizer.json") : options.tokenizer;
    if (options.tokenizer_use == Use::kRequired || !options.tokenizer.empty() || FileExists(path)) {
      auto t = Tokenizer::Load(path);
      if (!t.ok()) {
        return options.tokenizer_use == Use::kRequired && !options.tokenizer_needed_by.empty()
                   ? t.status().WithContext(options.tokenizer_needed_by)
                   : t.status();
      }
      // Every id the model can emit must have its text: a smaller tokenizer would drop tokens.
      if ((*t)->vocab_size() < e->config_.vocab) {
        return InvalidArgument(path + ": the tokenizer has " + std::to_string((*t)->vocab_size()) +
                               " ids, fewer than the model's vocabulary of " + std::to_string(e->config_.vocab) +
                               " (vocab_size in " + JoinPath(options.target, "config.json") + ")");
      }
      e->tokenizer_ = std::move(t).value();
    }
  }
  return e;
}

Status Engine::Reserve(int64_t context, const BackendFactory& make_backend, int rows) {
  if (backend_) return FailedPrecondition("the backend is made already");
  G4_RETURN_IF_ERROR(CheckLimit(limits::kContext, static_cast<double>(context), limits::kContext.key));
  // Positions: the context plus the drafts a last round may verify past it.
  const int64_t positions = context + draft_tokens_ + 2;
  if (rows <= 0) rows = static_cast<int>(std::min<int64_t>(context, Model::kPrefillChunk));
  const Model::MemoryEstimate estimate = Model::EstimateMemory(config_, positions, rows);
  const BackendNeeds needs{config_, context, positions, rows, Model::ArenaBytes(config_, positions, rows),
                           estimate.kv_cache + estimate.activations};
  G4_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, make_backend(needs));
  context_ = context;
  estimate_ = estimate;
  arena_bytes_ = needs.arena_bytes;
  backend_ = std::move(backend);
  return Status::Ok();
}

Status Engine::Load() {
  if (!backend_) return FailedPrecondition("no backend: Reserve comes before Load");
  if (model_) return FailedPrecondition("a model is loaded; unload it first");
  const int64_t t0 = MonotonicMicros();
  auto model = Model::Load(target_dir_, *backend_);
  if (!model.ok()) return model.status().WithContext("target");
  const int64_t t1 = MonotonicMicros();
  std::unique_ptr<Assistant> assistant;
  if (!assistant_dir_.empty()) {
    // On error the target goes too (it is destroyed with `model` here).
    auto a = Assistant::Load(assistant_dir_, *backend_, **model);
    if (!a.ok()) return a.status().WithContext("assistant");
    assistant = std::move(a).value();
  }
  model_ = std::move(model).value();
  assistant_ = std::move(assistant);
  target_load_us_ = t1 - t0;
  assistant_load_us_ = assistant_ ? MonotonicMicros() - t1 : 0;
  return Status::Ok();
}

void Engine::Unload() {
  assistant_.reset();
  model_.reset();
}

Status Engine::Reset() {
  Unload();
  return Load();
}

Result<std::vector<int32_t>> Engine::PromptFromText(std::string_view text, bool chat) const {
  if (chat) return PromptFromMessages({{"user", std::string(text)}});
  if (!tokenizer_) return FailedPrecondition("a text prompt needs a tokenizer (tokenizer.json beside the target)");
  std::vector<int32_t> prompt;
  if (tokenizer_->bos_id() >= 0) prompt.push_back(tokenizer_->bos_id());
  const std::vector<int32_t> ids = tokenizer_->Encode(text);
  prompt.insert(prompt.end(), ids.begin(), ids.end());
  return prompt;
}

Result<std::vector<int32_t>> Engine::PromptFromMessages(const std::vector<ChatMessage>& messages) const {
  if (!tokenizer_) return FailedPrecondition("chat messages need a tokenizer (tokenizer.json beside the target)");
  G4_ASSIGN_OR_RETURN(std::string text, RenderChat(*tokenizer_, messages, true));
  return tokenizer_->Encode(text);
}

namespace {

// The request's value of an option, checked against its range; `fallback` where unset.
template <typename T>
Result<T> Option(const std::optional<T>& value, const Limit& limit, T fallback) {
  if (!value) return fallback;
  G4_RETURN_IF_ERROR(CheckLimit(limit, static_cast<double>(*value), limit.key));
  return *value;
}

}  // namespace

Result<EngineAnswer> Engine::Generate(const EngineRequest& request, const EngineCallbacks& callbacks) {
  if (!model_) return FailedPrecondition("no model is loaded");
  const std::vector<int32_t>& prompt = request.prompt;
  if (prompt.empty()) return InvalidArgument("the prompt is empty");
  for (const int32_t id : prompt) {
    if (id < 0 || id >= config_.vocab) {
      // A tokenizer may hold more ids than the model embeds (extra special tokens): the prompt
      // may then name one the model does not have.
      const std::string why = tokenizer_ && tokenizer_->vocab_size() > config_.vocab
                                  ? "; the tokenizer has " + std::to_string(tokenizer_->vocab_size()) + " ids"
                                  : "";
      return InvalidArgument("the prompt's token id " + std::to_string(id) + " is outside the model's vocabulary (0.." +
                             std::to_string(config_.vocab - 1) + why + ")");
    }
  }
  const int64_t room = context_ - static_cast<int64_t>(prompt.size());
  if (!request.max_tokens && room < 1) {
    return OutOfRange("the prompt is " + std::to_string(prompt.size()) + " tokens; the context is " +
                      std::to_string(context_));
  }
  G4_ASSIGN_OR_RETURN(const int64_t max_tokens, Option(request.max_tokens, limits::kMaxTokens, room));
  if (max_tokens > room) {
    return OutOfRange("the prompt (" + std::to_string(prompt.size()) + " tokens) plus max_tokens (" +
                      std::to_string(max_tokens) + ") exceeds the context of " + std::to_string(context_) + " tokens");
  }
  GenerateOptions opt;
  opt.max_new_tokens = static_cast<int>(max_tokens);
  // Unset sampling options: the model's generation_config.json.
  G4_ASSIGN_OR_RETURN(const double temperature,
                      Option(request.temperature, limits::kTemperature, static_cast<double>(config_.default_temperature)));
  G4_ASSIGN_OR_RETURN(const int64_t top_k, Option(request.top_k, limits::kTopK, static_cast<int64_t>(config_.default_top_k)));
  G4_ASSIGN_OR_RETURN(const double top_p, Option(request.top_p, limits::kTopP, static_cast<double>(config_.default_top_p)));
  opt.sampler.temperature = static_cast<float>(temperature);
  opt.sampler.top_k = static_cast<int>(top_k);
  opt.sampler.top_p = static_cast<float>(top_p);
  if (request.seed) {
    G4_RETURN_IF_ERROR(CheckLimit(limits::kSeed, static_cast<double>(*request.seed), limits::kSeed.key));
    opt.sampler.seed = *request.seed;
  } else {
    // No text to repeat: drafts are accepted by the rule that accepts the most.
    G4_ASSIGN_OR_RETURN(opt.sampler.seed, RandomSeed());
    opt.sampler.repeatable = false;
  }
  G4_RETURN_IF_ERROR(CheckLimit(limits::kTopLogits, request.top_logits, limits::kTopLogits.key));
  opt.top_logits = request.top_logits;
  opt.stop_ids = request.stop_ids;
  opt.decode_ahead = request.decode_ahead != -1 ? request.decode_ahead : decode_ahead_;
  if (request.round_ahead < -1 || request.round_ahead > 1) {
    return InvalidArgument("round_ahead must be -1 (the default), 0 or 1, not " + std::to_string(request.round_ahead));
  }
  opt.round_ahead = request.round_ahead;
  const bool speculative = request.speculative.value_or(assistant_ != nullptr);
  if (speculative && !assistant_) return FailedPrecondition("speculative decoding needs an assistant");

  std::unique_ptr<StreamDecoder> text;
  if (tokenizer_) text = std::make_unique<StreamDecoder>(*tokenizer_);
  const std::vector<int>& eos = config_.eos_ids;
  bool stop_asked = false;
  auto on_token = [&](int token) {
    if (!callbacks.on_token) return;
    std::string piece;
    if (text && std::find(eos.begin(), eos.end(), token) == eos.end()) piece = text->Push(token);
    stop_asked = !callbacks.on_token(token, piece) || stop_asked;
  };
  opt.interrupted = [&] { return stop_asked || (callbacks.interrupted && callbacks.interrupted()); };
  opt.on_round = callbacks.on_round;
  const int draft_tokens = request.draft_tokens.value_or(draft_tokens_);
  if (draft_tokens < 1 || draft_tokens > draft_tokens_) {
    return InvalidArgument("draft_tokens must be an integer in [1, " + std::to_string(draft_tokens_) +
                           "] (the load's draft_tokens), not " + std::to_string(draft_tokens));
  }
  const SpeculativeOptions drafting{draft_tokens, request.draft_policy.value_or(draft_policy_)};
  Result<GenerationResult> r = speculative ? GenerateSpeculative(*model_, *assistant_, prompt, opt, drafting, on_token)
                                           : g4::Generate(*model_, prompt, opt, on_token);
  if (!r.ok()) return r.status();
  if (text && callbacks.on_token) {
    const std::string tail = text->Flush();
    if (!tail.empty()) callbacks.on_token(-1, tail);
  }
  return EngineAnswer{std::move(r).value(), speculative};
}

std::string Engine::Text(const GenerationResult& result) const {
  if (!tokenizer_) return "";
  std::vector<int32_t> ids(result.tokens.begin(), result.tokens.end());
  if (result.stop_reason == "eos" && !ids.empty()) ids.pop_back();
  return tokenizer_->Decode(ids);
}

nlohmann::json Engine::Info() const {
  const ModelConfig& c = config_;
  const Model::MemoryEstimate m = model_ ? model_->EstimateMemory(context_) : estimate_;
  return {{"backend", backend_ ? backend_->Name() : ""},
          {"gpu_fill", backend_ ? backend_->gpu_fill() : 0},
          // The steps recorded ahead that greedy requests get (GenerateOptions::decode_ahead).
          {"decode_ahead", backend_ ? StepsAhead(decode_ahead_, *backend_) : std::max(decode_ahead_, 0)},
          {"context", context_},
          {"draft_tokens", draft_tokens_},
          {"draft_policy", DraftPolicyName(draft_policy_)},
          {"assistant", assistant_ != nullptr},
          {"tokenizer", tokenizer_ != nullptr},
          {"vocab", c.vocab},
          {"layers", c.num_layers},
          {"hidden", c.hidden},
          {"eos_ids", c.eos_ids},
          {"sampling_defaults",
           {{"temperature", c.default_temperature}, {"top_k", c.default_top_k}, {"top_p", c.default_top_p}}},
          {"memory", {{"weights", m.weights}, {"kv_cache", m.kv_cache}, {"activations", m.activations},
                      {"arena", arena_bytes_}}}};
}

}  // namespace g4
