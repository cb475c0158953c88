// Per head, in place: x[r, h, :] = rope(rmsnorm(x[r, h, :]) * W1) (the query and key norms, then
// rotate-half RoPE). A workgroup of 64 a (row, head).
//! uses weights
struct Params {
  x: u32,          // (rows, heads, 2 half)
  rows: u32,
  heads: u32,
  half: u32,       // half the head dim
  positions: u32,  // a positions table (prelude's table_position)
  freqs: u32,      // (half) inverse frequencies
  eps: f32,
}
var<workgroup> partial: array<f32, 64>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let t = wid(wg, n);
  let half = P.half;
  if (t >= P.rows * P.heads) { return; }
  let dim = 2u * half;
  let base = P.x + t * dim;
  var s = 0.0;
  for (var i = lid.x; i < dim; i += 64u) { let v = af(base + i); s += v * v; }
  partial[lid.x] = s;
  workgroupBarrier();
  for (var k = 32u; k > 0u; k >>= 1u) {
    if (lid.x < k) { partial[lid.x] += partial[lid.x + k]; }
    workgroupBarrier();
  }
  let inv = 1.0 / sqrt(partial[0] / f32(dim) + P.eps);
  let pos = f32(table_position(P.positions, t / P.heads));
  for (var i = lid.x; i < half; i += 64u) {
    let ra = reduce_angle(af(P.freqs + i) * pos); let c = cos(ra); let sn = sin(ra);
    let a = af(base + i) * inv * welem(1u, i); let b = af(base + i + half) * inv * welem(1u, i + half);
    afset(base + i, a * c - b * sn);
    afset(base + i + half, b * c + a * sn);
  }
}
