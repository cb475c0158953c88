// gemma4 bench (prefill and decode speed against this machine's memory bandwidth, measured in
// the same run) and gemma4 synth (random checkpoints of a real shape).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/commands.h"
#include "model/assistant.h"
#include "model/model.h"
#include "model/synthetic.h"
#include "session/generator.h"
#include "session/speculative.h"

namespace g4::cli {
namespace {

// Prints a backend's kernel profile (versioned JSON) as time per unit (token or prefill).
Status PrintProfile(Backend& backend, const char* what, double units) {
  G4_ASSIGN_OR_RETURN(std::string text, backend.ProfileJson());
  if (text.empty()) return Status::Ok();
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.contains("ops")) return Internal("bench: the backend's profile is not JSON: " + text);
  if (!j.value("supported", false)) {
    std::printf("kernel profile: the adapter has no timestamp queries\n");
    return Status::Ok();
  }
  const double total = j.value("total_kernel_ms", 0.0);
  std::printf("GPU kernel time per %s (timestamp queries, profile schema %d, a pass per kernel): %.3f ms\n", what,
              j.value("schema_version", 0), total / units);
  std::vector<std::pair<double, std::string>> ops;
  for (const auto& [name, e] : j["ops"].items()) ops.push_back({e.value("ms", 0.0), name});
  std::sort(ops.rbegin(), ops.rend());
  for (const auto& [ms, name] : ops) {
    const nlohmann::json& op = j["ops"][name];
    std::printf("  %-18s %8.3f ms  %6.1f calls  %5.1f%%\n", name.c_str(), ms / units, op.value("calls", 0) / units,
                total > 0 ? 100.0 * ms / total : 0.0);
    // Schema 2: the kernel's dispatch sizes (largest time first), where it has more than one.
    if (!op.contains("by_workgroups") || op["by_workgroups"].size() < 2) continue;
    std::vector<std::tuple<double, std::string, int>> sizes;  // ms, workgroups, calls
    for (const auto& [groups, d] : op["by_workgroups"].items()) sizes.emplace_back(d.value("ms", 0.0), groups, d.value("calls", 0));
    std::sort(sizes.rbegin(), sizes.rend());
    for (const auto& [size_ms, groups, calls] : sizes) {
      std::printf("    %8s workgroups %8.3f ms  %6.1f calls\n", groups.c_str(), size_ms / units, calls / units);
    }
  }
  return Status::Ok();
}

// Dispatches per decoded token and, where the backend can time kernels, GPU time per kernel for
// the prompt's prefill and over `steps` one-token forwards after it (separate passes: timing
// every kernel costs time).
Status ProfileDecode(Model& model, Backend& backend, const std::vector<int32_t>& prompt, int steps) {
  G4_ASSIGN_OR_RETURN(auto cache, model.NewCache(static_cast<int64_t>(prompt.size()) + 2 * steps + 1));
  std::vector<int> ids;
  backend.Profile(true);
  // In chunks, as generation prefills (the arena holds one chunk's activations).
  G4_ASSIGN_OR_RETURN(const std::span<const int32_t> rest, model.PrefillHead(prompt, *cache));
  G4_RETURN_IF_ERROR(model.ForwardArgmax(rest, *cache, 1, &ids));
  backend.Profile(false);
  G4_RETURN_IF_ERROR(PrintProfile(backend, "prefill", 1.0));
  const uint64_t d0 = backend.dispatches();
  backend.Profile(true);
  for (int i = 0; i < steps; ++i) {
    const int32_t tok = ids[0];
    G4_RETURN_IF_ERROR(model.ForwardArgmax(std::span<const int32_t>(&tok, 1), *cache, 1, &ids));
  }
  backend.Profile(false);
  const double per_token = static_cast<double>(backend.dispatches() - d0) / steps;
  if (per_token > 0) std::printf("dispatches per decoded token: %.1f\n", per_token);
  G4_RETURN_IF_ERROR(PrintProfile(backend, "decoded token", steps));
  if (!backend.DownloadsOverlap()) return Status::Ok();
  // Whether the host or the device bounds decoding: steps recorded and handed over back to back,
  // each with its read started (ids on the backend, as generation runs them), against the time
  // until the last read is in.
  G4_ASSIGN_OR_RETURN(auto ids_buf, backend.Allocate(2 * sizeof(float)));
  const float first = static_cast<float>(ids[0]);
  G4_RETURN_IF_ERROR(backend.Upload(*ids_buf, 0, &first, sizeof(first)));
  std::vector<std::unique_ptr<PendingDownload>> reads;
  const int64_t t0 = MonotonicMicros();
  for (int i = 0; i < steps; ++i) {
    const size_t from = i % 2, to = (i + 1) % 2;
    G4_RETURN_IF_ERROR(model.ForwardArgmaxOnDevice(F32{ids_buf.get(), from}, 1, *cache, 1, F32{ids_buf.get(), to}));
    G4_ASSIGN_OR_RETURN(auto read, backend.StartDownload(*ids_buf, to * sizeof(float), sizeof(float)));
    reads.push_back(std::move(read));
  }
  const int64_t t1 = MonotonicMicros();
  float sink = 0.0f;
  for (auto& r : reads) G4_RETURN_IF_ERROR(r->Finish(&sink));
  const int64_t t2 = MonotonicMicros();
  std::printf("%d decode steps recorded back to back: the host records and hands over one in %.3f ms; "
              "the last read is in after %.3f ms per step\n", steps, (t1 - t0) / 1000.0 / steps,
              (t2 - t0) / 1000.0 / steps);
  return Status::Ok();
}

// Times a plain decode step, a draft step, a K+1-token verification and a whole round side by
// side (all on the backend, as generation runs them), and the speedup they imply at several
// acceptance rates.
Status BenchSpeculative(Model& model, const std::string& assistant_dir, Backend& backend,
                        const std::vector<int32_t>& prompt, int k, int reps) {
  G4_ASSIGN_OR_RETURN(std::unique_ptr<Assistant> as, Assistant::Load(assistant_dir, backend, model));
  const int H = model.config().hidden;
  G4_ASSIGN_OR_RETURN(auto cache, model.NewCache(static_cast<int64_t>(prompt.size()) + reps + k + 2, k + 1,
                                                 as->SlidingKeep()));
  G4_ASSIGN_OR_RETURN(auto state_buf, backend.Allocate(H * sizeof(float)));
  G4_ASSIGN_OR_RETURN(auto next_buf, backend.Allocate(H * sizeof(float)));
  const F32 state{state_buf.get(), 0}, next{next_buf.get(), 0};
  std::vector<float> logits;
  G4_ASSIGN_OR_RETURN(const std::span<const int32_t> rest, model.PrefillHead(prompt, *cache));
  G4_RETURN_IF_ERROR(model.Forward(rest, *cache, 1, &logits));
  backend.Copy(state, model.hidden_rows().At((rest.size() - 1) * H), H);
  const int64_t p = cache->length();
  // Every step ends in a read of one id, as in generation (greedy, argmax on the backend).
  G4_ASSIGN_OR_RETURN(auto ids_buf, backend.Allocate(GreedyRoundSlots::Count(k) * sizeof(float)));
  const GreedyRoundSlots slots(F32{ids_buf.get(), 0}, k);
  const F32 ids = slots.tokens;
  float sink[1];
  auto wait = [&]() { return backend.Download(*ids_buf, 0, sink, sizeof(sink)); };
  const float tok = static_cast<float>(prompt.back());
  G4_RETURN_IF_ERROR(backend.Upload(*ids_buf, 0, &tok, sizeof(tok)));
  // Plain step: one token, rolled back each time so every repetition sees the same context.
  auto plain_step = [&]() -> Status {
    G4_RETURN_IF_ERROR(model.ForwardArgmaxOnDevice(ids, 1, *cache, 1, slots.target));
    G4_RETURN_IF_ERROR(wait());
    return cache->Rollback(p);
  };
  G4_RETURN_IF_ERROR(plain_step());  // warm-up
  int64_t t0 = MonotonicMicros();
  for (int r = 0; r < reps; ++r) G4_RETURN_IF_ERROR(plain_step());
  const double plain_us = (MonotonicMicros() - t0) / static_cast<double>(reps);
  t0 = MonotonicMicros();
  for (int r = 0; r < reps; ++r) {
    G4_RETURN_IF_ERROR(as->DraftGreedyOnDevice(ids, state, p, *cache, ids.At(1), next));
    G4_RETURN_IF_ERROR(wait());
  }
  const double draft_us = (MonotonicMicros() - t0) / static_cast<double>(reps);
  t0 = MonotonicMicros();
  for (int r = 0; r < reps; ++r) {
    G4_RETURN_IF_ERROR(model.ForwardArgmaxOnDevice(ids, k + 1, *cache, k + 1, slots.target));
    G4_RETURN_IF_ERROR(wait());
    G4_RETURN_IF_ERROR(cache->Rollback(p));
  }
  const double verify_us = (MonotonicMicros() - t0) / static_cast<double>(reps);
  // A whole round as generation runs it: K drafts, verification and acceptance in one submit.
  t0 = MonotonicMicros();
  for (int r = 0; r < reps; ++r) {
    G4_RETURN_IF_ERROR(RecordGreedyRound(model, *as, *cache, state, next, slots, k));
    G4_RETURN_IF_ERROR(wait());
    G4_RETURN_IF_ERROR(cache->Rollback(p));
  }
  const double round_us = (MonotonicMicros() - t0) / static_cast<double>(reps);
  std::printf("speculative, K=%d (each averaged over %d runs, ending in a read of the ids):\n", k, reps);
  std::printf("  plain decode step: %.2f ms\n", plain_us / 1000.0);
  std::printf("  draft step: %.2f ms = %.3f x a plain step\n", draft_us / 1000.0, draft_us / plain_us);
  std::printf("  %d-token verification: %.2f ms = %.3f x a plain step\n", k + 1, verify_us / 1000.0, verify_us / plain_us);
  std::printf("  round (K drafts + verification + acceptance, one submit): %.2f ms = %.3f x a plain step\n",
              round_us / 1000.0, round_us / plain_us);
  for (double acc : {0.5, 0.7, 0.9}) {
    double tokens = 0.0, pa = 1.0;  // expected tokens per round: sum of acc^i, i = 0..K
    for (int i = 0; i <= k; ++i, pa *= acc) tokens += pa;
    std::printf("  acceptance %.1f: %.2f tokens per round -> %.2fx plain decoding\n", acc, tokens,
                tokens * plain_us / round_us);
  }
  if (backend.DownloadsOverlap()) {
    // Where the host does not bound them: 16 plain steps, then 16 draft steps, verifications and
    // rounds, each kind recorded and handed over back to back (each with its read started, each
    // rolled back to the same context), timed until the last read is in.
    constexpr int kBackToBack = 16;
    auto back_to_back = [&](auto&& record) -> Result<double> {
      std::vector<std::unique_ptr<PendingDownload>> reads;
      const int64_t t = MonotonicMicros();
      for (int r = 0; r < kBackToBack; ++r) {
        G4_RETURN_IF_ERROR(record());
        G4_ASSIGN_OR_RETURN(auto read, backend.StartDownload(*ids_buf, 0, sizeof(float)));
        reads.push_back(std::move(read));
        G4_RETURN_IF_ERROR(cache->Rollback(p));
      }
      for (auto& read : reads) G4_RETURN_IF_ERROR(read->Finish(sink));
      return (MonotonicMicros() - t) / static_cast<double>(kBackToBack);
    };
    G4_ASSIGN_OR_RETURN(const double step_b2b, back_to_back([&] {
      return model.ForwardArgmaxOnDevice(ids, 1, *cache, 1, slots.target);
    }));
    G4_ASSIGN_OR_RETURN(const double draft_b2b, back_to_back([&] {
      return as->DraftGreedyOnDevice(ids, state, p, *cache, ids.At(1), next);
    }));
    G4_ASSIGN_OR_RETURN(const double verify_b2b, back_to_back([&] {
      return model.ForwardArgmaxOnDevice(ids, k + 1, *cache, k + 1, slots.target);
    }));
    G4_ASSIGN_OR_RETURN(const double round_b2b, back_to_back([&] {
      return RecordGreedyRound(model, *as, *cache, state, next, slots, k);
    }));
    std::printf("  %d of each recorded back to back (the GPU's time, not the host's): plain step %.2f ms, "
                "draft step %.2f ms = %.3f x, %d-token verification %.2f ms = %.3f x, round %.2f ms = %.3f x a "
                "plain step\n", kBackToBack, step_b2b / 1000.0, draft_b2b / 1000.0, draft_b2b / step_b2b, k + 1,
                verify_b2b / 1000.0, verify_b2b / step_b2b, round_b2b / 1000.0, round_b2b / step_b2b);
  }
  // Where a round's time goes, kernel by kernel.
  const uint64_t d0 = backend.dispatches();
  backend.Profile(true);
  for (int r = 0; r < 8; ++r) {
    G4_RETURN_IF_ERROR(RecordGreedyRound(model, *as, *cache, state, next, slots, k));
    G4_RETURN_IF_ERROR(wait());
    G4_RETURN_IF_ERROR(cache->Rollback(p));
  }
  backend.Profile(false);
  const double per_round = static_cast<double>(backend.dispatches() - d0) / 8;
  if (per_round > 0) std::printf("dispatches per round: %.1f\n", per_round);
  return PrintProfile(backend, "round", 8);
}

}  // namespace

