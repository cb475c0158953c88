// Quantized weights: q8 (BITS 8) or q4 (BITS 4) in superblocks of 64 values, each a word of two
// float16 scales (one per group of 32), then the values, PER_WORD a word (see webgpu_backend.cc).
// BITS is fixed when compiled.
const BITS = QBITSu;
const PER_WORD = 32u / BITS;
const SB_WORDS = 1u + 64u / PER_WORD;

// Values 4j .. 4j + 3 of a word as floats, without integer-to-float conversions: each value is
// put in the low mantissa bits of 2^23 and the bias taken off (q4: value - 8; q8: the signed byte,
// offset by 128 first).
fn unpack_word(v: u32, j: u32) -> vec4<f32> {
  let vv = vec4<u32>(v);
  if (BITS == 4u) {
    let sh = vec4<u32>(0u, 4u, 8u, 12u) + vec4<u32>(16u * j);
    return bitcast<vec4<f32>>(((vv >> sh) & vec4<u32>(15u)) | vec4<u32>(0x4B000000u)) - vec4<f32>(8388616.0);
  }
  let b = ((vv >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(255u)) ^ vec4<u32>(128u);
  return bitcast<vec4<f32>>(b | vec4<u32>(0x4B000000u)) - vec4<f32>(8388736.0);
}

// Of the matrix's values flattened, the superblock word holding the scales of value e and the
// word holding values e .. e + PER_WORD - 1 (e a multiple of PER_WORD).
fn q_scale_word(e: u32) -> u32 { return (e >> 6u) * SB_WORDS; }
fn q_value_word(e: u32) -> u32 { return (e >> 6u) * SB_WORDS + 1u + (e & 63u) / PER_WORD; }
// Value e's scale, from its superblock's scale word.
fn q_scale(word: u32, e: u32) -> f32 { return unpack2x16float(word)[(e >> 5u) & 1u]; }
