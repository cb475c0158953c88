// out[r, o] = sum_i in[r, i] * w[o, i] for many rows (prefill): 64 x 64 output tiles, the inputs
// and weights staged through workgroup memory 16 columns at a time, 4 x 4 outputs per thread.
// Workgroup memory holds the tiles column-major (a column's 64 rows as 16 vec4s, columns 17 vec4s
// apart), so a thread reads its 4 rows and its 4 outputs of a column as one vec4 each.
// P: out, in, rows, out_features, in_features
var<workgroup> xs: array<vec4<f32>, 272>;  // 16 columns x 64 rows
var<workgroup> ws: array<vec4<f32>, 272>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let rows = pu(2u); let outs = pu(3u); let ins = pu(4u);
  let tiles_o = (outs + 63u) / 64u;
  let t = wg.x + wg.y * n.x;
  let r0 = (t / tiles_o) * 64u; let o0 = (t % tiles_o) * 64u;
  if (r0 >= rows) { return; }
  let tx = lid.x & 15u; let ty = lid.x >> 4u;
  var acc: array<vec4<f32>, 4>;  // rows ty * 4 + i, outputs tx * 4 ..
  for (var k0 = 0u; k0 < ins; k0 += 16u) {
    for (var e = lid.x; e < 1024u; e += 256u) {
      let m = e >> 4u; let k = e & 15u; let kk = k0 + k;
      var xv = 0.0;
      if (r0 + m < rows && kk < ins) { xv = A[pu(1u) + (r0 + m) * ins + kk]; }
      xs[k * 17u + (m >> 2u)][m & 3u] = xv;
      var wv = 0.0;
      if (o0 + m < outs && kk < ins) { wv = w1((o0 + m) * ins + kk); }
      ws[k * 17u + (m >> 2u)][m & 3u] = wv;
    }
    workgroupBarrier();
    for (var k = 0u; k < 16u; k++) {
      let a = xs[k * 17u + ty]; let b = ws[k * 17u + tx];
      acc[0] += a.x * b; acc[1] += a.y * b; acc[2] += a.z * b; acc[3] += a.w * b;
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < 4u; i++) {
    let r = r0 + ty * 4u + i;
    for (var j = 0u; j < 4u; j++) {
      let o = o0 + tx * 4u + j;
      if (r < rows && o < outs) { A[pu(0u) + r * outs + o] = acc[i][j]; }
    }
  }
}
