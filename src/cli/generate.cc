// gemma4 generate / gemma4 inspect.
#include <algorithm>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/commands.h"
#include "model/model.h"
#include "model/assistant.h"
#include "session/generator.h"
#include "session/speculative.h"
#include "session/stats_json.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

namespace g4::cli {
Result<std::unique_ptr<Backend>> MakeBackend(const Args& a, int64_t positions, int rows) {
  const std::string name = a.Get("backend", "cpu");
  G4_ASSIGN_OR_RETURN(long long threads, a.GetInt("threads", 0, 0, 1024));
  if (name == "cpu") return MakeCpuBackend(static_cast<int>(threads));
#ifdef __wasi__
  if (name == "webgpu") {
    G4_ASSIGN_OR_RETURN(ModelConfig config, LoadModelConfig(a.Get("model")));
    return MakeWebGpuBackend(Model::ArenaBytes(config, positions, rows));
  }
  return InvalidArgument("--backend: '" + name + "' is not one of webgpu, cpu");
#else
  return InvalidArgument("--backend: '" + name + "' is not available in this build (cpu)");
#endif
}

int RunGenerate(const std::vector<std::string>& argv) {
  auto parsed = Args::Parse(argv,
                            {"model", "prompt-ids", "prompt", "max-new-tokens", "temperature", "top-k", "top-p",
                             "seed", "backend", "top-logits", "threads", "tokenizer", "assistant", "draft-tokens",
                             "draft-policy"},
                            {"json", "chat"});
  if (!parsed.ok()) return Fail(parsed.status());
  const Args& a = *parsed;
  if (!a.Has("model")) return Fail(InvalidArgument("generate: --model DIR is required"));
  if (a.Has("prompt") == a.Has("prompt-ids")) {
    return Fail(InvalidArgument("generate: give exactly one of --prompt-ids and --prompt"));
  }
  if (a.Has("chat") && !a.Has("prompt")) return Fail(InvalidArgument("generate: --chat goes with --prompt TEXT"));
  // The tokenizer: --tokenizer FILE, else tokenizer.json beside the model (needed for --prompt).
  std::unique_ptr<Tokenizer> tokenizer;
  const std::string tok_path = a.Has("tokenizer") ? a.Get("tokenizer") : JoinPath(a.Get("model"), "tokenizer.json");
  if (a.Has("prompt") || a.Has("tokenizer") || FileExists(tok_path)) {
    auto t = Tokenizer::Load(tok_path);
    if (!t.ok()) {
      return Fail(a.Has("prompt") ? t.status().WithContext("generate: --prompt needs a tokenizer (--tokenizer FILE or "
                                                           "tokenizer.json beside the model)")
                                  : t.status());
    }
    tokenizer = std::move(t).value();
  }
  std::vector<int32_t> prompt;
  if (a.Has("prompt")) {
    if (a.Has("chat")) {
      auto rendered = RenderChat(*tokenizer, {{"user", a.Get("prompt")}}, true);
      if (!rendered.ok()) return Fail(rendered.status());
      prompt = tokenizer->Encode(*rendered);
    } else {
      if (tokenizer->bos_id() >= 0) prompt.push_back(tokenizer->bos_id());
      const auto ids = tokenizer->Encode(a.Get("prompt"));
      prompt.insert(prompt.end(), ids.begin(), ids.end());
    }
  } else {
    auto ids = a.GetIntList("prompt-ids");
    if (!ids.ok()) return Fail(ids.status());
    prompt.assign(ids->begin(), ids->end());
  }
  auto max_new = a.GetInt("max-new-tokens", 32, 0, 1 << 20);
  auto temperature = a.GetDouble("temperature", 0.0);
  auto top_k = a.GetInt("top-k", 0, 0, 1 << 30);
  auto top_p = a.GetDouble("top-p", 1.0);
  auto seed = a.GetInt("seed", 0, 0, (1ll << 62));
  auto top_logits = a.GetInt("top-logits", 0, 0, 1 << 20);
  auto draft_tokens = a.GetInt("draft-tokens", 2, 1, kMaxDraftTokens);
  for (const char* flag : {"draft-tokens", "draft-policy"}) {
    if (a.Has(flag) && !a.Has("assistant")) {
      return Fail(InvalidArgument(std::string("generate: --") + flag + " goes with --assistant DIR"));
    }
  }
  auto draft_policy = ParseDraftPolicy(a.Get("draft-policy", "adaptive"), "--draft-policy");
  if (!draft_policy.ok()) return Fail(draft_policy.status());
  for (const Status* s : {&max_new.status(), &temperature.status(), &top_k.status(),
                          &top_p.status(), &seed.status(), &top_logits.status(), &draft_tokens.status()}) {
    if (!s->ok()) return Fail(*s);
  }
  const int64_t positions = static_cast<int64_t>(prompt.size()) + *max_new + *draft_tokens + 2;
  auto backend = MakeBackend(a, positions, static_cast<int>(std::min<size_t>(prompt.size(), Model::kPrefillChunk)));
  if (!backend.ok()) return Fail(backend.status());
  auto model = Model::Load(a.Get("model"), **backend);
  if (!model.ok()) return Fail(model.status());

  GenerateOptions opt;
  opt.max_new_tokens = static_cast<int>(*max_new);
  opt.sampler.temperature = static_cast<float>(*temperature);
  opt.sampler.top_k = static_cast<int>(*top_k);
  opt.sampler.top_p = static_cast<float>(*top_p);
  opt.sampler.seed = static_cast<uint64_t>(*seed);
  opt.top_logits = static_cast<int>(*top_logits);
  const bool json_out = a.Has("json");
  std::unique_ptr<StreamDecoder> stream;
  if (tokenizer) stream = std::make_unique<StreamDecoder>(*tokenizer);
  const std::vector<int>& stops = (*model)->config().eos_ids;
  std::unique_ptr<Assistant> assistant;
  if (a.Has("assistant")) {
    auto as = Assistant::Load(a.Get("assistant"), **backend, **model);
    if (!as.ok()) return Fail(as.status());
    assistant = std::move(as).value();
  }
  auto on_token = [&](int token) {
    if (json_out) return;
    if (stream) {
      if (std::find(stops.begin(), stops.end(), token) == stops.end()) std::fputs(stream->Push(token).c_str(), stdout);
    } else {
      std::printf("%d\n", token);
    }
    std::fflush(stdout);
  };
  const SpeculativeOptions speculative{static_cast<int>(*draft_tokens), *draft_policy};
  auto result = assistant ? GenerateSpeculative(**model, *assistant, prompt, opt, speculative, on_token)
                          : Generate(**model, prompt, opt, on_token);
  if (stream && !json_out) std::printf("%s\n", stream->Flush().c_str());
  if (!result.ok()) return Fail(result.status());
  const GenerationStats& st = result->stats;
  if (json_out) {
    nlohmann::json top = nlohmann::json::array();
    for (const auto& row : result->top_logits) {
      nlohmann::json r = nlohmann::json::array();
      for (const auto& [id, logit] : row) r.push_back({id, logit});
      top.push_back(r);
    }
    nlohmann::json j = {
        {"tokens", result->tokens},
        {"stop_reason", result->stop_reason},
        {"top_logits", top},
        {"stats", StatsJson(st)}};
    j["stats"]["backend"] = (*backend)->Name();
    if (tokenizer) {
      // The generated text, without the stop token that ended it.
      std::vector<int32_t> text_ids(result->tokens.begin(), result->tokens.end());
      if (result->stop_reason == "eos" && !text_ids.empty()) text_ids.pop_back();
      j["text"] = tokenizer->Decode(text_ids);
    }
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::fprintf(stderr, "stop: %s; prompt %d tokens, prefill %.1f ms (%.1f tok/s); %d generated, decode %.1f ms (%.1f tok/s)\n",
                 result->stop_reason.c_str(), st.prompt_tokens, st.prefill_us / 1000.0, st.prefill_tokens_per_s(),
                 st.generated_tokens, st.decode_us / 1000.0, st.decode_tokens_per_s());
    if (assistant) {
      std::fprintf(stderr, "speculative: %d rounds, %d drafted, %d accepted (%.1f%%), %.2f tokens per round\n", st.rounds,
                   st.drafted, st.accepted, 100.0 * st.acceptance_rate(), st.tokens_per_round());
      std::string per_k;
      for (size_t k = 0; k < st.rounds_per_k.size(); ++k) per_k += " K=" + std::to_string(k) + ": " + std::to_string(st.rounds_per_k[k]);
      std::fprintf(stderr, "rounds by drafts (%s policy, K=0: plain steps):%s\n", DraftPolicyName(*draft_policy),
                   per_k.c_str());
    }
  }
  return 0;
}

int RunInspect(const std::vector<std::string>& argv) {
  auto parsed = Args::Parse(argv, {"model", "context", "assistant"}, {});
  if (!parsed.ok()) return Fail(parsed.status());
  if (!parsed->Has("model")) return Fail(InvalidArgument("inspect: --model DIR is required"));
  auto context = parsed->GetInt("context", 4096, 1, 1ll << 24);
  if (!context.ok()) return Fail(context.status());
  // An assistant folder alone: its layers, and what they read of a target.
  const std::string config_path = JoinPath(parsed->Get("model"), "config.json");
  if (auto text = ReadTextFile(config_path, kMaxConfigBytes);
      text.ok() && text->find("\"gemma4_assistant\"") != std::string::npos) {
    auto config = ParseAssistantConfig(*text, config_path);
    if (!config.ok()) return Fail(config.status());
    std::printf("MTP assistant for a target of hidden size %d (inspect --model TARGET --assistant DIR names the "
                "target layers)\n%s", config->backbone_hidden, DescribeDonors(*config, {}).c_str());
    return 0;
  }
  auto backend = MakeCpuBackend();
  auto model = Model::Load(parsed->Get("model"), *backend);
  if (!model.ok()) return Fail(model.status());
  std::unique_ptr<Assistant> assistant;
  if (parsed->Has("assistant")) {
    auto as = Assistant::Load(parsed->Get("assistant"), *backend, **model);
    if (!as.ok()) return Fail(as.status());
    assistant = std::move(as).value();
  }
  const ModelConfig& c = (*model)->config();
  const LoadReport& r = (*model)->load_report();
  std::printf("%s", c.Describe().c_str());
  std::printf("tensors: %d used, %d of other towers skipped, %zu unused\n", r.used_tensors, r.skipped_tensors,
              r.unused_tensors.size());
  uint64_t total = 0;
  for (const auto& [dtype, bytes] : r.bytes_by_dtype) {
    std::printf("weights %s: %llu bytes\n", dtype.c_str(), static_cast<unsigned long long>(bytes));
    total += bytes;
  }
  std::printf("weights total: %llu bytes\n", static_cast<unsigned long long>(total));
  std::printf("kv cache per token: %zu bytes (f32, %d of %d layers own a cache)\n", c.KvBytesPerPosition(),
              c.num_layers - c.num_kv_shared_layers, c.num_layers);
  const Model::MemoryEstimate m = (*model)->EstimateMemory(*context);
  auto mb = [](uint64_t b) { return static_cast<double>(b) / 1e6; };
  std::printf("memory at a %lld-token context: %llu bytes (%.1f MB) = weights %.1f MB + kv cache %.1f MB + "
              "activations %.1f MB (prefill chunks of %d)\n",
              *context, static_cast<unsigned long long>(m.total()), mb(m.total()), mb(m.weights), mb(m.kv_cache),
              mb(m.activations), Model::kPrefillChunk);
  if (assistant) std::printf("%s", DescribeDonors(assistant->config(), assistant->donors()).c_str());
  return 0;
}

}  // namespace g4::cli
