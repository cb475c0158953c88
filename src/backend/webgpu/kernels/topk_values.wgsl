// dst[0..k) = the columns of the k largest x[0..cols), largest first, the lower column among
// equals (as floats); dst[k..2k) = their values. Two passes: pass 1 leaves the k best (value,
// column) pairs of each of `blocks` slices in `parts` (a slice with fewer than k columns pads
// with no column), pass 2 picks the k best among them. Each thread keeps its candidates in
// registers and gives up the one the workgroup takes. When an x is not finite every column
// written is -1 (the host reads that instead of tokens); pass 1 marks such a slice's first pair
// with column bits BAD.
//! uses finite_flag
struct Params {
  dst: u32,     // (2k)
  x: u32,       // (cols)
  cols: u32,
  k: u32,
  phase: u32,   // 1, 2
  blocks: u32,  // slices of pass 1
  parts: u32,   // pass 1's results: (blocks, k) pairs of (value, column bits)
}
const NONE = 0xffffffffu;
const BAD = 0xfffffffeu;
const HELD = 64u;  // candidates a thread: a slice of up to 16384 columns, or blocks * k <= 16384
var<workgroup> best_v: array<f32, 256>;
var<workgroup> best_i: array<u32, 256>;

fn before(v: f32, i: u32, bv: f32, bi: u32) -> bool {
  return i != NONE && (bi == NONE || v > bv || (v == bv && i < bi));
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  clear_bad(lid.x);
  let cols = P.cols; let k = P.k; let blocks = P.blocks; let parts = P.parts;
  var cv: array<f32, HELD>;
  var ci: array<u32, HELD>;
  var n = 0u;
  if (P.phase == 1u) {
    let per = (cols + blocks - 1u) / blocks;
    let lo = wg.x * per; let hi = min(cols, lo + per);
    for (var c = lo + lid.x; c < hi && n < HELD; c += 256u) {
      cv[n] = af(P.x + c); ci[n] = c;
      if (!is_finite(cv[n])) { atomicStore(&bad, 1u); }
      n++;
    }
  } else {
    let total = blocks * k;
    for (var t = lid.x; t < total && n < HELD; t += 256u) {
      cv[n] = af(parts + 2u * t); ci[n] = au(parts + 2u * t + 1u);
      if (ci[n] == BAD) { atomicStore(&bad, 1u); }
      n++;
    }
  }
  for (var it = 0u; it < k; it++) {
    var v = 0.0; var i = NONE; var at = 0u;
    for (var j = 0u; j < n; j++) {
      if (before(cv[j], ci[j], v, i)) { v = cv[j]; i = ci[j]; at = j; }
    }
    best_v[lid.x] = v; best_i[lid.x] = i;
    workgroupBarrier();
    for (var h = 128u; h > 0u; h >>= 1u) {
      if (lid.x < h && before(best_v[lid.x + h], best_i[lid.x + h], best_v[lid.x], best_i[lid.x])) {
        best_v[lid.x] = best_v[lid.x + h]; best_i[lid.x] = best_i[lid.x + h];
      }
      workgroupBarrier();
    }
    let wv = best_v[0]; let wi = best_i[0];
    workgroupBarrier();
    if (wi != NONE && wi == i) { ci[at] = NONE; }  // columns are unique: only the owner matches
    if (lid.x == 0u) {
      let is_bad = atomicLoad(&bad) != 0u;
      if (P.phase == 1u) {
        let at2 = parts + 2u * (wg.x * k + it);
        afset(at2, wv); afset(at2 + 1u, bitcast<f32>(select(wi, BAD, is_bad && it == 0u)));
      } else {
        afset(P.dst + it, select(f32(wi), -1.0, is_bad)); afset(P.dst + k + it, wv);
      }
    }
  }
}
