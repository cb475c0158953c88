#include "backend/backend.h"

#include <cstring>
#include <vector>

#include "base/quant.h"

namespace g4 {
namespace {

// The default StartDownload: the bytes, read at the start.
class ReadDownload : public PendingDownload {
 public:
  explicit ReadDownload(std::vector<uint8_t> bytes) : bytes_(std::move(bytes)) {}
  Status Finish(void* dst) override {
    if (!bytes_.empty()) std::memcpy(dst, bytes_.data(), bytes_.size());
    return Status::Ok();
  }

 private:
  std::vector<uint8_t> bytes_;
};

}  // namespace

Result<std::unique_ptr<PendingDownload>> Backend::StartDownload(const Buffer& src, size_t offset_bytes, size_t bytes) {
  std::vector<uint8_t> data(bytes);
  G4_RETURN_IF_ERROR(Download(src, offset_bytes, data.data(), bytes));
  return std::unique_ptr<PendingDownload>(new ReadDownload(std::move(data)));
}

void Backend::AddRmsNorm(F32 x, F32 in, const Weight& weight, int rows, int dim, float eps, float scale) {
  const size_t count = static_cast<size_t>(rows) * dim;
  RmsNorm(in, in, weight, rows, dim, eps);
  Add(x, x, in, count);
  if (scale != 1.0f) Scale(x, count, scale);
}

void Backend::AddRmsNormTo(const ResidualAdd& add, int rows, int dim) {
  Copy(add.x_out, add.x_in, static_cast<size_t>(rows) * dim);
  AddRmsNorm(add.x_out, add.delta, add.norm, rows, dim, add.eps, add.scale);
}

void Backend::NormMatMul(F32 out, F32 normed_scratch, F32 in, const Weight& norm, float eps, const Weight& w, int rows,
                         const ResidualAdd& pre) {
  if (pre.present()) AddRmsNormTo(pre, rows, static_cast<int>(w.cols));
  RmsNorm(normed_scratch, in, norm, rows, static_cast<int>(w.cols), eps);
  MatMul(out, normed_scratch, w, rows);
}

void Backend::NormMatMul2(F32 out_a, F32 out_b, F32 normed_scratch, F32 in, const Weight& norm, float eps,
                          const Weight& wa, const Weight& wb, int rows, const ResidualAdd& pre) {
  NormMatMul(out_a, normed_scratch, in, norm, eps, wa, rows, pre);
  NormMatMul(out_b, normed_scratch, in, norm, eps, wb, rows);
}
void Backend::NormMatMulKvNorms(F32 out, F32 normed_scratch, F32 in, const Weight& norm, float eps, const Weight& w,
                                int rows, const KvNorms& kv) {
  NormMatMul(out, normed_scratch, in, norm, eps, w, rows);
  NormRope(kv.k, rows, kv.kv_heads, kv.k_norm, eps, kv.inv_freq, kv.positions);
  RmsNorm(kv.v, kv.v, Weight{}, rows * kv.kv_heads, static_cast<int>(kv.inv_freq.size() * 2), eps);
}

void Backend::MatMulRoundedInput(F32 out, F32 in, F32 scratch, const Weight& w, int rows) {
  const size_t count = static_cast<size_t>(rows) * static_cast<size_t>(w.cols);
  Copy(scratch, in, count);
  RoundOcts(scratch, rows, static_cast<int>(w.cols));
  MatMul(out, scratch, w, rows);
}

void Backend::GateUp(F32 out, F32 up_scratch, F32 normed_scratch, F32 in, const Weight& norm, float eps,
                     const Weight& gate, const Weight& up, int rows, const ResidualAdd& pre) {
  if (pre.present()) AddRmsNormTo(pre, rows, static_cast<int>(gate.cols));
  RmsNorm(normed_scratch, in, norm, rows, static_cast<int>(gate.cols), eps);
  if (TakesRoundedInput(gate.dtype)) RoundOcts(normed_scratch, rows, static_cast<int>(gate.cols));
  MatMul(out, normed_scratch, gate, rows);
  MatMul(up_scratch, normed_scratch, up, rows);
  GeluMul(out, out, up_scratch, rows, static_cast<int>(gate.rows), static_cast<int>(up.rows));
}

void Backend::NormRope(F32 x, int rows, int heads, const Weight& norm, float eps, std::span<const float> inv_freq,
                       std::span<const int64_t> positions) {
  RmsNorm(x, x, norm, rows * heads, static_cast<int>(inv_freq.size() * 2), eps);
  Rope(x, rows, heads, inv_freq, positions);
}

void Backend::NormRopeAttention(F32 out, F32 q, const Weight& q_norm, float eps, std::span<const float> inv_freq,
                                std::span<const int64_t> positions, F32 k_new, F32 v_new, F32 k_cache, F32 v_cache,
                                const AttentionShape& shape) {
  NormRope(q, shape.rows, shape.heads, q_norm, eps, inv_freq, positions);
  Attention(out, q, k_new, v_new, k_cache, v_cache, shape);
}

void Backend::MatMulGeluMul(F32 out, F32 in, const Weight& w, F32 mul, int rows, int mul_stride,
                            const ResidualAdd& pre) {
  if (pre.present()) AddRmsNormTo(pre, rows, static_cast<int>(w.cols));
  MatMul(out, in, w, rows);
  GeluMul(out, out, mul, rows, static_cast<int>(w.rows), mul_stride);
}

void Backend::CacheAppends(std::span<const CacheAppendLayer> layers, int rows, int64_t start) {
  for (const CacheAppendLayer& l : layers) {
    CacheAppend(l.k_cache, l.v_cache, l.k_new, l.v_new, rows, l.row_size, start, l.capacity);
  }
}

Status CheckQuantizedSource(DType type, uint64_t elements, const Reader& values, uint64_t values_offset,
                            const Reader& scales, uint64_t scales_offset) {
  if (!IsQuantized(type)) return InvalidArgument(std::string("quantized weights of type ") + DTypeName(type));
  if (elements % kQuantGroup) {
    return InvalidArgument(values.Name() + ": " + std::to_string(elements) + " quantized values are not whole groups of " +
                           std::to_string(kQuantGroup));
  }
  const uint64_t vb = QuantValueBytes(type, elements), sb = QuantScaleBytes(elements);
  if (values_offset > values.Size() || vb > values.Size() - values_offset) {
    return OutOfRange(values.Name() + ": quantized values outside the file");
  }
  if (scales_offset > scales.Size() || sb > scales.Size() - scales_offset) {
    return OutOfRange(scales.Name() + ": quantization scales outside the file");
  }
  return Status::Ok();
}

}  // namespace g4
