// Weight quantization: symmetric, one float16 scale per group of 32 consecutive values of a row
// (along the input dimension, so a matrix-vector product applies each scale to 32 products).
// Stored values: q8 as int8 in [-127, 127]; q4 as two values per byte in [-8, 7], offset by 8,
// the even element in the low nibble. value = q * scale.
#pragma once

#include <cstdint>

#include "base/dtype.h"

namespace g4 {

constexpr int kQuantGroup = 32;

// One group of 32: values and the float16 scale they share.
void QuantizeGroupQ8(const float* x, int8_t* q, uint16_t* scale);
void QuantizeGroupQ4(const float* x, uint8_t* packed, uint16_t* scale);  // packed: 16 bytes

// The input of a product of q4 weights that a GPU multiplies 8 bits by 4 at a time (the MLP's
// gate and up projections, GateUp, and a q4 LM head): each run of 8 consecutive values of a row
// (an oct; the last may be shorter) becomes q * d, with d = max|x| / 127 and q = x * (127 /
// max|x|) rounded to the nearest integer, ties to even; an oct of zeros stays zero. In place over
// n values.
void RoundOctsToInt8(float* row, int64_t n);
// Whether those products of weights of type `t` take their input rounded so
// (docs/QUANTIZATION.md).
inline bool TakesRoundedInput(DType t) { return t == DType::kQ4; }

// Bytes of the stored values of `elements` (file tensors), and of their scales.
inline uint64_t QuantValueBytes(DType t, uint64_t elements) { return t == DType::kQ4 ? elements / 2 : elements; }
inline uint64_t QuantScaleBytes(uint64_t elements) { return elements / kQuantGroup * 2; }

// Element i (0..31) of a stored group.
inline float DequantQ8(const int8_t* q, uint16_t scale, int i) { return static_cast<float>(q[i]) * F16ToF32(scale); }
inline float DequantQ4(const uint8_t* packed, uint16_t scale, int i) {
  const int nibble = (packed[i >> 1] >> ((i & 1) * 4)) & 15;
  return static_cast<float>(nibble - 8) * F16ToF32(scale);
}

}  // namespace g4
