// One workgroup of 64 per (row, head): keys in tiles of 64 positions with a thread per position
// for the scores, then the values with the threads over head dimensions; online softmax across
// tiles. Scale 1, float32. Head dims up to 512.
// P: out, q, k_new, v_new, k_cache, v_cache, rows, heads, kv_heads, head_dim, window, start,
//    cached, capacity, past_only
var<workgroup> qs: array<f32, 512>;
var<workgroup> ps: array<f32, 64>;
var<workgroup> red: array<f32, 64>;

// Where position p's key (or value, for the v buffers) of kv head `kv` starts.
fn kv_at(p: i32, kv: u32, cache: u32, fresh: u32) -> u32 {
  let d = pu(9u); let kv_row = pu(8u) * d; let start = i32(pu(11u));
  if (p < start) { return cache + u32(p % i32(pu(13u))) * kv_row + kv * d; }
  return fresh + u32(p - start) * kv_row + kv * d;
}

fn reduce(v: f32, lane: u32, is_max: bool) -> f32 {
  red[lane] = v;
  workgroupBarrier();
  for (var k = 32u; k > 0u; k >>= 1u) {
    if (lane < k) {
      if (is_max) { red[lane] = max(red[lane], red[lane + k]); } else { red[lane] += red[lane + k]; }
    }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let t = wg.x + wg.y * n.x;
  let rows = pu(6u); let heads = pu(7u); let kvh = pu(8u); let d = pu(9u);
  if (t >= rows * heads) { return; }
  let r = t / heads; let h = t % heads;
  let window = i32(pu(10u)); let start = i32(pu(11u)); let cached = i32(pu(12u));
  let pos = start + i32(r);
  var hi = pos;
  if (pu(14u) != 0u) { hi = pos - 1; }
  var lo = max(start - cached, 0);
  if (window > 0) { lo = max(lo, hi - window + 1); }
  let kv = h / (heads / kvh);
  let q = pu(1u) + (r * heads + h) * d;
  let o = pu(0u) + (r * heads + h) * d;
  for (var i = lid.x; i < d; i += 64u) { qs[i] = A[q + i]; }
  workgroupBarrier();
  var acc: array<f32, 8>;
  var m = -3.0e38;
  var l = 0.0;
  for (var p0 = lo; p0 <= hi; p0 += 64) {
    let p = p0 + i32(lid.x);
    var s = -3.0e38;
    if (p <= hi) {
      let kb = kv_at(p, kv, pu(4u), pu(2u));
      var dot = 0.0;
      for (var i = 0u; i < d; i++) { dot += qs[i] * A[kb + i]; }
      s = dot;
    }
    let nm = max(m, reduce(s, lid.x, true));
    let corr = exp(m - nm);
    var e = 0.0;
    if (p <= hi) { e = exp(s - nm); }
    ps[lid.x] = e;
    l = l * corr + reduce(e, lid.x, false);
    m = nm;
    let cnt = min(64, hi - p0 + 1);
    for (var j = 0u; j < 8u; j++) { acc[j] *= corr; }
    for (var c = 0; c < cnt; c++) {
      let vb = kv_at(p0 + c, kv, pu(5u), pu(3u));
      let pe = ps[c];
      for (var j = 0u; j < 8u; j++) {
        let dd = lid.x + j * 64u;
        if (dd < d) { acc[j] += pe * A[vb + dd]; }
      }
    }
    workgroupBarrier();
  }
  for (var j = 0u; j < 8u; j++) {
    let dd = lid.x + j * 64u;
    if (dd < d) {
      var v = 0.0;
      if (l > 0.0) { v = acc[j] / l; }
      A[o + dd] = v;
    }
  }
}
