// ids[r] = index of the largest x[r, :], the lowest among equals, as a float. Long rows in two
// passes: pass 1 leaves the best (value, index) of each of `chunks` slices of a row in
// `partials`, pass 2 picks among them. P: ids, x, rows, cols, phase (0: one pass, 1, 2), chunks, partials
var<workgroup> best_v: array<f32, 256>;
var<workgroup> best_i: array<u32, 256>;

fn better(v: f32, i: u32, bv: f32, bi: u32) -> bool {
  return i != 0xffffffffu && (bi == 0xffffffffu || v > bv || (v == bv && i < bi));
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let g = wg.x + wg.y * n.x;
  let rows = pu(2u); let cols = pu(3u); let phase = pu(4u); let chunks = pu(5u); let parts = pu(6u);
  var r = g; var lo = 0u; var hi = cols;
  if (phase == 1u) {
    r = g / chunks;
    let per = (cols + chunks - 1u) / chunks;
    lo = (g % chunks) * per; hi = min(cols, lo + per);
  }
  if (r >= rows) { return; }
  var bv = -3.4e38; var bi = 0xffffffffu;
  if (phase == 2u) {
    for (var c = lid.x; c < chunks; c += 256u) {
      let at = parts + 2u * (r * chunks + c);
      let v = A[at]; let i = bitcast<u32>(A[at + 1u]);
      if (better(v, i, bv, bi)) { bv = v; bi = i; }
    }
  } else {
    let x = pu(1u) + r * cols;
    for (var c = lo + lid.x; c < hi; c += 256u) {
      let v = A[x + c];
      if (better(v, c, bv, bi)) { bv = v; bi = c; }
    }
  }
  best_v[lid.x] = bv; best_i[lid.x] = bi;
  workgroupBarrier();
  for (var k = 128u; k > 0u; k >>= 1u) {
    if (lid.x < k && better(best_v[lid.x + k], best_i[lid.x + k], best_v[lid.x], best_i[lid.x])) {
      best_v[lid.x] = best_v[lid.x + k]; best_i[lid.x] = best_i[lid.x + k];
    }
    workgroupBarrier();
  }
  if (lid.x == 0u) {
    if (phase == 1u) {
      A[parts + 2u * g] = best_v[0]; A[parts + 2u * g + 1u] = bitcast<f32>(best_i[0]);
    } else {
      A[pu(0u) + r] = f32(best_i[0]);
    }
  }
}
