// For kernels with TEAMS teams of 32 threads per output feature (matvec_wide, matvec_q). The sum
// of v (valid in each team's lane 0) over a feature's teams, valid in its first team's lane 0.
// slice: the team's place among its feature's teams. Called by the whole workgroup.
var<workgroup> teams_partial: array<vec4<f32>, 8>;
fn teams_sum(team: u32, lane: u32, slice: u32, v: vec4<f32>) -> vec4<f32> {
  if (lane == 0u) { teams_partial[team] = v; }
  workgroupBarrier();
  var sum = v;
  if (lane == 0u && slice == 0u) {
    for (var t = 1u; t < TEAMS; t++) { sum += teams_partial[team + t]; }
  }
  workgroupBarrier();
  return sum;
}

// A feature's outputs, one per row (valid in its first team's lane 0): acc and sq summed over the
// team and then over the feature's teams, the pending join made (PRE: residual_add.wgsl), the rms norm
// (NORMED) and the gelu product (GELU) applied. Called by the whole workgroup.
fn teams_finish(local: u32, team: u32, lane: u32, slice: u32, o: u32, acc: array<f32, ROWS>,
                sq: array<f32, ROWS>) -> array<f32, ROWS> {
  let rows = pu(2u); let outs = pu(3u); let ins = pu(4u);
  var out: array<f32, ROWS>;
  for (var r = 0u; r < ROWS; r++) {
    var s = team_sums(local, lane, vec4<f32>(acc[r], sq[r], 0.0, pre_dd[r]));
    var p = vec4<f32>(0.0);
    if (PRE) { p = team_sums(local, lane, pre_sums[r]); }
    if (TEAMS > 1u) {  // the feature's first team adds up the others' sums
      s = teams_sum(team, lane, slice, s);
      if (PRE) { p = teams_sum(team, lane, slice, p); }
    }
    if (lane == 0u && slice == 0u && o < outs && r < rows) {
      var v = s.x;
      var ss = s.y;
      if (PRE) {
        let j = pre_combine(vec3<f32>(s.x, 0.0, s.y), p, s.w, r, ins, o == 0u);
        v = j.x;
        ss = j.z;
      }
      if (NORMED) { v *= 1.0 / sqrt(ss / f32(ins) + pf(5u)); }
      if (GELU) { v = gelu_tanh(v) * af(pu(6u) + r * pu(7u) + o); }
      out[r] = v;
    }
  }
  return out;
}

// Where row r of output feature o goes. two: products over two matrices (TWO), the first's P7
// features row after row at P0, the second's (second: o past them, feature `row` of it) at P6.
fn teams_out_at(r: u32, o: u32, row: u32, two: bool, second: bool) -> u32 {
  let outs = pu(3u);
  if (!two) { return pu(0u) + r * outs + o; }
  let first = pu(7u);
  return select(pu(0u) + r * first + o, pu(6u) + r * (outs - first) + row, second);
}
