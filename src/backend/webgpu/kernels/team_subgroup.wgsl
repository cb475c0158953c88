// team.wgsl where the device has subgroups of SUBGROUP threads (4 to 32, a divisor of 32, each
// over consecutive invocations): the team's sums from subgroup adds, then, for subgroups narrower
// than a team, from its subgroups' partial sums. Valid in the team's lane 0. Called by the whole
// workgroup.
//! device SUBGROUP: u32  the device's subgroup width
var<workgroup> team_partial: array<vec4<f32>, 64>;
fn team_sums(i: u32, lane: u32, v: vec4<f32>) -> vec4<f32> {
  let s = subgroupAdd(v);
  if (SUBGROUP == 32u) { return s; }
  if (i % SUBGROUP == 0u) { team_partial[i / SUBGROUP] = s; }
  workgroupBarrier();
  var sums = vec4<f32>(0.0);
  if (lane == 0u) {
    for (var j = 0u; j < 32u / SUBGROUP; j++) { sums += team_partial[i / SUBGROUP + j]; }
  }
  workgroupBarrier();
  return sums;
}
