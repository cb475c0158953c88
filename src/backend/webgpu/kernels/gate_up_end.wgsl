// The end the gate_up kernels share: for each row, the team's gate and up products and sum of
// squares (with PRE, the pending join made from its sums apart: residual_add.wgsl) give
// out[r, o] = gelu_tanh(g * inv) * (u * inv), inv = rms(in[r])^-1, written by the team's first
// lane; with PRE the joined input is then written out. Called by the whole workgroup.
fn gate_up_end(local: u32, lane: u32, o: u32, g: array<f32, ROWS>, u: array<f32, ROWS>, sq: array<f32, ROWS>) {
  let rows = pu(2u); let outs = pu(3u); let ins = pu(4u);
  for (var r = 0u; r < ROWS; r++) {
    let s = team_sums(local, lane, vec4<f32>(g[r], u[r], sq[r], pre_dd[r]));
    var p = vec4<f32>(0.0);
    if (PRE) { p = team_sums(local, lane, pre_sums[r]); }
    if (lane == 0u && o < outs && r < rows) {
      var j = s.xyz;
      if (PRE) { j = pre_combine(s.xyz, p, s.w, r, ins, o == 0u); }
      let inv = 1.0 / sqrt(j.z / f32(ins) + pf(5u));
      afset(pu(0u) + r * outs + o, gelu_tanh(j.x * inv) * (j.y * inv));
    }
  }
  if (PRE) { pre_write(lane, o == 0u, rows, ins, pu(1u)); }
}