int RunBench(const std::vector<std::string>& argv) {
  auto parsed = Args::Parse(argv, {"model", "assistant", "draft-tokens", "prompt-tokens", "decode-tokens", "threads",
                                   "bandwidth-mib", "backend", "decode-ahead"},
                            {});
  if (!parsed.ok()) return Fail(parsed.status());
  const Args& a = *parsed;
  if (!a.Has("model")) return Fail(InvalidArgument("bench: --model DIR is required (make one with gemma4 synth)"));
  auto prompt_tokens = a.GetInt("prompt-tokens", 64, 1, 1 << 16);
  auto decode_tokens = a.GetInt("decode-tokens", 16, 2, 1 << 16);
  auto threads = a.GetInt("threads", 0, 0, 1024);
  auto bw_mib = a.GetInt("bandwidth-mib", 2048, 64, 1 << 16);
  auto ahead = a.GetInt("decode-ahead", -1, -1, 16);
  for (const Status* s : {&prompt_tokens.status(), &decode_tokens.status(), &threads.status(), &bw_mib.status(),
                          &ahead.status()}) {
    if (!s->ok()) return Fail(*s);
  }
  auto k = a.GetInt("draft-tokens", 2, 1, kMaxDraftTokens);
  if (!k.ok()) return Fail(k.status());
  auto made = MakeBackend(a, *prompt_tokens + 2 * *decode_tokens + *k + 2, static_cast<int>(*prompt_tokens));
  if (!made.ok()) return Fail(made.status());
  std::unique_ptr<Backend> backend = std::move(made).value();
  int nthreads = 1;
#ifdef _OPENMP
  nthreads = omp_get_max_threads();
#endif
  auto measured = backend->MeasureReadBandwidth(static_cast<uint64_t>(*bw_mib) << 20);
  if (!measured.ok()) return Fail(measured.status());
  const double bandwidth = *measured;
  if (backend->Name() == "cpu") {
    std::printf("backend cpu; host memory read bandwidth: %.2f GB/s (%d threads, %lld MiB buffer)\n", bandwidth,
                nthreads, *bw_mib);
  } else {
    std::printf("backend %s; device read bandwidth (a kernel streaming %lld MiB): %.1f GB/s\n", backend->Name().c_str(),
                *bw_mib, bandwidth);
  }

  const int64_t t_load = MonotonicMicros();
  auto model = Model::Load(a.Get("model"), *backend);
  if (!model.ok()) return Fail(model.status());
  std::printf("load: %.1f ms\n", (MonotonicMicros() - t_load) / 1000.0);
  const ModelConfig& c = (*model)->config();
  // A prompt of ordinary token ids, the same every run.
  std::vector<int32_t> prompt(*prompt_tokens);
  for (size_t i = 0; i < prompt.size(); ++i) {
    prompt[i] = i == 0 ? c.bos_id : static_cast<int32_t>(3 + (i * 7919) % (c.vocab - 3));
  }

  GenerateOptions opt;
  opt.max_new_tokens = static_cast<int>(*decode_tokens);
  opt.stop_ids = {-1};  // run the whole budget
  opt.decode_ahead = static_cast<int>(*ahead);
  // A first run of the same shapes compiles every kernel (WebGPU) before anything is timed.
  GenerateOptions warm_opt;
  warm_opt.max_new_tokens = 2;
  warm_opt.stop_ids = {-1};
  auto warm = Generate(**model, prompt, warm_opt);
  if (!warm.ok()) return Fail(warm.status());
  auto r = Generate(**model, prompt, opt);
  if (!r.ok()) return Fail(r.status());
  const GenerationStats& st = r->stats;
  const double per_token_gb = (*model)->WeightBytesPerToken() / 1e9;
  const double decode_tps = st.decode_tokens_per_s();
  std::printf("prefill: %d tokens in %.1f ms = %.2f tokens/s\n", st.prompt_tokens, st.prefill_us / 1000.0,
              st.prefill_tokens_per_s());
  std::printf("decode: %d tokens in %.1f ms = %.3f tokens/s\n", st.generated_tokens - 1, st.decode_us / 1000.0,
              decode_tps);
  std::printf("weights streamed per decoded token: %.3f GB -> %.2f GB/s = %.1f%% of measured bandwidth\n",
              per_token_gb, per_token_gb * decode_tps, bandwidth > 0 ? 100.0 * per_token_gb * decode_tps / bandwidth : 0.0);
  if (backend->DownloadsOverlap() && opt.decode_ahead != 0) {
    // Side by side: each step's token read back before the next step is recorded.
    GenerateOptions one = opt;
    one.decode_ahead = 0;
    auto r1 = Generate(**model, prompt, one);
    if (!r1.ok()) return Fail(r1.status());
    if (r1->tokens != r->tokens) return Fail(Internal("bench: decoding one step at a time gave other tokens"));
    const double one_tps = r1->stats.decode_tokens_per_s();
    std::printf("decode, one step at a time (each token read before the next step is recorded): %.3f tokens/s; "
                "recording %d step(s) ahead: %.2fx\n", one_tps, opt.decode_ahead > 0 ? opt.decode_ahead : kDecodeAhead,
                one_tps > 0 ? decode_tps / one_tps : 0.0);
  }
  {
    Status s = ProfileDecode(**model, *backend, prompt, static_cast<int>(std::min<int64_t>(*decode_tokens, 16)));
    if (!s.ok()) return Fail(s);
  }
  if (a.Has("assistant")) {
    Status s = BenchSpeculative(**model, a.Get("assistant"), *backend, prompt, static_cast<int>(*k),
                                static_cast<int>(*decode_tokens));
    if (!s.ok()) return Fail(s);
  }
  return 0;
}

int RunSynth(const std::vector<std::string>& argv) {
  auto parsed = Args::Parse(argv, {"shape", "out", "layers", "seed"}, {});
  if (!parsed.ok()) return Fail(parsed.status());
  const Args& a = *parsed;
  if (!a.Has("out")) return Fail(InvalidArgument("synth: --out DIR is required"));
  auto layers = a.GetInt("layers", 0, 0, 1000);
  auto seed = a.GetInt("seed", 1, 0, 1ll << 62);
  if (!layers.ok()) return Fail(layers.status());
  if (!seed.ok()) return Fail(seed.status());
  const int64_t t0 = MonotonicMicros();
  Status s = WriteSyntheticCheckpoint(a.Get("out"), a.Get("shape", "e2b"), static_cast<int>(*layers),
                                      static_cast<uint64_t>(*seed));
  if (!s.ok()) return Fail(s);
  std::printf("wrote %s in %.1f s\n", a.Get("out").c_str(), (MonotonicMicros() - t0) / 1e6);
  return 0;
}

}  // namespace g4::cli
