#include "model/model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/quant.h"
#include "model/layer.h"

namespace g4 {
namespace {

// Scratch buffer slots.
enum ScratchSlot {
  kX,        // (rows, hidden) residual stream
  kH,        // (rows, hidden) normed input of a block
  kO,        // (rows, hidden) block output
  kF,        // (rows, hidden) MoE expert output
  kQ,        // (rows, heads * head_dim)
  kAttn,     // (rows, heads * head_dim)
  kGate,     // (rows, max(intermediate, experts)); also the router's logits
  kUp,       // (rows, intermediate)
  kPle,      // (rows, layers * ple_dim)
  kPleTok,   // (rows, layers * ple_dim)
  kPleGate,  // (rows, ple_dim)
  kRoute,    // (rows, 2 * top_k) expert indices then weights
  kLogits,   // (min(rows, kLogitRows), vocab); more rows of logits get a buffer of their own
  kIds,      // (max(rows, 2 x kMaxTopKValues)) argmax token ids, or the top-k ids and logits
  kX2,       // (rows, hidden) the residual stream's second buffer
  kMoeAct,   // (rows, top_k, moe_intermediate) the chosen experts' activations
  kNumSlots
};

constexpr size_t kLogitRows = 16;

static_assert(kH == Model::kHiddenSlot, "hidden_rows() reads the slot the final norm writes");

}  // namespace

size_t KvCache::bytes() const {
  size_t b = 0;
  for (const auto& l : layers_) {
    if (l.k) b += l.k->bytes() + l.v->bytes();
  }
  return b;
}

Result<Model::Source> Model::Check(const std::string& dir) {
  Source s;
  G4_ASSIGN_OR_RETURN(s.config, LoadModelConfig(dir));
  G4_ASSIGN_OR_RETURN(s.ckpt, Checkpoint::Open(dir));
  G4_RETURN_IF_ERROR(PlanModel(s.config, *s.ckpt).status());
  return s;
}

Result<std::unique_ptr<Model>> Model::Load(const std::string& dir, Backend& backend) {
  G4_ASSIGN_OR_RETURN(Source s, Check(dir));
  return Load(std::move(s.config), std::move(s.ckpt), backend);
}

Result<std::unique_ptr<Model>> Model::Load(ModelConfig config, std::unique_ptr<Checkpoint> ckpt, Backend& backend) {
  std::unique_ptr<Model> m(new Model(std::move(config), std::move(ckpt), backend));
  G4_RETURN_IF_ERROR(LoadWeights(m->config_, *m->ckpt_, backend, &m->weights_, &m->weight_buffers_, &m->report_));
  return m;
}

uint64_t Model::WeightBytesPerToken() const {
  auto bytes = [](const Weight& w) -> uint64_t {
    return w.present() ? StoredBytes(w.dtype, static_cast<uint64_t>(w.count * w.rows * w.cols)) : 0;
  };
  uint64_t total = 0;
  for (const auto& [dtype, b] : report_.bytes_by_dtype) total += b;
  const Weight& ple = weights_.ple_embed;
  if (ple.present()) total -= bytes(ple) - StoredBytes(ple.dtype, static_cast<uint64_t>(ple.cols));
  if (config_.moe) {
    for (const auto& lw : weights_.layers) {
      const uint64_t experts = bytes(lw.experts_gate_up) + bytes(lw.experts_down);
      total -= experts - experts * config_.top_k_experts / config_.num_experts;
    }
  }
  return total;
}

Status KvCache::Rollback(int64_t length) {
  if (length < 0 || length > length_) return InvalidArgument("cache: cannot roll back to a later position");
  length_ = length;
  return Status::Ok();
}

Status KvCache::SetLength(int64_t length) {
  if (length < 0 || length > max_positions_) {
    return InvalidArgument("cache: length " + std::to_string(length) + " is outside 0.." + std::to_string(max_positions_));
  }
  length_ = length;
  return Status::Ok();
}

Result<std::unique_ptr<KvCache>> Model::NewCache(int64_t max_positions, int reserve, int sliding_keep) {
  if (max_positions <= 0) return InvalidArgument("cache: max_positions must be positive");
  auto cache = std::make_unique<KvCache>();
  cache->max_positions_ = max_positions;
  cache->layers_.resize(config_.num_layers);
  // Sized in 64 bits: where size_t has 32 (WebAssembly), a long context must be refused, not
  // wrapped into a small buffer.
  std::vector<uint64_t> bytes(config_.num_layers, 0);
  uint64_t total = 0;
  for (int i = 0; i < config_.num_layers; ++i) {
    const LayerConfig& l = config_.layers[i];
    if (l.kv_shared) continue;
    KvCache::Layer& cl = cache->layers_[i];
    cl.row = l.kv_heads * l.head_dim;
    const int keep = std::max({1, l.window - 1, sliding_keep});
    cl.capacity = l.window ? std::min<int64_t>(max_positions, keep + reserve) : max_positions;
    bytes[i] = static_cast<uint64_t>(cl.capacity) * static_cast<uint64_t>(cl.row) * sizeof(float);
    total += 2 * bytes[i];
    if (bytes[i] > std::numeric_limits<size_t>::max() / 2) {
      return ResourceExhausted("cache: " + std::to_string(cl.capacity) + " positions of layer " + std::to_string(i) +
                               " take " + std::to_string(bytes[i]) + " bytes for keys and as many for values, " +
                               "more than this build can address");
    }
  }
  for (int i = 0; i < config_.num_layers; ++i) {
    KvCache::Layer& cl = cache->layers_[i];
    if (bytes[i] == 0) continue;
    for (std::unique_ptr<Buffer>* half : {&cl.k, &cl.v}) {
      auto buffer = backend_.Allocate(static_cast<size_t>(bytes[i]));
      if (!buffer.ok()) {
        return Status(buffer.status().code(), "cache: a context of " + std::to_string(max_positions) +
                                                  " positions needs " + std::to_string(total) +
                                                  " bytes of keys and values (" + buffer.status().message() +
                                                  "); ask for a shorter prompt, fewer new tokens or a smaller context");
      }
      *half = std::move(buffer).value();
    }
  }
  return cache;
}

std::vector<size_t> Model::ScratchFloats(const ModelConfig& c, int rows) {
  int max_q = 0, max_inter = 0;
  for (const auto& l : c.layers) {
    max_q = std::max(max_q, l.heads * l.head_dim);
    max_inter = std::max(max_inter, l.intermediate);
  }
  const size_t n = rows, pl = static_cast<size_t>(c.num_layers) * c.ple_dim;
  const size_t gate = n * std::max(max_inter, c.moe ? c.num_experts : 0);  // also the router's logits
  return {n * c.hidden, n * c.hidden, n * c.hidden, n * c.hidden, n * max_q, n * max_q, gate, n * max_inter,
          std::max<size_t>(1, n * pl), std::max<size_t>(1, n * pl), std::max<size_t>(1, n * c.ple_dim),
          std::max<size_t>(1, n * 2 * c.top_k_experts), std::min<size_t>(n, kLogitRows) * c.vocab,
          std::max<size_t>(n, 2 * Backend::kMaxTopKValues), n * c.hidden,
          std::max<size_t>(1, n * c.top_k_experts * c.moe_intermediate)};
}

Model::MemoryEstimate Model::EstimateMemory(int64_t positions) const {
  MemoryEstimate m = EstimateMemory(config_, positions, static_cast<int>(std::min<int64_t>(positions, kPrefillChunk)));
  for (const auto& [dtype, b] : report_.bytes_by_dtype) m.weights += b;
  return m;
}

Model::MemoryEstimate Model::EstimateMemory(const ModelConfig& config, int64_t positions, int rows) {
  MemoryEstimate m;
  for (size_t f : ScratchFloats(config, rows)) m.activations += f * sizeof(float);
  for (const LayerConfig& l : config.layers) {
    if (l.kv_shared) continue;
    const int64_t capacity = l.window ? std::min<int64_t>(positions, std::max(1, l.window - 1)) : positions;
    m.kv_cache += 2ull * capacity * l.kv_heads * l.head_dim * sizeof(float);
    m.activations += 2ull * rows * l.kv_heads * l.head_dim * sizeof(float);  // the chunk's own K/V
  }
  return m;
}

uint64_t Model::ArenaBytes(const ModelConfig& config, int64_t positions, int rows) {
  const MemoryEstimate m = EstimateMemory(config, positions, rows);
  constexpr uint64_t kSlack = 64ull << 20;
  return m.kv_cache + m.activations + kSlack;
}

Result<std::span<const int32_t>> Model::PrefillHead(std::span<const int32_t> prompt, KvCache& cache) {
  while (prompt.size() > static_cast<size_t>(kPrefillChunk)) {
    G4_RETURN_IF_ERROR(Forward(prompt.first(kPrefillChunk), cache, 0, nullptr));
    prompt = prompt.subspan(kPrefillChunk);
  }
  return prompt;
}

Status Model::EnsureScratch(int rows) {
  if (rows <= scratch_rows_) return Status::Ok();
  const ModelConfig& c = config_;
  const std::vector<size_t> sizes = ScratchFloats(config_, rows);
  const size_t n = rows;
  std::vector<std::unique_ptr<Buffer>> scratch(kNumSlots), ks(c.num_layers), vs(c.num_layers);
  for (int i = 0; i < kNumSlots; ++i) {
    G4_ASSIGN_OR_RETURN(scratch[i], backend_.Allocate(sizes[i] * sizeof(float)));
  }
  for (int i = 0; i < c.num_layers; ++i) {
    const LayerConfig& l = c.layers[i];
    if (l.kv_shared) continue;
    const size_t bytes = n * l.kv_heads * l.head_dim * sizeof(float);
    G4_ASSIGN_OR_RETURN(ks[i], backend_.Allocate(bytes));
    G4_ASSIGN_OR_RETURN(vs[i], backend_.Allocate(bytes));
  }
  scratch_ = std::move(scratch);
  layer_k_ = std::move(ks);
  layer_v_ = std::move(vs);
  scratch_rows_ = rows;
  return Status::Ok();
}

Status Model::Forward(std::span<const int32_t> tokens, KvCache& cache, int logit_rows, std::vector<float>* logits) {
  if (logit_rows < 0 || logit_rows > static_cast<int>(tokens.size())) {
    return InvalidArgument("forward: logit_rows out of range");
  }
  G4_RETURN_IF_ERROR(Run(tokens, cache));
  if (logit_rows == 0) return Status::Ok();
  G4_ASSIGN_OR_RETURN(const F32 out_logits, Head(static_cast<int>(tokens.size()), logit_rows));
  const size_t count = static_cast<size_t>(logit_rows) * config_.vocab;
  logits->resize(count);
  return backend_.Download(*out_logits.buffer, 0, logits->data(), count * sizeof(float));
}

Status Model::ForwardArgmax(std::span<const int32_t> tokens, KvCache& cache, int rows, std::vector<int>* ids) {
  G4_RETURN_IF_ERROR(ForwardArgmaxTo(tokens, cache, rows, F32{}));
  std::vector<float> f(rows);
  G4_RETURN_IF_ERROR(backend_.Download(*scratch_[kIds], 0, f.data(), rows * sizeof(float)));
  ids->assign(f.begin(), f.end());
  return Status::Ok();
}

Status Model::ForwardArgmaxTo(std::span<const int32_t> tokens, KvCache& cache, int rows, F32 out_ids) {
  if (rows < 1 || rows > static_cast<int>(tokens.size())) return InvalidArgument("forward: rows out of range");
  G4_RETURN_IF_ERROR(Run(tokens, cache));
  G4_ASSIGN_OR_RETURN(const F32 out_logits, Head(static_cast<int>(tokens.size()), rows));
  backend_.Argmax(out_ids.buffer ? out_ids : Scratch(kIds), out_logits, rows, config_.vocab);
  return Status::Ok();
}

Status Model::ForwardTopK(std::span<const int32_t> tokens, KvCache& cache, int k,
                          std::vector<std::pair<int, float>>* top) {
  if (k < 1 || k > Backend::kMaxTopKValues || k > config_.vocab) return InvalidArgument("forward: top-k out of range");
  G4_RETURN_IF_ERROR(Run(tokens, cache));
  G4_ASSIGN_OR_RETURN(const F32 out_logits, Head(static_cast<int>(tokens.size()), 1));
  backend_.TopKValues(Scratch(kIds), out_logits, config_.vocab, k);
  std::vector<float> f(2 * static_cast<size_t>(k));
  G4_RETURN_IF_ERROR(backend_.Download(*scratch_[kIds], 0, f.data(), f.size() * sizeof(float)));
  top->clear();
  for (int j = 0; j < k; ++j) top->emplace_back(static_cast<int>(f[j]), f[k + j]);
  return Status::Ok();
}

Status Model::LastLogits(std::vector<float>* logits) {
  logits->resize(config_.vocab);
  return backend_.Download(*scratch_[kLogits], 0, logits->data(), logits->size() * sizeof(float));
}

Result<F32> Model::Head(int n, int rows) {
  const ModelConfig& c = config_;
  const Weight& head = c.tie_word_embeddings ? weights_.embed : weights_.lm_head;
  F32 out_logits = Scratch(kLogits);
  if (static_cast<size_t>(rows) > kLogitRows) {
    if (!wide_logits_ || wide_logits_->bytes() < static_cast<size_t>(rows) * c.vocab * sizeof(float)) {
      wide_logits_.reset();
      G4_ASSIGN_OR_RETURN(wide_logits_, backend_.Allocate(static_cast<size_t>(rows) * c.vocab * sizeof(float)));
    }
    out_logits = F32{wide_logits_.get(), 0};
  }
  const F32 h = Scratch(kH).At(static_cast<size_t>(n - rows) * c.hidden);
  // A q4 head takes its input rounded to 8 bits an oct (docs/QUANTIZATION.md); the normed
  // hidden rows stay as they are for the assistant.
  if (TakesRoundedInput(head.dtype)) {
    backend_.MatMulRoundedInput(out_logits, h, Scratch(kO), head, rows);
  } else {
    backend_.MatMul(out_logits, h, head, rows);
  }
  if (c.final_softcap) backend_.Softcap(out_logits, static_cast<size_t>(rows) * c.vocab, *c.final_softcap);
  return out_logits;
}

Status Model::ForwardArgmaxOnDevice(F32 ids, int n, KvCache& cache, int rows, F32 out_ids) {
  if (rows < 1 || rows > n) return InvalidArgument("forward: rows out of range");
  G4_RETURN_IF_ERROR(Run({}, cache, ids, n));
  G4_ASSIGN_OR_RETURN(const F32 out_logits, Head(n, rows));
  backend_.Argmax(out_ids, out_logits, rows, config_.vocab);
  return Status::Ok();
}

Status Model::Run(std::span<const int32_t> tokens, KvCache& cache, F32 device_ids, int device_n) {
  const ModelConfig& c = config_;
  const bool on_device = device_ids.buffer != nullptr;
  const int n = on_device ? device_n : static_cast<int>(tokens.size());
  const int64_t start = cache.length_;
  if (n == 0) return InvalidArgument("forward: no tokens");
  if (start + n > cache.max_positions_) {
    return OutOfRange("forward: position " + std::to_string(start + n - 1) + " is past the cache's " +
                      std::to_string(cache.max_positions_) + " positions");
  }
  for (int32_t t : tokens) {
    if (t < 0 || t >= c.vocab) return InvalidArgument("forward: token id " + std::to_string(t) + " is outside the vocabulary");
  }
  G4_RETURN_IF_ERROR(EnsureScratch(n));
  Backend& be = backend_;
  const ModelWeights& w = weights_;
  const int H = c.hidden;
  const F32 x = Scratch(kX), h = Scratch(kH), o = Scratch(kO), f = Scratch(kF), q = Scratch(kQ),
            attn = Scratch(kAttn), gate = Scratch(kGate), up = Scratch(kUp), ple = Scratch(kPle),
            ple_tok = Scratch(kPleTok), ple_gate = Scratch(kPleGate), route = Scratch(kRoute),
            moe_act = Scratch(kMoeAct);
  std::vector<int64_t> positions(n);
  for (int r = 0; r < n; ++r) positions[r] = start + r;

  // Embedding, and the per-layer inputs computed once per token.
  auto embed = [&](F32 out, const Weight& table, float scale) {
    if (on_device) {
      be.EmbedIds(out, table, device_ids, n, scale);
    } else {
      be.Embed(out, table, tokens, scale);
    }
  };
  embed(x, w.embed, std::sqrt(static_cast<float>(H)));
  const size_t pl = static_cast<size_t>(c.num_layers) * c.ple_dim;
  if (c.ple_dim) {
    embed(ple_tok, w.ple_embed, std::sqrt(static_cast<float>(c.ple_dim)));
    be.MatMul(ple, x, w.ple_model_projection, n);
    be.Scale(ple, n * pl, 1.0f / std::sqrt(static_cast<float>(H)));
    // The per-layer inputs, (ple_tok + rmsnorm(ple) * norm) * 2^-0.5, in ple_tok: one op.
    be.AddRmsNormTo(ResidualAdd{ple_tok, ple, ple_tok, w.ple_projection_norm, c.rms_eps,
                                static_cast<float>(std::pow(2.0, -0.5))},
                    n * c.num_layers, c.ple_dim);
  }

  const LayerBuffers bufs{h, o, f, q, attn, gate, up, ple_tok, ple_gate, route, moe_act};
  Residual res{x, Scratch(kX2), {}};
  for (int i = 0; i < c.num_layers; ++i) {
    const LayerConfig& l = c.layers[i];
    const int src = l.kv_source;
    const KvCache::Layer& cl = cache.layers_[src];
    LayerKv kv;
    kv.k_new = F32{layer_k_[src].get(), 0};
    kv.v_new = F32{layer_v_[src].get(), 0};
    kv.k_cache = F32{cl.k.get(), 0};
    kv.v_cache = F32{cl.v.get(), 0};
    kv.cached = std::min(start, cl.capacity);
    kv.capacity = cl.capacity;
    kv.window = l.window;
    RunLayer(be, c, i, w.layers[i], w.layer_scalars[i], bufs, res, n, positions, kv);
  }

  // Commit the new positions' K/V, every layer's at once.
  std::vector<CacheAppendLayer> appends;
  for (int i = 0; i < c.num_layers; ++i) {
    if (c.layers[i].kv_shared) continue;
    KvCache::Layer& cl = cache.layers_[i];
    appends.push_back({F32{cl.k.get(), 0}, F32{cl.v.get(), 0}, F32{layer_k_[i].get(), 0}, F32{layer_v_[i].get(), 0},
                       cl.row, cl.capacity});
  }
  be.CacheAppends(appends, n, start);
  cache.length_ = start + n;

  Settle(be, res, n, H);
  be.RmsNorm(h, res.x, w.final_norm, n, H, c.rms_eps);
  return Status::Ok();
}

}  // namespace g4
