// The MoE router's choice, a thread a row, from its logits (the products of the normed input with
// the router's matrix, made before by matvec.wgsl or the tiles): softmax over experts of
// logits * scale, its top k renormalised to sum 1, times the per-expert scale (W1).
//! uses weights
struct Params {
  indices: u32,  // out: (rows, top_k), as floats
  weights: u32,  // out: (rows, top_k)
  logits: u32,   // (rows, experts)
  rows: u32,
  experts: u32,  // at most 256
  top_k: u32,    // at most 32
  scale: f32,    // hidden^-0.5
}
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let r = gid(id, n);
  let ne = P.experts; let k = P.top_k;
  if (r >= P.rows) { return; }
  let logits = P.logits + r * ne;
  var mx = -3.0e38;
  for (var e = 0u; e < ne; e++) { mx = max(mx, af(logits + e) * P.scale); }
  var probs: array<f32, 256>;
  var sum = 0.0;
  for (var e = 0u; e < ne; e++) { probs[e] = exp(af(logits + e) * P.scale - mx); sum += probs[e]; }
  var taken: array<bool, 256>;
  var top_sum = 0.0;
  var chosen: array<u32, 32>;
  for (var j = 0u; j < k; j++) {
    var best = 0u; var bv = -1.0;
    for (var e = 0u; e < ne; e++) { if (!taken[e] && probs[e] / sum > bv) { bv = probs[e] / sum; best = e; } }
    taken[best] = true; chosen[j] = best; top_sum += bv;
  }
  for (var j = 0u; j < k; j++) {
    let e = chosen[j];
    afset(P.indices + r * k + j, f32(e));
    afset(P.weights + r * k + j, probs[e] / sum / top_sum * welem(1u, e));
  }
}
