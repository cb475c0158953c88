// The runtime as a C API for JavaScript (web/api.mjs): one runtime is one engine
// (session/engine.h) holding a target model, optionally its MTP assistant, and the target's
// tokenizer; this file parses the JSON requests and makes the backend. Requests and answers are JSON;
// each generated token goes to the host's `host.token` import as it is chosen (asyncified, so the
// host can hand it on and ask to stop). Errors leave a message for g4_last_error.
//
// Build variants (build_variant.cc, compiled once a build): without MTP, loading an assistant is
// an error; with profiling, every kernel of each request is timed with GPU timestamps.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "session/backends.h"
#include "session/engine.h"
#include "session/limits.h"
#include "session/stats_json.h"
#include "tokenizer/chat.h"
#include "wasm/api.h"

// This build's variant, defined in build_variant.cc.
extern const bool g4_build_mtp;
extern const bool g4_build_profile;

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

// What g4_rt_* hand around: the engine (null until g4_rt_create succeeds).
struct Runtime {
  std::unique_ptr<g4::Engine> engine;
};

// Reads a JSON object's fields with checked types; the first problem is kept in `status`.
class Fields {
 public:
  explicit Fields(const json& j) : j_(j) {}
  Status CheckKnown(std::initializer_list<const char*> known) {
    for (const auto& [key, value] : j_.items()) {
      bool ok = false;
      for (const char* k : known) ok = ok || key == k;
      if (!ok) return g4::InvalidArgument("unknown field '" + key + "'");
    }
    return Status::Ok();
  }
  bool Has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }
  // An option of the limits table, checked against its range; nullopt where unset.
  std::optional<double> Number(const g4::Limit& limit) {
    if (!Has(limit.key)) return std::nullopt;
    const json& v = j_[limit.key];
    if (!v.is_number()) return Fail(limit.key, g4::RangeText(limit)), std::nullopt;
    const double d = v.get<double>();
    if (!limit.Contains(d)) return Fail(limit.key, g4::RangeText(limit) + ", not " + g4::FormatNumber(d)), std::nullopt;
    return d;
  }
  // A choice option of the limits table, checked against its words; nullopt where unset.
  std::optional<std::string> Choice(const g4::Limit& limit) {
    if (!Has(limit.key)) return std::nullopt;
    const json& v = j_[limit.key];
    if (!v.is_string()) return Fail(limit.key, g4::RangeText(limit)), std::nullopt;
    const Status s = g4::CheckChoice(limit, v.get<std::string>(), limit.key);
    if (!s.ok() && status_.ok()) status_ = s;
    return s.ok() ? std::optional<std::string>(v.get<std::string>()) : std::nullopt;
  }
  std::string String(const char* key) {
    if (!Has(key)) return "";
    if (!j_[key].is_string()) return Fail(key, "a string"), "";
    return j_[key].get<std::string>();
  }
  std::optional<bool> Bool(const char* key) {
    if (!Has(key)) return std::nullopt;
    if (!j_[key].is_boolean()) return Fail(key, "true or false"), std::nullopt;
    return j_[key].get<bool>();
  }
  const Status& status() const { return status_; }

 private:
  void Fail(const char* key, const std::string& want) {
    if (status_.ok()) status_ = g4::InvalidArgument(std::string(key) + " must be " + want);
  }
  const json& j_;
  Status status_;
};

