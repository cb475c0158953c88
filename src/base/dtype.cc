#include "base/dtype.h"

#include <cmath>

namespace g4 {

size_t DTypeSize(DType t) {
  switch (t) {
    case DType::kF32: case DType::kI32: return 4;
    case DType::kF16: case DType::kBF16: return 2;
    case DType::kI64: return 8;
    case DType::kU8: case DType::kI8: return 1;
    case DType::kQ8: case DType::kQ4: return 0;
  }
  return 0;
}

bool IsQuantized(DType t) { return t == DType::kQ8 || t == DType::kQ4; }

uint64_t StoredBytes(DType t, uint64_t elements) {
  if (t == DType::kQ8) return elements / 32 * 34;
  if (t == DType::kQ4) return elements / 32 * 18;
  return elements * DTypeSize(t);
}

const char* DTypeName(DType t) {
  switch (t) {
    case DType::kF32: return "F32";
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
    case DType::kI64: return "I64";
    case DType::kI32: return "I32";
    case DType::kU8: return "U8";
    case DType::kI8: return "I8";
    case DType::kQ8: return "Q8";
    case DType::kQ4: return "Q4";
  }
  return "?";
}

bool ParseDType(const std::string& s, DType* out) {
  static const struct { const char* name; DType t; } kTable[] = {
      {"F32", DType::kF32}, {"F16", DType::kF16}, {"BF16", DType::kBF16}, {"I64", DType::kI64},
      {"I32", DType::kI32}, {"U8", DType::kU8},   {"I8", DType::kI8}};
  for (const auto& e : kTable) {
    if (s == e.name) { *out = e.t; return true; }
  }
  return false;
}

float F16ToF32(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1u, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  float v;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(mant), -24);
  } else if (exp == 31) {
    v = mant ? NAN : INFINITY;
  } else {
    v = std::ldexp(static_cast<float>(mant | 0x400u), static_cast<int>(exp) - 25);
  }
  return sign ? -v : v;
}

uint16_t F32ToF16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t absx = x & 0x7fffffffu;
  if (absx > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (absx < 0x38800000u) {                                             // subnormal or zero
    float a;
    std::memcpy(&a, &absx, 4);
    const uint32_t m = static_cast<uint32_t>(std::nearbyint(a * 16777216.0f));  // 2^24
    return static_cast<uint16_t>(sign | m);
  }
  uint32_t e = ((absx >> 23) - 112) << 10;
  uint32_t m = (absx >> 13) & 0x3ffu;
  uint32_t rest = absx & 0x1fffu;
  uint32_t h = e | m;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
  return static_cast<uint16_t>(sign | h);
}

}  // namespace g4
