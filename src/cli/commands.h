#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "cli/args.h"
#include "session/engine.h"

namespace g4::cli {

// The factory of the backend --backend names (cpu by default; webgpu in the WebAssembly build),
// with --threads; the engine calls it with the arena its context needs.
Result<BackendFactory> BackendFor(const Args& a);

// What generate and bench tell the engine alike: --model, --assistant and --draft-tokens (which
// goes with --assistant); `command` names the command in errors.
Result<EngineOptions> EngineOptionsFor(const Args& a, const std::string& command);

// Each returns the process exit code; errors go to stderr.
int RunGenerate(const std::vector<std::string>& args);
int RunInspect(const std::vector<std::string>& args);
int RunBench(const std::vector<std::string>& args);
// bench --draft-tokens-sweep A-B: speculative decoding against plain, end to end, for K = A..B.
int RunBenchSweep(const Args& a);
int RunSynth(const std::vector<std::string>& args);
int RunExport(const std::vector<std::string>& args);
int RunAccuracy(const std::vector<std::string>& args);
int RunTokenize(const std::vector<std::string>& args);

}  // namespace g4::cli
