// Attention of one (row, head) over one split of its visible positions, for any head dim up to
// 512 and any offsets (attention_wide.wgsl reads 16 bytes at a time where it can); splits > 1
// leave (max, sum, unnormalised output) for attention_combine.wgsl, one split writes the output.
// Positions in tiles of 64 with an online softmax across tiles. Scores: a team of 16 threads a
// position, 16 positions at a time, each lane keeping its partial sums of all four rounds, summed
// once a tile. Values: four groups of 64 threads, each over every fourth position and up to 8
// head dimensions a thread, the groups' sums added at the end. Scale 1.
//! uses attention_span
var<workgroup> qs: array<f32, 512>;
var<workgroup> sc: array<f32, 64>;
var<workgroup> scratch: array<f32, 2048>;  // the scores' partial sums (64 x 16), then the groups' outputs (4 x 512)

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let t = wid(wg, n);
  let d = P.head_dim; let splits = P.splits;
  if (t >= P.rows * P.heads * splits) { return; }
  let pl = workgroup_place(lid.x);
  let span = attention_span(t, pl);
  let rh = span.rh; let kv = span.kv; let slo = span.slo; let shi = span.shi;
  let q = P.q + rh * d;
  for (var i = lid.x; i < d; i += 256u) { qs[i] = af(q + i); }
  workgroupBarrier();
  let team = lid.x >> 4u; let lane = lid.x & 15u;
  let group = lid.x >> 6u; let gl = lid.x & 63u;
  var m = -3.0e38;
  var l = 0.0;
  var acc: array<f32, 8>;  // dimensions gl + 64 k
  for (var p0 = slo; p0 <= shi; p0 += 64) {
    let cnt = min(64, shi - p0 + 1);
    var part: array<f32, 4>;
    for (var it = 0; it < 4; it++) {
      let c = i32(team) + 16 * it;
      if (c < cnt) {
        let kb = kv_at(p0 + c, pl.start, kv, P.k_cache, P.k_new);
        var s = 0.0;
        for (var i = lane; i < d; i += 16u) { s += qs[i] * af(kb + i); }
        part[it] = s;
      }
    }
    for (var it = 0u; it < 4u; it++) { scratch[(team + 16u * it) * 16u + lane] = part[it]; }
    workgroupBarrier();
    if (lid.x < 64u) {
      var s = 0.0;
      for (var k = 0u; k < 16u; k++) { s += scratch[lid.x * 16u + k]; }
      sc[lid.x] = s;
    }
    workgroupBarrier();
    var tm = -3.0e38;
    for (var c = 0; c < cnt; c++) { tm = max(tm, sc[c]); }
    let nm = max(m, tm);
    let corr = exp(m - nm);
    var ts = 0.0;
    for (var c = 0; c < cnt; c++) { ts += exp(sc[c] - nm); }
    for (var k = 0u; k < 8u; k++) { acc[k] *= corr; }
    for (var c = i32(group); c < cnt; c += 4) {
      let e = exp(sc[c] - nm);
      let vb = kv_at(p0 + c, pl.start, kv, P.v_cache, P.v_new);
      for (var k = 0u; k < 8u; k++) {
        if (gl + 64u * k < d) { acc[k] += e * af(vb + gl + 64u * k); }
      }
    }
    l = l * corr + ts;
    m = nm;
    workgroupBarrier();
  }
  for (var k = 0u; k < 8u; k++) { scratch[group * 512u + gl + 64u * k] = acc[k]; }
  workgroupBarrier();
  var out: array<f32, 2>;  // dimensions lid and lid + 256
  for (var k = 0u; k < 2u; k++) {
    let i = lid.x + 256u * k;
    out[k] = scratch[i] + scratch[512u + i] + scratch[1024u + i] + scratch[1536u + i];
  }
  if (splits == 1u) {
    var inv = 0.0;
    if (l > 0.0) { inv = 1.0 / l; }
    let o = P.dst + rh * d;
    for (var k = 0u; k < 2u; k++) {
      if (lid.x + 256u * k < d) { afset(o + lid.x + 256u * k, out[k] * inv); }
    }
    return;
  }
  let o = P.partials + t * (d + 2u);
  if (lid.x == 0u) { afset(o, m); afset(o + 1u, l); }
  for (var k = 0u; k < 2u; k++) {
    if (lid.x + 256u * k < d) { afset(o + 2u + lid.x + 256u * k, out[k]); }
  }
}
