// indices[r, :] = the columns of the k largest x[r, :], largest first, the lower column among
// equals. One workgroup per row; pick i is the best of what ranks below pick i - 1.
// P: indices, x, rows, cols, k
var<workgroup> bv: array<f32, 256>;
var<workgroup> bi: array<u32, 256>;
// a ranks before b: larger value, or equal value and lower column.
fn before(av: f32, ai: u32, bv_: f32, bi_: u32) -> bool { return av > bv_ || (av == bv_ && ai < bi_); }
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let r = wg.x + wg.y * n.x;
  if (r >= pu(2u)) { return; }
  let cols = pu(3u); let k = pu(4u);
  let x = pu(1u) + r * cols;
  var pv = 3.4e38; var pi = 0xffffffffu;  // the previous pick (none yet: everything ranks below)
  var first = true;
  for (var it = 0u; it < k; it++) {
    var v = -3.4e38; var i = 0xffffffffu;
    for (var c = lid.x; c < cols; c += 256u) {
      let xv = A[x + c];
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
    if (lid.x == 0u) { A[pu(0u) + r * k + it] = f32(pi); }
    workgroupBarrier();
  }
}
