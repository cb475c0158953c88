// The CPU reference backend: readable loops, float32 arithmetic, OpenMP over independent rows,
// vectorised dot products (kernels.cc). Weights that are already in memory (mapped files) are
// used in place.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend/backend.h"
#include "backend/cpu/kernels.h"
#include "base/quant.h"

namespace g4 {
namespace {

constexpr float kNotFiniteId = Backend::kNotFiniteId;

// Whether x[0..n) holds no NaN and no infinity.
bool Finite(const float* x, int n) {
  for (int i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) return false;
  }
  return true;
}

// Column a ranks before column b of `row`: the larger value, the lower column among equals; a
// NaN ranks as the lowest value (an order sorting may rely on whatever the row holds).
auto Ranks(const float* row) {
  return [row](int a, int b) {
    const float va = std::isnan(row[a]) ? -INFINITY : row[a], vb = std::isnan(row[b]) ? -INFINITY : row[b];
    return va > vb || (va == vb && a < b);
  };
}

// An integer held as a float on the device (an id, a row index, a position shift), as a host
// int: 0 outside [0, limit) (kNotFiniteId and NaN among them).
inline int32_t HostId(float f, int64_t limit) {
  return f >= 0.0f && f < static_cast<float>(limit) ? static_cast<int32_t>(f) : 0;
}
constexpr int64_t kAnyId = std::numeric_limits<int32_t>::max();

// Ids held as floats, as host ints; one outside [0, rows) (kNotFiniteId among them) reads row 0,
// as WebGPU's conversion and clamped reads do: generation stops before such a row matters.
std::vector<int32_t> HostIds(const float* f, int n, int64_t rows) {
  std::vector<int32_t> ids(n);
  for (int i = 0; i < n; ++i) ids[i] = HostId(f[i], rows);
  return ids;
}

class CpuBuffer final : public Buffer {
 public:
  // Owned, zero-filled memory; data() is null when the allocation failed.
  explicit CpuBuffer(size_t bytes) : Buffer(bytes) {
    owned_ = static_cast<uint8_t*>(std::calloc(bytes ? bytes : 1, 1));
    data_ = owned_;
  }
  // A view of memory owned elsewhere (a mapped checkpoint file).
  CpuBuffer(const uint8_t* external, size_t bytes) : Buffer(bytes), data_(const_cast<uint8_t*>(external)) {}
  ~CpuBuffer() override { std::free(owned_); }
  uint8_t* data() const { return data_; }

 private:
  uint8_t* owned_ = nullptr;
  uint8_t* data_ = nullptr;
};

inline const uint8_t* Raw(const Buffer* b) { return static_cast<const CpuBuffer*>(b)->data(); }
inline float* Ptr(F32 t) { return reinterpret_cast<float*>(static_cast<CpuBuffer*>(t.buffer)->data()) + t.offset; }
inline const void* WeightData(const Weight& w, int64_t index = 0) {
  return Raw(w.buffer) + StoredBytes(w.dtype, static_cast<uint64_t>(index * w.rows * w.cols));
}

// Best of several passes of all threads summing a buffer much larger than the caches, in GB/s.
double HostReadBandwidth(size_t bytes) {
  const size_t n = bytes / sizeof(float);
  float* buf = static_cast<float*>(std::malloc(n * sizeof(float)));
  if (!buf) return 0.0;
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; ++i) buf[i] = static_cast<float>(i & 1023);
  double best = 0.0;
  volatile float sink = 0.0f;
  for (int pass = 0; pass < 5; ++pass) {
    const auto t0 = std::chrono::steady_clock::now();
    float total = 0.0f;
#pragma omp parallel reduction(+ : total)
    {
      float acc[16] = {0};
#pragma omp for schedule(static)
      for (size_t i = 0; i < n; i += 16) {
        for (int k = 0; k < 16; ++k) acc[k] += buf[i + k];
      }
      for (float a : acc) total += a;
    }
    sink = sink + total;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, bytes / s / 1e9);
  }
  std::free(buf);
  return best;
}