Result<json> ParseObject(const char* text, uint32_t length) {
  json j = json::parse(text, text + length, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return g4::InvalidArgument("not a JSON object");
  return j;
}

template <typename T>
T Fail(const Status& s, T value) {
  g4::wasm::SetLastError(s.message());
  return value;
}

// The backend the request names: WebGPU, with `fill` workgroups filling the device (0: measured),
// or the CPU backend on one thread (WebAssembly has no threads here).
Result<g4::BackendFactory> BackendFor(const std::string& name, uint64_t fill) {
  if (name == "cpu") return g4::CpuBackends(1);
  if (name != "webgpu") return g4::InvalidArgument("backend must be \"webgpu\" or \"cpu\", not '" + name + "'");
  return g4::WebGpuBackends(fill, std::string("ask for a smaller ") + g4::limits::kContext.js);
}

Result<std::unique_ptr<g4::Engine>> Create(const json& request) {
  Fields f(request);
  G4_RETURN_IF_ERROR(
      f.CheckKnown({"target", "assistant", "context", "backend", "draft_tokens", "draft_policy", "gpu_fill", "decode_ahead"}));
  g4::EngineOptions options;
  options.target = f.String("target");
  options.assistant = f.String("assistant");
  const double context = f.Number(g4::limits::kContext).value_or(g4::limits::kContext.fallback);
  options.draft_tokens =
      static_cast<int>(f.Number(g4::limits::kDraftTokens).value_or(g4::limits::kDraftTokens.fallback));
  const std::string policy = f.Choice(g4::limits::kDraftPolicy).value_or(g4::Choices(g4::limits::kDraftPolicy)[0]);
  const std::string backend = f.Has("backend") ? f.String("backend") : "webgpu";
  const double fill = f.Number(g4::limits::kGpuFill).value_or(g4::limits::kGpuFill.fallback);
  options.decode_ahead = static_cast<int>(f.Number(g4::limits::kDecodeAhead).value_or(-1));
  G4_RETURN_IF_ERROR(f.status());
  G4_ASSIGN_OR_RETURN(options.draft_policy, g4::ParseDraftPolicy(policy, g4::limits::kDraftPolicy.key));
  if (options.target.empty()) return g4::InvalidArgument("target is required");
  if (fill != 0 && backend != "webgpu") return g4::InvalidArgument("gpu_fill goes with the webgpu backend");
  if (!g4_build_mtp && !options.assistant.empty()) {
    return g4::InvalidArgument("this build has no speculative decoding; an assistant needs createGemma4Mtp");
  }
  G4_ASSIGN_OR_RETURN(g4::BackendFactory make_backend, BackendFor(backend, static_cast<uint64_t>(fill)));
  G4_ASSIGN_OR_RETURN(std::unique_ptr<g4::Engine> engine, g4::Engine::Open(options));
  G4_RETURN_IF_ERROR(engine->Reserve(static_cast<int64_t>(context), make_backend));
  return engine;
}

json Info(const g4::Engine& engine) {
  json j = engine.Info();
  j["build"] = {{"mtp", g4_build_mtp}, {"profile", g4_build_profile}};
  return j;
}

Result<json> Generate(g4::Engine& engine, const json& request) {
  if (!engine.loaded()) return g4::FailedPrecondition("no model is loaded");
  Fields f(request);
  G4_RETURN_IF_ERROR(f.CheckKnown({"messages", "prompt", "prompt_ids", "max_tokens", "temperature", "top_k", "top_p",
                                   "seed", "speculative"}));
  if (request.contains("messages") + request.contains("prompt") + request.contains("prompt_ids") != 1) {
    return g4::InvalidArgument("give exactly one of 'messages', 'prompt' and 'prompt_ids'");
  }
  g4::EngineRequest r;
  if (request.contains("prompt")) {
    // A raw prompt, as the CLI's --prompt takes it: the tokenizer's BOS, then the text's ids.
    const std::string text = f.String("prompt");
    G4_RETURN_IF_ERROR(f.status());
    G4_ASSIGN_OR_RETURN(r.prompt, engine.PromptFromText(text, /*chat=*/false));
  } else if (request.contains("prompt_ids")) {
    const json& ids = request["prompt_ids"];
    if (!ids.is_array()) return g4::InvalidArgument("prompt_ids must be a list of token ids");
    for (const json& id : ids) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= engine.config().vocab) {
        return g4::InvalidArgument("prompt_ids holds a value that is not a token id of this model (0.." +
                                   std::to_string(engine.config().vocab - 1) + ")");
      }
      r.prompt.push_back(static_cast<int32_t>(id.get<int64_t>()));
    }
  } else {
    G4_ASSIGN_OR_RETURN(std::vector<g4::ChatMessage> list, g4::ParseChatMessages(request["messages"], "messages"));
    G4_ASSIGN_OR_RETURN(r.prompt, engine.PromptFromMessages(list));
  }
  using namespace g4::limits;
  if (auto v = f.Number(kMaxTokens)) r.max_tokens = static_cast<int64_t>(*v);
  r.temperature = f.Number(kTemperature);
  if (auto v = f.Number(kTopK)) r.top_k = static_cast<int64_t>(*v);
  r.top_p = f.Number(kTopP);
  if (auto v = f.Number(kSeed)) r.seed = static_cast<uint64_t>(*v);
  r.speculative = f.Bool("speculative");
  G4_RETURN_IF_ERROR(f.status());

  g4::EngineCallbacks callbacks;
  callbacks.on_token = [](int token, std::string_view text) {
    return g4_host_token(token, text.data(), static_cast<uint32_t>(text.size())) != 0;
  };
  callbacks.on_round = [](int drafted, int accepted) { g4_host_round(drafted, accepted); };
  if (g4_build_profile) engine.backend()->Profile(g4::Backend::ProfileMode::kKernels);
  auto answer = engine.Generate(r, callbacks);
  if (g4_build_profile) engine.backend()->Profile(g4::Backend::ProfileMode::kOff);
  if (!answer.ok()) return answer.status();
  return json{{"tokens", answer->result.tokens},
              {"stop_reason", answer->result.stop_reason},
              {"speculative", answer->speculative},
              {"stats", g4::StatsJson(answer->result.stats)}};
}

}  // namespace

