// Rotate-half RoPE in place, a thread a (row, head, pair).
struct Params {
  x: u32,          // (rows, heads, 2 half)
  rows: u32,
  heads: u32,
  half: u32,
  positions: u32,  // a positions table (prelude's table_position)
  freqs: u32,      // (half) inverse frequencies
}
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let t = gid(id, n);
  let heads = P.heads; let half = P.half;
  if (t >= P.rows * heads * half) { return; }
  let i = t % half; let h = (t / half) % heads; let r = t / (half * heads);
  let pos = f32(table_position(P.positions, r));
  let ra = reduce_angle(af(P.freqs + i) * pos); let c = cos(ra); let s = sin(ra);
  let base = P.x + (r * heads + h) * 2u * half;
  let a = af(base + i); let b = af(base + i + half);
  afset(base + i, a * c - b * s);
  afset(base + i + half, b * c + a * s);
}
