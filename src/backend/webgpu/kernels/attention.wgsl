// One thread per (row, head): softmax(q . k) v over the visible positions, scale 1.
// P: out, q, k_new, v_new, k_cache, v_cache, rows, heads, kv_heads, head_dim, window, start,
//    cached, capacity, past_only
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let t = gid(id, n);
  let rows = pu(6u); let heads = pu(7u); let kvh = pu(8u); let d = pu(9u);
  if (t >= rows * heads) { return; }
  let r = t / heads; let h = t % heads;
  let window = i32(pu(10u)); let start = i32(pu(11u)); let cached = i32(pu(12u)); let cap = i32(pu(13u));
  let pos = start + i32(r);
  var hi = pos; if (pu(14u) != 0u) { hi = pos - 1; }
  var lo = max(start - cached, 0);
  if (window > 0) { lo = max(lo, hi - window + 1); }
  let kv = h / (heads / kvh);
  let q = pu(1u) + (r * heads + h) * d;
  let o = pu(0u) + (r * heads + h) * d;
  let kv_row = kvh * d;
  for (var i = 0u; i < d; i++) { A[o + i] = 0.0; }
  if (hi < lo) { return; }
  var mx = -3.0e38;
  for (var p = lo; p <= hi; p++) {
    var kb: u32;
    if (p < start) { kb = pu(4u) + u32(p % cap) * kv_row + kv * d; } else { kb = pu(2u) + u32(p - start) * kv_row + kv * d; }
    var s = 0.0;
    for (var i = 0u; i < d; i++) { s += A[q + i] * A[kb + i]; }
    mx = max(mx, s);
  }
  var sum = 0.0;
  for (var p = lo; p <= hi; p++) {
    var kb: u32; var vb: u32;
    if (p < start) {
      kb = pu(4u) + u32(p % cap) * kv_row + kv * d; vb = pu(5u) + u32(p % cap) * kv_row + kv * d;
    } else {
      kb = pu(2u) + u32(p - start) * kv_row + kv * d; vb = pu(3u) + u32(p - start) * kv_row + kv * d;
    }
    var s = 0.0;
    for (var i = 0u; i < d; i++) { s += A[q + i] * A[kb + i]; }
    let e = exp(s - mx);
    sum += e;
    for (var i = 0u; i < d; i++) { A[o + i] += e * A[vb + i]; }
  }
  for (var i = 0u; i < d; i++) { A[o + i] /= sum; }
}
