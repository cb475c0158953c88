// One thread per (row, output): sum over the row's experts of weight * down_e(gelu(gate_e x) * up_e x).
// W1: gate_up (experts, 2 * width, hidden), W2: down (experts, hidden, width).
// P: out, x, indices, weights, rows, hidden, top_k, width
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let t = gid(id, n);
  let rows = pu(4u); let hid = pu(5u); let k = pu(6u); let width = pu(7u);
  if (t >= rows * hid) { return; }
  let r = t / hid; let o = t % hid;
  let x = pu(1u) + r * hid;
  var total = 0.0;
  for (var j = 0u; j < k; j++) {
    let e = u32(A[pu(2u) + r * k + j]);
    let wt = A[pu(3u) + r * k + j];
    var y = 0.0;
    for (var c = 0u; c < width; c++) {
      var g = 0.0; var u = 0.0;
      let gr = (e * 2u * width + c) * hid; let ur = (e * 2u * width + width + c) * hid;
      for (var i = 0u; i < hid; i++) { g += A[x + i] * w1(gr + i); u += A[x + i] * w1(ur + i); }
      y += gelu_tanh(g) * u * w2((e * hid + o) * width + c);
    }
    total += wt * y;
  }
  A[pu(0u) + t] = total;
}
