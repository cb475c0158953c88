// One thread per row: router softmax over experts, top-k renormalised, times per-expert scale.
// W1: router scale (hidden), W2: proj (experts, hidden), W3: per_expert_scale (experts).
// P: indices, weights, x, rows, hidden, experts, top_k, eps
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let r = gid(id, n);
  let rows = pu(3u); let hid = pu(4u); let ne = pu(5u); let k = pu(6u);
  if (r >= rows) { return; }
  let x = pu(2u) + r * hid;
  var ss = 0.0;
  for (var i = 0u; i < hid; i++) { ss += A[x + i] * A[x + i]; }
  let inv = 1.0 / sqrt(ss / f32(hid) + pf(7u));
  let root = 1.0 / sqrt(f32(hid));
  var probs: array<f32, 256>;
  var mx = -3.0e38;
  for (var e = 0u; e < ne; e++) {
    var s = 0.0;
    for (var i = 0u; i < hid; i++) { s += A[x + i] * inv * w1(i) * root * w2(e * hid + i); }
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
    A[pu(0u) + r * k + j] = f32(e);
    A[pu(1u) + r * k + j] = probs[e] / sum / top_sum * w3(e);
  }
}
