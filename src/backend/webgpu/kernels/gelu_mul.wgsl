// out[r, c] = gelu_tanh(gate[r, c]) * up[r * up_stride + c].   P: out, gate, up, rows, cols, up_stride
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let i = gid(id, n);
  let cols = pu(4u);
  if (i >= pu(3u) * cols) { return; }
  let r = i / cols; let c = i % cols;
  A[pu(0u) + i] = gelu_tanh(A[pu(1u) + i]) * A[pu(2u) + r * pu(5u) + c];
}
