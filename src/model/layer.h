// One Gemma 4 decoder layer, written once for the target and the MTP assistant: norm,
// attention, post-norm, residual; norm, MLP (and experts), post-norm, residual; per-layer
// embedding; layer scalar.
#pragma once

#include <span>

#include "backend/backend.h"
#include "model/config.h"
#include "model/weights.h"

namespace g4 {

// Work buffers of a pass over `rows` rows.
struct LayerBuffers {
  F32 h;         // (rows, hidden)
  F32 o;         // (rows, hidden)
  F32 f;         // (rows, hidden)
  F32 q;         // (rows, heads * head_dim)
  F32 attn;      // (rows, heads * head_dim)
  F32 gate;      // (rows, intermediate)
  F32 up;        // (rows, intermediate)
  F32 ple;       // (rows, layers * ple_dim) per-layer inputs, when the model has them
  F32 ple_gate;  // (rows, ple_dim)
  F32 route;     // (rows, 2 * top_k) expert indices, then weights
  F32 moe_act;   // (rows, top_k, moe_intermediate) the chosen experts' activations
};

// The residual stream, in two buffers: a block's output joins it in the op that reads the stream
// next (ResidualAdd), which writes the sum to the other buffer.
struct Residual {
  F32 x;                // (rows, hidden) where the stream is, once `pending` is made
  F32 spare;            // (rows, hidden) the other buffer
  ResidualAdd pending;  // the join not made yet (none when !pending.present())
};

// Puts off x = (x + rmsnorm(delta) * norm) * scale until the next reader of r.x (making any
// join still pending first).
void Join(Backend& be, Residual& r, F32 delta, const Weight& norm, float eps, float scale, int rows, int dim);
// The pending join, for an op to make; none is pending afterwards.
ResidualAdd TakePending(Residual& r);
// Makes the pending join, if any: r.x holds the stream afterwards.
void Settle(Backend& be, Residual& r, int rows, int dim);

// What a layer's attention reads and writes.
struct LayerKv {
  F32 k_new;     // (rows, kv_heads * head_dim): written by layers with their own K/V, read by all
  F32 v_new;     // (rows, kv_heads * head_dim)
  F32 k_cache;   // (capacity, kv_heads * head_dim) ring of earlier positions
  F32 v_cache;
  int64_t cached = 0;
  int64_t capacity = 0;
  int window = 0;          // positions visible to a query (0: all)
  bool past_only = false;  // queries see only earlier positions (assistant drafting)
};

// Layer i over the residual `res`; the layer's last join is left pending for the next reader.
void RunLayer(Backend& be, const ModelConfig& c, int i, const LayerWeights& lw, float layer_scalar,
              const LayerBuffers& b, Residual& res, int rows, std::span<const int64_t> positions,
              const LayerKv& kv);

}  // namespace g4
