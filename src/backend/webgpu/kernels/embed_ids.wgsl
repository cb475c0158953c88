// out[r, c] = table[ids[r], c] * scale, the ids read from the arena as floats.
// P: out, ids, rows, cols, scale
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let i = gid(id, n);
  let rows = pu(2u); let cols = pu(3u);
  if (i >= rows * cols) { return; }
  let r = i / cols; let c = i % cols;
  A[pu(0u) + i] = w1(u32(A[pu(1u) + r]) * cols + c) * pf(4u);
}
