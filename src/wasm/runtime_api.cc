// The runtime as a C API for JavaScript (web/api.mjs): one runtime is one backend holding a target
// model, optionally its MTP assistant, and the target's tokenizer. Requests and answers are JSON;
// each generated token goes to the host's `host.token` import as it is chosen (asyncified, so the
// host can hand it on and ask to stop). Errors leave a message for g4_last_error.
//
// Build variants (compile definitions): G4_MTP=0 leaves the assistant out (loading one is an
// error); G4_PROFILE=1 times every kernel of each request with GPU timestamps.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/assistant.h"
#include "model/model.h"
#include "session/generator.h"
#include "session/speculative.h"
#include "session/stats_json.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"
#include "wasm/api.h"

#ifdef __wasi__
#include "backend/webgpu/gpu_imports.h"
#endif

#ifndef G4_MTP
#define G4_MTP 1
#endif
#ifndef G4_PROFILE
#define G4_PROFILE 0
#endif

// Called with each generated token and the text it completes (stop tokens bring none); returns 0
// to stop generating after it.
extern "C" __attribute__((import_module("host"), import_name("token"))) int32_t g4_host_token(int32_t id,
                                                                                             const char* text,
                                                                                             uint32_t length);

// Called after each speculative round: drafts made and accepted.
extern "C" __attribute__((import_module("host"), import_name("round"))) void g4_host_round(int32_t drafted,
                                                                                         int32_t accepted);

