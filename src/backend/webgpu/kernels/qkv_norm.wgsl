// Attention's norms of a layer in one dispatch, per head and in place: q = rope(rmsnorm(q) * W1),
// k = rope(rmsnorm(k) * W2), v = rmsnorm(v) (rotate-half RoPE, as norm_rope.wgsl).
// P: q, k, v, rows, heads, kv_heads, half, positions, inv_freq, eps. A workgroup of 64 per
// (row, head) of q, then of k, then of v.
var<workgroup> partial: array<f32, 64>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let t = wg.x + wg.y * n.x;
  let rows = pu(3u); let heads = pu(4u); let kvh = pu(5u); let half = pu(6u);
  let per_row = heads + 2u * kvh;
  if (t >= rows * per_row) { return; }
  let r = t / per_row; let j = t % per_row;
  let dim = 2u * half;
  var which = 0u;  // 0: q, 1: k, 2: v
  var base = pu(0u) + (r * heads + j) * dim;
  if (j >= heads + kvh) {
    which = 2u;
    base = pu(2u) + (r * kvh + j - heads - kvh) * dim;
  } else if (j >= heads) {
    which = 1u;
    base = pu(1u) + (r * kvh + j - heads) * dim;
  }
  var s = 0.0;
  for (var i = lid.x; i < dim; i += 64u) { let v = A[base + i]; s += v * v; }
  partial[lid.x] = s;
  workgroupBarrier();
  for (var k = 32u; k > 0u; k >>= 1u) {
    if (lid.x < k) { partial[lid.x] += partial[lid.x + k]; }
    workgroupBarrier();
  }
  let inv = 1.0 / sqrt(partial[0] / f32(dim) + pf(9u));
  if (which == 2u) {
    for (var i = lid.x; i < dim; i += 64u) { A[base + i] = A[base + i] * inv; }
    return;
  }
  let pos = f32(au(pu(7u) + r));
  for (var i = lid.x; i < half; i += 64u) {
    var wa = w2(i); var wb = w2(i + half);
    if (which == 0u) { wa = w1(i); wb = w1(i + half); }
    let angle = A[pu(8u) + i] * pos;
    let ra = reduce_angle(angle); let c = cos(ra); let sn = sin(ra);
    let a = A[base + i] * inv * wa; let b = A[base + i + half] * inv * wb;
    A[base + i] = a * c - b * sn;
    A[base + i + half] = b * c + a * sn;
  }
}
