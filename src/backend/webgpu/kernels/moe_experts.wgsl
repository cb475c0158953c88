// The MoE experts, a thread a (row, output): the sum over the row's experts of
// weight * down_e(gelu(gate_e x) * up_e x). W1: gate_up (experts, 2 * width, hidden), the gate's
// rows first; W2: down (experts, hidden, width).
//! uses weights
struct Params {
  dst: u32,      // (rows, hidden)
  x: u32,        // (rows, hidden)
  indices: u32,  // (rows, top_k), as floats
  weights: u32,  // (rows, top_k)
  rows: u32,
  hidden: u32,
  top_k: u32,
  width: u32,    // moe_intermediate_size
}
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let t = gid(id, n);
  let hid = P.hidden; let k = P.top_k; let width = P.width;
  if (t >= P.rows * hid) { return; }
  let r = t / hid; let o = t % hid;
  let x = P.x + r * hid;
  var total = 0.0;
  for (var j = 0u; j < k; j++) {
    let e = u32(af(P.indices + r * k + j));
    let wt = af(P.weights + r * k + j);
    var y = 0.0;
    for (var c = 0u; c < width; c++) {
      var g = 0.0; var u = 0.0;
      let gr = (e * 2u * width + c) * hid; let ur = (e * 2u * width + width + c) * hid;
      for (var i = 0u; i < hid; i++) { g += af(x + i) * welem(1u, gr + i); u += af(x + i) * welem(1u, ur + i); }
      y += gelu_tanh(g) * u * welem(2u, (e * hid + o) * width + c);
    }
    total += wt * y;
  }
  afset(P.dst + t, total);
}
