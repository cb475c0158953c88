// The resolved architecture of a Gemma 4 text decoder, read from config.json (either the text
// config `gemma4_text` or the multimodal container `gemma4` with `text_config`) and
// generation_config.json. Every per-layer choice is resolved here once, so the forward pass
// reads plain fields.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace g4 {

enum class AttentionType { kSliding, kFull };

struct LayerConfig {
  AttentionType type = AttentionType::kSliding;
  int head_dim = 0;
  int heads = 0;           // query heads
  int kv_heads = 0;        // in an assistant: the donor layer's (Assistant::Load sets them)
  int window = 0;          // positions a query sees, itself included; 0 = unbounded (full layers)
  bool k_eq_v = false;     // no v_proj: values come from k_proj (full layers with attention_k_eq_v)
  bool kv_shared = false;  // no K/V of its own: reads layer kv_source's
  int kv_source = 0;       // the layer whose K/V cache this layer attends over (itself if not
                           // shared; -1 in an assistant, which reads its target's donor layers)
  int intermediate = 0;    // dense MLP width (doubled on KV-shared layers with use_double_wide_mlp)
  std::vector<float> inv_freq;  // (head_dim / 2) RoPE inverse frequencies; zeros pass through
};

struct ModelConfig {
  std::string model_type;  // "gemma4_text" or "gemma4" (container)
  int vocab = 0;
  int hidden = 0;
  int num_layers = 0;
  int intermediate = 0;
  float rms_eps = 1e-6f;
  std::optional<float> final_softcap;  // none when final_logit_softcapping is null
  bool tie_word_embeddings = true;
  // Per-layer embeddings (E2B/E4B); 0 when absent.
  int ple_dim = 0;
  int ple_vocab = 0;
  int num_kv_shared_layers = 0;
  // Mixture of experts, next to the dense MLP.
  bool moe = false;
  int num_experts = 0;
  int top_k_experts = 0;
  int moe_intermediate = 0;
  std::vector<LayerConfig> layers;
  // Tokens.
  int bos_id = 2;
  int pad_id = 0;
  std::vector<int> eos_ids;  // from generation_config.json, else config.json
  // Sampling defaults of generation_config.json, as the reference's generate() applies them:
  // greedy (temperature 0) unless do_sample is true; absent fields leave the sampler's own.
  float default_temperature = 0.0f;
  int default_top_k = 0;
  float default_top_p = 1.0f;

  const LayerConfig& layer(int i) const { return layers[i]; }
  // Bytes of K/V cache per cached position, summed over the layers that own a cache (f32).
  size_t KvBytesPerPosition() const;
  std::string Describe() const;  // multi-line summary for `gemma4 inspect`
};

// An MTP assistant (gemma4_assistant): a query-only decoder over a target's K/V.
struct AssistantConfig {
  ModelConfig text;              // every layer query-only (kv_shared, kv_source -1)
  int backbone_hidden = 0;       // the target's hidden size
  bool ordered_embeddings = false;  // the centroid-masked head
  int num_centroids = 0;
  int centroid_top_k = 0;
};

// Parses config.json text; `source` names the file in errors.
Result<ModelConfig> ParseModelConfig(const std::string& json_text, const std::string& source);
Result<AssistantConfig> ParseAssistantConfig(const std::string& json_text, const std::string& source);
// Reads DIR/config.json and, when present, DIR/generation_config.json for the eos ids.
Result<ModelConfig> LoadModelConfig(const std::string& dir);
// Applies generation_config.json text (eos_token_id as a number or a list).
Status ApplyGenerationConfig(const std::string& json_text, const std::string& source, ModelConfig* config);

// RoPE inverse frequencies for one layer type, as the reference computes them.
// rope_type "default": theta^(-2i/D) for all i < D/2; "proportional": the same for
// i < floor(partial * D / 2) and zero beyond. Both divided by `factor`.
Result<std::vector<float>> RopeInverseFrequencies(const std::string& rope_type, double theta, double partial,
                                                  double factor, int head_dim);

}  // namespace g4
