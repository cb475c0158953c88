#include "backend/cpu/kernels.h"

#include <cmath>
#include <cstring>

#include "base/quant.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define G4_AVX2 1
#endif

namespace g4::cpu {
namespace {

// A block of a quantized row: its float16 scale, then the group's stored values.
inline const uint8_t* Block(const void* w, DType t, int64_t i) {
  return static_cast<const uint8_t*>(w) + (i / kQuantGroup) * (t == DType::kQ8 ? 34 : 18);
}
inline uint16_t BlockScale(const uint8_t* b) { return static_cast<uint16_t>(b[0] | (b[1] << 8)); }

inline float ScalarElement(const void* w, DType t, int64_t i) {
  switch (t) {
    case DType::kF32: return static_cast<const float*>(w)[i];
    case DType::kBF16: return Bf16ToF32(static_cast<const uint16_t*>(w)[i]);
    case DType::kF16: return F16ToF32(static_cast<const uint16_t*>(w)[i]);
    case DType::kQ8: {
      const uint8_t* b = Block(w, t, i);
      return DequantQ8(reinterpret_cast<const int8_t*>(b + 2), BlockScale(b), static_cast<int>(i % kQuantGroup));
    }
    case DType::kQ4: {
      const uint8_t* b = Block(w, t, i);
      return DequantQ4(b + 2, BlockScale(b), static_cast<int>(i % kQuantGroup));
    }
    default: return 0.0f;
  }
}

#ifdef G4_AVX2
inline __m256 Load8(const void* w, DType t, int64_t i) {
  switch (t) {
    case DType::kBF16: {
      __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(w) + i));
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
#ifdef __F16C__
    case DType::kF16: {
      __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(w) + i));
      return _mm256_cvtph_ps(h);
    }
#endif
    case DType::kF32: return _mm256_loadu_ps(static_cast<const float*>(w) + i);
    case DType::kQ8: {  // i is a multiple of 8: eight values of one block
      const uint8_t* b = Block(w, t, i);
      __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + 2 + i % kQuantGroup));
      return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), _mm256_set1_ps(F16ToF32(BlockScale(b))));
    }
    case DType::kQ4: {
      const uint8_t* b = Block(w, t, i);
      int32_t word;
      std::memcpy(&word, b + 2 + (i % kQuantGroup) / 2, 4);
      const __m128i bytes = _mm_cvtepu8_epi32(_mm_cvtsi32_si128(word));
      const __m128i lo = _mm_and_si128(bytes, _mm_set1_epi32(15)), hi = _mm_srli_epi32(bytes, 4);
      const __m256i q = _mm256_set_m128i(_mm_unpackhi_epi32(lo, hi), _mm_unpacklo_epi32(lo, hi));
      const __m256 v = _mm256_cvtepi32_ps(_mm256_sub_epi32(q, _mm256_set1_epi32(8)));
      return _mm256_mul_ps(v, _mm256_set1_ps(F16ToF32(BlockScale(b))));
    }
    default: {
      alignas(32) float tmp[8];
      for (int k = 0; k < 8; ++k) tmp[k] = ScalarElement(w, t, i + k);
      return _mm256_load_ps(tmp);
    }
  }
}

inline float HSum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
  return _mm_cvtss_f32(lo);
}
#endif

}  // namespace

float LoadElement(const void* w, DType t, int64_t i) { return ScalarElement(w, t, i); }

float GeluTanh(float x) {
  const float kAlpha = 0.7978845608028654f;  // sqrt(2 / pi)
  return 0.5f * x * (1.0f + std::tanh(kAlpha * (x + 0.044715f * x * x * x)));
}

float Dot(const float* x, const void* w, DType t, int64_t n) {
  int64_t i = 0;
  float sum = 0.0f;
#ifdef G4_AVX2
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  for (; i + 16 <= n; i += 16) {
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), Load8(w, t, i), a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), Load8(w, t, i + 8), a1);
  }
  for (; i + 8 <= n; i += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), Load8(w, t, i), a0);
  sum = HSum(_mm256_add_ps(a0, a1));
#else
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) acc[k] += x[i + k] * ScalarElement(w, t, i + k);
  }
  for (int k = 0; k < 8; ++k) sum += acc[k];
#endif
  for (; i < n; ++i) sum += x[i] * ScalarElement(w, t, i);
  return sum;
}

namespace {

// Dot products of N x rows (x_stride apart) with one weight row: each weight element is loaded
// and converted once for all N rows.
template <int N>
void DotN(const float* x, size_t xs, const void* w, DType t, int64_t n, float* out) {
  int64_t i = 0;
  float s[N] = {};
#ifdef G4_AVX2
  __m256 acc[N];
  for (int r = 0; r < N; ++r) acc[r] = _mm256_setzero_ps();
  for (; i + 8 <= n; i += 8) {
    const __m256 wv = Load8(w, t, i);
    for (int r = 0; r < N; ++r) acc[r] = _mm256_fmadd_ps(_mm256_loadu_ps(x + r * xs + i), wv, acc[r]);
  }
  for (int r = 0; r < N; ++r) s[r] = HSum(acc[r]);
#endif
  for (; i < n; ++i) {
    const float wv = ScalarElement(w, t, i);
    for (int r = 0; r < N; ++r) s[r] += x[r * xs + i] * wv;
  }
  for (int r = 0; r < N; ++r) out[r] = s[r];
}

}  // namespace

void Dot4(const float* x, size_t xs, const void* w, DType t, int64_t n, float* out) { DotN<4>(x, xs, w, t, n, out); }

void MatMul(const float* x, int rows, size_t xs, const void* w, DType t, int64_t out_features, int64_t in_features,
            float* out, size_t os) {
  const size_t row_bytes = StoredBytes(t, static_cast<uint64_t>(in_features));
  constexpr int kRowBlock = 32;  // input rows kept hot in cache while a block of weights streams by
  for (int r0 = 0; r0 < rows; r0 += kRowBlock) {
    const int r1 = rows < r0 + kRowBlock ? rows : r0 + kRowBlock;
#pragma omp parallel for schedule(static) if (out_features * in_features > 32768)
    for (int64_t o = 0; o < out_features; ++o) {
      const void* wr = static_cast<const uint8_t*>(w) + o * row_bytes;
      int r = r0;
      for (; r + 4 <= r1; r += 4) {
        float s[4];
        Dot4(x + r * xs, xs, wr, t, in_features, s);
        for (int k = 0; k < 4; ++k) out[(r + k) * os + o] = s[k];
      }
      float s[4] = {};
      switch (r1 - r) {
        case 3:
          DotN<3>(x + r * xs, xs, wr, t, in_features, s);
          break;
        case 2:
          DotN<2>(x + r * xs, xs, wr, t, in_features, s);
          break;
        case 1:
          s[0] = Dot(x + r * xs, wr, t, in_features);
          break;
        default:
          break;
      }
      for (int k = 0; r < r1; ++r, ++k) out[r * os + o] = s[k];
    }
  }
}

}  // namespace g4::cpu
