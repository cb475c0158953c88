// libFuzzer target: model.safetensors.index.json parsing. Accepted file names must stay inside
// the checkpoint folder.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "io/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto r = g4::ParseShardIndex(text, "fuzz/model.safetensors.index.json");
  if (!r.ok()) return 0;
  for (const auto& [file, names] : *r) {
    if (file.empty() || file == ".." || file == "." || file.find('/') != std::string::npos) std::abort();
    if (names.empty()) std::abort();
  }
  return 0;
}
