// Rotate-half RoPE in place. P: x, rows, heads, half, positions, inv_freq
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let t = gid(id, n);
  let rows = pu(1u); let heads = pu(2u); let half = pu(3u);
  if (t >= rows * heads * half) { return; }
  let i = t % half; let h = (t / half) % heads; let r = t / (half * heads);
  let pos = f32(au(pu(4u) + r));
  let angle = A[pu(5u) + i] * pos;
  let ra = reduce_angle(angle); let c = cos(ra); let s = sin(ra);
  let base = pu(0u) + (r * heads + h) * 2u * half;
  let a = A[base + i]; let b = A[base + i + half];
  A[base + i] = a * c - b * s;
  A[base + i + half] = b * c + a * s;
}
