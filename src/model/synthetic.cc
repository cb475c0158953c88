#include "model/synthetic.h"

#include <cmath>
#include <cstdio>
#include <vector>

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "base/dtype.h"
#include "io/reader.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/weights.h"
#include "session/sampler.h"

namespace g4 {

Result<std::string> SyntheticConfigJson(const std::string& shape, int layers) {
  if (shape == "e2b-assistant") {
    // E2B's MTP assistant: hidden 256, 4 query-only layers (3 sliding, 1 full), 2048 centroids, top 32.
    nlohmann::json text = {
        {"model_type", "gemma4_text"}, {"vocab_size", 262144}, {"hidden_size", 256}, {"num_hidden_layers", 4},
        {"intermediate_size", 2048}, {"num_attention_heads", 4}, {"num_key_value_heads", 1}, {"head_dim", 256},
        {"global_head_dim", 512}, {"sliding_window", 512},
        {"layer_types", {"sliding_attention", "sliding_attention", "sliding_attention", "full_attention"}},
        {"num_kv_shared_layers", 4}, {"hidden_size_per_layer_input", 0}, {"vocab_size_per_layer_input", 0},
        {"final_logit_softcapping", nullptr}, {"rms_norm_eps", 1e-6}, {"tie_word_embeddings", true}};
    nlohmann::json c = {{"model_type", "gemma4_assistant"}, {"backbone_hidden_size", 1536},
                        {"use_ordered_embeddings", true}, {"num_centroids", 2048},
                        {"centroid_intermediate_top_k", 32}, {"tie_word_embeddings", true}, {"text_config", text}};
    return c.dump(2);
  }
  if (shape != "e2b") return InvalidArgument("synth: unknown shape '" + shape + "' (e2b, e2b-assistant)");
  // Gemma 4 E2B: 35 layers, (4 sliding, 1 full) x 7, the last 20 share K/V.
  int n = 35, shared = 20;
  if (layers > 0) {
    if (layers < 5 || layers > 35 || layers % 5) return InvalidArgument("synth: --layers must be 5, 10, ..., 35");
    shared = layers * 20 / 35;
    n = layers;
  }
  nlohmann::json types = nlohmann::json::array();
  for (int i = 0; i < n; ++i) types.push_back((i % 5 == 4) ? "full_attention" : "sliding_attention");
  nlohmann::json c = {
      {"model_type", "gemma4_text"}, {"vocab_size", 262144}, {"hidden_size", 1536},
      {"num_hidden_layers", n}, {"intermediate_size", 6144}, {"num_attention_heads", 8},
      {"num_key_value_heads", 1}, {"head_dim", 256}, {"global_head_dim", 512}, {"sliding_window", 512},
      {"layer_types", types}, {"num_kv_shared_layers", shared}, {"hidden_size_per_layer_input", 256},
      {"vocab_size_per_layer_input", 262144}, {"use_double_wide_mlp", true}, {"final_logit_softcapping", 30.0},
      {"rms_norm_eps", 1e-6}, {"hidden_activation", "gelu_pytorch_tanh"}, {"tie_word_embeddings", true},
      {"bos_token_id", 2}, {"eos_token_id", 1}, {"pad_token_id", 0},
      {"rope_parameters",
       {{"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}},
        {"full_attention", {{"rope_type", "proportional"}, {"partial_rotary_factor", 0.25}, {"rope_theta", 1000000.0}}}}}};
  return c.dump(2);
}

Status WriteSyntheticCheckpoint(const std::string& dir, const std::string& shape, int layers, uint64_t seed) {
  G4_ASSIGN_OR_RETURN(std::string config_text, SyntheticConfigJson(shape, layers));
  const bool assistant = shape == "e2b-assistant";
  ModelConfig config;
  AssistantConfig assistant_config;
  if (assistant) {
    G4_ASSIGN_OR_RETURN(assistant_config, ParseAssistantConfig(config_text, "synthetic config"));
    config = assistant_config.text;
  } else {
    G4_ASSIGN_OR_RETURN(config, ParseModelConfig(config_text, "synthetic config"));
  }
  mkdir(dir.c_str(), 0755);
  std::vector<std::pair<std::string, std::string>> files = {{"config.json", config_text}};
  if (!assistant) {
    files.emplace_back("generation_config.json", "{\"bos_token_id\": 2, \"eos_token_id\": [1, 106], \"pad_token_id\": 0}\n");
  }
  for (const auto& [name, text] : files) {
    FILE* f = std::fopen(JoinPath(dir, name).c_str(), "wb");
    if (!f) return NotFound(JoinPath(dir, name) + ": cannot create");
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (std::fclose(f) != 0 || !ok) return DataLoss(JoinPath(dir, name) + ": write failed");
  }
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
    t.fill = [amp, vector, tensor_seed](uint64_t offset, uint8_t* dst, size_t n) -> Status {
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

}  // namespace g4
