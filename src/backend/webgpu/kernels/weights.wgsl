// Weights in their stored types, read through the bindings W1 to W4 (prelude.wgsl). The stored
// types are DType's (src/base/dtype.h): f32, f16 and bf16 as stored, and the quantized q8 and q4
// in superblocks of 64 values: a word of the two groups' float16 scales, then the values (16
// words of four int8 for q8, 8 words of eight int4 offset by 8 for q4), lowest element in the
// lowest bits (weight_upload.cc writes them so).
//! variant W1_DTYPE: u32  W1's stored type (DT_*)
//! variant W2_DTYPE: u32  W2's stored type
//! variant W3_DTYPE: u32  W3's stored type
//! variant W4_DTYPE: u32  W4's stored type
//! variant W1_CHUNK: u32  elements in each binding when W1 is split over W1, W2 and W3 (a multiple of 64); 0: one binding
const DT_F32 = 0u;
const DT_F16 = 1u;
const DT_BF16 = 2u;
const DT_Q8 = 7u;
const DT_Q4 = 8u;

fn wtype(b: u32) -> u32 {
  switch b {
    case 1u: { return W1_DTYPE; }
    case 2u: { return W2_DTYPE; }
    case 3u: { return W3_DTYPE; }
    default: { return W4_DTYPE; }
  }
}
// 32-bit word k of binding b (1 to 4).
fn wword(b: u32, k: u32) -> u32 {
  switch b {
    case 1u: { return W1[k >> 2u][k & 3u]; }
    case 2u: { return W2[k >> 2u][k & 3u]; }
    case 3u: { return W3[k >> 2u][k & 3u]; }
    default: { return W4[k >> 2u][k & 3u]; }
  }
}
// 16-byte word k of binding b.
fn wvec(b: u32, k: u32) -> vec4<u32> {
  switch b {
    case 1u: { return W1[k]; }
    case 2u: { return W2[k]; }
    case 3u: { return W3[k]; }
    default: { return W4[k]; }
  }
}

// Where element e of the weight bound at b lies: (binding, element in it). W1 split over three
// bindings (W1_CHUNK) is read as one weight.
fn wplace(b: u32, e: u32) -> vec2<u32> {
  if (W1_CHUNK > 0u && b == 1u) {
    let c = min(e / max(W1_CHUNK, 1u), 2u);
    return vec2<u32>(1u + c, e - c * W1_CHUNK);
  }
  return vec2<u32>(b, e);
}

