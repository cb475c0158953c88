// A loaded Gemma 4 text decoder and its forward pass, written once against the Backend interface.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "io/checkpoint.h"
#include "model/config.h"
#include "model/weights.h"

namespace g4 {

// The K/V cache of one sequence. Only layers that compute their own K/V own a cache; sliding
// layers keep a ring of the last window - 1 (+ reserve) positions, full layers every position.
// Layout per owning layer: k, v: (capacity, kv_heads * head_dim) float32, slot = position % capacity.
class KvCache {
 public:
  struct Layer {
    std::unique_ptr<Buffer> k;  // (capacity, kv_heads * head_dim)
    std::unique_ptr<Buffer> v;  // (capacity, kv_heads * head_dim)
    int64_t capacity = 0;
    int row = 0;                // kv_heads * head_dim
  };
  int64_t length() const { return length_; }          // positions held (0..length-1 were run)
  int64_t max_positions() const { return max_positions_; }
  size_t bytes() const;
  void Clear() { length_ = 0; }
  // Forgets positions length..: a speculative round keeps only what verification accepted. At
  // most `reserve` (see Model::NewCache) positions may be dropped after a forward.
  Status Rollback(int64_t length);
  // Sets the positions held to `length` (up to max_positions), forward too: for work recorded
  // before the read that says where it starts (Backend::SetPositionShift), whose positions the
  // device took, the host's length catches up once that read is in.
  Status SetLength(int64_t length);
  const Layer& layer(int i) const { return layers_[i]; }

 private:
  friend class Model;
  int64_t length_ = 0;
  int64_t max_positions_ = 0;
  std::vector<Layer> layers_;  // by layer index; empty entries for KV-shared layers
};

class Model {
 public:
  // A model folder checked as Load checks it before allocating anything: config.json (and
  // generation_config.json) parse, and every tensor the config implies is in the safetensors
  // files with its dtype and shape. Reads only the configs and the safetensors headers.
  struct Source {
    ModelConfig config;
    std::unique_ptr<Checkpoint> ckpt;
  };
  static Result<Source> Check(const std::string& dir);
  // Reads DIR/config.json (+ generation_config.json) and the safetensors files (Check, then loads).
  static Result<std::unique_ptr<Model>> Load(const std::string& dir, Backend& backend);
  static Result<std::unique_ptr<Model>> Load(ModelConfig config, std::unique_ptr<Checkpoint> ckpt, Backend& backend);

  const ModelConfig& config() const { return config_; }
  const LoadReport& load_report() const { return report_; }
  const ModelWeights& weights() const { return weights_; }
  // Bytes of weights one decoded token reads: every matrix once (the tied embedding as the LM
  // head), one row of the per-layer embedding table, top_k of the experts.
  uint64_t WeightBytesPerToken() const;
  Backend& backend() { return backend_; }

  // Prompts longer than this run in chunks of it, so activations stay those of this many rows.
  static constexpr int kPrefillChunk = 512;
  // Runs every chunk of `prompt` but the last (K/V appended, no logits) and returns the last,
  // which the caller runs for its logits.
  Result<std::span<const int32_t>> PrefillHead(std::span<const int32_t> prompt, KvCache& cache);

  // Backend memory for a context of `positions`: the weights as loaded, the K/V cache, and the
  // activations of a prefill chunk (float32).
  struct MemoryEstimate {
    uint64_t weights = 0;
    uint64_t kv_cache = 0;
    uint64_t activations = 0;
    uint64_t total() const { return weights + kv_cache + activations; }
  };
  MemoryEstimate EstimateMemory(int64_t positions) const;
  // The same before loading (weights 0): K/V of `positions`, activations of batches of `rows`.
  static MemoryEstimate EstimateMemory(const ModelConfig& config, int64_t positions, int rows);
  // The activation arena a backend needs for such a run: the K/V cache and activations above,
  // plus 64 MiB for an assistant's scratch, wider logits, the backend's own regions and rounding.
  static uint64_t ArenaBytes(const ModelConfig& config, int64_t positions, int rows);

