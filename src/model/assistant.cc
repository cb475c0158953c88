#include "model/assistant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "model/layer.h"

namespace g4 {
namespace {

enum Slot { kIn2, kX, kH, kO, kF, kQ, kAttn, kGate, kUp, kLogits, kSelected, kTopCentroids, kRowIds, kX2, kNumSlots };

}  // namespace

Result<std::vector<DonorLink>> LinkDonors(const AssistantConfig& assistant, const ModelConfig& t,
                                          const std::string& source) {
  int donor_sliding = -1, donor_full = -1;
  for (int i = 0; i < t.num_layers; ++i) {
    if (t.layers[i].kv_shared) continue;
    (t.layers[i].type == AttentionType::kFull ? donor_full : donor_sliding) = i;
  }
  std::vector<DonorLink> links;
  const ModelConfig& a = assistant.text;
  for (int i = 0; i < a.num_layers; ++i) {
    const LayerConfig& l = a.layers[i];
    const bool full = l.type == AttentionType::kFull;
    const int donor = full ? donor_full : donor_sliding;
    const std::string where = source + ": assistant layer " + std::to_string(i) + " (" + (full ? "full" : "sliding") + ")";
    if (donor < 0) return InvalidArgument(where + ": the target has no layer of this type with its own K/V");
    const LayerConfig& d = t.layers[donor];
    if (l.head_dim != d.head_dim || l.heads % d.kv_heads) {
      return InvalidArgument(where + ", " + std::to_string(l.heads) + " query heads of head_dim " +
                             std::to_string(l.head_dim) + ", cannot attend over the target's donor layer " +
                             std::to_string(donor) + ", " + std::to_string(d.kv_heads) + " KV heads of head_dim " +
                             std::to_string(d.head_dim) + ": " +
                             (l.head_dim != d.head_dim ? "the head dims differ"
                                                       : "the query heads are not a multiple of the KV heads"));
    }
    links.push_back({donor, d.kv_heads, l.kv_heads});
  }
  return links;
}

std::string DescribeDonors(const AssistantConfig& assistant, const std::vector<DonorLink>& links) {
  std::string out;
  for (size_t i = 0; i < assistant.text.layers.size(); ++i) {
    const LayerConfig& l = assistant.text.layers[i];
    const char* type = l.type == AttentionType::kFull ? "full" : "sliding";
    out += "assistant layer " + std::to_string(i) + ": " + type + " heads " + std::to_string(l.heads) + " head_dim " +
           std::to_string(l.head_dim);
    if (i >= links.size()) {
      // Without the target: which of its layers, and their KV heads, are not known.
      out += " reads the target's last " + std::string(type) + " layer with its own K/V, with that layer's KV heads " +
             "(its config says " + std::to_string(l.kv_heads) + ", not used)\n";
      continue;
    }
    const DonorLink& d = links[i];
    out += " reads target layer " + std::to_string(d.layer) + " with " + std::to_string(d.kv_heads) + " KV head" +
           (d.kv_heads == 1 ? "" : "s") + " (" + std::to_string(l.heads / d.kv_heads) + " query heads each)";
    if (d.declared_kv_heads != d.kv_heads) {
      out += "; its config's " + std::to_string(d.declared_kv_heads) + " is not used";
    }
    out += "\n";
  }
  return out;
}

int Assistant::SlidingKeep() const {
  int keep = 0;
  for (const auto& l : config_.text.layers) {
    if (l.window) keep = std::max(keep, l.window + 1);
  }
  return keep;
}

namespace {

// Where an assistant's tensors go: its decoder's and its own.
struct AssistantSlots {
  ModelWeights* decoder;
  Weight* pre_projection;
  Weight* post_projection;
  Weight* centroids;
  Weight* ordering;
};

// Every tensor of an assistant, the centroid head's token ordering last.
std::vector<WeightSpec> AssistantSpecs(const AssistantConfig& c, const AssistantSlots& slots) {
  const int h = c.text.hidden, hb = c.backbone_hidden;
  std::vector<WeightSpec> specs = ListWeights(c.text, slots.decoder);
  for (WeightSpec& s : specs) s.name = "model." + s.name;
  specs.push_back({"pre_projection.weight", {h, 2 * int64_t{hb}}, slots.pre_projection});
  specs.push_back({"post_projection.weight", {hb, h}, slots.post_projection});
  if (c.ordered_embeddings) {
    specs.push_back({"masked_embedding.centroids.weight", {c.num_centroids, h}, slots.centroids});
    specs.push_back({"masked_embedding.token_ordering", {c.text.vocab}, slots.ordering, /*integer=*/true});
  }
  return specs;
}

}  // namespace

Result<Assistant::Source> Assistant::Check(const std::string& dir, const ModelConfig& t) {
  const std::string config_path = JoinPath(dir, "config.json");
  G4_ASSIGN_OR_RETURN(std::string text, ReadTextFile(config_path, kMaxConfigBytes));
  Source src;
  G4_ASSIGN_OR_RETURN(src.config, ParseAssistantConfig(text, config_path));
  const AssistantConfig& c = src.config;
  const ModelConfig& a = c.text;

  // Against the target, before anything is allocated.
  if (c.backbone_hidden != t.hidden) {
    return InvalidArgument(config_path + ": backbone_hidden_size " + std::to_string(c.backbone_hidden) +
                           " differs from the target's hidden size " + std::to_string(t.hidden));
  }
  if (a.vocab != t.vocab) {
    return InvalidArgument(config_path + ": vocab_size " + std::to_string(a.vocab) + " differs from the target's " +
                           std::to_string(t.vocab));
  }
  // Each layer attends over its donor's K/V as the donor has them: the donor's KV heads.
  G4_ASSIGN_OR_RETURN(src.links, LinkDonors(c, t, config_path));
  for (size_t i = 0; i < src.links.size(); ++i) {
    src.config.text.layers[i].kv_heads = src.links[i].kv_heads;
    (a.layers[i].type == AttentionType::kFull ? src.donor_full : src.donor_sliding) = src.links[i].layer;
  }

  G4_ASSIGN_OR_RETURN(src.ckpt, Checkpoint::Open(dir));
  ModelWeights decoder;
  Weight pre, post, centroids, ordering;
  const std::vector<WeightSpec> specs = AssistantSpecs(c, {&decoder, &pre, &post, &centroids, &ordering});
  G4_ASSIGN_OR_RETURN(const WeightPlan plan, PlanWeights(*src.ckpt, specs));
  // Centroids and an ordering the config does not ask for.
  G4_RETURN_IF_ERROR(CheckUnused(*src.ckpt, plan, [](const std::string& name) {
    return name.rfind("masked_embedding.", 0) == 0;
  }));
  if (c.ordered_embeddings) {
    // The ordering stays on the host: a permutation of the vocabulary.
    const CheckpointTensor* t_ord = src.ckpt->Find("masked_embedding.token_ordering");
    std::vector<int64_t> raw(a.vocab);
    G4_RETURN_IF_ERROR(src.ckpt->file(t_ord->file).Read(t_ord->info.offset, t_ord->info.bytes, raw.data()));
    std::vector<bool> seen(a.vocab, false);
    for (int64_t v : raw) {
      if (v < 0 || v >= a.vocab || seen[v]) {
        return InvalidArgument(src.ckpt->file(t_ord->file).Name() +
                               ": tensor masked_embedding.token_ordering is not a permutation of the vocabulary");
      }
      seen[v] = true;
      src.token_ordering.push_back(static_cast<int32_t>(v));
    }
  }
  return src;
}

Result<std::unique_ptr<Assistant>> Assistant::Load(const std::string& dir, Backend& backend, Model& target) {
  G4_ASSIGN_OR_RETURN(Source src, Check(dir, target.config()));
  std::unique_ptr<Assistant> as(new Assistant(std::move(src.config), std::move(src.ckpt), backend, target));
  as->donor_sliding_ = src.donor_sliding;
  as->donor_full_ = src.donor_full;
  as->donors_ = std::move(src.links);
  as->token_ordering_ = std::move(src.token_ordering);
  const AssistantConfig& c = as->config_;
  Weight ordering;
  const std::vector<WeightSpec> specs =
      AssistantSpecs(c, {&as->weights_, &as->pre_projection_, &as->post_projection_, &as->centroids_, &ordering});
  G4_ASSIGN_OR_RETURN(WeightPlan plan, PlanWeights(*as->ckpt_, specs));
  if (c.ordered_embeddings) {
    plan.items.pop_back();  // checked and read by Check; the backend gets it as floats (device drafting)
    const std::vector<int32_t>& order = as->token_ordering_;
    std::vector<uint8_t> bytes(order.size() * sizeof(float));
    for (size_t i = 0; i < order.size(); ++i) {
      const float f = static_cast<float>(order[i]);
      std::memcpy(bytes.data() + i * sizeof(float), &f, sizeof(float));
    }
    as->ordering_source_ = MakeMemoryReader(std::move(bytes), "token_ordering (float32)");
  }
  std::map<std::string, uint64_t> by_dtype;
  G4_RETURN_IF_ERROR(LoadPlan(*as->ckpt_, plan, backend, &as->buffers_, &by_dtype));
  G4_RETURN_IF_ERROR(ReadLayerScalars(*as->ckpt_, "model.", c.text.num_layers, &as->weights_.layer_scalars));
  if (as->ordering_source_) {
    const int C = c.num_centroids;
    G4_ASSIGN_OR_RETURN(auto buf, backend.LoadWeights(*as->ordering_source_, 0, as->ordering_source_->Size()));
    as->ordering_ = Weight{buf.get(), DType::kF32, 1, C, c.text.vocab / C};
    as->buffers_.push_back(std::move(buf));
  }
  G4_RETURN_IF_ERROR(as->AllocateScratch());
  return as;
}

Status Assistant::AllocateScratch() {
  const ModelConfig& c = config_.text;
  int max_q = 0, max_inter = 0;
  for (const auto& l : c.layers) {
    max_q = std::max(max_q, l.heads * l.head_dim);
    max_inter = std::max(max_inter, l.intermediate);
  }
  const int per = config_.ordered_embeddings ? c.vocab / config_.num_centroids : 0;
  const size_t sizes[kNumSlots] = {static_cast<size_t>(2 * config_.backbone_hidden),
                                   static_cast<size_t>(c.hidden), static_cast<size_t>(c.hidden),
                                   static_cast<size_t>(c.hidden), static_cast<size_t>(c.hidden),
                                   static_cast<size_t>(max_q), static_cast<size_t>(max_q),
                                   static_cast<size_t>(max_inter), static_cast<size_t>(max_inter),
                                   static_cast<size_t>(std::max(c.vocab, config_.num_centroids)),
                                   static_cast<size_t>(std::max(1, config_.centroid_top_k * per)),
                                   static_cast<size_t>(std::max(1, config_.centroid_top_k)),
                                   static_cast<size_t>(std::max(1, config_.centroid_top_k * per)),
                                   static_cast<size_t>(c.hidden)};
  for (size_t s : sizes) {
    G4_ASSIGN_OR_RETURN(auto b, backend_.Allocate(s * sizeof(float)));
    scratch_.push_back(std::move(b));
  }
  return Status::Ok();
}

Status Assistant::Draft(int32_t token, F32 state_in, int64_t position, const KvCache& cache,
                        std::vector<float>* logits, F32 state_out) {
  const ModelConfig& c = config_.text;
  if (cache.length() != position) return InvalidArgument("draft: the cache must hold exactly the positions before it");
  if (token < 0 || token >= c.vocab) return InvalidArgument("draft: token id outside the vocabulary");
  Backend& be = backend_;
  auto S = [&](int slot) { return F32{scratch_[slot].get(), 0}; };
  const int hb = config_.backbone_hidden;
  const F32 in2 = S(kIn2), y = S(kH);

  be.Embed(in2, target_.weights().embed, std::span<const int32_t>(&token, 1), std::sqrt(static_cast<float>(hb)));
  G4_RETURN_IF_ERROR(Trunk(state_in, position, cache));

  logits->resize(c.vocab);
  if (config_.ordered_embeddings) {
    // Score only the tokens of the top-k centroids; everything else gets their minimum - 1.
    const int C = config_.num_centroids, per = c.vocab / C, k = config_.centroid_top_k;
    std::vector<float> cent(C);
    be.MatMul(S(kLogits), y, centroids_, 1);
    G4_RETURN_IF_ERROR(be.Download(*scratch_[kLogits], 0, cent.data(), C * sizeof(float)));
    std::vector<int> order(C);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int a, int b) { return cent[a] > cent[b] || (cent[a] == cent[b] && a < b); });
    std::vector<int32_t> rows;
    for (int j = 0; j < k; ++j) {
      rows.insert(rows.end(), token_ordering_.begin() + order[j] * per, token_ordering_.begin() + (order[j] + 1) * per);
    }
    std::vector<float> sel(rows.size());
    be.GatherMatVec(S(kSelected), y, weights_.embed, rows);
    G4_RETURN_IF_ERROR(be.Download(*scratch_[kSelected], 0, sel.data(), sel.size() * sizeof(float)));
    const float fill = *std::min_element(sel.begin(), sel.end()) - 1.0f;
    std::fill(logits->begin(), logits->end(), fill);
    for (size_t j = 0; j < rows.size(); ++j) (*logits)[rows[j]] = sel[j];
  } else {
    be.MatMul(S(kLogits), y, weights_.embed, 1);
    G4_RETURN_IF_ERROR(be.Download(*scratch_[kLogits], 0, logits->data(), c.vocab * sizeof(float)));
  }
  be.MatMul(state_out, y, post_projection_, 1);
  return Status::Ok();
}

