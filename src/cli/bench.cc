// gemma4 bench (prefill and decode speed against this machine's memory bandwidth, measured in
// the same run) and gemma4 synth (random checkpoints of a real shape).
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <functional>
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
#include "session/engine.h"
#include "session/speculative.h"
#ifndef __wasi__
#include "cli/signals.h"
#endif

namespace g4::cli {
namespace {

// Splits the host's time for one run of `what` (recorded and handed over back to back, `ms`)
// into handing the command lists over (`handing_ms`: Backend::HostHandOverMs, the bridge copying,
// encoding and submitting them) and the module's own recording, each also per dispatch. Nothing
// where the backend does not tell them apart.
void PrintHostSplit(const char* indent, const char* what, double ms, double handing_ms, double dispatches) {
  if (handing_ms <= 0 || dispatches <= 0) return;
  const double recording_ms = ms - handing_ms;
  std::printf("%shost, %s: %.3f ms = recording %.3f ms (%.2f us a dispatch) + handing over %.3f ms (%.2f us a "
              "dispatch)\n", indent, what, ms, recording_ms, 1000.0 * recording_ms / dispatches, handing_ms,
              1000.0 * handing_ms / dispatches);
}

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

// The GPU's time for `reps` runs of `record` (each ending in a read) as they run, from the passes'
// timestamps (Backend::ProfileMode::kPasses): ms and dispatches a run, zeros where the backend
// cannot time passes.
struct GpuTime {
  double ms = 0.0;
  double dispatches = 0.0;
};
Result<GpuTime> GpuTimePerRun(Backend& backend, int reps, const std::function<Status()>& record) {
  backend.Profile(Backend::ProfileMode::kPasses);
  Status s = Status::Ok();
  for (int r = 0; r < reps && s.ok(); ++r) s = record();
  backend.Profile(Backend::ProfileMode::kOff);
  G4_RETURN_IF_ERROR(s);
  G4_ASSIGN_OR_RETURN(std::string text, backend.ProfileJson());
  if (text.empty()) return GpuTime{};
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.contains("passes")) return Internal("bench: the backend's profile has no passes: " + text);
  return GpuTime{j["passes"].value("ms", 0.0) / reps, j["passes"].value("dispatches", 0.0) / reps};
}

// The GPU's time a dispatch when each does next to nothing but depends on the one before (an
// in-place scale, 256 in a row): with 1 workgroup of 64 threads, and with 196,608 threads (as many
// as a product of 768 workgroups of 256), in us; 0 where the backend cannot time passes.
Result<std::pair<double, double>> DispatchFloor(Backend& backend) {
  constexpr int kDispatches = 256;
  constexpr size_t kWide = 196608;
  G4_ASSIGN_OR_RETURN(auto buf, backend.Allocate(kWide * sizeof(float)));
  G4_RETURN_IF_ERROR(backend.Upload(*buf, 0, std::vector<float>(kWide, 1.0f).data(), kWide * sizeof(float)));
  float sink = 0.0f;
  double us[2] = {0.0, 0.0};
  for (int wide = 0; wide < 2; ++wide) {
    auto record = [&]() -> Status {
      for (int i = 0; i < kDispatches; ++i) backend.Scale(F32{buf.get(), 0}, wide ? kWide : 64, 1.0f);
      return backend.Download(*buf, 0, &sink, sizeof(sink));
    };
    G4_RETURN_IF_ERROR(record());  // compiles
    G4_ASSIGN_OR_RETURN(const GpuTime t, GpuTimePerRun(backend, 4, record));
    us[wide] = 1000.0 * t.ms / kDispatches;
  }
  return std::make_pair(us[0], us[1]);
}

// Dispatches per decoded token and, where the backend can time kernels, GPU time per kernel for
// the prompt's prefill and over `steps` one-token forwards after it (separate passes: timing
// every kernel costs time).
Status ProfileDecode(Model& model, Backend& backend, const std::vector<int32_t>& prompt, int steps) {
  G4_ASSIGN_OR_RETURN(auto cache, model.NewCache(static_cast<int64_t>(prompt.size()) + 2 * steps + 1));
  std::vector<int> ids;
  backend.Profile(Backend::ProfileMode::kKernels);
  // In chunks, as generation prefills (the arena holds one chunk's activations).
  G4_ASSIGN_OR_RETURN(const std::span<const int32_t> rest, model.PrefillHead(prompt, *cache));
  G4_RETURN_IF_ERROR(model.ForwardArgmax(rest, *cache, 1, &ids));
  backend.Profile(Backend::ProfileMode::kOff);
  G4_RETURN_IF_ERROR(PrintProfile(backend, "prefill", 1.0));
  const uint64_t d0 = backend.dispatches();
  backend.Profile(Backend::ProfileMode::kKernels);
  for (int i = 0; i < steps; ++i) {
    const int32_t tok = ids[0];
    G4_RETURN_IF_ERROR(model.ForwardArgmax(std::span<const int32_t>(&tok, 1), *cache, 1, &ids));
  }
  backend.Profile(Backend::ProfileMode::kOff);
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
  const double h0 = backend.HostHandOverMs();
  const uint64_t d0_steps = backend.dispatches();
  const int64_t t0 = MonotonicMicros();
  for (int i = 0; i < steps; ++i) {
    const size_t from = i % 2, to = (i + 1) % 2;
    G4_RETURN_IF_ERROR(model.ForwardArgmaxOnDevice(F32{ids_buf.get(), from}, 1, *cache, 1, F32{ids_buf.get(), to}));
    G4_ASSIGN_OR_RETURN(auto read, backend.StartDownload(*ids_buf, to * sizeof(float), sizeof(float)));
    reads.push_back(std::move(read));
  }
  const int64_t t1 = MonotonicMicros();
  const double handing = (backend.HostHandOverMs() - h0) / steps;
  const double step_dispatches = static_cast<double>(backend.dispatches() - d0_steps) / steps;
  float sink = 0.0f;
  for (auto& r : reads) G4_RETURN_IF_ERROR(r->Finish(&sink));
  const int64_t t2 = MonotonicMicros();
  std::printf("%d decode steps recorded back to back: the host records and hands over one in %.3f ms; "
              "the last read is in after %.3f ms per step\n", steps, (t1 - t0) / 1000.0 / steps,
              (t2 - t0) / 1000.0 / steps);
  PrintHostSplit("  ", "a step", (t1 - t0) / 1000.0 / steps, handing, step_dispatches);
  return Status::Ok();
}

// Times a plain decode step, a draft step, a K+1-token verification and a whole round side by
// side (all on the backend, as generation runs them), and the speedup they imply at several
// acceptance rates.
Status BenchSpeculative(Model& model, Assistant* as, Backend& backend, const std::vector<int32_t>& prompt, int k,
                        int reps, double floor_us, const std::vector<std::vector<std::string>>& left_out) {
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
  const float tok = static_cast<float>(prompt.back());
  G4_RETURN_IF_ERROR(backend.Upload(*ids_buf, 0, &tok, sizeof(tok)));
  // The four kinds of work, each recorded (not waited for); each is rolled back after it, so every
  // repetition sees the same context (draft steps write no cache). A round as generation runs
  // it: K drafts, verification and acceptance in one submit.
  struct Kind {
    const char* name;
    std::function<Status()> record;
  };
  char verification[32];
  std::snprintf(verification, sizeof(verification), "%d-token verification", k + 1);
  const Kind kinds[] = {
      {"plain decode step", [&] { return model.ForwardArgmaxOnDevice(ids, 1, *cache, 1, slots.target); }},
      {"draft step", [&] { return as->DraftGreedyOnDevice(ids, state, p, *cache, ids.At(1), next); }},
      {verification, [&] { return model.ForwardArgmaxOnDevice(ids, k + 1, *cache, k + 1, slots.target); }},
      {"round", [&] { return RecordGreedyRound(model, *as, *cache, state, next, slots, k); }},
  };
  // Records a kind, reads its ids back and rolls the cache back. Where `split` is given, adds to
  // it the two parts of the time: the host's (recording, and handing the lists over up to the
  // one that goes with the read) and the wait after it (the GPU's work the host has not waited
  // for yet, and the read's way back).
  struct Split {
    int64_t host_us = 0, wait_us = 0;
  };
  auto run = [&](const Kind& kind, Split* split = nullptr) -> Status {
    const int64_t t0 = MonotonicMicros();
    G4_RETURN_IF_ERROR(kind.record());
    G4_ASSIGN_OR_RETURN(auto read, backend.StartDownload(*ids_buf, 0, sizeof(sink)));
    const int64_t t1 = MonotonicMicros();
    G4_RETURN_IF_ERROR(read->Finish(sink));
    if (split) {
      split->host_us += t1 - t0;
      split->wait_us += MonotonicMicros() - t1;
    }
    return cache->Rollback(p);
  };
  double us[4];  // each kind's time, read at once
  Split split[4];
  for (int i = 0; i < 4; ++i) {
    G4_RETURN_IF_ERROR(run(kinds[i]));  // compiles its kernels
    const int64_t t0 = MonotonicMicros();
    for (int r = 0; r < reps; ++r) G4_RETURN_IF_ERROR(run(kinds[i], &split[i]));
    us[i] = (MonotonicMicros() - t0) / static_cast<double>(reps);
  }
  const double plain_us = us[0], round_us = us[3];
  std::printf("speculative, K=%d (each averaged over %d runs, ending in a read of the ids):\n", k, reps);
  std::printf("  plain decode step: %.2f ms\n", plain_us / 1000.0);
  for (int i = 1; i < 4; ++i) {
    std::printf("  %s%s: %.2f ms = %.3f x a plain step\n", kinds[i].name,
                i == 3 ? " (K drafts + verification + acceptance, one submit)" : "", us[i] / 1000.0, us[i] / plain_us);
  }
  if (backend.DownloadsOverlap()) {  // else the work is done as it is recorded: no wait
    std::printf("  of which the host's recording and hand-over, then the wait for the GPU and the read:\n   ");
    for (int i = 0; i < 4; ++i) {
      std::printf(" %s %.2f + %.2f ms%s", kinds[i].name, split[i].host_us / 1000.0 / reps,
                  split[i].wait_us / 1000.0 / reps, i < 3 ? "," : "\n");
    }
  }
  for (double acc : {0.5, 0.7, 0.9}) {
    double tokens = 0.0, pa = 1.0;  // expected tokens per round: sum of acc^i, i = 0..K
    for (int i = 0; i <= k; ++i, pa *= acc) tokens += pa;
    std::printf("  acceptance %.1f: %.2f tokens per round -> %.2fx plain decoding\n", acc, tokens,
                tokens * plain_us / round_us);
  }
  if (backend.DownloadsOverlap()) {
    // Where the host does not bound them: 16 of each kind recorded and handed over back to back
    // (each with its read started), timed until the last read is in.
    constexpr int kBackToBack = 16;
    double b2b[4], host_ms[4], handing_ms[4], dispatches[4];
    for (int i = 0; i < 4; ++i) {
      std::vector<std::unique_ptr<PendingDownload>> reads;
      const double h = backend.HostHandOverMs();
      const uint64_t d = backend.dispatches();
      const int64_t t = MonotonicMicros();
      for (int r = 0; r < kBackToBack; ++r) {
        G4_RETURN_IF_ERROR(kinds[i].record());
        G4_ASSIGN_OR_RETURN(auto read, backend.StartDownload(*ids_buf, 0, sizeof(float)));
        reads.push_back(std::move(read));
        G4_RETURN_IF_ERROR(cache->Rollback(p));
      }
      host_ms[i] = (MonotonicMicros() - t) / 1000.0 / kBackToBack;
      handing_ms[i] = (backend.HostHandOverMs() - h) / kBackToBack;
      dispatches[i] = static_cast<double>(backend.dispatches() - d) / kBackToBack;
      for (auto& read : reads) G4_RETURN_IF_ERROR(read->Finish(sink));
      b2b[i] = (MonotonicMicros() - t) / static_cast<double>(kBackToBack);
    }
    std::printf("  %d of each recorded back to back (the GPU's time where the host records faster than it runs):\n   ",
                kBackToBack);
    for (int i = 0; i < 4; ++i) std::printf(" %s %.2f ms = %.3f x%s", kinds[i].name, b2b[i] / 1000.0, b2b[i] / b2b[0],
                                            i < 3 ? "," : "\n");
    for (int i = 0; i < 4; ++i) PrintHostSplit("    ", kinds[i].name, host_ms[i], handing_ms[i], dispatches[i]);
  }
  // The GPU's own time for each, from timestamps around the work as it runs (where the backend
  // has them): no host in it; and what the dispatch floor measured at the start comes to.
  // Each kind's GPU time as it runs, `reps` of each.
  auto time_kinds = [&](GpuTime (&t)[4]) -> Status {
    for (int i = 0; i < 4; ++i) {
      G4_ASSIGN_OR_RETURN(t[i], GpuTimePerRun(backend, reps, [&] { return run(kinds[i]); }));
    }
    return Status::Ok();
  };
  GpuTime gpu[4];
  G4_RETURN_IF_ERROR(time_kinds(gpu));
  if (gpu[0].ms > 0) {
    std::printf("  GPU time (timestamps around each submit's pass, %d of each):\n", reps);
    for (int i = 0; i < 4; ++i) {
      std::printf("    %-22s %7.3f ms = %.3f x a plain step; %6.1f dispatches", kinds[i].name, gpu[i].ms,
                  gpu[i].ms / gpu[0].ms, gpu[i].dispatches);
      if (floor_us > 0) std::printf(", at the floor (%.2f us each) %.3f ms", floor_us, floor_us * gpu[i].dispatches / 1000.0);
      std::printf("\n");
    }
  }
  // What kernels cost where they run: the same work timed without them (--leave-out).
  if (!left_out.empty() && gpu[0].ms <= 0) {
    std::printf("  GPU time without kernels: the backend has no GPU timestamps\n");
  } else if (!left_out.empty()) {
    // Each set's time against the whole work's, timed before and again after the sets: the two
    // whole figures show the noise a saving must exceed.
    std::printf("  GPU time without kernels (their outputs wrong; what leaving them out saves is their cost in the "
                "stream):\n");
    struct Restore {
      Backend& be;
      ~Restore() { be.LeaveOut({}); }
    } restore{backend};
    for (const std::vector<std::string>& set : left_out) {
      backend.LeaveOut(set);
      std::string names;
      for (const std::string& n : set) names += (names.empty() ? "" : ",") + n;
      GpuTime t[4];
      G4_RETURN_IF_ERROR(time_kinds(t));
      if (t[0].dispatches == gpu[0].dispatches && t[3].dispatches == gpu[3].dispatches) {
        std::printf("    without %s: no kernel's name starts with these (names as the kernel profiles print them)\n",
                    names.c_str());
        continue;
      }
      std::printf("    without %s:", names.c_str());
      for (int i = 0; i < 4; ++i) {
        std::printf(" %s %.3f ms (saves %.3f, %.1f dispatches)%s", kinds[i].name, t[i].ms, gpu[i].ms - t[i].ms,
                    t[i].dispatches, i < 3 ? ";" : "\n");
      }
    }
    backend.LeaveOut({});
    GpuTime t[4];
    G4_RETURN_IF_ERROR(time_kinds(t));
    std::printf("    all of it again:");
    for (int i = 0; i < 4; ++i) {
      std::printf(" %s %.3f ms (%.1f dispatches)%s", kinds[i].name, t[i].ms, t[i].dispatches, i < 3 ? ";" : "\n");
    }
  }
  // Where a round's time goes, kernel by kernel.
  const uint64_t d0 = backend.dispatches();
  backend.Profile(Backend::ProfileMode::kKernels);
  for (int r = 0; r < 8; ++r) G4_RETURN_IF_ERROR(run(kinds[3]));
  backend.Profile(Backend::ProfileMode::kOff);
  const double per_round = static_cast<double>(backend.dispatches() - d0) / 8;
  if (per_round > 0) std::printf("dispatches per round: %.1f\n", per_round);
  return PrintProfile(backend, "round", 8);
}

// --leave-out SET[/SET...]: sets of kernel name prefixes (SET: NAME[,NAME...]) whose dispatches
// BenchSpeculative leaves out, one set at a time, to time the rest.
Result<std::vector<std::vector<std::string>>> LeftOutSets(const Args& a) {
  std::vector<std::vector<std::string>> sets;
  if (!a.Has("leave-out")) return sets;
  if (!a.Has("assistant")) {
    return InvalidArgument("--leave-out: the step and the round it times without the kernels need --assistant");
  }
  constexpr size_t kMaxSets = 8;
  for (const std::string& text : SplitAt(a.Get("leave-out"), '/')) {
    std::vector<std::string> set = SplitAt(text, ',');
    for (const std::string& name : set) {
      const bool ok = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
      });
      if (!ok) {
        return InvalidArgument("--leave-out: '" + name + "' is not a kernel name (letters, digits, '_' and '.'; the "
                               "names of a set split by ',', sets by '/')");
      }
    }
    sets.push_back(std::move(set));
    if (sets.size() > kMaxSets) return InvalidArgument("--leave-out: more than 8 sets");
  }
  return sets;
}

