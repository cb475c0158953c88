// Teams of 32 threads (a matrix-vector kernel gives each output feature one or more): the sums of
// up to four values over each team, valid in the team's lane 0. Called by the whole workgroup.
// On a device with subgroups the library takes team_subgroup.wgsl instead.
var<workgroup> team_partial: array<vec4<f32>, 256>;
fn team_sums(i: u32, lane: u32, v: vec4<f32>) -> vec4<f32> {
  team_partial[i] = v;
  workgroupBarrier();
  for (var h = 16u; h > 0u; h >>= 1u) {
    if (lane < h) { team_partial[i] += team_partial[i + h]; }
    workgroupBarrier();
  }
  let sums = team_partial[i];
  workgroupBarrier();
  return sums;
}