Status Assistant::Trunk(F32 state_in, int64_t position, const KvCache& cache) {
  const ModelConfig& c = config_.text;
  Backend& be = backend_;
  auto S = [&](int slot) { return F32{scratch_[slot].get(), 0}; };
  const int hb = config_.backbone_hidden;
  const F32 in2 = S(kIn2), y = S(kH);
  // z = pre_projection(concat(E_target[token] * sqrt(backbone_hidden), state)).
  be.Copy(in2.At(hb), state_in, hb);
  be.MatMul(S(kX), in2, pre_projection_, 1);

  const LayerBuffers bufs{S(kH), S(kO), S(kF), S(kQ), S(kAttn), S(kGate), S(kUp), F32{}, F32{}, F32{}, F32{}};
  Residual res{S(kX), S(kX2), {}};
  const int64_t positions[1] = {position};
  for (int i = 0; i < c.num_layers; ++i) {
    const LayerConfig& l = c.layers[i];
    const KvCache::Layer& cl = cache.layer(l.type == AttentionType::kFull ? donor_full_ : donor_sliding_);
    LayerKv kv;
    kv.k_new = kv.k_cache = F32{cl.k.get(), 0};
    kv.v_new = kv.v_cache = F32{cl.v.get(), 0};
    kv.cached = std::min(position, cl.capacity);
    kv.capacity = cl.capacity;
    kv.window = l.window ? l.window + 1 : 0;  // the reference's bidirectional window: distance <= window
    kv.past_only = true;
    if (std::min<int64_t>(position, kv.window ? kv.window : position) > kv.cached) {
      return FailedPrecondition("draft: the target's cache keeps too few positions for the assistant");
    }
    RunLayer(be, c, i, weights_.layers[i], weights_.layer_scalars[i], bufs, res, 1, positions, kv);
  }
  Settle(be, res, 1, c.hidden);
  be.RmsNorm(y, res.x, weights_.final_norm, 1, c.hidden, c.rms_eps);

  return Status::Ok();
}

