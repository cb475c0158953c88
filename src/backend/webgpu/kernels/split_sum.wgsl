// The sum of `parts` slices of n4 vec4s each, slice s at parts_at + s * n4 (the split-column
// products of matmul.wgsl): a thread a vec4.
struct Params {
  dst: u32,       // (n4 vec4s), offset in floats, a multiple of 4
  parts_at: u32,  // the first slice, in floats, a multiple of 4
  n4: u32,        // vec4s a slice
  parts: u32,     // slices
}
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let i = gid(id, n);
  let n4 = P.n4;
  if (i >= n4) { return; }
  let at = P.parts_at / 4u + i;
  var v = A[at];
  for (var s = 1u; s < P.parts; s++) { v += A[at + s * n4]; }
  A[P.dst / 4u + i] = v;
}