// A runtime for the request (JSON: target, assistant, context, backend, draft_tokens,
// draft_policy, gpu_fill, decode_ahead): the configuration and the tokenizer read, checked against the adapter and the
// backend made, no weights yet; null on error.
G4_EXPORT(g4_rt_create) Runtime* g4_rt_create(const char* request, uint32_t length) {
  auto j = ParseObject(request, length);
  if (!j.ok()) return Fail(j.status(), nullptr);
  auto engine = Create(*j);
  if (!engine.ok()) return Fail(engine.status(), nullptr);
  return new Runtime{std::move(engine).value()};
}

// Loads the weights; 0 on error, with nothing of them left loaded.
G4_EXPORT(g4_rt_load) int32_t g4_rt_load(Runtime* rt) {
  Status s = rt->engine->Load();
  return s.ok() ? 1 : Fail(s, 0);
}

// Frees everything the runtime holds (every GPU buffer included).
G4_EXPORT(g4_rt_free) void g4_rt_free(Runtime* rt) { delete rt; }

// JSON: the backend, the build, the model's shape and its memory.
G4_EXPORT(g4_rt_info) char* g4_rt_info(const Runtime* rt, uint32_t* length) {
  return g4::wasm::CopyText(Info(*rt->engine).dump(), length);
}

// The tokenizer loaded beside the target (for the g4_tokenizer_* exports), or null.
G4_EXPORT(g4_rt_tokenizer) const g4::Tokenizer* g4_rt_tokenizer(const Runtime* rt) { return rt->engine->tokenizer(); }

// Generates for a request (JSON: messages, prompt or prompt_ids, max_tokens, temperature, top_k,
// top_p, seed, speculative); the answer as JSON (tokens, stop_reason, speculative, stats), null on error.
// Without a seed, sampling is seeded from the host's random source.
G4_EXPORT(g4_rt_generate) char* g4_rt_generate(Runtime* rt, const char* request, uint32_t length, uint32_t* out) {
  auto j = ParseObject(request, length);
  if (!j.ok()) return Fail(j.status(), nullptr);
  auto r = Generate(*rt->engine, *j);
  if (!r.ok()) return Fail(r.status(), nullptr);
  return g4::wasm::CopyText(r->dump(), out);
}

// The kernel profile of the last request (profile builds; see web/gpu_bridge.mjs), "" otherwise.
G4_EXPORT(g4_rt_profile) char* g4_rt_profile(Runtime* rt, uint32_t* length) {
  auto p = rt->engine->backend()->ProfileJson();
  if (!p.ok()) return Fail(p.status(), nullptr);
  return g4::wasm::CopyText(*p, length);
}

// The limits table (session/limits.h) as JSON: every load and request option's range and
// default, which the JavaScript API checks its options against.
G4_EXPORT(g4_limits) char* g4_limits(uint32_t* length) { return g4::wasm::CopyText(g4::LimitsJson().dump(), length); }
