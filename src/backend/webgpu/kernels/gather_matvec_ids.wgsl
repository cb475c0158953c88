// out[j] = in . w[rows[j]], the rows read from the arena as floats. A team of 32 threads per row,
// eight per workgroup. P: out, in, rows, count, cols
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let lane = lid.x & 31u;
  let j = (wg.x + wg.y * n.x) * 8u + (lid.x >> 5u);
  let cols = pu(4u);
  var s = 0.0;
  if (j < pu(3u)) {
    let base = u32(A[pu(2u) + j]) * cols;
    for (var i = lane; i < cols; i += 32u) { s += A[pu(1u) + i] * w1(base + i); }
  }
  let sum = team_sums(lid.x, lane, vec4<f32>(s, 0.0, 0.0, 0.0)).x;
  if (lane == 0u && j < pu(3u)) { A[pu(0u) + j] = sum; }
}