namespace {

using g4::Result;
using g4::Status;
using nlohmann::json;

struct Runtime {
  std::string target_dir, assistant_dir;
  int64_t context = 0;
  int draft_tokens = 2;
  g4::DraftPolicyKind draft_policy = g4::DraftPolicyKind::kAdaptive;
  g4::ModelConfig config;
  g4::Model::MemoryEstimate estimate;
  uint64_t arena_bytes = 0;
  // Declared first, destroyed last: the weights below live in it.
  std::unique_ptr<g4::Backend> backend;
  std::unique_ptr<g4::Model> model;
  std::unique_ptr<g4::Assistant> assistant;
  std::unique_ptr<g4::Tokenizer> tokenizer;
};

// Reads a JSON object's fields with checked types; the first problem is kept in `status`.
class Fields {
 public:
  Fields(const json& j, std::string what) : j_(j), what_(std::move(what)) {}
  Status CheckKnown(std::initializer_list<const char*> known) {
    for (const auto& [key, value] : j_.items()) {
      bool ok = false;
      for (const char* k : known) ok = ok || key == k;
      if (!ok) return g4::InvalidArgument(what_ + ": unknown field '" + key + "'");
    }
    return Status::Ok();
  }
  double Number(const char* key, double fallback, double lo, double hi) {
    if (!j_.contains(key) || j_[key].is_null()) return fallback;
    if (!j_[key].is_number()) return Fail(key, "a number");
    const double v = j_[key].get<double>();
    if (!(v >= lo && v <= hi)) return Fail(key, "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return v;
  }
  std::string String(const char* key) {
    if (!j_.contains(key) || j_[key].is_null()) return "";
    if (!j_[key].is_string()) return Fail(key, "a string"), "";
    return j_[key].get<std::string>();
  }
  bool Bool(const char* key, bool fallback) {
    if (!j_.contains(key) || j_[key].is_null()) return fallback;
    if (!j_[key].is_boolean()) return Fail(key, "true or false"), fallback;
    return j_[key].get<bool>();
  }
  const Status& status() const { return status_; }

 private:
  double Fail(const char* key, const std::string& want) {
    if (status_.ok()) status_ = g4::InvalidArgument(what_ + ": '" + key + "' must be " + want);
    return 0;
  }
  const json& j_;
  std::string what_;
  Status status_;
};

Result<json> ParseObject(const char* text, uint32_t length, const std::string& what) {
  json j = json::parse(text, text + length, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return g4::InvalidArgument(what + ": not a JSON object");
  return j;
}

template <typename T>
T Fail(const Status& s, T value) {
  g4::wasm::SetLastError(s.message());
  return value;
}

Result<std::unique_ptr<Runtime>> Create(const json& request) {
  Fields f(request, "load");
  G4_RETURN_IF_ERROR(f.CheckKnown({"target", "assistant", "context", "backend", "draft_tokens", "draft_policy"}));
  auto rt = std::make_unique<Runtime>();
  rt->target_dir = f.String("target");
  rt->assistant_dir = f.String("assistant");
  rt->context = static_cast<int64_t>(f.Number("context", 4096, 1, 1 << 24));
  rt->draft_tokens = static_cast<int>(f.Number("draft_tokens", 2, 1, g4::kMaxDraftTokens));
  const std::string backend = request.contains("backend") ? f.String("backend") : "webgpu";
  const std::string draft_policy = request.contains("draft_policy") ? f.String("draft_policy") : "adaptive";
  G4_RETURN_IF_ERROR(f.status());
  G4_ASSIGN_OR_RETURN(rt->draft_policy, g4::ParseDraftPolicy(draft_policy, "load: draft_policy"));
  if (rt->target_dir.empty()) return g4::InvalidArgument("load: 'target' is required");
  if (!G4_MTP && !rt->assistant_dir.empty()) {
    return g4::InvalidArgument("load: this build has no speculative decoding; an assistant needs createGemma4Mtp");
  }
  G4_ASSIGN_OR_RETURN(rt->config, g4::LoadModelConfig(rt->target_dir));
  // Positions: the context plus the drafts a last round may verify past it.
  const int64_t positions = rt->context + rt->draft_tokens + 2;
  const int rows = static_cast<int>(std::min<int64_t>(rt->context, g4::Model::kPrefillChunk));
  rt->estimate = g4::Model::EstimateMemory(rt->config, positions, rows);
  rt->arena_bytes = g4::Model::ArenaBytes(rt->config, positions, rows);
  if (backend == "cpu") {
    rt->backend = g4::MakeCpuBackend(1);
  } else if (backend == "webgpu") {
#ifdef __wasi__
    const double binding = g4_gpu_max_binding_size();
    if (static_cast<double>(rt->arena_bytes) > binding) {
      return g4::ResourceExhausted(
          "load: a context of " + std::to_string(rt->context) + " tokens needs " +
          std::to_string(rt->arena_bytes >> 20) + " MiB of K/V cache and activations in one buffer, but this adapter "
          "binds at most " + std::to_string(static_cast<uint64_t>(binding) >> 20) +
          " MiB (maxStorageBufferBindingSize); ask for a smaller contextLength");
    }
    G4_ASSIGN_OR_RETURN(rt->backend, g4::MakeWebGpuBackend(rt->arena_bytes));
#else
    return g4::InvalidArgument("load: this build has no WebGPU backend");
#endif
  } else {
    return g4::InvalidArgument("load: 'backend' must be \"webgpu\" or \"cpu\", not '" + backend + "'");
  }
  return rt;
}

// Loads the weights; on error nothing of them stays behind.
Status LoadWeights(Runtime& rt) {
  auto model = g4::Model::Load(rt.target_dir, *rt.backend);
  if (!model.ok()) return model.status().WithContext("target");
  std::unique_ptr<g4::Assistant> assistant;
  if (!rt.assistant_dir.empty()) {
    auto a = g4::Assistant::Load(rt.assistant_dir, *rt.backend, **model);
    if (!a.ok()) return a.status().WithContext("assistant");
    assistant = std::move(a).value();
  }
  std::unique_ptr<g4::Tokenizer> tokenizer;
  const std::string tok_path = g4::JoinPath(rt.target_dir, "tokenizer.json");
  if (g4::FileExists(tok_path)) {
    G4_ASSIGN_OR_RETURN(tokenizer, g4::Tokenizer::Load(tok_path));
  }
  rt.model = std::move(model).value();
  rt.assistant = std::move(assistant);
  rt.tokenizer = std::move(tokenizer);
  return Status::Ok();
}

json Info(const Runtime& rt) {
  const g4::ModelConfig& c = rt.config;
  const g4::Model::MemoryEstimate m = rt.model ? rt.model->EstimateMemory(rt.context) : rt.estimate;
  return {{"backend", rt.backend ? rt.backend->Name() : ""},
          {"build", {{"mtp", G4_MTP != 0}, {"profile", G4_PROFILE != 0}}},
          {"context", rt.context},
          {"draft_tokens", rt.draft_tokens},
          {"draft_policy", g4::DraftPolicyName(rt.draft_policy)},
          {"assistant", rt.assistant != nullptr},
          {"tokenizer", rt.tokenizer != nullptr},
          {"vocab", c.vocab},
          {"layers", c.num_layers},
          {"hidden", c.hidden},
          {"eos_ids", c.eos_ids},
          {"sampling_defaults",
           {{"temperature", c.default_temperature}, {"top_k", c.default_top_k}, {"top_p", c.default_top_p}}},
          {"memory", {{"weights", m.weights}, {"kv_cache", m.kv_cache}, {"activations", m.activations},
                      {"arena", rt.arena_bytes}}}};
}

Result<std::vector<int32_t>> Prompt(const Runtime& rt, const json& request) {
  std::vector<int32_t> prompt;
  if (request.contains("prompt_ids")) {
    const json& ids = request["prompt_ids"];
    if (!ids.is_array()) return g4::InvalidArgument("request: 'prompt_ids' must be a list of token ids");
    for (const json& id : ids) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= rt.config.vocab) {
        return g4::InvalidArgument("request: 'prompt_ids' holds a value that is not a token id of this model (0.." +
                                   std::to_string(rt.config.vocab - 1) + ")");
      }
      prompt.push_back(static_cast<int32_t>(id.get<int64_t>()));
    }
    return prompt;
  }
  if (!rt.tokenizer) return g4::FailedPrecondition("request: messages need tokenizer.json beside the target");
  G4_ASSIGN_OR_RETURN(std::vector<g4::ChatMessage> list, g4::ParseChatMessages(request["messages"], "request: messages"));
  G4_ASSIGN_OR_RETURN(std::string text, g4::RenderChat(*rt.tokenizer, list, true));
  return rt.tokenizer->Encode(text);
}

Result<json> Generate(Runtime& rt, const json& request) {
  if (!rt.model) return g4::FailedPrecondition("request: no model is loaded");
  Fields f(request, "request");
  G4_RETURN_IF_ERROR(f.CheckKnown({"messages", "prompt_ids", "max_tokens", "temperature", "top_k", "top_p", "seed",
                                   "speculative"}));
  if (request.contains("messages") == request.contains("prompt_ids")) {
    return g4::InvalidArgument("request: give exactly one of 'messages' and 'prompt_ids'");
  }
  G4_ASSIGN_OR_RETURN(std::vector<int32_t> prompt, Prompt(rt, request));
  if (prompt.empty()) return g4::InvalidArgument("request: the prompt is empty");
  const int64_t room = rt.context - static_cast<int64_t>(prompt.size());
  if (room < 1) {
    return g4::OutOfRange("request: the prompt is " + std::to_string(prompt.size()) + " tokens; the runtime was loaded "
                          "for a context of " + std::to_string(rt.context));
  }
  g4::GenerateOptions opt;
  const double max_tokens = f.Number("max_tokens", static_cast<double>(room), 0, 1 << 24);
  // Defaults: the model's generation_config.json.
  const g4::ModelConfig& c = rt.config;
  opt.sampler.temperature = static_cast<float>(f.Number("temperature", c.default_temperature, 0.0, 100.0));
  opt.sampler.top_k = static_cast<int>(f.Number("top_k", c.default_top_k, 0, 1 << 30));
  opt.sampler.top_p = static_cast<float>(f.Number("top_p", c.default_top_p, 0.0, 1.0));
  opt.sampler.seed = static_cast<uint64_t>(f.Number("seed", 0, 0, 9007199254740991.0));
  const bool speculative = f.Bool("speculative", rt.assistant != nullptr);
  G4_RETURN_IF_ERROR(f.status());
  if (max_tokens > static_cast<double>(room)) {
    return g4::OutOfRange("request: the prompt (" + std::to_string(prompt.size()) + " tokens) plus max_tokens (" +
                          std::to_string(static_cast<int64_t>(max_tokens)) + ") exceeds the context of " +
                          std::to_string(rt.context) + " tokens the runtime was loaded for");
  }
  if (speculative && !rt.assistant) return g4::FailedPrecondition("request: speculative decoding needs an assistant");
  opt.max_new_tokens = static_cast<int>(max_tokens);

  std::unique_ptr<g4::StreamDecoder> text;
  if (rt.tokenizer) text = std::make_unique<g4::StreamDecoder>(*rt.tokenizer);
  const std::vector<int>& stops = rt.config.eos_ids;
  bool stop_asked = false;
  auto on_token = [&](int token) {
    std::string piece;
    if (text && std::find(stops.begin(), stops.end(), token) == stops.end()) piece = text->Push(token);
    stop_asked = g4_host_token(token, piece.data(), static_cast<uint32_t>(piece.size())) == 0;
  };
  opt.interrupted = [&] { return stop_asked; };
  opt.on_round = [](int drafted, int accepted) { g4_host_round(drafted, accepted); };
  if (G4_PROFILE) rt.backend->Profile(g4::Backend::ProfileMode::kKernels);
  Result<g4::GenerationResult> r = g4::InvalidArgument("unreachable");
#if G4_MTP
  if (speculative) {
    r = g4::GenerateSpeculative(*rt.model, *rt.assistant, prompt, opt,
                                g4::SpeculativeOptions{rt.draft_tokens, rt.draft_policy}, on_token);
  } else
#endif
    r = g4::Generate(*rt.model, prompt, opt, on_token);
  if (G4_PROFILE) rt.backend->Profile(g4::Backend::ProfileMode::kOff);
  if (!r.ok()) return r.status();
  std::string tail = text ? text->Flush() : "";
  if (!tail.empty()) g4_host_token(-1, tail.data(), static_cast<uint32_t>(tail.size()));
  return json{{"tokens", r->tokens},
              {"stop_reason", r->stop_reason},
              {"speculative", speculative},
              {"stats", g4::StatsJson(r->stats)}};
}

}  // namespace

