// Float values as the bytes of a stored weight (f32, bf16 or f16), for op tests on any backend.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "base/dtype.h"

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

}  // namespace g4::test