Status Assistant::DraftGreedyOnDevice(F32 token, F32 state_in, int64_t position, const KvCache& cache, F32 id_out,
                                      F32 state_out) {
  const ModelConfig& c = config_.text;
  if (cache.length() != position) return InvalidArgument("draft: the cache must hold exactly the positions before it");
  Backend& be = backend_;
  auto S = [&](int slot) { return F32{scratch_[slot].get(), 0}; };
  const F32 y = S(kH);
  be.EmbedIds(S(kIn2), target_.weights().embed, token, 1, std::sqrt(static_cast<float>(config_.backbone_hidden)));
  G4_RETURN_IF_ERROR(Trunk(state_in, position, cache));
  if (config_.ordered_embeddings) {
    // The argmax of the masked logits is the best of the top centroids' tokens (everything else
    // is below their minimum); among equal logits the lowest token id, as Argmax picks.
    const int C = config_.num_centroids, per = c.vocab / C, k = config_.centroid_top_k;
    be.MatMul(S(kLogits), y, centroids_, 1);
    be.TopK(S(kTopCentroids), S(kLogits), 1, C, k);
    be.EmbedIds(S(kRowIds), ordering_, S(kTopCentroids), k, 1.0f);  // (k, per) token ids
    be.GatherMatVecIds(S(kSelected), y, weights_.embed, S(kRowIds), k * per);
    be.ArgmaxKeyed(id_out, S(kSelected), S(kRowIds), k * per);
  } else {
    be.MatMul(S(kLogits), y, weights_.embed, 1);
    be.Argmax(id_out, S(kLogits), 1, c.vocab);
  }
  be.MatMul(state_out, y, post_projection_, 1);
  return Status::Ok();
}

}  // namespace g4
