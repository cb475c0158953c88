// Reads a whole weight buffer as 16-byte words (the benchmark's bandwidth roofline). Compiled on
// its own, without the prelude: W1 is read as vec4<u32>. P: words, out
@group(0) @binding(0) var<storage, read_write> A: array<u32>;
@group(0) @binding(1) var<storage, read> W1: array<vec4<u32>>;
@group(0) @binding(4) var<uniform> P: array<vec4<u32>, 4>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let threads = n.x * 256u;
  var acc = vec4<u32>(0u);
  for (var i = id.x; i < P[0].x; i += threads) { acc ^= W1[i]; }
  // Never true for the zero-filled buffer, but the compiler cannot know: the reads stay.
  if (acc.x + acc.y + acc.z + acc.w == 0x9e3779b9u) { A[P[0].y] = acc.x; }
}
