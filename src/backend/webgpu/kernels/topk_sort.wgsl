// topk.wgsl for rows of at most 2048 columns (the assistant's centroids): the row sorted whole in
// workgroup memory by a bitonic network (largest first, the lower column among equals; columns
// past the row's end pad it to a power of two and rank last), then the first k columns written.
// One workgroup a row.
struct Params {
  indices: u32,  // (rows, k)
  x: u32,        // (rows, cols)
  rows: u32,
  cols: u32,     // at most 2048
  k: u32,
}
var<workgroup> sv: array<f32, 2048>;
var<workgroup> si: array<u32, 2048>;
// a ranks before b: larger value, or equal value and lower column (padding, column
// 0xffffffff, after everything).
fn before(av: f32, ai: u32, bv_: f32, bi_: u32) -> bool {
  if (ai == 0xffffffffu || bi_ == 0xffffffffu) { return ai < bi_; }
  return av > bv_ || (av == bv_ && ai < bi_);
}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let r = wid(wg, n);
  let rows = P.rows; let cols = P.cols; let k = P.k;
  let x = P.x + min(r, rows - 1u) * cols;  // every workgroup reaches every barrier
  var size = 2u;
  while (size < cols) { size <<= 1u; }
  for (var c = lid.x; c < size; c += 256u) {
    if (c < cols) { sv[c] = af(x + c); si[c] = c; } else { sv[c] = 0.0; si[c] = 0xffffffffu; }
  }
  workgroupBarrier();
  // Blocks of `block` columns sorted alternately first-to-last and last-to-first, merged.
  for (var block = 2u; block <= size; block <<= 1u) {
    for (var stride = block >> 1u; stride > 0u; stride >>= 1u) {
      for (var i = lid.x; i < size / 2u; i += 256u) {
        let lo = ((i & ~(stride - 1u)) << 1u) | (i & (stride - 1u));  // stride: a power of two
        let hi = lo + stride;
        let forward = (lo & block) == 0u;
        let av = sv[lo]; let ai = si[lo]; let bv = sv[hi]; let bi = si[hi];
        if (before(bv, bi, av, ai) == forward) {
          sv[lo] = bv; si[lo] = bi; sv[hi] = av; si[hi] = ai;
        }
      }
      workgroupBarrier();
    }
  }
  if (r >= rows) { return; }
  for (var j = lid.x; j < k; j += 256u) { afset(P.indices + r * k + j, f32(si[j])); }
}