class CpuBackend final : public Backend {
  // The position shift in force (SetPositionShift), read as each op runs.
  int64_t Shift() const {
    const F32 w = position_shift();
    return w.buffer ? HostId(*Ptr(w), kAnyId) : 0;
  }

 public:
  explicit CpuBackend(int threads) {
#ifdef _OPENMP
    if (threads > 0) omp_set_num_threads(threads);
#else
    (void)threads;
#endif
  }
  std::string Name() const override { return "cpu"; }
  Result<double> MeasureReadBandwidth(uint64_t bytes) override { return HostReadBandwidth(bytes); }

  Result<std::unique_ptr<Buffer>> Allocate(size_t bytes) override {
    auto b = std::make_unique<CpuBuffer>(bytes);
    if (!b->data()) return ResourceExhausted("cpu: cannot allocate " + std::to_string(bytes) + " bytes");
    return std::unique_ptr<Buffer>(std::move(b));
  }

  Result<std::unique_ptr<Buffer>> LoadWeights(const Reader& source, uint64_t offset, uint64_t size) override {
    if (offset > source.Size() || size > source.Size() - offset) {
      return OutOfRange(source.Name() + ": weight range outside the file");
    }
    if (const uint8_t* base = source.Data()) {
      return std::unique_ptr<Buffer>(std::make_unique<CpuBuffer>(base + offset, size));
    }
    auto b = std::make_unique<CpuBuffer>(size);
    if (!b->data()) return ResourceExhausted("cpu: cannot allocate " + std::to_string(size) + " bytes of weights");
    G4_RETURN_IF_ERROR(source.Read(offset, size, b->data()));
    return std::unique_ptr<Buffer>(std::move(b));
  }

  // Blocks of a float16 scale and the group's values (base/dtype.h), assembled in stages.
  Result<std::unique_ptr<Buffer>> LoadQuantizedWeights(DType type, uint64_t elements, const Reader& values,
                                                       uint64_t values_offset, const Reader& scales,
                                                       uint64_t scales_offset) override {
    G4_RETURN_IF_ERROR(CheckQuantizedSource(type, elements, values, values_offset, scales, scales_offset));
    auto b = std::make_unique<CpuBuffer>(StoredBytes(type, elements));
    if (!b->data()) return ResourceExhausted("cpu: cannot allocate " + std::to_string(b->bytes()) + " bytes of weights");
    const uint64_t groups = elements / kQuantGroup, group_bytes = QuantValueBytes(type, kQuantGroup);
    const uint64_t block = StoredBytes(type, kQuantGroup);
    constexpr uint64_t kStage = 8192;  // groups per read
    std::vector<uint8_t> v(kStage * group_bytes), sc(kStage * 2);
    for (uint64_t g0 = 0; g0 < groups; g0 += kStage) {
      const uint64_t n = std::min(kStage, groups - g0);
      G4_RETURN_IF_ERROR(values.Read(values_offset + g0 * group_bytes, n * group_bytes, v.data()));
      G4_RETURN_IF_ERROR(scales.Read(scales_offset + g0 * 2, n * 2, sc.data()));
      for (uint64_t g = 0; g < n; ++g) {
        uint8_t* dst = b->data() + (g0 + g) * block;
        std::memcpy(dst, sc.data() + g * 2, 2);
        std::memcpy(dst + 2, v.data() + g * group_bytes, group_bytes);
      }
    }
    return std::unique_ptr<Buffer>(std::move(b));
  }

  Status Upload(Buffer& dst, size_t offset, const void* src, size_t bytes) override {
    if (offset > dst.bytes() || bytes > dst.bytes() - offset) return OutOfRange("cpu: upload past the buffer");
    std::memcpy(static_cast<CpuBuffer&>(dst).data() + offset, src, bytes);
    return Status::Ok();
  }