// Decoding with the assistant, each draft policy, against plain decoding's tokens/s, and how many
// rounds drafted how many.
Status BenchDecodeWithAssistant(Engine& engine, const EngineRequest& plain, double plain_tps) {
  // Rounds of every size the adaptive policy may choose compile their kernels (WebGPU) before
  // anything is timed: near its budget a request's round drafts only what still fits, so budgets
  // of 2 to K + 2 tokens make rounds of 0 to K drafts.
  for (int budget = 2; budget <= engine.draft_tokens() + 2; ++budget) {
    EngineRequest warm = plain;
    warm.speculative = true;
    warm.draft_policy = DraftPolicyKind::kFixed;
    warm.max_tokens = budget;
    G4_RETURN_IF_ERROR(engine.Generate(warm).status());
  }
  std::vector<int> tokens;
  for (DraftPolicyKind policy : {DraftPolicyKind::kFixed, DraftPolicyKind::kAdaptive}) {
    EngineRequest request = plain;
    request.speculative = true;
    request.draft_policy = policy;
    G4_ASSIGN_OR_RETURN(EngineAnswer answer, engine.Generate(request));
    const GenerationResult& r = answer.result;
    if (!tokens.empty() && r.tokens != tokens) {
      // The rows of a verification are summed in another order than a plain step's, so a near tie
      // between two logits (common with random weights) may fall the other way: reported, not an
      // error. The tests hold greedy output equal on the reference models.
      size_t at = 0;
      while (at < r.tokens.size() && at < tokens.size() && r.tokens[at] == tokens[at]) ++at;
      std::printf("note: the draft policies' tokens part at generated token %zu (a near tie of two logits)\n", at);
    }
    tokens = r.tokens;
    const GenerationStats& st = r.stats;
    std::printf("decode with the assistant, %s policy (K=%d at most): %.3f tokens/s = %.2fx plain; %d rounds, "
                "acceptance %.2f; rounds by drafts:", DraftPolicyName(policy), engine.draft_tokens(),
                st.decode_tokens_per_s(), plain_tps > 0 ? st.decode_tokens_per_s() / plain_tps : 0.0, st.rounds,
                st.acceptance_rate());
    for (size_t d = 0; d < st.rounds_per_k.size(); ++d) std::printf(" K=%zu: %d", d, st.rounds_per_k[d]);
    std::printf("\n");
    if (st.rounds_ahead == 0 || policy != DraftPolicyKind::kFixed) continue;
    // Side by side, alternated three times each: each round recorded before the read of the one
    // before, and recorded only after the read before it (round_ahead 1 and 0).
    struct Way {
      const char* name;
      int round_ahead;
      std::vector<double> tps;
      GenerationStats first;
    };
    std::vector<Way> ways = {{"recorded before the read of the one before", 1, {}, {}},
                             {"recorded after the read before it", 0, {}, {}}};
    for (int i = 0; i < 3; ++i) {
      for (Way& w : ways) {
        EngineRequest one = request;
        one.round_ahead = w.round_ahead;
        G4_ASSIGN_OR_RETURN(EngineAnswer a, engine.Generate(one));
        if (a.result.tokens != r.tokens) return Internal(std::string("bench: rounds ") + w.name + " gave other tokens");
        if (i == 0) w.first = a.result.stats;
        w.tps.push_back(a.result.stats.decode_tokens_per_s());
      }
    }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    std::printf("  alternated, tokens/s (median of 3):\n");
    const double base = median(ways.back().tps);
    for (const Way& w : ways) {
      std::string list;
      for (double x : w.tps) list += (list.empty() ? "" : ", ") + std::to_string(static_cast<int>(std::lround(x)));
      std::printf("    rounds %s: %s; %.1f = %.2fx the last (rounds ahead %d)\n", w.name, list.c_str(),
                  median(w.tps), base > 0 ? median(w.tps) / base : 0.0, w.first.rounds_ahead);
    }
  }
  return Status::Ok();
}

}  // namespace

