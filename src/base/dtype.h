// Element types of stored tensors and the conversions the kernels use.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace g4 {

// kQ8 and kQ4 are weights quantized in groups of 32 along a row (base/quant.h), as the CPU
// backend holds them in memory: blocks of a float16 scale then 32 int8 (34 bytes) or 32 int4
// (18 bytes). They are never a safetensors dtype: files store the values and scales apart.
enum class DType { kF32, kF16, kBF16, kI64, kI32, kU8, kI8, kQ8, kQ4 };

size_t DTypeSize(DType t);                // bytes per element; 0 for the block types
const char* DTypeName(DType t);           // safetensors spelling: "F32", "BF16", ...; "Q8", "Q4"
bool ParseDType(const std::string& s, DType* out);  // safetensors dtypes only
bool IsQuantized(DType t);
// Bytes of `elements` consecutive elements (a whole number of groups for the block types).
uint64_t StoredBytes(DType t, uint64_t elements);

inline float Bf16ToF32(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Round to nearest even, as torch does when casting float32 to bfloat16.
inline uint16_t F32ToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);  // NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

float F16ToF32(uint16_t h);
uint16_t F32ToF16(float f);

}  // namespace g4
