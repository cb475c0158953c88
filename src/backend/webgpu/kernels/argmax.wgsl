// ids[r] = the index of the largest x[r, :], the lowest among equals, as a float. Long rows in
// two passes: pass 1 leaves the best (value, index) of each of `chunks` slices of a row in
// `parts`, pass 2 picks among them. A row holding a value that is not finite gets id -1 (the
// host reads that instead of a token); pass 1 marks such a slice with index bits BAD.
//! uses finite_flag
struct Params {
  ids: u32,     // (rows)
  x: u32,       // (rows, cols)
  rows: u32,
  cols: u32,
  phase: u32,   // 0: one pass; 1, 2
  chunks: u32,  // slices a row in pass 1
  parts: u32,   // pass 1's results: (rows, chunks) pairs of (value, index bits)
}
const BAD = 0xfffffffeu;
var<workgroup> best_v: array<f32, 256>;
var<workgroup> best_i: array<u32, 256>;

fn better(v: f32, i: u32, bv: f32, bi: u32) -> bool {
  return i != 0xffffffffu && (bi == 0xffffffffu || v > bv || (v == bv && i < bi));
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  clear_bad(lid.x);
  let g = wid(wg, n);
  let rows = P.rows; let cols = P.cols; let phase = P.phase; let chunks = P.chunks; let parts = P.parts;
  var r = g; var lo = 0u; var hi = cols;
  if (phase == 1u) {
    r = g / chunks;
    let per = (cols + chunks - 1u) / chunks;
    lo = (g % chunks) * per; hi = min(cols, lo + per);
  }
  if (r >= rows) { return; }  // uniform: r is the workgroup's
  var bv = -3.4e38; var bi = 0xffffffffu; var seen_bad = false;
  if (phase == 2u) {
    for (var c = lid.x; c < chunks; c += 256u) {
      let at = parts + 2u * (r * chunks + c);
      let v = af(at); let i = au(at + 1u);
      if (i == BAD) { seen_bad = true; }
      if (better(v, i, bv, bi)) { bv = v; bi = i; }
    }
  } else {
    let x = P.x + r * cols;
    for (var c = lo + lid.x; c < hi; c += 256u) {
      let v = af(x + c);
      if (!is_finite(v)) { seen_bad = true; }
      if (better(v, c, bv, bi)) { bv = v; bi = c; }
    }
  }
  if (seen_bad) { atomicStore(&bad, 1u); }
  best_v[lid.x] = bv; best_i[lid.x] = bi;
  workgroupBarrier();
  for (var k = 128u; k > 0u; k >>= 1u) {
    if (lid.x < k && better(best_v[lid.x + k], best_i[lid.x + k], best_v[lid.x], best_i[lid.x])) {
      best_v[lid.x] = best_v[lid.x + k]; best_i[lid.x] = best_i[lid.x + k];
    }
    workgroupBarrier();
  }
  if (lid.x == 0u) {
    let is_bad = atomicLoad(&bad) != 0u;
    if (phase == 1u) {
      afset(parts + 2u * g, best_v[0]); afset(parts + 2u * g + 1u, bitcast<f32>(select(best_i[0], BAD, is_bad)));
    } else {
      afset(P.ids + r, select(f32(best_i[0]), -1.0, is_bad));
    }
  }
}
