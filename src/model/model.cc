#include "model/model.h"

#include <algorithm>
#include <cmath>

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
  kGate,     // (rows, intermediate)
  kUp,       // (rows, intermediate)
  kPle,      // (rows, layers * ple_dim)
  kPleTok,   // (rows, layers * ple_dim)
  kPleGate,  // (rows, ple_dim)
  kRoute,    // (rows, 2 * top_k) expert indices then weights
  kLogits,   // (rows, vocab)
  kNumSlots
};

}  // namespace

size_t KvCache::bytes() const {
  size_t b = 0;
  for (const auto& l : layers_) {
    if (l.k) b += l.k->bytes() + l.v->bytes();
  }
  return b;
}

Result<std::unique_ptr<Model>> Model::Load(const std::string& dir, Backend& backend) {
  G4_ASSIGN_OR_RETURN(ModelConfig config, LoadModelConfig(dir));
  G4_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> ckpt, Checkpoint::Open(dir));
  return Load(std::move(config), std::move(ckpt), backend);
}

Result<std::unique_ptr<Model>> Model::Load(ModelConfig config, std::unique_ptr<Checkpoint> ckpt, Backend& backend) {
  std::unique_ptr<Model> m(new Model(std::move(config), std::move(ckpt), backend));
  G4_RETURN_IF_ERROR(LoadWeights(m->config_, *m->ckpt_, backend, &m->weights_, &m->weight_buffers_, &m->report_));
  return m;
}

uint64_t Model::WeightBytesPerToken() const {
  auto bytes = [](const Weight& w) -> uint64_t {
    return w.present() ? static_cast<uint64_t>(w.count * w.rows * w.cols) * DTypeSize(w.dtype) : 0;
  };
  uint64_t total = 0;
  for (const auto& [dtype, b] : report_.bytes_by_dtype) total += b;
  const Weight& ple = weights_.ple_embed;
  if (ple.present()) total -= bytes(ple) - static_cast<uint64_t>(ple.cols) * DTypeSize(ple.dtype);
  if (config_.moe) {
    for (const auto& lw : weights_.layers) {
      const uint64_t experts = bytes(lw.experts_gate_up) + bytes(lw.experts_down);
      total -= experts - experts * config_.top_k_experts / config_.num_experts;
    }
  }
  return total;
}

Result<std::unique_ptr<KvCache>> Model::NewCache(int64_t max_positions, int reserve) {
  if (max_positions <= 0) return InvalidArgument("cache: max_positions must be positive");
  auto cache = std::make_unique<KvCache>();
  cache->max_positions_ = max_positions;
  cache->layers_.resize(config_.num_layers);
  for (int i = 0; i < config_.num_layers; ++i) {
    const LayerConfig& l = config_.layers[i];
    if (l.kv_shared) continue;
    KvCache::Layer& cl = cache->layers_[i];
    cl.row = l.kv_heads * l.head_dim;
    cl.capacity = l.window ? std::min<int64_t>(max_positions, std::max(1, l.window - 1) + reserve) : max_positions;
    const size_t bytes = static_cast<size_t>(cl.capacity) * cl.row * sizeof(float);
    G4_ASSIGN_OR_RETURN(cl.k, backend_.Allocate(bytes));
    G4_ASSIGN_OR_RETURN(cl.v, backend_.Allocate(bytes));
  }
  return cache;
}

