// Float values as the bytes of a stored weight (f32, bf16 or f16), for op tests on any backend.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "base/dtype.h"
#include "base/quant.h"

namespace g4::test {

inline std::vector<uint8_t> WeightBytes(const std::vector<float>& v, DType dtype) {
  std::vector<uint8_t> bytes(v.size() * DTypeSize(dtype));
  for (size_t i = 0; i < v.size(); ++i) {
    if (dtype == DType::kF32) {
      std::memcpy(&bytes[i * 4], &v[i], 4);
    } else {
      const uint16_t h = dtype == DType::kBF16 ? F32ToBf16(v[i]) : F32ToF16(v[i]);
      std::memcpy(&bytes[i * 2], &h, 2);
    }
  }
  return bytes;
}

// Float values (whole groups of 32) quantized as `type` (kQ8, kQ4): the stored values, the
// float16 scales, and the values they stand for.
struct Quantized {
  std::vector<uint8_t> values;
  std::vector<uint8_t> scales;
  std::vector<float> dequantized;
};
inline Quantized Quantize(const std::vector<float>& v, DType type) {
  Quantized q;
  const size_t groups = v.size() / kQuantGroup, gb = QuantValueBytes(type, kQuantGroup);
  q.values.resize(groups * gb);
  q.scales.resize(groups * 2);
  q.dequantized.resize(v.size());
  for (size_t g = 0; g < groups; ++g) {
    uint16_t s;
    uint8_t* dst = q.values.data() + g * gb;
    if (type == DType::kQ8) {
      QuantizeGroupQ8(&v[g * kQuantGroup], reinterpret_cast<int8_t*>(dst), &s);
    } else {
      QuantizeGroupQ4(&v[g * kQuantGroup], dst, &s);
    }
    std::memcpy(&q.scales[g * 2], &s, 2);
    for (int i = 0; i < kQuantGroup; ++i) {
      q.dequantized[g * kQuantGroup + i] =
          type == DType::kQ8 ? DequantQ8(reinterpret_cast<const int8_t*>(dst), s, i) : DequantQ4(dst, s, i);
    }
  }
  return q;
}

}  // namespace g4::test
