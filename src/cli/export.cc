// gemma4 export: quantized (or bfloat16) artifacts from a checkpoint and its assistant.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "model/model.h"
#include "session/accuracy.h"
#ifndef __wasi__
#include "cli/signals.h"
#include "convert/export.h"
#endif

namespace g4::cli {

int RunExport(const std::vector<std::string>& argv) {
#ifdef __wasi__
  (void)argv;
  return Fail(Unimplemented("export: run the native gemma4 (export writes files too large for the WebAssembly build)"));
#else
  auto parsed = Args::Parse(argv, {"model", "assistant", "quant", "o"}, {});
  if (!parsed.ok()) return Fail(parsed.status());
  const Args& a = *parsed;
  const std::string out = a.Get("o");
  if (!a.Has("model") || !a.Has("quant") || out.empty()) {
    return Fail(InvalidArgument("export: --model DIR, --quant q8|q4|bf16 and -o OUT are required"));
  }
  auto scheme = ParseQuantScheme(a.Get("quant"));
  if (!scheme.ok()) return Fail(scheme.status());
  auto done = [&] {
    StopOnSignals stop;
    return ExportArtifacts(a.Get("model"), a.Get("assistant"), *scheme, out, stop.flag());
  }();
  const int sig = StopOnSignals::Received();
  if (sig && !done.ok()) {
    Fail(InvalidArgument("export: interrupted by signal " + std::to_string(sig) + "; nothing was written to " + out));
    return StopOnSignals::EndBySignal();
  }
  if (!done.ok()) return Fail(done.status());
  for (const ExportedModel& m : *done) {
    std::printf("%s: %llu bytes, %d matrices %s, %d tensors kept, %d of other towers left out\n", m.dir.c_str(),
                static_cast<unsigned long long>(m.bytes), m.quantized,
                *scheme == QuantScheme::kBf16 ? "in bf16" : "quantized", m.kept, m.skipped);
  }
  return sig ? StopOnSignals::EndBySignal() : 0;  // a signal after the export was complete: it stays
#endif
}

// gemma4 accuracy: each scheme exported to a temporary folder and compared with the checkpoint.
int RunAccuracy(const std::vector<std::string>& argv) {
#ifdef __wasi__
  (void)argv;
  return Fail(Unimplemented("accuracy: run the native gemma4 (it exports artifacts)"));
#else
  auto parsed = Args::Parse(argv, {"model", "quant", "prompts", "steps", "seed", "threads"}, {"json"});
  if (!parsed.ok()) return Fail(parsed.status());
  const Args& a = *parsed;
  if (!a.Has("model")) return Fail(InvalidArgument("accuracy: --model DIR is required"));
  auto prompts = a.GetInt("prompts", 8, 1, 1000);
  auto steps = a.GetInt("steps", 16, 1, 4096);
  auto seed = a.GetInt("seed", 1, 0, 1ll << 40);
  auto threads = a.GetInt("threads", 0, 0, 1024);
  for (const Status& s : {prompts.status(), steps.status(), seed.status(), threads.status()}) {
    if (!s.ok()) return Fail(s);
  }
  std::vector<QuantScheme> schemes;
  std::string list = a.Get("quant", "q8,q4");
  for (size_t at = 0; at <= list.size();) {
    const size_t comma = std::min(list.find(',', at), list.size());
    auto s = ParseQuantScheme(list.substr(at, comma - at));
    if (!s.ok()) return Fail(s.status().WithContext("accuracy"));
    if (std::find(schemes.begin(), schemes.end(), *s) != schemes.end()) {
      return Fail(InvalidArgument("accuracy: --quant names " + std::string(QuantSchemeName(*s)) + " twice"));
    }
    schemes.push_back(*s);
    at = comma + 1;
  }
  auto backend = MakeCpuBackend(static_cast<int>(*threads));
  auto reference = Model::Load(a.Get("model"), *backend);
  if (!reference.ok()) return Fail(reference.status());
  const auto ids = SeededPrompts(static_cast<int>(*prompts), (*reference)->config().vocab, static_cast<uint64_t>(*seed));
  std::string tmpl = (std::filesystem::temp_directory_path() / "gemma4-accuracy-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) return Fail(Internal("accuracy: cannot make a temporary folder"));
  nlohmann::json out = nlohmann::json::array();
  int rc = 0;
  for (QuantScheme scheme : schemes) {
    const std::string dir = tmpl + "/" + QuantSchemeName(scheme);
    auto done = ExportArtifacts(a.Get("model"), "", scheme, dir);
    auto model = done.ok() ? Model::Load(dir, *backend) : Result<std::unique_ptr<Model>>(done.status());
    auto r = model.ok() ? CompareModels(**reference, **model, ids, static_cast<int>(*steps))
                        : Result<AccuracyReport>(model.status());
    if (!r.ok()) {
      rc = Fail(r.status());
      break;
    }
    out.push_back({{"quant", QuantSchemeName(scheme)}, {"mean_kl", r->mean_kl}, {"max_kl", r->max_kl},
                   {"greedy_agreement", r->agreement}, {"positions", r->positions},
                   {"artifact_bytes", (*done)[0].bytes}});
    if (!a.Has("json")) {
      std::printf("%-4s  mean KL %.6f nats (max %.6f) over %d positions; greedy tokens equal before the first "
                  "divergence %.1f%%; artifact %llu bytes\n",
                  QuantSchemeName(scheme), r->mean_kl, r->max_kl, r->positions, 100.0 * r->agreement,
                  static_cast<unsigned long long>((*done)[0].bytes));
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(tmpl, ec);
  if (rc == 0 && a.Has("json")) std::printf("%s\n", out.dump().c_str());
  return rc;
#endif
}

}  // namespace g4::cli