  // A cache for up to `max_positions` positions. Sliding rings keep the last window - 1
  // positions, or `sliding_keep` when more is read (the assistant reads window + 1), plus
  // `reserve` slots so that a forward of that many positions can be rolled back.
  Result<std::unique_ptr<KvCache>> NewCache(int64_t max_positions, int reserve = 0, int sliding_keep = 0);

  // Runs `tokens` at positions cache.length().. as one batch, appends their K/V to the cache and
  // writes the final (softcapped) logits of the last `logit_rows` rows, (logit_rows, vocab),
  // into `logits` (logit_rows 0: none).
  Status Forward(std::span<const int32_t> tokens, KvCache& cache, int logit_rows, std::vector<float>* logits);
  // The same pass, reading back only the greedy token of each of the last `rows` rows (the
  // argmax runs on the backend, so a GPU returns a few ids instead of whole logit rows).
  Status ForwardArgmax(std::span<const int32_t> tokens, KvCache& cache, int rows, std::vector<int>* ids);
  // The same pass, leaving the greedy tokens of the last `rows` rows on the backend, at `out_ids`
  // (rows floats; no buffer: the model's own scratch), as ForwardArgmaxOnDevice does.
  Status ForwardArgmaxTo(std::span<const int32_t> tokens, KvCache& cache, int rows, F32 out_ids);
  // The same pass, reading back only the k best (id, logit) of the last row, largest first, the
  // lower id first among equals (top-k on the backend; sampling reads these, not the vocabulary).
  Status ForwardTopK(std::span<const int32_t> tokens, KvCache& cache, int k, std::vector<std::pair<int, float>>* top);
  // The whole last row of logits of the last ForwardTopK, (vocab).
  Status LastLogits(std::vector<float>* logits);
  // The greedy pass on token ids the backend holds (a speculative round on the GPU): runs the n
  // ids at `ids` (floats, on the backend) at positions cache.length().. and writes the argmax of
  // the last `rows` rows to `out_ids` (rows floats, on the backend). Nothing is read back; the
  // ids must be inside the vocabulary (they come from Argmax).
  Status ForwardArgmaxOnDevice(F32 ids, int n, KvCache& cache, int rows, F32 out_ids);
  // The final-normed hidden states of the last Forward's rows, (rows, hidden), on the backend.
  F32 hidden_rows() { return Scratch(kHiddenSlot); }
  static constexpr int kHiddenSlot = 1;  // the scratch slot that ends a Forward holding them

 private:
  Model(ModelConfig config, std::unique_ptr<Checkpoint> ckpt, Backend& backend)
      : config_(std::move(config)), ckpt_(std::move(ckpt)), backend_(backend) {}
  Status EnsureScratch(int rows);
  static std::vector<size_t> ScratchFloats(const ModelConfig& c, int rows);  // per slot
  // Layers and final norm over host tokens, or (when `device_ids` is set) n ids on the backend.
  Status Run(std::span<const int32_t> tokens, KvCache& cache, F32 device_ids = F32{}, int n = 0);
  Result<F32> Head(int n, int rows);  // softcapped logits of the last `rows` of n rows, on the backend
  F32 Scratch(int index) { return F32{scratch_[index].get(), 0}; }

  ModelConfig config_;
  std::unique_ptr<Checkpoint> ckpt_;  // keeps mapped weight memory alive
  Backend& backend_;
  ModelWeights weights_;
  std::vector<std::unique_ptr<Buffer>> weight_buffers_;
  LoadReport report_;
  // Per-forward scratch, sized for scratch_rows_ rows.
  int scratch_rows_ = 0;
  std::vector<std::unique_ptr<Buffer>> scratch_;
  std::unique_ptr<Buffer> wide_logits_;  // (rows, vocab) when more than the scratch's rows are asked for
  std::vector<std::unique_ptr<Buffer>> layer_k_, layer_v_;  // (rows, kv_heads * head_dim) per owning layer
};

}  // namespace g4
