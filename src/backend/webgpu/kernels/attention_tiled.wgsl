// attention.wgsl for many rows (prefill), head dims a multiple of 4 up to 512 and every offset a
// multiple of 4. A workgroup takes 16 query vectors of one kv head (the query heads that share
// it, row after row) and walks the positions they see 64 at a time, so a key or value is read
// once for 16 queries, not once a query. Scores: thread (tq, tp) sums query tq against positions
// tp + 16 m over the head dim, 32 dims at a time staged in workgroup memory (slot i ^ (row & 7):
// no bank conflicts), the next 32 loaded while these multiply; softmax online a query; values: a
// thread holds vec4 di of the output of queries g, g + ng, ... (ng = 256 / (d / 4) groups).
//! uses attention_span
const VU = 8u;  // value positions loaded at once
var<workgroup> qs: array<vec4<f32>, 128>;  // 16 queries x 8 vec4s of the current 32 dims
var<workgroup> ks: array<vec4<f32>, 512>;  // 64 positions x 8 vec4s
var<workgroup> ps: array<vec4<f32>, 256>;  // probabilities: 64 positions x 16 queries
var<workgroup> red: array<f32, 256>;       // 16 queries x 16 lanes
var<workgroup> qm: array<f32, 16>;         // each query's running max,
var<workgroup> ql: array<f32, 16>;         // sum of exponentials,
var<workgroup> qc: array<f32, 16>;         // and this block's correction of both

fn slot8(row: u32, i: u32) -> u32 { return row * 8u + (i ^ (row & 7u)); }

