// gemma4 export: a checkpoint (and its assistant) rewritten as artifacts for the runtime, with
// every large matrix quantized (q8, q4) or in bfloat16. One safetensors file per model, readable
// by any safetensors reader: a quantized matrix NAME is stored as its values (I8, or U8 holding
// two int4) and NAME_scale (F16, one per group of 32 along a row); see base/quant.h. The file's
// metadata records the scheme, the source config and the sha256 of every source file. Export
// streams tensor by tensor, writes the same bytes for the same input, and leaves no partial file.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace g4 {

enum class QuantScheme { kBf16, kQ8, kQ4 };
Result<QuantScheme> ParseQuantScheme(const std::string& s);  // "bf16", "q8", "q4"
const char* QuantSchemeName(QuantScheme s);

struct ExportedModel {
  std::string dir;                  // the artifact folder
  uint64_t bytes = 0;               // of its safetensors file
  int quantized = 0;                // matrices quantized (or cast, with bf16)
  int kept = 0;                     // tensors kept as stored (vectors, ids, rows not in groups of 32)
  int skipped = 0;                  // other towers (vision, audio), left out
};

// Writes the folder `out_dir` (the target: model.safetensors, config.json, generation config and
// tokenizer files) and, with an assistant, `out_dir`/assistant. `out_dir` must not exist. The
// sources are first checked as loading checks them (Model::Check, Assistant::Check against the
// target, tokenizer.json when there is one); every float weight must be finite. The files are
// written into a folder of this process's own beside `out_dir` and renamed into place only when
// complete, by a rename that does not replace: on any error, or when `cancel` becomes true (a
// signal handler may set it), that folder is removed and nothing is left at `out_dir`.
Result<std::vector<ExportedModel>> ExportArtifacts(const std::string& model_dir, const std::string& assistant_dir,
                                                   QuantScheme scheme, const std::string& out_dir,
                                                   const std::atomic<bool>* cancel = nullptr);

// The sha256 of a file, as 64 lowercase hex digits (an error once `cancel` becomes true).
Result<std::string> Sha256File(const std::string& path, const std::atomic<bool>* cancel = nullptr);

}  // namespace g4
