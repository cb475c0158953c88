// out[r, :] = in[r, :] * (mean(in[r]^2) + eps)^-0.5 * w.   P: out, in, rows, dim, eps, has_weight,
// add, scale, residual. With add = 1 the result joins a residual instead: out[r, :] = (out[r, :] +
// that) * scale; with add = 2, the residual at P8: out[r, :] = (residual[r, :] + that) * scale.
// One workgroup of 256 per row.
var<workgroup> partial: array<f32, 256>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let r = wg.x + wg.y * n.x;
  if (r >= pu(2u)) { return; }
  let dim = pu(3u);
  let src = pu(1u) + r * dim; let dst = pu(0u) + r * dim;
  var s = 0.0;
  for (var i = lid.x; i < dim; i += 256u) { let v = A[src + i]; s += v * v; }
  partial[lid.x] = s;
  workgroupBarrier();
  for (var k = 128u; k > 0u; k >>= 1u) {
    if (lid.x < k) { partial[lid.x] += partial[lid.x + k]; }
    workgroupBarrier();
  }
  let inv = 1.0 / sqrt(partial[0] / f32(dim) + pf(4u));
  let weighted = pu(5u) != 0u;
  let add = pu(6u);
  let res = select(dst, pu(8u) + r * dim, add == 2u);
  for (var i = lid.x; i < dim; i += 256u) {
    var w = 1.0;
    if (weighted) { w = w1(i); }
    let y = A[src + i] * inv * w;
    if (add != 0u) {
      A[dst + i] = (A[res + i] + y) * pf(7u);
    } else {
      A[dst + i] = y;
    }
  }
}
