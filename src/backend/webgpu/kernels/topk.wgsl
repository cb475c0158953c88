// indices[r, :] = the columns of the k largest x[r, :], largest first, the lower column among
// equals (as floats). One workgroup a row; pick i is the best of what ranks below pick i - 1.
struct Params {
  indices: u32,  // (rows, k)
  x: u32,        // (rows, cols)
  rows: u32,
  cols: u32,
  k: u32,
}
var<workgroup> bv: array<f32, 256>;
var<workgroup> bi: array<u32, 256>;
// a ranks before b: larger value, or equal value and lower column.
fn before(av: f32, ai: u32, bv_: f32, bi_: u32) -> bool { return av > bv_ || (av == bv_ && ai < bi_); }
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let r = wid(wg, n);
  if (r >= P.rows) { return; }
  let cols = P.cols; let k = P.k;
  let x = P.x + r * cols;
  var pv = 3.4e38; var pi = 0xffffffffu;  // the previous pick (none yet: everything ranks below)
  var first = true;
  for (var it = 0u; it < k; it++) {
    var v = -3.4e38; var i = 0xffffffffu;
    for (var c = lid.x; c < cols; c += 256u) {
      let xv = af(x + c);
      if ((first || before(pv, pi, xv, c)) && (i == 0xffffffffu || before(xv, c, v, i))) { v = xv; i = c; }
    }
    bv[lid.x] = v; bi[lid.x] = i;
    workgroupBarrier();
    for (var h = 128u; h > 0u; h >>= 1u) {
      if (lid.x < h) {
        let ov = bv[lid.x + h]; let oi = bi[lid.x + h];
        if (oi != 0xffffffffu && (bi[lid.x] == 0xffffffffu || before(ov, oi, bv[lid.x], bi[lid.x]))) {
          bv[lid.x] = ov; bi[lid.x] = oi;
        }
      }
      workgroupBarrier();
    }
    pv = bv[0]; pi = bi[0];
    first = false;
    if (lid.x == 0u) { afset(P.indices + r * k + it, f32(pi)); }
    workgroupBarrier();
  }
}
