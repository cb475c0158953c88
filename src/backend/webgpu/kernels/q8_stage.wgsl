// The input of a matrix-vector product of q4 weights made 8-bit in workgroup memory before the
// product (Q8 > 0, rows of whole octs): every workgroup reads each row's input once (the staged
// join where STAGE > 0, else P.x), rms-norms it with W3 (NORMED), and rounds each oct to 8 bits
// (base/quant.h's RoundOctsToInt8: d = m / 127, q = round(x * (127 / m)), m the oct's largest
// magnitude, ties to even). An oct is kept as one 16-byte word: the 8-bit values of its even
// elements, of its odd ones (as q4's nibbles lie: matvec.wgsl's oct_dots_q8), d, and d times the
// sum of its values (the offset of 8 taken off through it). Q8 is the stage's size in octs, at
// least ROWS * P.ins / 8.
//! uses weights, team, residual_stage
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
        let mv = max(abs(v[0]), abs(v[1]));
        let m = max(max(mv.x, mv.y), max(mv.z, mv.w));
        var word = vec4<u32>(0u);
        if (m > 0.0) {
          let k = 127.0 / m; let d = m / 127.0;
          let ev = vec4<i32>(round(vec4<f32>(v[0].x, v[0].z, v[1].x, v[1].z) * k));
          let od = vec4<i32>(round(vec4<f32>(v[0].y, v[0].w, v[1].y, v[1].w) * k));
          let t = ev + od;
          word = vec4<u32>(pack4xI8(ev), pack4xI8(od), bitcast<u32>(d), bitcast<u32>(d * f32(t.x + t.y + t.z + t.w)));
        }
        q8_in[r * octs + q] = word;
      }
    }
  }
  workgroupBarrier();
}