Status Model::EnsureScratch(int rows) {
  if (rows <= scratch_rows_) return Status::Ok();
  const ModelConfig& c = config_;
  int max_q = 0, max_inter = 0;
  for (const auto& l : c.layers) {
    max_q = std::max(max_q, l.heads * l.head_dim);
    max_inter = std::max(max_inter, l.intermediate);
  }
  const size_t n = rows, pl = static_cast<size_t>(c.num_layers) * c.ple_dim;
  const size_t sizes[kNumSlots] = {
      n * c.hidden, n * c.hidden, n * c.hidden, n * c.hidden, n * max_q, n * max_q, n * max_inter, n * max_inter,
      std::max<size_t>(1, n * pl), std::max<size_t>(1, n * pl), std::max<size_t>(1, n * c.ple_dim),
      std::max<size_t>(1, n * 2 * c.top_k_experts), n * c.vocab};
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
  const ModelConfig& c = config_;
  const int n = static_cast<int>(tokens.size());
  const int64_t start = cache.length_;
  if (n == 0) return InvalidArgument("forward: no tokens");
  if (logit_rows < 0 || logit_rows > n) return InvalidArgument("forward: logit_rows out of range");
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
            out_logits = Scratch(kLogits);
  std::vector<int64_t> positions(n);
  for (int r = 0; r < n; ++r) positions[r] = start + r;

  // Embedding, and the per-layer inputs computed once per token.
  be.Embed(x, w.embed, tokens, std::sqrt(static_cast<float>(H)));
  const size_t pl = static_cast<size_t>(c.num_layers) * c.ple_dim;
  if (c.ple_dim) {
    be.Embed(ple_tok, w.ple_embed, tokens, std::sqrt(static_cast<float>(c.ple_dim)));
    be.MatMul(ple, x, w.ple_model_projection, n);
    be.Scale(ple, n * pl, 1.0f / std::sqrt(static_cast<float>(H)));
    be.RmsNorm(ple, ple, w.ple_projection_norm, n * c.num_layers, c.ple_dim, c.rms_eps);
    be.Add(ple, ple, ple_tok, n * pl);
    be.Scale(ple, n * pl, static_cast<float>(std::pow(2.0, -0.5)));
  }

  for (int i = 0; i < c.num_layers; ++i) {
    const LayerConfig& l = c.layers[i];
    const LayerWeights& lw = w.layers[i];
    const int hd = l.head_dim;

    // Attention block.
    be.RmsNorm(h, x, lw.input_norm, n, H, c.rms_eps);
    be.MatMul(q, h, lw.q_proj, n);
    be.RmsNorm(q, q, lw.q_norm, n * l.heads, hd, c.rms_eps);
    be.Rope(q, n, l.heads, l.inv_freq, positions);
    if (!l.kv_shared) {
      const F32 k{layer_k_[i].get(), 0}, v{layer_v_[i].get(), 0};
      be.MatMul(k, h, lw.k_proj, n);
      if (l.k_eq_v) {
        be.RmsNorm(v, k, Weight{}, n * l.kv_heads, hd, c.rms_eps);  // values: k before its norm
      } else {
        be.MatMul(v, h, lw.v_proj, n);
        be.RmsNorm(v, v, Weight{}, n * l.kv_heads, hd, c.rms_eps);
      }
      be.RmsNorm(k, k, lw.k_norm, n * l.kv_heads, hd, c.rms_eps);
      be.Rope(k, n, l.kv_heads, l.inv_freq, positions);
    }
    const int src = l.kv_source;
    const KvCache::Layer& cl = cache.layers_[src];
    AttentionShape shape;
    shape.rows = n;
    shape.heads = l.heads;
    shape.kv_heads = l.kv_heads;
    shape.head_dim = hd;
    shape.window = l.window;
    shape.start = start;
    shape.cached = std::min(start, cl.capacity);
    shape.capacity = cl.capacity;
    be.Attention(attn, q, F32{layer_k_[src].get(), 0}, F32{layer_v_[src].get(), 0}, F32{cl.k.get(), 0},
                 F32{cl.v.get(), 0}, shape);
    be.MatMul(o, attn, lw.o_proj, n);
    be.RmsNorm(o, o, lw.post_attn_norm, n, H, c.rms_eps);
    be.Add(x, x, o, static_cast<size_t>(n) * H);

    // MLP block (and the experts beside it).
    be.RmsNorm(h, x, lw.pre_ff_norm, n, H, c.rms_eps);
    be.MatMul(gate, h, lw.gate_proj, n);
    be.MatMul(up, h, lw.up_proj, n);
    be.GeluMul(gate, gate, up, n, l.intermediate, l.intermediate);
    be.MatMul(o, gate, lw.down_proj, n);
    if (c.moe) {
      MoeShape ms{n, H, c.num_experts, c.top_k_experts, c.moe_intermediate};
      const F32 idx = route, wts = route.At(static_cast<size_t>(n) * c.top_k_experts);
      be.RmsNorm(o, o, lw.post_ff_norm_1, n, H, c.rms_eps);
      be.MoeRoute(idx, wts, x, lw.router_scale, lw.router_proj, lw.per_expert_scale, ms, c.rms_eps);
      be.RmsNorm(h, x, lw.pre_ff_norm_2, n, H, c.rms_eps);
      be.MoeExperts(f, h, lw.experts_gate_up, lw.experts_down, idx, wts, ms);
      be.RmsNorm(f, f, lw.post_ff_norm_2, n, H, c.rms_eps);
      be.Add(o, o, f, static_cast<size_t>(n) * H);
    }
    be.RmsNorm(o, o, lw.post_ff_norm, n, H, c.rms_eps);
    be.Add(x, x, o, static_cast<size_t>(n) * H);

    // Per-layer embedding block.
    if (c.ple_dim) {
      be.MatMul(ple_gate, x, lw.ple_gate, n);
      be.GeluMul(ple_gate, ple_gate, ple.At(static_cast<size_t>(i) * c.ple_dim), n, c.ple_dim, static_cast<int>(pl));
      be.MatMul(o, ple_gate, lw.ple_proj, n);
      be.RmsNorm(o, o, lw.post_ple_norm, n, H, c.rms_eps);
      be.Add(x, x, o, static_cast<size_t>(n) * H);
    }
    be.Scale(x, static_cast<size_t>(n) * H, w.layer_scalars[i]);
  }

  // Commit the new positions' K/V.
  for (int i = 0; i < c.num_layers; ++i) {
    if (c.layers[i].kv_shared) continue;
    KvCache::Layer& cl = cache.layers_[i];
    be.CacheAppend(F32{cl.k.get(), 0}, F32{cl.v.get(), 0}, F32{layer_k_[i].get(), 0}, F32{layer_v_[i].get(), 0}, n,
                   cl.row, start, cl.capacity);
  }
  cache.length_ = start + n;

  be.RmsNorm(h, x, w.final_norm, n, H, c.rms_eps);
  if (logit_rows > 0) {
    const Weight& head = c.tie_word_embeddings ? w.embed : w.lm_head;
    const size_t first = static_cast<size_t>(n - logit_rows) * H;
    be.MatMul(out_logits, h.At(first), head, logit_rows);
    const size_t count = static_cast<size_t>(logit_rows) * c.vocab;
    if (c.final_softcap) be.Softcap(out_logits, count, *c.final_softcap);
    logits->resize(count);
    G4_RETURN_IF_ERROR(be.Download(*out_logits.buffer, 0, logits->data(), count * sizeof(float)));
  }
  return Status::Ok();
}

}  // namespace g4