// Vec4 c0 + (e & 7) of query vector q0 + (e >> 3) (e < 128); zero past the ends.
fn stage_q(e: u32, c0: u32, q0: u32, nq: u32, kv: u32, grp: u32, heads: u32, d: u32, d4: u32) -> vec4<f32> {
  let qq = q0 + (e >> 3u); let i = c0 + (e & 7u);
  if (e >= 128u || qq >= nq || i >= d4) { return vec4<f32>(0.0); }
  return A[(P.q + ((qq / grp) * heads + kv * grp + qq % grp) * d) / 4u + i];
}
// Vec4 c0 + (e & 7) of the key of position p0 + (e >> 3); zero past the ends.
fn stage_k(e: u32, c0: u32, p0: i32, hi: i32, start: i32, kv: u32, d4: u32) -> vec4<f32> {
  let p = p0 + i32(e >> 3u); let i = c0 + (e & 7u);
  if (p > hi || i >= d4) { return vec4<f32>(0.0); }
  return A[kv_at(p, start, kv, P.k_cache, P.k_new) / 4u + i];
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let d = P.head_dim; let d4 = d / 4u; let heads = P.heads; let kvh = P.kv_heads;
  let grp = heads / kvh;  // query heads per kv head
  let nq = P.rows * grp;  // query vectors of this kv head
  let t = wid(wg, n);
  let kv = t % kvh; let q0 = (t / kvh) * 16u;
  if (q0 >= nq) { return; }  // the same for the whole workgroup
  let pl = workgroup_place(lid.x);
  let span_lo = row_span(q0 / grp, pl).x;
  let span_hi = row_span(min(q0 + 15u, nq - 1u) / grp, pl).y;
  // Query vector q0 + j: row (q0 + j) / grp, head kv * grp + (q0 + j) % grp; its vec4 offset.
  let tq = lid.x >> 4u; let tp = lid.x & 15u;
  var my = vec2<i32>(1, 0);
  if (q0 + tq < nq) { my = row_span((q0 + tq) / grp, pl); }
  let ng = 256u / d4; let g = lid.x / d4; let di = lid.x % d4;
  var acc: array<vec4<f32>, 8>;  // queries g + ng j
  if (lid.x < 16u) { qm[lid.x] = -3.0e38; ql[lid.x] = 0.0; }
  workgroupBarrier();  // read at the end even where no position is seen
  for (var p0 = span_lo; p0 <= span_hi; p0 += 64) {
    var s = vec4<f32>(0.0);  // positions tp + 16 m
    // This thread's share of each 32 dims (a query vec4, two key vec4s), loaded for the next
    // dims while the staged ones multiply.
    var sq = stage_q(lid.x, 0u, q0, nq, kv, grp, heads, d, d4);
    var sk0 = stage_k(lid.x, 0u, p0, span_hi, pl.start, kv, d4);
    var sk1 = stage_k(lid.x + 256u, 0u, p0, span_hi, pl.start, kv, d4);
    for (var c0 = 0u; c0 < d4; c0 += 8u) {
      if (lid.x < 128u) { qs[slot8(lid.x >> 3u, lid.x & 7u)] = sq; }
      ks[slot8(lid.x >> 3u, lid.x & 7u)] = sk0;
      ks[slot8((lid.x + 256u) >> 3u, lid.x & 7u)] = sk1;
      workgroupBarrier();
      if (c0 + 8u < d4) {
        sq = stage_q(lid.x, c0 + 8u, q0, nq, kv, grp, heads, d, d4);
        sk0 = stage_k(lid.x, c0 + 8u, p0, span_hi, pl.start, kv, d4);
        sk1 = stage_k(lid.x + 256u, c0 + 8u, p0, span_hi, pl.start, kv, d4);
      }
      for (var i = 0u; i < 8u; i++) {
        let qv = qs[slot8(tq, i)];
        s += vec4<f32>(dot(qv, ks[slot8(tp, i)]), dot(qv, ks[slot8(tp + 16u, i)]),
                       dot(qv, ks[slot8(tp + 32u, i)]), dot(qv, ks[slot8(tp + 48u, i)]));
      }
      workgroupBarrier();
    }
    // The block's max per query, then its exponentials and their sum.
    var valid: vec4<bool>;
    var mx = -3.0e38;
    for (var m = 0u; m < 4u; m++) {
      let p = p0 + i32(tp + 16u * m);
      valid[m] = p >= my.x && p <= my.y;
      if (valid[m]) { mx = max(mx, s[m]); }
    }
    red[lid.x] = mx;
    workgroupBarrier();
    var tm = -3.0e38;
    for (var k = 0u; k < 16u; k++) { tm = max(tm, red[tq * 16u + k]); }
    let mo = qm[tq];
    let nm = max(mo, tm);
    workgroupBarrier();
    var sum = 0.0;
    for (var m = 0u; m < 4u; m++) {
      var e = 0.0;
      if (valid[m]) { e = exp(s[m] - nm); }
      sum += e;
      ps[(tp + 16u * m) * 4u + (tq >> 2u)][tq & 3u] = e;
    }
    red[lid.x] = sum;
    workgroupBarrier();
    if (tp == 0u) {
      var total = 0.0;
      for (var k = 0u; k < 16u; k++) { total += red[tq * 16u + k]; }
      let corr = exp(mo - nm);
      ql[tq] = ql[tq] * corr + total;
      qm[tq] = nm;
      qc[tq] = corr;
    }
    workgroupBarrier();
    let cnt = u32(min(64, span_hi - p0 + 1));
    if (g < ng) {
      for (var j = 0u; j < 8u; j++) {
        let q = g + ng * j;
        if (q < 16u) { acc[j] *= qc[q]; }
      }
      // Values VU positions at a time (VU loads in flight), zero past the block's end.
      for (var pp = 0u; pp < cnt; pp += VU) {
        var v: array<vec4<f32>, VU>;
        for (var u = 0u; u < VU; u++) {
          if (pp + u < cnt) { v[u] = A[kv_at(p0 + i32(pp + u), pl.start, kv, P.v_cache, P.v_new) / 4u + di]; } else { v[u] = vec4<f32>(0.0); }
        }
        for (var j = 0u; j < 8u; j++) {
          let q = g + ng * j;
          if (q < 16u) {
            let c = (q >> 2u); let l = q & 3u;
            var a = acc[j];
            for (var u = 0u; u < VU; u++) { a += ps[(pp + u) * 4u + c][l] * v[u]; }
            acc[j] = a;
          }
        }
      }
    }
    workgroupBarrier();
  }
  if (g >= ng) { return; }
  for (var j = 0u; j < 8u; j++) {
    let q = g + ng * j; let qq = q0 + q;
    if (q < 16u && qq < nq) {
      var inv = 0.0;
      if (ql[q] > 0.0) { inv = 1.0 / ql[q]; }
      A[(P.dst + ((qq / grp) * heads + kv * grp + qq % grp) * d) / 4u + di] = acc[j] * inv;
    }
  }
}
