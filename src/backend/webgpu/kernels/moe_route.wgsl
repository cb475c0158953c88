// The MoE router's choice, a workgroup a row, from its logits (the products of the normed input
// with the router's matrix, made before by matvec.wgsl or the tiles): softmax over experts of
// logits * scale, its top k renormalised to sum 1, times the per-expert scale (W1). The top k are
// taken one at a time, each the workgroup's largest remaining probability (the lowest expert
// among equals, as the CPU reference's stable sort).
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
var<workgroup> probs: array<f32, 256>;  // exp(logit - max); -1 once taken
var<workgroup> red: array<f32, 64>;
var<workgroup> red_i: array<u32, 64>;
var<workgroup> chosen: array<u32, 32>;

// The sum (or, take_max, the largest) of every thread's v, for all of them.
fn reduced(t: u32, v: f32, take_max: bool) -> f32 {
  red[t] = v;
  workgroupBarrier();
  for (var h = 32u; h > 0u; h >>= 1u) {
    if (t < h) { red[t] = select(red[t] + red[t + h], max(red[t], red[t + h]), take_max); }
    workgroupBarrier();
  }
  let total = red[0];
  workgroupBarrier();  // every thread has read it before red is written again
  return total;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let r = wid(wg, n);
  if (r >= P.rows) { return; }
  let ne = P.experts; let k = P.top_k; let t = lid.x;
  let logits = P.logits + r * ne;
  var m = -3.0e38;
  for (var e = t; e < ne; e += 64u) { m = max(m, af(logits + e) * P.scale); }
  let mx = reduced(t, m, true);
  var s = 0.0;
  for (var e = t; e < ne; e += 64u) { let p = exp(af(logits + e) * P.scale - mx); probs[e] = p; s += p; }
  let sum = reduced(t, s, false);
  var top_sum = 0.0;
  for (var j = 0u; j < k; j++) {
    var bv = -1.0; var bi = 0u;
    for (var e = t; e < ne; e += 64u) { if (probs[e] > bv) { bv = probs[e]; bi = e; } }
    red[t] = bv; red_i[t] = bi;
    workgroupBarrier();
    for (var h = 32u; h > 0u; h >>= 1u) {
      if (t < h && (red[t + h] > red[t] || (red[t + h] == red[t] && red_i[t + h] < red_i[t]))) {
        red[t] = red[t + h]; red_i[t] = red_i[t + h];
      }
      workgroupBarrier();
    }
    let e = red_i[0];
    top_sum += red[0] / sum;
    workgroupBarrier();  // every thread has read the winner before it is marked
    if (t == 0u) { chosen[j] = e; probs[e] = -1.0; }
    workgroupBarrier();
  }
  if (t < k) {
    let e = chosen[t];
    afset(P.indices + r * k + t, f32(e));
    afset(P.weights + r * k + t, exp(af(logits + e) * P.scale - mx) / sum / top_sum * welem(1u, e));
  }
}
