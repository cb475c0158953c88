// dst[r, c] = table[ids[r], c] * scale, the ids read from the arena as floats. W1: the table.
//! uses weights
struct Params {
  dst: u32,    // (rows, cols)
  ids: u32,    // (rows), as floats
  rows: u32,
  cols: u32,
  scale: f32,
}
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let i = gid(id, n);
  let cols = P.cols;
  if (i >= P.rows * cols) { return; }
  let r = i / cols; let c = i % cols;
  afset(P.dst + i, welem(1u, u32(af(P.ids + r)) * cols + c) * P.scale);
}
