// id = keys[j] for the j with the largest x[j], the lowest key among equals; -1 when an x is not
// finite. One workgroup.
//! uses finite_flag
struct Params {
  id: u32,    // (1)
  x: u32,     // (cols)
  keys: u32,  // (cols), as floats
  cols: u32,
}
var<workgroup> bv: array<f32, 256>;
var<workgroup> bk: array<f32, 256>;
@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3<u32>) {
  clear_bad(lid.x);
  let cols = P.cols;
  var v = -3.4e38; var key = 3.4e38; var any = false;
  for (var c = lid.x; c < cols; c += 256u) {
    let xv = af(P.x + c); let kv = af(P.keys + c);
    if (!is_finite(xv)) { atomicStore(&bad, 1u); }
    if (!any || xv > v || (xv == v && kv < key)) { v = xv; key = kv; any = true; }
  }
  bv[lid.x] = v; bk[lid.x] = key;
  workgroupBarrier();
  for (var h = 128u; h > 0u; h >>= 1u) {
    if (lid.x < h) {
      let ov = bv[lid.x + h]; let ok = bk[lid.x + h];
      if (ov > bv[lid.x] || (ov == bv[lid.x] && ok < bk[lid.x])) { bv[lid.x] = ov; bk[lid.x] = ok; }
    }
    workgroupBarrier();
  }
  if (lid.x == 0u) { afset(P.id, select(bk[0], -1.0, atomicLoad(&bad) != 0u)); }
}
