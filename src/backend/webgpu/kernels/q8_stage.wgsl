// The input of a matrix-vector product of q4 weights made 8-bit in workgroup memory before the
// product (Q8 > 0, rows of whole octs): every workgroup reads each row's input once (the staged
// join where STAGE > 0, else P.x), rms-norms it with W3 (NORMED), and makes each oct one 16-byte
// word (q8_word.wgsl). Q8 is the stage's size in octs, at least ROWS * P.ins / 8.
//! uses weights, team, residual_stage, q8_word
var<workgroup> q8_in: array<vec4<u32>, max(Q8, 1u)>;

// Elements 8q .. 8q + 7 of row r's input before the norm.
fn q8_source(r: u32, q: u32, ins: u32) -> mat2x4<f32> {
  if (STAGE > 0u) { return staged8(r, q, ins); }
  let x = (P.x + r * ins) / 4u + 2u * q;
  return mat2x4<f32>(A[x], A[x + 1u]);
}

// Fills the stage. Called by the whole workgroup; the stage is ready for every thread when it
// returns.
fn q8_stage(local: u32, lane: u32) {
  let rows = P.rows; let ins = P.ins; let octs = ins / 8u;
  var inv = array<f32, 8>(1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0);
  if (NORMED) {
    var ss = array<f32, 8>();
    for (var r = 0u; r < ROWS; r++) {
      if (r < rows) {
        for (var q = local; q < octs; q += 256u) {
          let v = q8_source(r, q, ins);
          ss[r] += dot(v[0], v[0]) + dot(v[1], v[1]);
        }
      }
    }
    let sums = stage_sums(local, lane, ss);
    for (var r = 0u; r < ROWS; r++) { inv[r] = 1.0 / sqrt(sums[r] / f32(ins) + P.eps); }
  }
  for (var r = 0u; r < ROWS; r++) {
    if (r < rows) {
      for (var q = local; q < octs; q += 256u) {
        var v = q8_source(r, q, ins);
        if (NORMED) {
          let n = norm8(q, ins);
          v = mat2x4<f32>(v[0] * inv[r] * n[0], v[1] * inv[r] * n[1]);
        }
        q8_in[r * octs + q] = q8_word(v);
      }
    }
  }
  workgroupBarrier();
}