  Status Download(const Buffer& src, size_t offset, void* dst, size_t bytes) override {
    if (offset > src.bytes() || bytes > src.bytes() - offset) return OutOfRange("cpu: download past the buffer");
    std::memcpy(dst, static_cast<const CpuBuffer&>(src).data() + offset, bytes);
    return Status::Ok();
  }

  void Embed(F32 out, const Weight& table, std::span<const int32_t> ids, float scale) override {
    float* o = Ptr(out);
    const int64_t cols = table.cols;
    for (size_t r = 0; r < ids.size(); ++r) {
      const void* row = static_cast<const uint8_t*>(WeightData(table)) +
                        StoredBytes(table.dtype, static_cast<uint64_t>(ids[r]) * cols);
      for (int64_t c = 0; c < cols; ++c) o[r * cols + c] = cpu::LoadElement(row, table.dtype, c) * scale;
    }
  }

  void RmsNorm(F32 out, F32 in, const Weight& weight, int rows, int dim, float eps) override {
    const float* x = Ptr(in);
    float* y = Ptr(out);
    const void* w = weight.present() ? WeightData(weight) : nullptr;
#pragma omp parallel for schedule(static) if (rows * dim > 65536)
    for (int r = 0; r < rows; ++r) {
      const float* xr = x + static_cast<size_t>(r) * dim;
      float* yr = y + static_cast<size_t>(r) * dim;
      float ss = 0.0f;
      for (int i = 0; i < dim; ++i) ss += xr[i] * xr[i];
      const float inv = 1.0f / std::sqrt(ss / static_cast<float>(dim) + eps);
      for (int i = 0; i < dim; ++i) yr[i] = xr[i] * inv * (w ? cpu::LoadElement(w, weight.dtype, i) : 1.0f);
    }
  }

  void MatMul(F32 out, F32 in, const Weight& w, int rows) override {
    cpu::MatMul(Ptr(in), rows, w.cols, WeightData(w), w.dtype, w.rows, w.cols, Ptr(out), w.rows);
  }

  void Rope(F32 x, int rows, int heads, std::span<const float> inv_freq, std::span<const int64_t> positions) override {
    float* p = Ptr(x);
    const int half = static_cast<int>(inv_freq.size());
    const int head_dim = 2 * half;
    const int64_t shift = Shift();
    for (int r = 0; r < rows; ++r) {
      const float pos = static_cast<float>(positions[r] + shift);
      for (int i = 0; i < half; ++i) {
        const float angle = inv_freq[i] * pos;
        const float c = std::cos(angle), s = std::sin(angle);
        for (int h = 0; h < heads; ++h) {
          float* v = p + (static_cast<size_t>(r) * heads + h) * head_dim;
          const float a = v[i], b = v[i + half];
          v[i] = a * c - b * s;
          v[i + half] = b * c + a * s;
        }
      }
    }
  }