// A runtime for the request (JSON: target, assistant, context, backend, draft_tokens): the
// configuration checked against the adapter and the backend made, no weights yet; null on error.
G4_EXPORT(g4_rt_create) Runtime* g4_rt_create(const char* request, uint32_t length) {
  auto j = ParseObject(request, length, "load");
  if (!j.ok()) return Fail(j.status(), nullptr);
  auto rt = Create(*j);
  if (!rt.ok()) return Fail(rt.status(), nullptr);
  return std::move(rt).value().release();
}

// Loads the weights (and tokenizer.json beside the target, if there); 0 on error, with nothing
// of them left loaded.
G4_EXPORT(g4_rt_load) int32_t g4_rt_load(Runtime* rt) {
  Status s = LoadWeights(*rt);
  return s.ok() ? 1 : Fail(s, 0);
}

// Frees everything the runtime holds (every GPU buffer included).
G4_EXPORT(g4_rt_free) void g4_rt_free(Runtime* rt) { delete rt; }

// JSON: the backend, the build, the model's shape and its memory.
G4_EXPORT(g4_rt_info) char* g4_rt_info(const Runtime* rt, uint32_t* length) { return g4::wasm::CopyText(Info(*rt).dump(), length); }

// The tokenizer loaded beside the target (for the g4_tokenizer_* exports), or null.
G4_EXPORT(g4_rt_tokenizer) const g4::Tokenizer* g4_rt_tokenizer(const Runtime* rt) { return rt->tokenizer.get(); }

// Generates for a request (JSON: messages or prompt_ids, max_tokens, temperature, top_k, top_p,
// seed, speculative); the answer as JSON (tokens, stop_reason, stats), null on error.
G4_EXPORT(g4_rt_generate) char* g4_rt_generate(Runtime* rt, const char* request, uint32_t length, uint32_t* out) {
  auto j = ParseObject(request, length, "request");
  if (!j.ok()) return Fail(j.status(), nullptr);
  auto r = Generate(*rt, *j);
  if (!r.ok()) return Fail(r.status(), nullptr);
  return g4::wasm::CopyText(r->dump(), out);
}

// The kernel profile of the last request (profile builds; see web/gpu_bridge.mjs), "" otherwise.
G4_EXPORT(g4_rt_profile) char* g4_rt_profile(Runtime* rt, uint32_t* length) {
  auto p = rt->backend->ProfileJson();
  if (!p.ok()) return Fail(p.status(), nullptr);
  return g4::wasm::CopyText(*p, length);
}
