// Helpers shared by the tests: test data paths, golden files, temporary folders, checkpoint rewrites.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/safetensors.h"
#include "session/generator.h"

namespace g4::test {

std::string TestData(const std::string& rel);
// A bundled model's folder: Models("dense") is testdata/models/dense.
inline std::string Models(const std::string& rel) { return TestData("models/" + rel); }
// The golden checkpoint folders: testdata/models/* plus any listed in $G4_EXTRA_GOLDENS
// (colon-separated folders, each holding checkpoint folders made by tools/reference).
std::vector<std::string> GoldenModelDirs();
nlohmann::json ReadJson(const std::string& path);
std::string ReadFile(const std::string& path);
void WriteFile(const std::string& path, const std::string& text);
// The output (stdout and stderr) and exit code of a shell command; code -1 when a signal ended it.
struct CliRun {
  int code;
  std::string out;
};
CliRun Shell(const std::string& command);
// The native CLI run as a user runs it: `gemma4 ARGS`.
CliRun Cli(const std::string& args);
// A fresh empty folder under the system temp folder.
std::string MakeTempDir();
// Copies a checkpoint folder, passing every tensor through `rewrite` (which may change name,
// dtype, shape or bytes, or drop it by returning false). All tensors land in one model.safetensors.
struct TensorData {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};
void CopyCheckpoint(const std::string& from, const std::string& to,
                    const std::function<bool(TensorData&)>& rewrite = {}, std::vector<TensorData> extra = {});
// The drafts of each speculative round that were emitted: its accepted drafts, but in a last
// round whose stop token was one of them, those up to and with it (what the counters count).
std::vector<int> EmittedDrafts(const GenerationResult& r);
// Converts bf16/f16/f32 tensor bytes to another float dtype.
std::vector<uint8_t> ConvertFloat(const std::vector<uint8_t>& bytes, DType from, DType to);

}  // namespace g4::test