  void Attention(F32 out, F32 q, F32 k_new, F32 v_new, F32 k_cache, F32 v_cache, const AttentionShape& shape) override {
    AttentionShape s = shape;
    const int64_t shift = Shift();
    s.start += shift;
    s.cached = std::min(s.cached + shift, s.capacity);
    const float *qp = Ptr(q), *kn = Ptr(k_new), *vn = Ptr(v_new), *kc = Ptr(k_cache), *vc = Ptr(v_cache);
    float* op = Ptr(out);
    const int d = s.head_dim, group = s.heads / s.kv_heads;
    const size_t q_row = static_cast<size_t>(s.heads) * d, kv_row = static_cast<size_t>(s.kv_heads) * d;
    // Threads only pay off once there is real work (long contexts or many rows).
    [[maybe_unused]] const bool parallel = static_cast<int64_t>(s.rows) * s.heads * (s.cached + s.rows) * d > 65536;
#pragma omp parallel if (parallel)
    {
      std::vector<float> scores;
#pragma omp for schedule(static) collapse(2)
      for (int r = 0; r < s.rows; ++r) {
        for (int h = 0; h < s.heads; ++h) {
          const int64_t pos = s.start + r;
          const int64_t hi = s.past_only ? pos - 1 : pos;  // newest visible position
          int64_t lo = s.start - s.cached;
          if (s.window > 0) lo = std::max(lo, hi - s.window + 1);
          lo = std::max<int64_t>(lo, 0);
          const int kvh = h / group;
          const float* qv = qp + r * q_row + static_cast<size_t>(h) * d;
          auto key = [&](int64_t p) {
            return p < s.start ? kc + static_cast<size_t>(p % s.capacity) * kv_row + kvh * d
                               : kn + static_cast<size_t>(p - s.start) * kv_row + kvh * d;
          };
          auto value = [&](int64_t p) {
            return p < s.start ? vc + static_cast<size_t>(p % s.capacity) * kv_row + kvh * d
                               : vn + static_cast<size_t>(p - s.start) * kv_row + kvh * d;
          };
          const int64_t n = hi - lo + 1;
          float* o = op + r * q_row + static_cast<size_t>(h) * d;
          if (n <= 0) {  // nothing visible
            std::fill(o, o + d, 0.0f);
            continue;
          }
          scores.resize(n);
          float mx = -std::numeric_limits<float>::infinity();
          for (int64_t j = 0; j < n; ++j) {
            scores[j] = cpu::Dot(qv, key(lo + j), DType::kF32, d);
            mx = std::max(mx, scores[j]);
          }
          float sum = 0.0f;
          for (int64_t j = 0; j < n; ++j) {
            scores[j] = std::exp(scores[j] - mx);
            sum += scores[j];
          }
          std::fill(o, o + d, 0.0f);
          for (int64_t j = 0; j < n; ++j) {
            const float pj = scores[j] / sum;
            const float* v = value(lo + j);
            for (int i = 0; i < d; ++i) o[i] += pj * v[i];
          }
        }
      }
    }
  }

  void CacheAppend(F32 k_cache, F32 v_cache, F32 k_new, F32 v_new, int rows, int row_size, int64_t start,
                   int64_t capacity) override {
    float *kc = Ptr(k_cache), *vc = Ptr(v_cache);
    const float *kn = Ptr(k_new), *vn = Ptr(v_new);
    const int first = rows > capacity ? rows - static_cast<int>(capacity) : 0;
    start += Shift();
    for (int r = first; r < rows; ++r) {
      const size_t slot = static_cast<size_t>((start + r) % capacity);
      std::memcpy(kc + slot * row_size, kn + static_cast<size_t>(r) * row_size, row_size * sizeof(float));
      std::memcpy(vc + slot * row_size, vn + static_cast<size_t>(r) * row_size, row_size * sizeof(float));
    }
  }

  void GeluMul(F32 out, F32 gate, F32 up, int rows, int cols, int up_stride) override {
    float* o = Ptr(out);
    const float *g = Ptr(gate), *u = Ptr(up);
    for (int r = 0; r < rows; ++r) {
      for (int c = 0; c < cols; ++c) {
        o[static_cast<size_t>(r) * cols + c] =
            cpu::GeluTanh(g[static_cast<size_t>(r) * cols + c]) * u[static_cast<size_t>(r) * up_stride + c];
      }
    }
  }

  void RoundOcts(F32 x, int rows, int dim) override {
    for (int r = 0; r < rows; ++r) RoundOctsToInt8(Ptr(x) + static_cast<size_t>(r) * dim, dim);
  }

  void Add(F32 out, F32 a, F32 b, size_t count) override {
    float* o = Ptr(out);
    const float *x = Ptr(a), *y = Ptr(b);
    for (size_t i = 0; i < count; ++i) o[i] = x[i] + y[i];
  }

