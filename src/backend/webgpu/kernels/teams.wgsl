// For kernels with TEAMS teams of 32 threads per output feature (matvec_wide, matvec_q): the sum
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
