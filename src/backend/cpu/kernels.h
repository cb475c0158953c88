// Vectorised inner loops of the CPU backend: dot products of float32 activations with weight
// rows in their stored dtype. AVX2/FMA (and F16C) when compiled for them, scalar otherwise.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/dtype.h"

namespace g4::cpu {

// sum_i x[i] * w[i] for a weight row of n elements in dtype `t`.
float Dot(const float* x, const void* w, DType t, int64_t n);
// The same against four x rows at once (x rows `x_stride` floats apart); out[0..3].
void Dot4(const float* x, size_t x_stride, const void* w, DType t, int64_t n, float* out);
// out[r * out_stride + o] = x[r] . w[o] for o < out_features, r < rows; threads over o.
void MatMul(const float* x, int rows, size_t x_stride, const void* w, DType t, int64_t out_features,
            int64_t in_features, float* out, size_t out_stride);
// Element i of a stored vector, as float.
float LoadElement(const void* w, DType t, int64_t i);
float GeluTanh(float x);

}  // namespace g4::cpu