int RunBench(const std::vector<std::string>& argv) {
  auto parsed = Args::Parse(argv, {"model", "assistant", "draft-tokens", "prompt-tokens", "decode-tokens", "threads",
                                   "bandwidth-mib", "backend", "decode-ahead", "draft-tokens-sweep", "prompts", "tokenizer",
                                   "gpu-fill", "leave-out"},
                            {"json"});
  if (!parsed.ok()) return Fail(parsed.status());
  const Args& a = *parsed;
  if (!a.Has("model")) return Fail(InvalidArgument("bench: --model DIR is required (make one with gemma4 synth)"));
  for (const char* flag : {"draft-tokens-sweep", "prompts", "tokenizer", "json"}) {
    if (a.Has(flag)) return RunBenchSweep(a);  // the end-to-end sweep (bench_sweep.cc)
  }
  auto options = EngineOptionsFor(a, "bench");
  if (!options.ok()) return Fail(options.status());
  auto prompt_tokens = a.GetInt("prompt-tokens", 64, 1, 1 << 16);
  auto decode_tokens = a.GetInt("decode-tokens", 16, 2, 1 << 16);
  auto bw_mib = a.GetInt("bandwidth-mib", 2048, 64, 1 << 16);
  auto ahead = a.GetOption(limits::kDecodeAhead);  // absent: the backend's default
  for (const Status* s : {&prompt_tokens.status(), &decode_tokens.status(), &bw_mib.status(), &ahead.status()}) {
    if (!s->ok()) return Fail(*s);
  }
  auto left_out = LeftOutSets(a);
  if (!left_out.ok()) return Fail(left_out.status());
  auto backend_for = BackendFor(a);
  if (!backend_for.ok()) return Fail(backend_for.status());
  options->tokenizer_use = EngineOptions::TokenizerUse::kNone;
  auto opened = Engine::Open(*options);
  if (!opened.ok()) return Fail(opened.status());
  Engine& engine = **opened;
  // Room for the prompt and two decodes of it (plain and side by side); prefill in one batch.
  Status reserved = engine.Reserve(*prompt_tokens + 2 * *decode_tokens, *backend_for, static_cast<int>(*prompt_tokens));
  if (!reserved.ok()) return Fail(reserved);
  Backend* backend = engine.backend();
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
    std::printf("backend %s; device read bandwidth (a kernel streaming %lld MiB): %.1f GB/s\n", backend->Describe().c_str(),
                *bw_mib, bandwidth);
  }
  auto floor = DispatchFloor(*backend);
  if (!floor.ok()) return Fail(floor.status());
  if (floor->first > 0) {
    std::printf("dispatch floor (256 dependent in-place scales, timestamps around the pass): %.2f us a dispatch of "
                "1 workgroup, %.2f us of 196,608 threads\n", floor->first, floor->second);
  }

  Status loaded = engine.Load();
  if (!loaded.ok()) return Fail(loaded);
  std::printf("load: %.1f ms\n", engine.target_load_us() / 1000.0);
  Model& model = *engine.model();
  const ModelConfig& c = model.config();
  // A prompt of ordinary token ids, the same every run.
  std::vector<int32_t> prompt(*prompt_tokens);
  for (size_t i = 0; i < prompt.size(); ++i) {
    prompt[i] = i == 0 ? c.bos_id : static_cast<int32_t>(3 + (i * 7919) % (c.vocab - 3));
  }

  // Greedy plain decoding of the whole budget.
  EngineRequest request;
  request.prompt = prompt;
  request.max_tokens = *decode_tokens;
  request.temperature = 0.0;
  request.speculative = false;
  request.stop_ids = {-1};  // run the whole budget
  request.decode_ahead = *ahead ? static_cast<int>(**ahead) : -1;
  // The whole request once untimed: it compiles every kernel (WebGPU) before anything is timed,
  // and then keeps the GPU busy, since a GPU left idle while the kernels compiled runs at a low
  // clock until it has been busy a while; the timed run should see the clock a steady workload
  // gets (on the CPU backend it is only one more run).
  auto warm = engine.Generate(request);
  if (!warm.ok()) return Fail(warm.status());
  auto r = engine.Generate(request);
  if (!r.ok()) return Fail(r.status());
  const GenerationStats& st = r->result.stats;
  const double per_token_gb = model.WeightBytesPerToken() / 1e9;
  const double decode_tps = st.decode_tokens_per_s();
  std::printf("prefill: %d tokens in %.1f ms = %.2f tokens/s\n", st.prompt_tokens, st.prefill_us / 1000.0,
              st.prefill_tokens_per_s());
  std::printf("decode: %d tokens in %.1f ms = %.3f tokens/s\n", st.generated_tokens - 1, st.decode_us / 1000.0,
              decode_tps);
  std::printf("weights streamed per decoded token: %.3f GB -> %.2f GB/s = %.1f%% of measured bandwidth\n",
              per_token_gb, per_token_gb * decode_tps, bandwidth > 0 ? 100.0 * per_token_gb * decode_tps / bandwidth : 0.0);
  if (backend->DownloadsOverlap() && request.decode_ahead != 0) {
    // Side by side: each step's token read back before the next step is recorded.
    EngineRequest one = request;
    one.decode_ahead = 0;
    auto r1 = engine.Generate(one);
    if (!r1.ok()) return Fail(r1.status());
    if (r1->result.tokens != r->result.tokens) return Fail(Internal("bench: decoding one step at a time gave other tokens"));
    const double one_tps = r1->result.stats.decode_tokens_per_s();
    std::printf("decode, one step at a time (each token read before the next step is recorded): %.3f tokens/s; "
                "recording %d step(s) ahead: %.2fx\n", one_tps, request.decode_ahead > 0 ? request.decode_ahead : kDecodeAhead,
                one_tps > 0 ? decode_tps / one_tps : 0.0);
  }
  {
    Status s = ProfileDecode(model, *backend, prompt, static_cast<int>(std::min<int64_t>(*decode_tokens, 16)));
    if (!s.ok()) return Fail(s);
  }
  if (engine.assistant()) {
    Status s = BenchSpeculative(model, engine.assistant(), *backend, prompt, engine.draft_tokens(),
                                static_cast<int>(*decode_tokens), floor->first, *left_out);
    if (!s.ok()) return Fail(s);
    s = BenchDecodeWithAssistant(engine, request, decode_tps);
    if (!s.ok()) return Fail(s);
  }
  return 0;
}

