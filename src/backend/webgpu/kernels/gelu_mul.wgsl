// out[r, c] = gelu_tanh(gate[r, c]) * up[r * up_stride + c].   P: out, gate, up, rows, cols, up_stride
// VEC_IN (cols, up_stride and the offsets multiples of 4): four columns a thread, read as vec4s.
const VEC = VEC_INv;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let i = gid(id, n);
  let cols = pu(4u);
  if (VEC) {
    let c4 = cols / 4u;
    if (i >= pu(3u) * c4) { return; }
    let r = i / c4; let c = i % c4;
    let g = a4(pu(1u) / 4u + i);
    let u = a4((pu(2u) + r * pu(5u)) / 4u + c);
    a4set(pu(0u) / 4u + i, vec4<f32>(gelu_tanh(g.x), gelu_tanh(g.y), gelu_tanh(g.z), gelu_tanh(g.w)) * u);
    return;
  }
  if (i >= pu(3u) * cols) { return; }
  let r = i / cols; let c = i % cols;
  afset(pu(0u) + i, gelu_tanh(af(pu(1u) + i)) * af(pu(2u) + r * pu(5u) + c));
}
