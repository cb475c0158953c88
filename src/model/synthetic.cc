#include "model/synthetic.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "base/dtype.h"
#include "io/reader.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/weights.h"
#include "session/sampler.h"

namespace g4 {

namespace {

// A family's text decoder (GEMMA4.md) and the assistant shape that goes with it.
struct Family {
  const char* name;
  int hidden, layers, period;  // period: layers per pattern repeat, the last of them full
  int intermediate;
  bool double_wide;  // KV-shared layers' MLP twice as wide
  int heads, kv_heads, global_kv_heads;  // global_kv_heads: full layers' with K equal to V (0: no K=V)
  int window, shared, ple;
  int experts, top_k, expert_width;  // 0 experts: no MoE block
  // The assistant: E2B's as published; the others' widths assumed (their query heads a multiple
  // of the donors' KV heads, as they must be), their own KV head fields those of the target.
  int a_hidden, a_intermediate, a_heads;
  const char* about;
};

constexpr Family kFamilies[] = {
    {"e2b", 1536, 35, 5, 6144, true, 8, 1, 0, 512, 20, 256, 0, 0, 0, 256, 2048, 4,
     "Gemma 4 E2B: 35 layers, (4 sliding, 1 full) x 7, the last 20 share K/V, per-layer embeddings"},
    {"e4b", 2560, 42, 6, 10240, false, 8, 2, 0, 512, 18, 256, 0, 0, 0, 256, 2048, 4,
     "Gemma 4 E4B: 42 layers, (5 sliding, 1 full) x 7, the last 18 share K/V, per-layer embeddings"},
    {"31b", 5376, 60, 6, 21504, false, 32, 16, 4, 1024, 0, 0, 0, 0, 0, 1024, 4096, 32,
     "Gemma 4 31B: 60 dense layers, (5 sliding, 1 full) x 10, K = V on full layers (4 KV heads)"},
    {"26b-a4b", 2816, 30, 6, 2112, false, 16, 8, 2, 1024, 0, 0, 128, 8, 704, 1024, 4096, 16,
     "Gemma 4 26B-A4B: 30 layers, (5 sliding, 1 full) x 5, 128 experts (top 8) beside the MLP, K = V on full "
     "layers (2 KV heads)"},
};
constexpr int kAssistantLayers = 4;

const Family* FindFamily(const std::string& name) {
  for (const Family& f : kFamilies) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

nlohmann::json TargetConfigJson(const Family& f, std::optional<int> layers) {
  int n = f.layers, shared = f.shared;
  if (layers) {
    // Whole pattern repeats; K/V shared by the same share of them, leaving one of its own.
    const int periods = *layers / f.period, full_periods = f.layers / f.period, shared_periods = f.shared / f.period;
    n = *layers;
    shared = f.period * std::min(periods - 1, (shared_periods * periods + full_periods / 2) / full_periods);
  }
  nlohmann::json types = nlohmann::json::array();
  for (int i = 0; i < n; ++i) types.push_back(i % f.period == f.period - 1 ? "full_attention" : "sliding_attention");
  nlohmann::json c = {
      {"model_type", "gemma4_text"}, {"vocab_size", 262144}, {"hidden_size", f.hidden}, {"num_hidden_layers", n},
      {"intermediate_size", f.intermediate}, {"num_attention_heads", f.heads}, {"num_key_value_heads", f.kv_heads},
      {"head_dim", 256}, {"global_head_dim", 512}, {"sliding_window", f.window}, {"layer_types", types},
      {"num_kv_shared_layers", shared}, {"hidden_size_per_layer_input", f.ple},
      {"vocab_size_per_layer_input", f.ple ? 262144 : 0}, {"use_double_wide_mlp", f.double_wide},
      {"final_logit_softcapping", 30.0}, {"rms_norm_eps", 1e-6}, {"hidden_activation", "gelu_pytorch_tanh"},
      {"tie_word_embeddings", true}, {"bos_token_id", 2}, {"eos_token_id", 1}, {"pad_token_id", 0},
      {"rope_parameters",
       {{"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}},
        {"full_attention", {{"rope_type", "proportional"}, {"partial_rotary_factor", 0.25}, {"rope_theta", 1000000.0}}}}}};
  if (f.global_kv_heads) {
    c["attention_k_eq_v"] = true;
    c["num_global_key_value_heads"] = f.global_kv_heads;
  }
  if (f.experts) {
    c["enable_moe_block"] = true;
    c["num_experts"] = f.experts;
    c["top_k_experts"] = f.top_k;
    c["moe_intermediate_size"] = f.expert_width;
  }
  return c;
}

nlohmann::json AssistantConfigJson(const Family& f, std::optional<int> layers) {
  const int n = layers.value_or(kAssistantLayers);
  nlohmann::json types = nlohmann::json::array();
  for (int i = 0; i < n; ++i) types.push_back(i == n - 1 ? "full_attention" : "sliding_attention");
  nlohmann::json text = {
      {"model_type", "gemma4_text"}, {"vocab_size", 262144}, {"hidden_size", f.a_hidden}, {"num_hidden_layers", n},
      {"intermediate_size", f.a_intermediate}, {"num_attention_heads", f.a_heads}, {"num_key_value_heads", f.kv_heads},
      {"head_dim", 256}, {"global_head_dim", 512}, {"sliding_window", f.window}, {"layer_types", types},
      {"num_kv_shared_layers", n}, {"hidden_size_per_layer_input", 0}, {"vocab_size_per_layer_input", 0},
      {"final_logit_softcapping", nullptr}, {"rms_norm_eps", 1e-6}, {"tie_word_embeddings", true}};
  if (f.global_kv_heads) {
    text["attention_k_eq_v"] = true;
    text["num_global_key_value_heads"] = f.global_kv_heads;
  }
  return {{"model_type", "gemma4_assistant"}, {"backbone_hidden_size", f.hidden}, {"use_ordered_embeddings", true},
          {"num_centroids", 2048}, {"centroid_intermediate_top_k", 32}, {"tie_word_embeddings", true},
          {"text_config", text}};
}

bool IsAssistantShape(const std::string& shape) {
  const std::string suffix = "-assistant";
  return shape.size() > suffix.size() && shape.compare(shape.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::string SyntheticShapes() {
  std::string out;
  for (const Family& f : kFamilies) {
    out += std::string(f.name) + ": " + f.about + "\n" + f.name + "-assistant: its MTP assistant, " +
           std::to_string(kAssistantLayers) + " query-only layers of width " + std::to_string(f.a_hidden) + ", " +
           std::to_string(f.a_heads) + " query heads, 2048 centroids" +
           (std::string(f.name) == "e2b" ? "" : " (widths assumed)") + "\n";
  }
  return out;
}

Result<std::string> SyntheticConfigJson(const std::string& shape, std::optional<int> layers) {
  const bool assistant = IsAssistantShape(shape);
  const Family* f = FindFamily(assistant ? shape.substr(0, shape.size() - 10) : shape);
  if (!f) {
    std::string names;
    for (const Family& fam : kFamilies) names += std::string(names.empty() ? "" : ", ") + fam.name + ", " + fam.name + "-assistant";
    return InvalidArgument("synth: unknown shape '" + shape + "' (" + names + ")");
  }
  if (layers && assistant && (*layers < 1 || *layers > 64)) {
    return InvalidArgument("synth: --layers for an assistant must be in 1..64 (the last layer is full)");
  }
  if (layers && !assistant && (*layers < f->period || *layers > f->layers || *layers % f->period)) {
    return InvalidArgument("synth: --layers for " + std::string(f->name) + " must be a multiple of " +
                           std::to_string(f->period) + " (its layer pattern) from " + std::to_string(f->period) +
                           " to " + std::to_string(f->layers));
  }
  return (assistant ? AssistantConfigJson(*f, layers) : TargetConfigJson(*f, layers)).dump(2);
}

namespace {
Status WriteFiles(const std::string& dir, const std::string& config_text, const ModelConfig& config, bool assistant,
                  const AssistantConfig& assistant_config, uint64_t seed, const std::atomic<bool>* cancel);
}  // namespace

Status WriteSyntheticCheckpoint(const std::string& dir_arg, const std::string& shape, std::optional<int> layers,
                                uint64_t seed, const std::atomic<bool>* cancel) {
  std::string dir = dir_arg;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  G4_ASSIGN_OR_RETURN(std::string config_text, SyntheticConfigJson(shape, layers));
  const bool assistant = IsAssistantShape(shape);
  ModelConfig config;
  AssistantConfig assistant_config;
  if (assistant) {
    G4_ASSIGN_OR_RETURN(assistant_config, ParseAssistantConfig(config_text, "synthetic config"));
    config = assistant_config.text;
  } else {
    G4_ASSIGN_OR_RETURN(config, ParseModelConfig(config_text, "synthetic config"));
  }
  // The folders above it are made as needed, as export makes them.
  for (size_t slash = dir.find('/', 1); slash != std::string::npos; slash = dir.find('/', slash + 1)) {
    const std::string above = dir.substr(0, slash);
    struct stat a;
    if (stat(above.c_str(), &a) == 0) {
      if (!S_ISDIR(a.st_mode)) return InvalidArgument(above + ": is not a folder (in --out " + dir + ")");
    } else if (mkdir(above.c_str(), 0755) != 0 && errno != EEXIST) {
      return InvalidArgument(above + ": cannot create the folder: " + std::strerror(errno));
    }
  }
  // A new folder, or an empty one: never over an existing model.
  struct stat st;
  const bool exists = lstat(dir.c_str(), &st) == 0;
  if (exists) {
    DIR* d = S_ISDIR(st.st_mode) ? opendir(dir.c_str()) : nullptr;
    if (!d) return InvalidArgument(dir + ": exists and is not a folder that can be read");
    bool empty = true;
    while (const dirent* e = readdir(d)) {
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) empty = false;
    }
    closedir(d);
    if (!empty) return InvalidArgument(dir + ": exists and is not empty; synth writes only into a new or empty folder");
  }
#ifdef __wasi__
  const std::string partial = dir + ".partial-" + std::to_string(std::random_device()());  // no process ids
#else
  const std::string partial = dir + ".partial-" + std::to_string(getpid());
#endif
  if (mkdir(partial.c_str(), 0755) != 0) {
    return InvalidArgument(partial + ": cannot create the folder: " + std::strerror(errno));
  }
  Status s = WriteFiles(partial, config_text, config, assistant, assistant_config, seed, cancel);
  if (s.ok() && cancel && cancel->load()) s = FailedPrecondition("synth: interrupted");
  // rename() replaces an empty folder and refuses one that holds anything.
  if (s.ok() && std::rename(partial.c_str(), dir.c_str()) != 0) {
    s = DataLoss(dir + ": cannot move the new checkpoint into place (" + std::strerror(errno) + ")");
  }
  if (!s.ok()) {
    for (const char* name : {"config.json", "generation_config.json", "model.safetensors", "model.safetensors.partial"}) {
      std::remove(JoinPath(partial, name).c_str());
    }
    rmdir(partial.c_str());
  }
  return s;
}

namespace {

Status WriteFiles(const std::string& dir, const std::string& config_text, const ModelConfig& config, bool assistant,
                  const AssistantConfig& assistant_config, uint64_t seed, const std::atomic<bool>* cancel) {
  std::vector<std::pair<std::string, std::string>> files = {{"config.json", config_text}};
  if (!assistant) {
    files.emplace_back("generation_config.json", "{\"bos_token_id\": 2, \"eos_token_id\": [1, 106], \"pad_token_id\": 0}\n");
  }
  for (const auto& [name, text] : files) G4_RETURN_IF_ERROR(WriteTextFile(JoinPath(dir, name), text));
  ModelWeights unused;
  std::vector<WeightSpec> specs = ListWeights(config, &unused);
  Weight extra[3];
  if (assistant) {
    const int64_t h = config.hidden, hb = assistant_config.backbone_hidden;
    specs.push_back({"pre_projection.weight", {h, 2 * hb}, &extra[0]});
    specs.push_back({"post_projection.weight", {hb, h}, &extra[1]});
    specs.push_back({"masked_embedding.centroids.weight", {assistant_config.num_centroids, h}, &extra[2]});
  }
  std::vector<TensorToWrite> tensors;
  for (size_t i = 0; i < specs.size(); ++i) {
    const WeightSpec& s = specs[i];
    TensorToWrite t;
    const bool top_level = i >= specs.size() - (assistant ? 3 : 0);  // the assistant's own tensors
    t.name = top_level ? s.name : "model." + s.name;
    t.dtype = DType::kBF16;
    t.shape = s.shape;
    const bool vector = s.shape.size() == 1;
    const float amp = vector ? 0.0f : std::sqrt(3.0f / static_cast<float>(s.shape.back()));
    const uint64_t tensor_seed = seed * 1000003ull + i;
    t.fill = [amp, vector, tensor_seed, cancel](uint64_t offset, uint8_t* dst, size_t n) -> Status {
      if (cancel && cancel->load(std::memory_order_relaxed)) return FailedPrecondition("synth: interrupted");
      // Norm weights and scalars near 1, matrices uniform with unit-variance outputs.
      Rng rng(tensor_seed ^ (offset * 0x9e3779b97f4a7c15ull));
      uint16_t* out = reinterpret_cast<uint16_t*>(dst);
      for (size_t k = 0; k < n / 2; k += 4) {
        const uint64_t r = rng.Next();
        for (size_t j = 0; j < 4 && k + j < n / 2; ++j) {
          const float u = static_cast<float>(static_cast<int16_t>(r >> (16 * j))) / 32768.0f;
          out[k + j] = F32ToBf16(vector ? 1.0f + 0.1f * u : amp * u);
        }
      }
      return Status::Ok();
    };
    tensors.push_back(std::move(t));
  }
  std::vector<int64_t> ordering;
  if (assistant) {
    // A seeded random permutation of the vocabulary.
    ordering.resize(config.vocab);
    for (int64_t i = 0; i < config.vocab; ++i) ordering[i] = i;
    Rng rng(seed);
    for (int64_t i = config.vocab - 1; i > 0; --i) std::swap(ordering[i], ordering[rng.Next() % (i + 1)]);
    tensors.push_back(TensorToWrite{"masked_embedding.token_ordering", DType::kI64, {config.vocab}, ordering.data(), {}});
  }
  return WriteSafetensors(JoinPath(dir, "model.safetensors"), tensors, {{"format", "pt"}});
}

}  // namespace

}  // namespace g4
