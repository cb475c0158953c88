#include "model/layer.h"

#include <utility>

namespace g4 {

void Join(Backend& be, Residual& r, F32 delta, const Weight& norm, float eps, float scale, int rows, int dim) {
  Settle(be, r, rows, dim);
  r.pending = ResidualAdd{r.x, delta, r.spare, norm, eps, scale};
  std::swap(r.x, r.spare);
}

ResidualAdd TakePending(Residual& r) { return std::exchange(r.pending, ResidualAdd{}); }

void Settle(Backend& be, Residual& r, int rows, int dim) {
  if (r.pending.present()) be.AddRmsNormTo(TakePending(r), rows, dim);
}

void RunLayer(Backend& be, const ModelConfig& c, int i, const LayerWeights& lw, float layer_scalar,
              const LayerBuffers& b, Residual& res, int n, std::span<const int64_t> positions, const LayerKv& kv) {
  const LayerConfig& l = c.layers[i];
  const int H = c.hidden, hd = l.head_dim;
  const size_t nh = static_cast<size_t>(n) * H;
  const float eps = c.rms_eps;

  // Attention block.
  // Each projection folds in the input norm (b.h: the normed input where a backend makes it
  // apart); the first also makes the previous layer's last join. With keys and values of its
  // own (and apart), the layer projects them first, so that the query projection can norm them.
  const bool kv_first = !l.kv_shared && !l.k_eq_v;
  if (kv_first) {
    be.NormMatMul2(kv.k_new, kv.v_new, b.h, res.x, lw.input_norm, c.rms_eps, lw.k_proj, lw.v_proj, n,
                   TakePending(res));
    const KvNorms norms{kv.k_new, kv.v_new, l.kv_heads, lw.k_norm, l.inv_freq, positions};
    be.NormMatMulKvNorms(b.q, b.h, res.x, lw.input_norm, c.rms_eps, lw.q_proj, n, norms);
  } else {
    be.NormMatMul(b.q, b.h, res.x, lw.input_norm, c.rms_eps, lw.q_proj, n, TakePending(res));
  }
  if (l.k_eq_v && !l.kv_shared) {
    be.NormMatMul(kv.k_new, b.h, res.x, lw.input_norm, c.rms_eps, lw.k_proj, n);
    be.RmsNorm(kv.v_new, kv.k_new, Weight{}, n * l.kv_heads, hd, c.rms_eps);  // values: k before its norm
    be.NormRope(kv.k_new, n, l.kv_heads, lw.k_norm, c.rms_eps, l.inv_freq, positions);
  }
  AttentionShape shape;
  shape.rows = n;
  shape.heads = l.heads;
  shape.kv_heads = l.kv_heads;
  shape.head_dim = hd;
  shape.window = kv.window;
  shape.start = positions[0];
  shape.cached = kv.cached;
  shape.capacity = kv.capacity;
  shape.past_only = kv.past_only;
  // The query norm and RoPE go with the attention.
  be.NormRopeAttention(b.attn, b.q, lw.q_norm, c.rms_eps, l.inv_freq, positions, kv.k_new, kv.v_new, kv.k_cache,
                       kv.v_cache, shape);
  be.MatMul(b.o, b.attn, lw.o_proj, n);
  Join(be, res, b.o, lw.post_attn_norm, eps, 1.0f, n, H);

  // MLP block, and the experts beside it (the router reads the residual after attention).
  be.GateUp(b.gate, b.up, b.h, res.x, lw.pre_ff_norm, c.rms_eps, lw.gate_proj, lw.up_proj, n, TakePending(res));
  be.MatMul(b.o, b.gate, lw.down_proj, n);
  if (c.moe) {
    const MoeShape ms{n, H, c.num_experts, c.top_k_experts, c.moe_intermediate};
    const F32 idx = b.route, wts = b.route.At(static_cast<size_t>(n) * c.top_k_experts);
    be.RmsNorm(b.o, b.o, lw.post_ff_norm_1, n, H, c.rms_eps);
    // b.gate and b.h are free until the experts' input norm: the router's scratch.
    be.MoeRoute(idx, wts, b.gate, b.h, res.x, lw.router_scale, lw.router_proj, lw.per_expert_scale, ms, c.rms_eps);
    be.RmsNorm(b.h, res.x, lw.pre_ff_norm_2, n, H, c.rms_eps);
    be.MoeExperts(b.f, b.moe_act, b.h, lw.experts_gate_up, lw.experts_down, idx, wts, ms);
    be.RmsNorm(b.f, b.f, lw.post_ff_norm_2, n, H, c.rms_eps);
    be.Add(b.o, b.o, b.f, nh);
  }
  // The layer scalar multiplies the residual once every block has joined it.
  Join(be, res, b.o, lw.post_ff_norm, eps, c.ple_dim ? 1.0f : layer_scalar, n, H);

  // Per-layer embedding block.
  if (c.ple_dim) {
    const int pl = c.num_layers * c.ple_dim;
    be.MatMulGeluMul(b.ple_gate, res.x, lw.ple_gate, b.ple.At(static_cast<size_t>(i) * c.ple_dim), n, pl,
                     TakePending(res));
    be.MatMul(b.o, b.ple_gate, lw.ple_proj, n);
    Join(be, res, b.o, lw.post_ple_norm, eps, layer_scalar, n, H);
  }
}

}  // namespace g4
