// The sum of `parts` slices of n4 vec4s each, slice s at parts_at + s * n4 (split-column
// products of matmul_wide.wgsl): a thread a vec4. P: out, parts_at, n4, parts (offsets in floats,
// multiples of 4; the arena seen as vec4s).
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let i = gid(id, n);
  let n4 = pu(2u);
  if (i >= n4) { return; }
  let at = pu(1u) / 4u + i;
  var v = A[at];
  for (var s = 1u; s < pu(3u); s++) { v += A[at + s * n4]; }
  A[pu(0u) / 4u + i] = v;
}