  void Copy(F32 dst, F32 src, size_t count) override { std::memmove(Ptr(dst), Ptr(src), count * sizeof(float)); }

  void CopyRow(F32 dst, F32 src, size_t count, F32 index) override {
    Copy(dst, src.At(static_cast<size_t>(HostId(*Ptr(index), kAnyId)) * count), count);
  }

  void GatherMatVec(F32 out, F32 in, const Weight& w, std::span<const int32_t> rows) override {
    const float* x = Ptr(in);
    float* o = Ptr(out);
    const size_t row_bytes = StoredBytes(w.dtype, static_cast<uint64_t>(w.cols));
    const auto* base = static_cast<const uint8_t*>(WeightData(w));
#pragma omp parallel for schedule(static) if (rows.size() * w.cols > 65536)
    for (size_t j = 0; j < rows.size(); ++j) o[j] = cpu::Dot(x, base + rows[j] * row_bytes, w.dtype, w.cols);
  }

  void Argmax(F32 ids, F32 x, int rows, int cols) override {
    const float* p = Ptr(x);
    float* out = Ptr(ids);
    for (int r = 0; r < rows; ++r) {
      const float* row = p + static_cast<size_t>(r) * cols;
      int best = 0;
      for (int c = 1; c < cols; ++c) {
        if (row[c] > row[best]) best = c;
      }
      out[r] = Finite(row, cols) ? static_cast<float>(best) : kNotFiniteId;
    }
  }

  void EmbedIds(F32 out, const Weight& table, F32 ids, int rows, float scale) override {
    Embed(out, table, HostIds(Ptr(ids), rows, table.rows), scale);
  }

  void GatherMatVecIds(F32 out, F32 in, const Weight& w, F32 rows, int count) override {
    GatherMatVec(out, in, w, HostIds(Ptr(rows), count, w.rows));
  }

