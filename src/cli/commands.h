#pragma once

#include <string>
#include <vector>

namespace g4::cli {

// Each returns the process exit code; errors go to stderr.
int RunGenerate(const std::vector<std::string>& args);
int RunInspect(const std::vector<std::string>& args);
int RunBench(const std::vector<std::string>& args);
int RunSynth(const std::vector<std::string>& args);
int RunTokenize(const std::vector<std::string>& args);

}  // namespace g4::cli
