// attention.wgsl for head dims a multiple of 4 (up to 512) and every offset a multiple of 4:
// queries, keys and values are read 16 bytes at a time, and each thread loads all its words of a
// tile before it uses any (a tile costs one or two trips to memory, not one a word). Scores: a
// team of 16 lanes a position, 16 positions at a time, each lane four positions' words of the
// key; values: four groups of 64 threads over every fourth position, a thread holding dims
// 4t .. 4t + 3 and 256 + 4t .. 256 + 4t + 3, each group with its own running max and sum, merged
// at the end. Splits as attention.wgsl (the same partials for attention_combine.wgsl).
//! uses weights, attention_span
//! variant NORMED: bool  the query rms-normed with W1 and rotated (RoPE at its row's position, P.freqs, P.eps) as it is loaded
var<workgroup> qs: array<vec4<f32>, 128>;
var<workgroup> sc: array<f32, 64>;
var<workgroup> ew: array<f32, 64>;            // the tile's weights e^(s - m), m its group's max
var<workgroup> red: array<f32, 1040>;         // the scores' partial sums, 16 lanes x 64 positions (rows of 65)
var<workgroup> gmax: array<f32, 4>;           // the groups' running max
var<workgroup> gsum: array<f32, 4>;           // and sum
var<workgroup> outs: array<vec4<f32>, 512>;   // the groups' outputs, 4 x 128

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let t = wid(wg, n);
  let d = P.head_dim; let splits = P.splits;
  if (t >= P.rows * P.heads * splits) { return; }
  let pl = workgroup_place(lid.x);
  let span = attention_span(t, pl);
  let rh = span.rh; let kv = span.kv; let slo = span.slo; let shi = span.shi;
  let d4 = d / 4u;
  let q = (P.q + rh * d) / 4u;
  for (var i = lid.x; i < d4; i += 256u) { qs[i] = A[q + i]; }
  workgroupBarrier();
  if (NORMED) {
    var ss = 0.0;
    for (var i = lid.x; i < d4; i += 256u) { ss += dot(qs[i], qs[i]); }
    red[lid.x] = ss;
    workgroupBarrier();
    // A tree over the first d4 sums (the rest are 0), from the largest power of two below d4.
    for (var k = select(0u, 1u << firstLeadingBit(d4 - 1u), d4 > 1u); k > 0u; k >>= 1u) {
      if (lid.x < k) { red[lid.x] += red[lid.x + k]; }
      workgroupBarrier();
    }
    let inv = 1.0 / sqrt(red[0] / f32(d) + P.eps);
    let h4 = d4 / 2u; let half = d / 2u; let pos = f32(pl.start + i32(rh / P.heads));
    var lo = vec4<f32>(0.0); var hi = vec4<f32>(0.0);
    if (lid.x < h4) {
      let e = 4u * lid.x; let f = P.freqs + e;
      let angle = vec4<f32>(af(f), af(f + 1u), af(f + 2u), af(f + 3u)) * pos;
      let ra = reduce_angle4(angle); let c = cos(ra); let sn = sin(ra);
      let a = qs[lid.x] * inv * vec4<f32>(welem(1u, e), welem(1u, e + 1u), welem(1u, e + 2u), welem(1u, e + 3u));
      let b = qs[lid.x + h4] * inv * vec4<f32>(welem(1u, half + e), welem(1u, half + e + 1u), welem(1u, half + e + 2u), welem(1u, half + e + 3u));
      lo = a * c - b * sn;
      hi = b * c + a * sn;
    }
    workgroupBarrier();  // every thread has read qs and the sum
    if (lid.x < h4) { qs[lid.x] = lo; qs[lid.x + h4] = hi; }
    workgroupBarrier();
  }
  let team = lid.x >> 4u; let lane = lid.x & 15u;
  let group = lid.x >> 6u; let gl = lid.x & 63u;
  // Each group keeps its own running max and sum over its positions (c = group + 4j of each tile),
  // merged with the others' at the end, so no thread waits on a whole tile's max.
  var m = -3.0e38;
  var l = 0.0;
  var acc0 = vec4<f32>(0.0); var acc1 = vec4<f32>(0.0);
  for (var p0 = slo; p0 <= shi; p0 += 64) {
    let cnt = min(64, shi - p0 + 1);
    let slot0 = kv_tile_slot(p0);
    // Scores: lane's dims h + lane + 16j of positions team + 16it, all 16 words loaded before any
    // is used (one trip to memory, two for head dims over 256). The loads are unconditional, at
    // clamped positions and dims (always in bounds); what lies past the ends is masked after.
    var part = vec4<f32>(0.0);
    for (var h = 0u; h < d4; h += 64u) {
      var kx: array<vec4<f32>, 16>;
      for (var it = 0u; it < 4u; it++) {
        let kb = kv_at_tile(p0, slot0, min(i32(team + 16u * it), cnt - 1), pl.start, kv, P.k_cache, P.k_new) / 4u;
        for (var j = 0u; j < 4u; j++) { kx[it * 4u + j] = A[kb + min(h + lane + 16u * j, d4 - 1u)]; }
      }
      for (var j = 0u; j < 4u; j++) {
        let i = h + lane + 16u * j;
        let qv = select(vec4<f32>(0.0), qs[min(i, 127u)], i < d4);
        part += vec4<f32>(dot(qv, kx[j]), dot(qv, kx[4u + j]), dot(qv, kx[8u + j]), dot(qv, kx[12u + j]));
      }
    }
    for (var it = 0u; it < 4u; it++) { red[lane * 65u + team + 16u * it] = part[it]; }
    workgroupBarrier();
    if (lid.x < 64u) {
      var s = 0.0;
      for (var k = 0u; k < 16u; k++) { s += red[k * 65u + lid.x]; }
      sc[lid.x] = s;
    }
    workgroupBarrier();
    var tm = m;
    for (var j = 0; j < 16; j++) {
      let c = i32(group) + 4 * j;
      if (c < cnt) { tm = max(tm, sc[c]); }
    }
    let corr = exp(m - tm);
    acc0 *= corr; acc1 *= corr; l *= corr;
    m = tm;
    // Each position's weight, once: lane j < 16 of group g takes position g + 4j (0 past the
    // tile's end).
    if (gl < 16u) {
      let c = i32(group) + 4 * i32(gl);
      ew[c] = select(0.0, exp(sc[c] - m), c < cnt);
    }
    // Values: the group's 16 positions in batches whose words are all loaded (unconditionally, as
    // the keys) before any is used: 16 positions of one word each, or 8 of two for head dims over
    // 256.
    let g0 = min(gl, d4 - 1u); let g1 = min(gl + 64u, d4 - 1u);
    if (d4 <= 64u) {
      var vx: array<vec4<f32>, 16>;
      for (var j = 0; j < 16; j++) {
        vx[j] = A[kv_at_tile(p0, slot0, min(i32(group) + 4 * j, cnt - 1), pl.start, kv, P.v_cache, P.v_new) / 4u + g0];
      }
      workgroupBarrier();  // the weights are written
      for (var j = 0; j < 16; j++) {
        let e = ew[i32(group) + 4 * j];
        l += e;
        acc0 += e * vx[j];
      }
    } else {
      workgroupBarrier();  // the weights are written
      for (var j0 = 0; j0 < 16; j0 += 8) {
        var va: array<vec4<f32>, 8>; var vb: array<vec4<f32>, 8>;
        for (var j = 0; j < 8; j++) {
          let at = kv_at_tile(p0, slot0, min(i32(group) + 4 * (j0 + j), cnt - 1), pl.start, kv, P.v_cache, P.v_new) / 4u;
          va[j] = A[at + g0]; vb[j] = A[at + g1];
        }
        for (var j = 0; j < 8; j++) {
          let e = ew[i32(group) + 4 * (j0 + j)];
          l += e;
          acc0 += e * va[j]; acc1 += e * vb[j];
        }
      }
    }
    workgroupBarrier();
  }
  // The four groups merged: weights e^(m_g - M), M the largest group max.
  if (gl == 0u) { gmax[group] = m; gsum[group] = l; }
  workgroupBarrier();
  let mx = max(max(gmax[0], gmax[1]), max(gmax[2], gmax[3]));
  let w = exp(m - mx);
  outs[group * 128u + gl] = acc0 * w;
  outs[group * 128u + 64u + gl] = acc1 * w;
  workgroupBarrier();
  var lt = 0.0;
  for (var k = 0u; k < 4u; k++) { lt += gsum[k] * exp(gmax[k] - mx); }
  m = mx;
  l = lt;
  if (lid.x >= d4) { return; }
  let v = outs[lid.x] + outs[128u + lid.x] + outs[256u + lid.x] + outs[384u + lid.x];
  if (splits == 1u) {
    var inv = 0.0;
    if (l > 0.0) { inv = 1.0 / l; }
    A[(P.dst + rh * d) / 4u + lid.x] = v * inv;
    return;
  }
  // Partials of d + 2 floats (max, sum, output), not aligned to vec4s: written a float at a time.
  let o = P.partials + t * (d + 2u);
  if (lid.x == 0u) { afset(o, m); afset(o + 1u, l); }
  for (var k = 0u; k < 4u; k++) { afset(o + 2u + 4u * lid.x + k, v[k]); }
}
