// out[r, :] = in[r, :] * (mean(in[r]^2) + eps)^-0.5 * w.   P: out, in, rows, dim, eps, has_weight,
// add, scale, residual, normed, eps2, has_weight2. With add = 1 the result joins a residual
// instead: out[r, :] = (out[r, :] + that) * scale; with add = 2, the residual at P8: out[r, :] =
// (residual[r, :] + that) * scale; add = 3 is add = 2 followed by the next block's input norm of
// the joined row: normed[r, :] = out[r, :] * (mean(out[r]^2) + eps2)^-0.5 * W2 (when has_weight2).
// One workgroup of 256 per row.
var<workgroup> partial: array<f32, 256>;

// The sum of every thread's s, for all of them.
fn row_sum(lid: u32, s: f32) -> f32 {
  partial[lid] = s;
  workgroupBarrier();
  for (var k = 128u; k > 0u; k >>= 1u) {
    if (lid < k) { partial[lid] += partial[lid + k]; }
    workgroupBarrier();
  }
  let total = partial[0];
  workgroupBarrier();  // every thread has read it before partial is written again
  return total;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let r = wg.x + wg.y * n.x;
  if (r >= pu(2u)) { return; }
  let dim = pu(3u);
  let src = pu(1u) + r * dim; let dst = pu(0u) + r * dim;
  var s = 0.0;
  for (var i = lid.x; i < dim; i += 256u) { let v = A[src + i]; s += v * v; }
  let inv = 1.0 / sqrt(row_sum(lid.x, s) / f32(dim) + pf(4u));
  let weighted = pu(5u) != 0u;
  let add = pu(6u);
  let res = select(dst, pu(8u) + r * dim, add >= 2u);
  var s2 = 0.0;
  for (var i = lid.x; i < dim; i += 256u) {
    var w = 1.0;
    if (weighted) { w = w1(i); }
    let y = A[src + i] * inv * w;
    if (add != 0u) {
      let x = (A[res + i] + y) * pf(7u);
      A[dst + i] = x;
      s2 += x * x;
    } else {
      A[dst + i] = y;
    }
  }
  if (add != 3u) { return; }
  // Each thread reads back only the elements it wrote.
  let inv2 = 1.0 / sqrt(row_sum(lid.x, s2) / f32(dim) + pf(10u));
  let normed = pu(9u) + r * dim;
  let weighted2 = pu(11u) != 0u;
  for (var i = lid.x; i < dim; i += 256u) {
    var w = 1.0;
    if (weighted2) { w = w2(i); }
    A[normed + i] = A[dst + i] * inv2 * w;
  }
}
