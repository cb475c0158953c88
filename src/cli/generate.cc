// gemma4 generate / gemma4 inspect.
#include <algorithm>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/commands.h"
#include "model/model.h"
#include "session/backends.h"
#include "session/engine.h"
#include "session/stats_json.h"

namespace g4::cli {

Result<BackendFactory> BackendFor(const Args& a) {
  const std::string name = a.Get("backend", "cpu");
  G4_ASSIGN_OR_RETURN(const double threads, a.GetOption(limits::kThreads, limits::kThreads.CliFallback()));
  G4_ASSIGN_OR_RETURN(const double fill, a.GetOption(limits::kGpuFill, limits::kGpuFill.CliFallback()));
  if (a.Has(limits::kGpuFill.flag) && name != "webgpu") {
    return InvalidArgument(std::string("--") + limits::kGpuFill.flag + " goes with --backend webgpu");
  }
  if (name == "cpu") return CpuBackends(static_cast<int>(threads));
#ifdef __wasi__
  if (name == "webgpu") return WebGpuBackends(static_cast<uint64_t>(fill), "ask for a shorter prompt or fewer new tokens");
  return InvalidArgument("--backend: '" + name + "' is not one of webgpu, cpu");
#else
  (void)fill;
  return InvalidArgument("--backend: '" + name + "' is not available in this build (cpu)");
#endif
}

Result<EngineOptions> EngineOptionsFor(const Args& a, const std::string& command) {
  for (const Limit* drafting : {&limits::kDraftTokens, &limits::kDraftPolicy}) {
    if (a.Has(drafting->flag) && !a.Has("assistant")) {
      return InvalidArgument(command + ": --" + drafting->flag + " goes with --assistant DIR");
    }
  }
  G4_ASSIGN_OR_RETURN(const double draft_tokens,
                      a.GetOption(limits::kDraftTokens, limits::kDraftTokens.CliFallback()));
  G4_ASSIGN_OR_RETURN(const std::string policy, a.GetChoice(limits::kDraftPolicy));
  EngineOptions options;
  options.target = a.Get("model");
  options.assistant = a.Get("assistant");
  options.draft_tokens = static_cast<int>(draft_tokens);
  G4_ASSIGN_OR_RETURN(options.draft_policy, ParseDraftPolicy(policy, "--draft-policy"));
  return options;
}

int RunGenerate(const std::vector<std::string>& argv) {
  auto parsed = Args::Parse(argv,
                            {"model", "prompt-ids", "prompt", "max-new-tokens", "temperature", "top-k", "top-p",
                             "seed", "backend", "top-logits", "threads", "tokenizer", "assistant", "draft-tokens",
                             "draft-policy", "gpu-fill", "decode-ahead", "round-ahead"},
                            {"json", "chat"});
  if (!parsed.ok()) return Fail(parsed.status());
  const Args& a = *parsed;
  if (!a.Has("model")) return Fail(InvalidArgument("generate: --model DIR is required"));
  if (a.Has("prompt") == a.Has("prompt-ids")) {
    return Fail(InvalidArgument("generate: give exactly one of --prompt-ids and --prompt"));
  }
  if (a.Has("chat") && !a.Has("prompt")) return Fail(InvalidArgument("generate: --chat goes with --prompt TEXT"));
  auto engine_options = EngineOptionsFor(a, "generate");
  if (!engine_options.ok()) return Fail(engine_options.status());
  auto ahead = a.GetOption(limits::kDecodeAhead);
  if (!ahead.ok()) return Fail(ahead.status());
  if (*ahead && **ahead > 0 && a.Get("backend", "cpu") != "webgpu") {
    return Fail(InvalidArgument(std::string("--") + limits::kDecodeAhead.flag + " above 0 goes with --backend webgpu"));
  }
  if (*ahead) engine_options->decode_ahead = static_cast<int>(**ahead);
  // Flags of the limits table: unset ones take the CLI's defaults (greedy, 32 tokens), but the
  // seed, which is random unless given.
  using namespace limits;
  auto max_new = a.GetOption(kMaxTokens, kMaxTokens.CliFallback());
  auto temperature = a.GetOption(kTemperature, kTemperature.CliFallback());
  auto top_k = a.GetOption(kTopK, kTopK.CliFallback());
  auto top_p = a.GetOption(kTopP, kTopP.CliFallback());
  auto seed = a.GetOption(kSeed);
  auto top_logits = a.GetOption(kTopLogits, kTopLogits.CliFallback());
  for (const Status* s : {&max_new.status(), &temperature.status(), &top_k.status(), &top_p.status(), &seed.status(),
                          &top_logits.status()}) {
    if (!s->ok()) return Fail(*s);
  }
  auto backend_for = BackendFor(a);
  if (!backend_for.ok()) return Fail(backend_for.status());

  // The tokenizer: --tokenizer FILE, else tokenizer.json beside the model (needed for --prompt).
  EngineOptions& options = *engine_options;
  options.tokenizer = a.Get("tokenizer");
  if (a.Has("prompt")) {
    options.tokenizer_use = EngineOptions::TokenizerUse::kRequired;
    options.tokenizer_needed_by = "generate: --prompt needs a tokenizer (--tokenizer FILE or tokenizer.json beside the model)";
  }
  auto engine = Engine::Open(options);
  if (!engine.ok()) return Fail(engine.status());
  Engine& e = **engine;
  EngineRequest request;
  if (a.Has("prompt")) {
    auto prompt = e.PromptFromText(a.Get("prompt"), a.Has("chat"));
    if (!prompt.ok()) return Fail(prompt.status());
    request.prompt = std::move(prompt).value();
  } else {
    auto ids = a.GetIntList("prompt-ids");
    if (!ids.ok()) return Fail(ids.status());
    request.prompt.assign(ids->begin(), ids->end());
  }
  // The context: the prompt and the tokens asked for.
  const int64_t context = static_cast<int64_t>(request.prompt.size()) + static_cast<int64_t>(*max_new);
  if (context > kContext.max) {
    return Fail(InvalidArgument("generate: the prompt (" + std::to_string(request.prompt.size()) +
                                " tokens) and --max-new-tokens " + a.Get("max-new-tokens") +
                                " are more than the longest context, " + FormatNumber(kContext.max)));
  }
  Status s = e.Reserve(std::max<int64_t>(context, 1), *backend_for,
                       static_cast<int>(std::min<size_t>(request.prompt.size(), Model::kPrefillChunk)));
  if (!s.ok()) return Fail(s);
  s = e.Load();
  if (!s.ok()) return Fail(s);

  request.max_tokens = static_cast<int64_t>(*max_new);
  request.temperature = *temperature;
  request.top_k = static_cast<int64_t>(*top_k);
  request.top_p = *top_p;
  if (*seed) request.seed = static_cast<uint64_t>(**seed);
  request.top_logits = static_cast<int>(*top_logits);
  if (a.Has("round-ahead")) {
    auto round_ahead = a.GetInt("round-ahead", 0, 0, 1);
    if (!round_ahead.ok()) return Fail(round_ahead.status());
    request.round_ahead = static_cast<int>(*round_ahead);
  }
  const bool json_out = a.Has("json");
  const bool text_out = e.tokenizer() != nullptr && !json_out;
  EngineCallbacks callbacks;
  callbacks.on_token = [&](int token, std::string_view text) {
    if (json_out) return true;
    if (text_out) {
      std::fwrite(text.data(), 1, text.size(), stdout);
    } else if (token >= 0) {
      std::printf("%d\n", token);
    }
    std::fflush(stdout);
    return true;
  };
  auto answer = e.Generate(request, callbacks);
  if (text_out) {
    std::printf("\n");
    std::fflush(stdout);  // the text ends before the figures on stderr, whatever stdout is
  }
  if (!answer.ok()) return Fail(answer.status().WithContext("generate"));
  const GenerationResult& result = answer->result;
  const GenerationStats& st = result.stats;
  if (json_out) {
    nlohmann::json top = nlohmann::json::array();
    for (const auto& row : result.top_logits) {
      nlohmann::json r = nlohmann::json::array();
      for (const auto& [id, logit] : row) r.push_back({id, logit});
      top.push_back(r);
    }
    nlohmann::json j = {
        {"tokens", result.tokens},
        {"stop_reason", result.stop_reason},
        {"top_logits", top},
        {"stats", StatsJson(st)}};
    j["stats"]["backend"] = e.backend()->Name();
    if (e.backend()->gpu_fill()) j["stats"]["gpu_fill"] = e.backend()->gpu_fill();
    // The generated text, without the stop token that ended it.
    if (e.tokenizer()) j["text"] = e.Text(result);
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::fprintf(stderr, "stop: %s; prompt %d tokens, prefill %.1f ms (%.1f tok/s); %d generated, decode %.1f ms (%.1f tok/s)\n",
                 result.stop_reason.c_str(), st.prompt_tokens, st.prefill_us / 1000.0, st.prefill_tokens_per_s(),
                 st.generated_tokens, st.decode_us / 1000.0, st.decode_tokens_per_s());
    if (answer->speculative) {
      std::fprintf(stderr, "speculative: %d rounds, %d drafted, %d accepted (%.1f%%), %.2f tokens per round\n", st.rounds,
                   st.drafted, st.accepted, 100.0 * st.acceptance_rate(), st.tokens_per_round());
      std::string per_k;
      for (size_t k = 0; k < st.rounds_per_k.size(); ++k) per_k += " K=" + std::to_string(k) + ": " + std::to_string(st.rounds_per_k[k]);
      std::fprintf(stderr, "rounds by drafts (%s policy, K=0: plain steps):%s\n", DraftPolicyName(e.draft_policy()),
                   per_k.c_str());
    }
  }
  return 0;
}

int RunInspect(const std::vector<std::string>& argv) {
  auto parsed = Args::Parse(argv, {"model", "context", "assistant"}, {});
  if (!parsed.ok()) return Fail(parsed.status());
  if (!parsed->Has("model")) return Fail(InvalidArgument("inspect: --model DIR is required"));
  auto context = parsed->GetOption(limits::kContext, limits::kContext.fallback);
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
  const Model::MemoryEstimate m = (*model)->EstimateMemory(static_cast<int64_t>(*context));
  auto mb = [](uint64_t b) { return static_cast<double>(b) / 1e6; };
  std::printf("memory at a %.0f-token context: %llu bytes (%.1f MB) = weights %.1f MB + kv cache %.1f MB + "
              "activations %.1f MB (prefill chunks of %d)\n",
              *context, static_cast<unsigned long long>(m.total()), mb(m.total()), mb(m.weights), mb(m.kv_cache),
              mb(m.activations), Model::kPrefillChunk);
  if (assistant) std::printf("%s", DescribeDonors(assistant->config(), assistant->donors()).c_str());
  return 0;
}

}  // namespace g4::cli
