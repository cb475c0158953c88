#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "cli/args.h"

namespace g4::cli {

// The backend --backend names (cpu by default; webgpu in the WebAssembly build), with --threads.
// The WebGPU arena (activations and K/V caches) is sized for the model in --model running a
// context of `positions` in batches of up to `rows`, with room for an assistant.
Result<std::unique_ptr<Backend>> MakeBackend(const Args& a, int64_t positions, int rows);

// Each returns the process exit code; errors go to stderr.
int RunGenerate(const std::vector<std::string>& args);
int RunInspect(const std::vector<std::string>& args);
int RunBench(const std::vector<std::string>& args);
int RunSynth(const std::vector<std::string>& args);
int RunExport(const std::vector<std::string>& args);
int RunAccuracy(const std::vector<std::string>& args);
int RunTokenize(const std::vector<std::string>& args);

}  // namespace g4::cli