  void TopK(F32 indices, F32 x, int rows, int cols, int k) override {
    std::vector<int> order(cols);
    for (int r = 0; r < rows; ++r) {
      const float* row = Ptr(x) + static_cast<size_t>(r) * cols;
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + k, order.end(), Ranks(row));
      for (int j = 0; j < k; ++j) Ptr(indices)[static_cast<size_t>(r) * k + j] = static_cast<float>(order[j]);
    }
  }

  void TopKValues(F32 out, F32 x, int cols, int k) override {
    const float* row = Ptr(x);
    std::vector<int> order(cols);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), Ranks(row));
    const bool finite = Finite(row, cols);
    for (int j = 0; j < k; ++j) {
      Ptr(out)[j] = finite ? static_cast<float>(order[j]) : kNotFiniteId;
      Ptr(out)[k + j] = row[order[j]];
    }
  }

  void ArgmaxKeyed(F32 id, F32 x, F32 keys, int cols) override {
    const float* v = Ptr(x);
    const float* key = Ptr(keys);
    int best = 0;
    for (int c = 1; c < cols; ++c) {
      if (v[c] > v[best] || (v[c] == v[best] && key[c] < key[best])) best = c;
    }
    Ptr(id)[0] = Finite(v, cols) ? key[best] : kNotFiniteId;
  }

  void AcceptDrafts(F32 result, F32 drafts, F32 target, int k) override {
    int m = 0;
    while (m < k && Ptr(drafts)[m] == Ptr(target)[m]) ++m;
    Ptr(result)[0] = static_cast<float>(m);
    Ptr(result)[1] = Ptr(target)[m];
  }

  void Scale(F32 x, size_t count, float s) override {
    float* p = Ptr(x);
    for (size_t i = 0; i < count; ++i) p[i] *= s;
  }

  void Softcap(F32 x, size_t count, float cap) override {
    float* p = Ptr(x);
    for (size_t i = 0; i < count; ++i) p[i] = std::tanh(p[i] / cap) * cap;
  }

  void MoeRoute(F32 indices, F32 weights, F32 /*logits_scratch*/, F32 /*normed_scratch*/, F32 x, const Weight& scale,
                const Weight& proj, const Weight& per_expert_scale, const MoeShape& s, float eps) override {
    const float* xp = Ptr(x);
    float *ip = Ptr(indices), *wp = Ptr(weights);
    const float root = 1.0f / std::sqrt(static_cast<float>(s.hidden));
    std::vector<float> r(s.hidden), probs(s.experts);
    std::vector<int> order(s.experts);
    for (int row = 0; row < s.rows; ++row) {
      const float* xr = xp + static_cast<size_t>(row) * s.hidden;
      float ss = 0.0f;
      for (int i = 0; i < s.hidden; ++i) ss += xr[i] * xr[i];
      const float inv = 1.0f / std::sqrt(ss / static_cast<float>(s.hidden) + eps);
      for (int i = 0; i < s.hidden; ++i) {
        r[i] = xr[i] * inv * cpu::LoadElement(WeightData(scale), scale.dtype, i) * root;
      }
      float mx = -std::numeric_limits<float>::infinity();
      for (int e = 0; e < s.experts; ++e) {
        const void* we = static_cast<const uint8_t*>(WeightData(proj)) + StoredBytes(proj.dtype, static_cast<uint64_t>(e) * s.hidden);
        probs[e] = cpu::Dot(r.data(), we, proj.dtype, s.hidden);
        mx = std::max(mx, probs[e]);
      }
      float sum = 0.0f;
      for (int e = 0; e < s.experts; ++e) sum += (probs[e] = std::exp(probs[e] - mx));
      for (int e = 0; e < s.experts; ++e) probs[e] /= sum;
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return probs[a] > probs[b]; });
      float top_sum = 0.0f;
      for (int j = 0; j < s.top_k; ++j) top_sum += probs[order[j]];
      for (int j = 0; j < s.top_k; ++j) {
        const int e = order[j];
        ip[row * s.top_k + j] = static_cast<float>(e);
        wp[row * s.top_k + j] =
            probs[e] / top_sum * cpu::LoadElement(WeightData(per_expert_scale), per_expert_scale.dtype, e);
      }
    }
  }

  void MoeExperts(F32 out, F32 act_scratch, F32 x, const Weight& gate_up, const Weight& down, F32 indices,
                  F32 weights, const MoeShape& s) override {
    const float *xp = Ptr(x), *ip = Ptr(indices), *wp = Ptr(weights);
    float *op = Ptr(out), *hp = Ptr(act_scratch);
    const int width = s.expert_width;
    std::vector<float> gu(2 * width), y(s.hidden);
    for (int row = 0; row < s.rows; ++row) {
      float* orow = op + static_cast<size_t>(row) * s.hidden;
      std::fill(orow, orow + s.hidden, 0.0f);
      for (int j = 0; j < s.top_k; ++j) {
        const int e = static_cast<int>(ip[row * s.top_k + j]);
        float* act = hp + (static_cast<size_t>(row) * s.top_k + j) * width;
        cpu::MatMul(xp + static_cast<size_t>(row) * s.hidden, 1, s.hidden, WeightData(gate_up, e), gate_up.dtype,
                    2 * width, s.hidden, gu.data(), 2 * width);
        for (int i = 0; i < width; ++i) act[i] = cpu::GeluTanh(gu[i]) * gu[width + i];
        cpu::MatMul(act, 1, width, WeightData(down, e), down.dtype, s.hidden, width, y.data(), s.hidden);
        const float w = wp[row * s.top_k + j];
        for (int i = 0; i < s.hidden; ++i) orow[i] += w * y[i];
      }
    }
  }
};

}  // namespace

std::unique_ptr<Backend> MakeCpuBackend(int threads) { return std::make_unique<CpuBackend>(threads); }

}  // namespace g4
