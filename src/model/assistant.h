// The Gemma 4 MTP assistant: a small query-only decoder that drafts tokens from the target's
// last hidden state and the target's donor K/V (the last full and last sliding layer that own a
// cache), with its own tied head or a centroid-masked head.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/model.h"

namespace g4 {

// The target layer an assistant layer reads, and how: query head h reads the donor's KV head
// h / (heads / kv_heads), whatever the assistant's config says of its own KV heads (its layers
// have no K/V projections: the reference repeats and broadcasts the donor's heads the same way).
struct DonorLink {
  int layer = -1;              // the target layer (the last of the assistant layer's type with its own K/V)
  int kv_heads = 0;            // the donor's KV heads, which the assistant layer attends over
  int declared_kv_heads = 0;   // what the assistant's config says (not used)
};

// Links each layer of `assistant` to its donor in `target`. Refuses only what cannot run: a head
// dim that differs from the donor's, or query heads that are not a multiple of the donor's KV
// heads; the error names `source`, the assistant layer, the donor layer and both shapes.
Result<std::vector<DonorLink>> LinkDonors(const AssistantConfig& assistant, const ModelConfig& target,
                                          const std::string& source);
// One line per assistant layer: its shape, the target layer it reads and with how many KV heads
// (`links` empty: described without a target).
std::string DescribeDonors(const AssistantConfig& assistant, const std::vector<DonorLink>& links);

class Assistant {
 public:
  // Loads DIR (config.json, safetensors) for `target`: everything is checked against the target
  // (hidden size, vocabulary, the donor layers' shapes: LinkDonors) before anything is
  // allocated; on error the target is untouched. The loaded config's layers carry the donors' KV
  // heads.
  static Result<std::unique_ptr<Assistant>> Load(const std::string& dir, Backend& backend, Model& target);
  // The same checks without a backend or a loaded target (Load runs them first; export runs them
  // before writing): the config against the target's, every tensor present with its dtype and
  // shape, and the centroid head's token ordering a permutation of the vocabulary.
  struct Source {
    AssistantConfig config;
    std::unique_ptr<Checkpoint> ckpt;
    int donor_sliding = -1, donor_full = -1;
    std::vector<DonorLink> links;         // per assistant layer
    std::vector<int32_t> token_ordering;  // with use_ordered_embeddings
  };
  static Result<Source> Check(const std::string& dir, const ModelConfig& target);

  const AssistantConfig& config() const { return config_; }
  // Sliding positions the target's cache must hold for drafting (window + 1).
  int SlidingKeep() const;
  int backbone_hidden() const { return config_.backbone_hidden; }
  // The target layers whose K/V the assistant's sliding and full layers read.
  int donor_sliding() const { return donor_sliding_; }
  int donor_full() const { return donor_full_; }
  const std::vector<DonorLink>& donors() const { return donors_; }

  // One draft step at `position` (the target has run positions 0..position-1 into `cache`):
  // from `token` and the state `state_in` (backbone_hidden), writes the draft logits (vocab,
  // host) and the next state into `state_out` (backbone_hidden, on the backend).
  Status Draft(int32_t token, F32 state_in, int64_t position, const KvCache& cache, std::vector<float>* logits,
               F32 state_out);
  // The same step for greedy drafting on the backend: the token is the id (a float) at `token`,
  // the draft (the argmax of the draft logits) goes to `id_out`; nothing is read back.
  Status DraftGreedyOnDevice(F32 token, F32 state_in, int64_t position, const KvCache& cache, F32 id_out,
                             F32 state_out);

 private:
  Assistant(AssistantConfig config, std::unique_ptr<Checkpoint> ckpt, Backend& backend, Model& target)
      : config_(std::move(config)), ckpt_(std::move(ckpt)), backend_(backend), target_(target) {}
  Status AllocateScratch();
  // Concatenates the embedded token (already in the first half of the input slot) with
  // state_in and runs the layers and final norm: the normed output is in the kH slot.
  Status Trunk(F32 state_in, int64_t position, const KvCache& cache);

  AssistantConfig config_;
  std::unique_ptr<Checkpoint> ckpt_;
  Backend& backend_;
  Model& target_;
  ModelWeights weights_;          // the decoder: embed (vocab, hidden) is the tied head
  Weight pre_projection_;         // (hidden, 2 * backbone_hidden)
  Weight post_projection_;        // (backbone_hidden, hidden)
  Weight centroids_;              // (num_centroids, hidden), with ordered embeddings
  std::vector<int32_t> token_ordering_;  // (vocab) token ids, num_centroids rows of vocab / num_centroids
  std::unique_ptr<Reader> ordering_source_;  // the ordering as float32, backing ordering_
  Weight ordering_;               // (num_centroids, vocab / num_centroids) token ids as floats, on the backend
  std::vector<std::unique_ptr<Buffer>> buffers_;
  std::vector<std::unique_ptr<Buffer>> scratch_;
  int donor_sliding_ = -1, donor_full_ = -1;
  std::vector<DonorLink> donors_;  // per assistant layer
};

}  // namespace g4
