// One oct of eight floats made 8-bit (base/quant.h's RoundOctsToInt8: d = m / 127,
// q = round(x * (127 / m)), m the oct's largest magnitude, ties to even), as the one 16-byte word
// matvec.wgsl's oct_dots_q8 reads: the 8-bit values of the oct's even elements, of its odd ones
// (as q4's nibbles lie), d, and d times the sum of its values. An oct of zeros is a word of
// zeros. An oct holding a NaN or an infinity gets a NaN scale, so that every product it enters
// is NaN, as the reference's are; the bits are read, since max and comparisons may be compiled
// as though no NaN existed.
fn q8_word(v: mat2x4<f32>) -> vec4<u32> {
  let e = vec4<u32>(0x7f800000u);
  if (any((bitcast<vec4<u32>>(v[0]) & e) == e) || any((bitcast<vec4<u32>>(v[1]) & e) == e)) {
    return vec4<u32>(0u, 0u, 0x7fc00000u, 0x7fc00000u);  // a quiet NaN's bits
  }
  let mv = max(abs(v[0]), abs(v[1]));
  let m = max(max(mv.x, mv.y), max(mv.z, mv.w));
  if (!(m > 0.0)) { return vec4<u32>(0u); }
  let k = 127.0 / m; let d = m / 127.0;
  let ev = vec4<i32>(round(vec4<f32>(v[0].x, v[0].z, v[1].x, v[1].z) * k));
  let od = vec4<i32>(round(vec4<f32>(v[0].y, v[0].w, v[1].y, v[1].w) * k));
  let t = ev + od;
  return vec4<u32>(pack4xI8(ev), pack4xI8(od), bitcast<u32>(d), bitcast<u32>(d * f32(t.x + t.y + t.z + t.w)));
}
