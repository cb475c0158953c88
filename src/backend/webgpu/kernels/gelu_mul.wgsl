// dst[r, c] = gelu_tanh(gate[r, c]) * up[r * up_stride + c].
//! variant VEC: bool  cols, up_stride and the offsets multiples of 4: four columns a thread, read as vec4s
struct Params {
  dst: u32,        // (rows, cols)
  gate: u32,       // (rows, cols)
  up: u32,         // (rows, up_stride)
  rows: u32,
  cols: u32,
  up_stride: u32,
}
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let i = gid(id, n);
  let cols = P.cols;
  if (VEC) {
    let c4 = cols / 4u;
    if (i >= P.rows * c4) { return; }
    let r = i / c4; let c = i % c4;
    let g = A[P.gate / 4u + i];
    let u = A[(P.up + r * P.up_stride) / 4u + c];
    A[P.dst / 4u + i] = vec4<f32>(gelu_tanh(g.x), gelu_tanh(g.y), gelu_tanh(g.z), gelu_tanh(g.w)) * u;
    return;
  }
  if (i >= P.rows * cols) { return; }
  let r = i / cols; let c = i % cols;
  afset(P.dst + i, gelu_tanh(af(P.gate + i)) * af(P.up + r * P.up_stride + c));
}
