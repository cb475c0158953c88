// out[r, o] = sum_i in[r, i] * w[o, i].   P: out, in, rows, out_features, in_features, weight_offset
// One workgroup of 64 per (row, output): strided partial sums, then a tree reduction.
var<workgroup> partial: array<f32, 64>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let k = wg.x + wg.y * n.x;
  let rows = pu(2u); let outs = pu(3u); let ins = pu(4u);
  if (k >= rows * outs) { return; }
  let r = k / outs; let o = k % outs;
  let x = pu(1u) + r * ins; let wrow = pu(5u) + o * ins;
  var s = 0.0;
  for (var i = lid.x; i < ins; i += 64u) { s += A[x + i] * w1(wrow + i); }
  partial[lid.x] = s;
  workgroupBarrier();
  for (var h = 32u; h > 0u; h >>= 1u) {
    if (lid.x < h) { partial[lid.x] += partial[lid.x + h]; }
    workgroupBarrier();
  }
  if (lid.x == 0u) { A[pu(0u) + r * outs + o] = partial[0]; }
}
