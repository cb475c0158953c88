// ids[r] = index of the largest x[r, :], the lowest among equals, as a float. One workgroup per row.
// P: ids, x, rows, cols
var<workgroup> best_v: array<f32, 64>;
var<workgroup> best_i: array<u32, 64>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let r = wg.x + wg.y * n.x;
  if (r >= pu(2u)) { return; }
  let cols = pu(3u);
  let x = pu(1u) + r * cols;
  var bv = -3.4e38; var bi = 0xffffffffu;
  for (var c = lid.x; c < cols; c += 64u) {
    let v = A[x + c];
    if (v > bv || bi == 0xffffffffu) { bv = v; bi = c; }
  }
  best_v[lid.x] = bv; best_i[lid.x] = bi;
  workgroupBarrier();
  for (var k = 32u; k > 0u; k >>= 1u) {
    if (lid.x < k) {
      let ov = best_v[lid.x + k]; let oi = best_i[lid.x + k];
      if (oi != 0xffffffffu && (ov > best_v[lid.x] || (ov == best_v[lid.x] && oi < best_i[lid.x]) || best_i[lid.x] == 0xffffffffu)) {
        best_v[lid.x] = ov; best_i[lid.x] = oi;
      }
    }
    workgroupBarrier();
  }
  if (lid.x == 0u) { A[pu(0u) + r] = f32(best_i[0]); }
}
