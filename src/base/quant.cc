#include "base/quant.h"

#include <cmath>

namespace g4 {
namespace {

int Clamp(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

}  // namespace

void QuantizeGroupQ8(const float* x, int8_t* q, uint16_t* scale) {
  float amax = 0.0f;
  for (int i = 0; i < kQuantGroup; ++i) amax = std::fmax(amax, std::fabs(x[i]));
  *scale = F32ToF16(amax / 127.0f);
  const float d = F16ToF32(*scale);
  for (int i = 0; i < kQuantGroup; ++i) {
    q[i] = static_cast<int8_t>(d > 0.0f ? Clamp(static_cast<int>(std::lround(x[i] / d)), -127, 127) : 0);
  }
}

// Sixteen levels are few, so the scale is searched: the largest magnitude mapped to 7 .. 8 steps,
// on either side (the level -8 has no positive twin), keeping the scale of least squared error.
void QuantizeGroupQ4(const float* x, uint8_t* packed, uint16_t* scale) {
  float amax = 0.0f;
  for (int i = 0; i < kQuantGroup; ++i) amax = std::fmax(amax, std::fabs(x[i]));
  int qs[kQuantGroup] = {};
  uint16_t best_scale = 0;
  if (amax > 0.0f) {
    float best_err = INFINITY;
    for (int sign = 1; sign >= -1; sign -= 2) {
      for (int k = 0; k <= 8; ++k) {
        const uint16_t s = F32ToF16(sign * amax / (7.0f + 0.125f * k));
        const float d = F16ToF32(s);
        if (d == 0.0f) continue;
        int cand[kQuantGroup];
        float err = 0.0f;
        for (int i = 0; i < kQuantGroup; ++i) {
          cand[i] = Clamp(static_cast<int>(std::lround(x[i] / d)), -8, 7);
          const float e = x[i] - cand[i] * d;
          err += e * e;
        }
        if (err < best_err) {
          best_err = err;
          best_scale = s;
          for (int i = 0; i < kQuantGroup; ++i) qs[i] = cand[i];
        }
      }
    }
  }
  *scale = best_scale;
  for (int i = 0; i < kQuantGroup; i += 2) {
    packed[i / 2] = static_cast<uint8_t>((qs[i] + 8) | ((qs[i + 1] + 8) << 4));
  }
}

void RoundOctsToInt8(float* row, int64_t n) {
  for (int64_t at = 0; at < n; at += 8) {
    const int64_t len = n - at < 8 ? n - at : 8;
    float m = 0.0f;
    for (int64_t i = 0; i < len; ++i) m = std::fmax(m, std::fabs(row[at + i]));
    if (!(m > 0.0f)) continue;
    const float inv = 127.0f / m, d = m / 127.0f;
    for (int64_t i = 0; i < len; ++i) row[at + i] = std::nearbyint(row[at + i] * inv) * d;
  }
}

}  // namespace g4
