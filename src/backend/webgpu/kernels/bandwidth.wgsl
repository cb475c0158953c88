// Reads a whole weight buffer (W1) as 16-byte words: the benchmark's bandwidth roofline.
struct Params {
  words: u32,  // 16-byte words of W1
  sink: u32,   // a float the reads feed (never written for a zero-filled buffer)
}
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let threads = n.x * 256u;
  var acc = vec4<u32>(0u);
  for (var i = id.x; i < P.words; i += threads) { acc ^= W1[i]; }
  // Never true for the zero-filled buffer, but the compiler cannot know: the reads stay.
  if (acc.x + acc.y + acc.z + acc.w == 0x9e3779b9u) { afset(P.sink, bitcast<f32>(acc.x)); }
}