// Quantized layouts: words a superblock, values a word.
fn q_sb_words(t: u32) -> u32 { return select(9u, 17u, t == DT_Q8); }
fn q_per_word(t: u32) -> u32 { return select(8u, 4u, t == DT_Q8); }
// Values 4j .. 4j + 3 of a word of q8 (j 0) or q4 (j 0, 1) values, without integer-to-float
// conversions: each value is made the low mantissa bits of a power of two and the bias taken off
// (q4: value - 8; q8: the signed byte, offset by 128 first). A q4 nibble k of a half word is
// masked where it lies (bits 4k .. 4k + 3) and read as the mantissa of 2^(23 - 4k), whose
// lowest bit there is worth 1: no shift a value, one a half word.
fn q_unpack(t: u32, v: u32, j: u32) -> vec4<f32> {
  if (t == DT_Q4) {
    let hv = vec4<u32>(v >> (16u * j));
    let bits = (hv & vec4<u32>(0xfu, 0xf0u, 0xf00u, 0xf000u)) | vec4<u32>(0x4B000000u, 0x49000000u, 0x47000000u, 0x45000000u);
    return bitcast<vec4<f32>>(bits) - vec4<f32>(8388616.0, 524296.0, 32776.0, 2056.0);
  }
  let vv = vec4<u32>(v);
  let b = ((vv >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(255u)) ^ vec4<u32>(128u);
  return bitcast<vec4<f32>>(b | vec4<u32>(0x4B000000u)) - vec4<f32>(8388736.0);
}
fn bf16_pair(v: u32) -> vec2<f32> { return vec2<f32>(bitcast<f32>(v << 16u), bitcast<f32>(v & 0xffff0000u)); }
fn pair16(t: u32, v: u32) -> vec2<f32> {
  if (t == DT_F16) { return unpack2x16float(v); }
  return bf16_pair(v);
}

// Element e of the weight bound at b, in its stored type t (wtype(b)).
fn welem(b: u32, e: u32) -> f32 { return welem_t(b, wtype(b), e); }
fn welem_t(b: u32, t: u32, e: u32) -> f32 {
  let at = wplace(b, e);
  let bb = at.x; let i = at.y;
  switch t {
    case DT_F32: { return bitcast<f32>(wword(bb, i)); }
    case DT_F16: { return unpack2x16float(wword(bb, i >> 1u))[i & 1u]; }
    case DT_BF16: { return bf16_pair(wword(bb, i >> 1u))[i & 1u]; }
    default: {
      let base = (i >> 6u) * q_sb_words(t);
      let s = unpack2x16float(wword(bb, base))[(i >> 5u) & 1u];
      let per = q_per_word(t);
      let v = q_unpack(t, wword(bb, base + 1u + (i & 63u) / per), ((i & 63u) % per) / 4u);
      return v[i & 3u] * s;
    }
  }
}

// Eight consecutive weights: the words they are stored in (loaded before any is decoded, so that
// a thread's loads are in flight together), then the values, and the quantized types' scale apart
// (value = (lo, hi)[i] * scale), so that a dot product multiplies by it once.
struct OctWords { a: vec4<u32>, b: vec4<u32> }
struct Oct { lo: vec4<f32>, hi: vec4<f32>, scale: f32 }

// The words of elements e .. e + 7 of the weight bound at b, of type t (e a multiple of 8).
fn oct_words(b: u32, t: u32, e: u32) -> OctWords {
  let at = wplace(b, e);
  let bb = at.x; let i = at.y;
  var w: OctWords;
  if (t == DT_F32) {
    w.a = wvec(bb, i >> 2u);
    w.b = wvec(bb, (i >> 2u) + 1u);
  } else if (t == DT_F16 || t == DT_BF16) {
    w.a = wvec(bb, i >> 3u);
  } else {
    let base = (i >> 6u) * q_sb_words(t);
    let v = base + 1u + (i & 63u) / q_per_word(t);
    w.a = vec4<u32>(wword(bb, base), wword(bb, v), 0u, 0u);
    if (t == DT_Q8) { w.a.z = wword(bb, v + 1u); }
  }
  return w;
}
// The weights of oct_words(b, t, e).
fn oct_of(t: u32, w: OctWords, e: u32) -> Oct {
  var o: Oct;
  o.scale = 1.0;
  if (t == DT_F32) {
    o.lo = bitcast<vec4<f32>>(w.a);
    o.hi = bitcast<vec4<f32>>(w.b);
  } else if (t == DT_F16 || t == DT_BF16) {
    o.lo = vec4<f32>(pair16(t, w.a.x), pair16(t, w.a.y));
    o.hi = vec4<f32>(pair16(t, w.a.z), pair16(t, w.a.w));
  } else {
    o.scale = unpack2x16float(w.a.x >> ((e >> 1u) & 16u)).x;  // the group's half of the scale word
    if (t == DT_Q8) {
      o.lo = q_unpack(t, w.a.y, 0u);
      o.hi = q_unpack(t, w.a.z, 0u);
    } else {
      o.lo = q_unpack(t, w.a.y, 0u);
      o.hi = q_unpack(t, w.a.y, 1u);
    }
  }
  return o;
}
// Elements e .. e + 7 of the weight bound at b (e a multiple of 8), scaled.
fn woct(b: u32, e: u32) -> mat2x4<f32> {
  let t = wtype(b);
  let o = oct_of(t, oct_words(b, t, e), e);
  return mat2x4<f32>(o.lo * o.scale, o.hi * o.scale);
}
