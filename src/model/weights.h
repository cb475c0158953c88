// The weights of a Gemma 4 text decoder as named tensors per layer, and the one table of
// (checkpoint name, expected shape, slot) that drives validation and loading.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "io/checkpoint.h"
#include "model/config.h"

namespace g4 {

struct LayerWeights {
  Weight input_norm;        // (hidden)
  Weight q_proj;            // (heads * head_dim, hidden)
  Weight q_norm;            // (head_dim)
  Weight k_proj;            // (kv_heads * head_dim, hidden); absent on KV-shared layers
  Weight v_proj;            // (kv_heads * head_dim, hidden); absent with K=V or KV sharing
  Weight k_norm;            // (head_dim); absent on KV-shared layers
  Weight o_proj;            // (hidden, heads * head_dim)
  Weight post_attn_norm;    // (hidden)
  Weight pre_ff_norm;       // (hidden)
  Weight gate_proj;         // (intermediate, hidden)
  Weight up_proj;           // (intermediate, hidden)
  Weight down_proj;         // (hidden, intermediate)
  Weight post_ff_norm;      // (hidden)
  // Mixture of experts (enable_moe_block).
  Weight router_scale;      // (hidden)
  Weight router_proj;       // (experts, hidden)
  Weight per_expert_scale;  // (experts)
  Weight experts_gate_up;   // (experts, 2 * moe_intermediate, hidden), gate rows first
  Weight experts_down;      // (experts, hidden, moe_intermediate)
  Weight post_ff_norm_1;    // (hidden)
  Weight pre_ff_norm_2;     // (hidden)
  Weight post_ff_norm_2;    // (hidden)
  // Per-layer embeddings (hidden_size_per_layer_input > 0).
  Weight ple_gate;          // (ple_dim, hidden)
  Weight ple_proj;          // (hidden, ple_dim)
  Weight post_ple_norm;     // (hidden)
  Weight layer_scalar;      // (1)
};

struct ModelWeights {
  Weight embed;                 // (vocab, hidden); also the tied LM head
  Weight lm_head;               // (vocab, hidden); only when tie_word_embeddings is false
  Weight final_norm;            // (hidden)
  Weight ple_embed;             // (ple_vocab, layers * ple_dim)
  Weight ple_model_projection;  // (layers * ple_dim, hidden)
  Weight ple_projection_norm;   // (ple_dim)
  std::vector<LayerWeights> layers;
  std::vector<float> layer_scalars;  // (layers) host copies of layer_scalar
};

struct WeightSpec {
  std::string name;             // without the model prefix: "layers.0.self_attn.q_proj.weight"
  std::vector<int64_t> shape;
  Weight* slot;
  bool integer = false;         // an I64 tensor (the assistant's token ordering), else F32/F16/BF16
};

// Every tensor the config implies, in checkpoint order of discovery.
std::vector<WeightSpec> ListWeights(const ModelConfig& config, ModelWeights* weights);

// What loading found in the checkpoint, for `gemma4 inspect`.
struct LoadReport {
  std::string prefix;                        // "model." or "model.language_model."
  int used_tensors = 0;
  int skipped_tensors = 0;                   // other towers (vision, audio), never read
  std::vector<std::string> unused_tensors;   // text tensors the config does not need
  std::map<std::string, uint64_t> bytes_by_dtype;
};

// The tensors of a checkpoint checked against specs whose names are complete: present, shape
// and dtype right (their byte ranges were checked with the header). Nothing is allocated.
// A matrix may be stored quantized (an exported artifact): NAME as I8 (q8, the spec's shape) or
// U8 (q4, two values a byte: the last dimension halved) with NAME_scale, F16, one per group of 32.
struct WeightPlan {
  struct Item {
    const WeightSpec* spec;
    const CheckpointTensor* tensor;
    const CheckpointTensor* scales = nullptr;  // quantized: the float16 scales
    DType quant = DType::kF32;                 // quantized: kQ8 or kQ4
  };
  std::vector<Item> items;
};
Result<WeightPlan> PlanWeights(const Checkpoint& ckpt, const std::vector<WeightSpec>& specs);
// A tensor of the checkpoint outside the plan (and not another tower's) for which `disagrees`
// holds means the checkpoint and its config disagree (a layer past num_hidden_layers, experts
// with the MoE block off): an error naming the file, the first such tensor and how many more.
Status CheckUnused(const Checkpoint& ckpt, const WeightPlan& plan,
                   const std::function<bool(const std::string&)>& disagrees);
// The name of the scales of a quantized tensor.
inline std::string ScaleTensorName(const std::string& name) { return name + "_scale"; }
// Loads a plan through the backend into the specs' slots; on error nothing stays allocated.
Status LoadPlan(const Checkpoint& ckpt, const WeightPlan& plan, Backend& backend,
                std::vector<std::unique_ptr<Buffer>>* buffers, std::map<std::string, uint64_t>* bytes_by_dtype);
// A tensor of another tower (vision, audio) that text generation never reads.
bool IsOtherTower(const std::string& name);
// The text model's tensor prefix: "model.language_model." (container), "model." or "".
Result<std::string> DetectPrefix(const Checkpoint& ckpt);
// Reads layer_scalar values to the host.
Status ReadLayerScalars(const Checkpoint& ckpt, const std::string& prefix, int layers, std::vector<float>* out);

// The tensors a text decoder's config implies, found and checked in a checkpoint (present, shape
// and dtype; DetectPrefix, ListWeights under that prefix, PlanWeights): what loading checks before
// it allocates, and what export checks before it writes. Held on the heap: the plan points into
// the specs and the specs into the slots.
struct ModelPlan {
  std::string prefix;
  ModelWeights slots;
  std::vector<WeightSpec> specs;
  WeightPlan plan;
};
Result<std::unique_ptr<ModelPlan>> PlanModel(const ModelConfig& config, const Checkpoint& ckpt);

// Checks every expected tensor (PlanModel) before anything is allocated, then loads them through
// the backend. On error nothing stays allocated.
Status LoadWeights(const ModelConfig& config, const Checkpoint& ckpt, Backend& backend, ModelWeights* weights,
                   std::vector<std::unique_ptr<Buffer>>* buffers, LoadReport* report);

}  // namespace g4
