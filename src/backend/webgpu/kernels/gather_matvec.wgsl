// out[j] = in . w[rows[j]].   P: out, in, row_ids, count, cols
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let j = gid(id, n);
  let cols = pu(4u);
  if (j >= pu(3u)) { return; }
  let row = au(pu(2u) + j);
  var s = 0.0;
  for (var i = 0u; i < cols; i++) { s += A[pu(1u) + i] * w1(row * cols + i); }
  A[pu(0u) + j] = s;
}