int RunSynth(const std::vector<std::string>& argv) {
  auto parsed = Args::Parse(argv, {"shape", "out", "layers", "seed"}, {});
  if (!parsed.ok()) return Fail(parsed.status());
  const Args& a = *parsed;
  if (!a.Has("out")) return Fail(InvalidArgument("synth: --out DIR is required"));
  auto layers = a.GetInt("layers", 0, 1, 1000);  // absent: the shape's real depth
  auto seed = a.GetInt("seed", 1, 0, 1ll << 62);
  if (!layers.ok()) return Fail(layers.status());
  if (!seed.ok()) return Fail(seed.status());
  const int64_t t0 = MonotonicMicros();
  const auto write = [&](const std::atomic<bool>* cancel) {
    return WriteSyntheticCheckpoint(a.Get("out"), a.Get("shape", "e2b"),
                                    a.Has("layers") ? std::optional<int>(*layers) : std::nullopt,
                                    static_cast<uint64_t>(*seed), cancel);
  };
#ifdef __wasi__
  Status s = write(nullptr);
#else
  Status s = [&] {
    StopOnSignals stop;
    return write(stop.flag());
  }();
  if (const int sig = StopOnSignals::Received(); sig && !s.ok()) {
    Fail(InvalidArgument("synth: interrupted by signal " + std::to_string(sig) + "; nothing was written to " + a.Get("out")));
    return StopOnSignals::EndBySignal();
  }
#endif
  if (!s.ok()) return Fail(s);
  std::printf("wrote %s in %.1f s\n", a.Get("out").c_str(), (MonotonicMicros() - t0) / 1e6);
#ifndef __wasi__
  if (StopOnSignals::Received()) return StopOnSignals::EndBySignal();  // after the write: it stays
#endif
  return 0;
}

}  // namespace g4::cli
