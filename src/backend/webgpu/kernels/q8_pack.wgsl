// Rows of floats made 8-bit an oct for a matrix-vector product over q4 weights (matvec.wgsl's
// Q8_IN): thread i writes oct i's word (q8_word.wgsl) at dst + 4i. Rows of whole octs, one after
// another, so oct i of the input is floats 8i .. 8i + 7.
//! uses q8_word
struct Params {
  dst: u32,    // the words: (octs) 16-byte words, offset in floats, a multiple of 4
  x: u32,      // the input: (octs, 8) floats, offset a multiple of 4
  octs: u32,   // octs of all the rows
}
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let i = gid(id, n);
  if (i >= P.octs) { return; }
  let x = P.x / 4u + 2u * i;
  A[P.dst / 4u + i] = bitcast<vec4<f32>>(q8_word(mat2x4<f32>(A[x], A[x + 1u])));
}
