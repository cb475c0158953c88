// Per head, in place: x[r, h, :] = rope(rmsnorm(x[r, h, :]) * w) (the query and key norms, then
// rotate-half RoPE). P: x, rows, heads, half, positions, inv_freq, eps. A workgroup of 64 per (row, head).
var<workgroup> partial: array<f32, 64>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let t = wg.x + wg.y * n.x;
  let rows = pu(1u); let heads = pu(2u); let half = pu(3u);
  if (t >= rows * heads) { return; }
  let dim = 2u * half;
  let base = pu(0u) + t * dim;
  var s = 0.0;
  for (var i = lid.x; i < dim; i += 64u) { let v = A[base + i]; s += v * v; }
  partial[lid.x] = s;
  workgroupBarrier();
  for (var k = 32u; k > 0u; k >>= 1u) {
    if (lid.x < k) { partial[lid.x] += partial[lid.x + k]; }
    workgroupBarrier();
  }
  let inv = 1.0 / sqrt(partial[0] / f32(dim) + pf(6u));
  let pos = f32(au(pu(4u) + t / heads));
  for (var i = lid.x; i < half; i += 64u) {
    let angle = A[pu(5u) + i] * pos;
    let ra = reduce_angle(angle); let c = cos(ra); let sn = sin(ra);
    let a = A[base + i] * inv * w1(i); let b = A[base + i + half] * inv * w1(i + half);
    A[base + i] = a * c - b * sn;
    A[base + i + half] = b * c + a * sn;
  }
}
