// attention.wgsl with the arena seen as vec4s, for head dims a multiple of 4 (up to 512) and
// every offset a multiple of 4: queries, keys and values are read 16 bytes at a time. Scores: a
// team of 16 lanes per position, 16 positions at a time, each lane one or two vec4s of the key;
// values: four groups of 64 threads over every fourth position, a thread holding dims 4t .. 4t + 3
// and 256 + 4t .. 256 + 4t + 3. Splits as attention.wgsl (the same partials for attention_combine).
// NORMED: the query is rms-normed with W1 and rotated (RoPE at its row's position, start + row;
// frequencies at P16, eps P17) as it is loaded, as norm_rope.wgsl would have done it first.
// P: out, q, k_new, v_new, k_cache, v_cache, rows, heads, kv_heads, head_dim,
//    window | past_only << 31, start, cached, capacity, splits, partials[, inv_freq, eps]
const NORMED = NORMEDv;
var<workgroup> qs: array<vec4<f32>, 128>;
var<workgroup> sc: array<f32, 64>;
var<workgroup> red: array<f32, 1024>;         // the scores' partial sums, 64 positions x 16 lanes
var<workgroup> outs: array<vec4<f32>, 512>;   // the groups' outputs, 4 x 128

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let t = wg.x + wg.y * n.x;
  let d = pu(9u); let splits = pu(14u);
  if (t >= pu(6u) * pu(7u) * splits) { return; }
  let span = attention_span(t);
  let rh = span.rh; let kv = span.kv; let slo = span.slo; let shi = span.shi;
  let d4 = d / 4u;
  let q = (pu(1u) + rh * d) / 4u;
  for (var i = lid.x; i < d4; i += 256u) { qs[i] = A[q + i]; }
  workgroupBarrier();
  if (NORMED) {
    var ss = 0.0;
    for (var i = lid.x; i < d4; i += 256u) { ss += dot(qs[i], qs[i]); }
    red[lid.x] = ss;
    workgroupBarrier();
    for (var k = 128u; k > 0u; k >>= 1u) {
      if (lid.x < k) { red[lid.x] += red[lid.x + k]; }
      workgroupBarrier();
    }
    let inv = 1.0 / sqrt(red[0] / f32(d) + pf(17u));
    let h4 = d4 / 2u; let half = d / 2u; let pos = f32(pu(11u) + rh / pu(7u));
    var lo = vec4<f32>(0.0); var hi = vec4<f32>(0.0);
    if (lid.x < h4) {
      let e = 4u * lid.x; let f = pu(16u) + e;
      let angle = vec4<f32>(af(f), af(f + 1u), af(f + 2u), af(f + 3u)) * pos;
      let ra = reduce_angle4(angle); let c = cos(ra); let sn = sin(ra);
      let a = qs[lid.x] * inv * vec4<f32>(w1(e), w1(e + 1u), w1(e + 2u), w1(e + 3u));
      let b = qs[lid.x + h4] * inv * vec4<f32>(w1(half + e), w1(half + e + 1u), w1(half + e + 2u), w1(half + e + 3u));
      lo = a * c - b * sn;
      hi = b * c + a * sn;
    }
    workgroupBarrier();  // every thread has read qs and the sum
    if (lid.x < h4) { qs[lid.x] = lo; qs[lid.x + h4] = hi; }
    workgroupBarrier();
  }
  let team = lid.x >> 4u; let lane = lid.x & 15u;
  let group = lid.x >> 6u; let gl = lid.x & 63u;
  var m = -3.0e38;
  var l = 0.0;
  var acc0 = vec4<f32>(0.0); var acc1 = vec4<f32>(0.0);
  for (var p0 = slo; p0 <= shi; p0 += 64) {
    let cnt = min(64, shi - p0 + 1);
    var part: array<f32, 4>;
    for (var it = 0; it < 4; it++) {
      let c = i32(team) + 16 * it;
      if (c < cnt) {
        let kb = kv_at(p0 + c, kv, pu(4u), pu(2u)) / 4u;
        var s = 0.0;
        for (var i = lane; i < d4; i += 16u) { s += dot(qs[i], A[kb + i]); }
        part[it] = s;
      }
    }
    for (var it = 0u; it < 4u; it++) { red[(team + 16u * it) * 16u + lane] = part[it]; }
    workgroupBarrier();
    if (lid.x < 64u) {
      var s = 0.0;
      for (var k = 0u; k < 16u; k++) { s += red[lid.x * 16u + k]; }
      sc[lid.x] = s;
    }
    workgroupBarrier();
    var tm = -3.0e38;
    for (var c = 0; c < cnt; c++) { tm = max(tm, sc[c]); }
    let nm = max(m, tm);
    let corr = exp(m - nm);
    var ts = 0.0;
    for (var c = 0; c < cnt; c++) { ts += exp(sc[c] - nm); }
    acc0 *= corr; acc1 *= corr;
    for (var c = i32(group); c < cnt; c += 4) {
      let e = exp(sc[c] - nm);
      let vb = kv_at(p0 + c, kv, pu(5u), pu(3u)) / 4u;
      if (gl < d4) { acc0 += e * A[vb + gl]; }
      if (gl + 64u < d4) { acc1 += e * A[vb + gl + 64u]; }
    }
    l = l * corr + ts;
    m = nm;
    workgroupBarrier();
  }
  outs[group * 128u + gl] = acc0;
  outs[group * 128u + 64u + gl] = acc1;
  workgroupBarrier();
  if (lid.x >= d4) { return; }
  let v = outs[lid.x] + outs[128u + lid.x] + outs[256u + lid.x] + outs[384u + lid.x];
  if (splits == 1u) {
    var inv = 0.0;
    if (l > 0.0) { inv = 1.0 / l; }
    A[(pu(0u) + rh * d) / 4u + lid.x] = v * inv;
    return;
  }
  // Partials of d + 2 floats (max, sum, output), not aligned to vec4s: written a float at a time.
  let o = pu(15u) + t * (d + 2u);
  if (lid.x == 0u) { afset(o, m); afset(o + 1u, l); }
  for (var k = 0u; k < 4u; k++) { afset(o + 2u + 4u * lid.x + k, v[k]); }
}
