// The MoE router, a thread a row: softmax over experts of proj(rmsnorm(x) * scale * hidden^-0.5),
// its top k renormalised to sum 1, times the per-expert scale. W1: the router's scale (hidden),
// W2: proj (experts, hidden), W3: per_expert_scale (experts).
//! uses weights
struct Params {
  indices: u32,  // (rows, top_k), as floats
  weights: u32,  // (rows, top_k)
  x: u32,        // (rows, hidden)
  rows: u32,
  hidden: u32,
  experts: u32,  // at most 256
  top_k: u32,    // at most 32
  eps: f32,
}
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let r = gid(id, n);
  let hid = P.hidden; let ne = P.experts; let k = P.top_k;
  if (r >= P.rows) { return; }
  let x = P.x + r * hid;
  var ss = 0.0;
  for (var i = 0u; i < hid; i++) { ss += af(x + i) * af(x + i); }
  let inv = 1.0 / sqrt(ss / f32(hid) + P.eps);
  let root = 1.0 / sqrt(f32(hid));
  var probs: array<f32, 256>;
  var mx = -3.0e38;
  for (var e = 0u; e < ne; e++) {
    var s = 0.0;
    for (var i = 0u; i < hid; i++) { s += af(x + i) * inv * welem(1u, i) * root * welem(2u, e * hid + i); }
    probs[e] = s; mx = max(mx, s);
  }
  var sum = 0.0;
  for (var e = 0u; e < ne; e++) { probs[e] = exp(probs[e] - mx); sum += probs[e]; }
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
    afset(P.weights + r * k + j, probs[e] / sum / top_sum * welem(3u, e));
  }
}
