#include "backend/webgpu/weight_upload.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "backend/webgpu/gpu_imports.h"
#include "base/quant.h"

namespace g4::webgpu {
namespace {

// Buffers of `sizes` bytes for one weight; none (and the ones made destroyed) if one fails.
Result<std::vector<uint32_t>> MakeBuffers(const std::vector<uint64_t>& sizes, uint64_t total) {
  std::vector<uint32_t> ids;
  for (uint64_t n : sizes) {
    const uint32_t id = g4_gpu_create_buffer(static_cast<double>((n + 15) / 16 * 16), 1);
    if (!id) {
      for (uint32_t done : ids) g4_gpu_destroy_buffer(done);
      return ResourceExhausted("webgpu: cannot allocate " + std::to_string(total) + " bytes of weights");
    }
    ids.push_back(id);
  }
  return ids;
}

}  // namespace

WeightBuffer::~WeightBuffer() {
  if (const auto f = before_destroy_.lock()) (*f)();
  for (uint32_t id : ids_) g4_gpu_destroy_buffer(id);
}

uint64_t SuperblockWords(DType t) { return t == DType::kQ8 ? 17 : 9; }

uint64_t ChunkElements(DType t, uint64_t chunk_bytes) {
  return IsQuantized(t) ? chunk_bytes / (4 * SuperblockWords(t)) * kSuperblock : chunk_bytes / DTypeSize(t);
}

Result<std::unique_ptr<Buffer>> UploadWeights(const Reader& source, uint64_t offset, uint64_t size,
                                              uint64_t binding_limit) {
  const uint64_t limit = binding_limit / kChunkAlign * kChunkAlign;
  const uint64_t padded = (std::max<uint64_t>(size, 16) + 15) / 16 * 16;  // whole 16-byte words
  if (padded > 3 * limit) {
    return Unimplemented("webgpu: a weight of " + std::to_string(size) + " bytes is more than three bindings of " +
                         std::to_string(limit) + " bytes");
  }
  std::vector<uint64_t> sizes;
  for (uint64_t at = 0; at < padded; at += limit) sizes.push_back(std::min(limit, padded - at));
  G4_ASSIGN_OR_RETURN(std::vector<uint32_t> ids, MakeBuffers(sizes, padded));
  auto buf = std::make_unique<WeightBuffer>(padded, ids, limit);
  // Streamed through a small staging block: the wasm heap never holds a whole tensor.
  constexpr uint64_t kStage = 4u << 20;
  std::vector<uint8_t> staging(std::min(kStage, size + 4));
  for (uint64_t at = 0; at < size;) {
    const uint64_t chunk = at / limit, in_chunk = at % limit;
    const uint64_t n = std::min({kStage, size - at, limit - in_chunk});
    G4_RETURN_IF_ERROR(source.Read(offset + at, n, staging.data()));
    const uint64_t n4 = (n + 3) / 4 * 4;
    std::memset(staging.data() + n, 0, n4 - n);
    g4_gpu_write_buffer(ids[chunk], static_cast<double>(in_chunk), staging.data(), static_cast<uint32_t>(n4));
    at += n;
  }
  return std::unique_ptr<Buffer>(std::move(buf));
}

Result<std::unique_ptr<Buffer>> UploadQuantized(DType type, uint64_t elements, const Reader& values,
                                                uint64_t values_offset, const Reader& scales, uint64_t scales_offset,
                                                uint64_t binding_limit) {
  G4_RETURN_IF_ERROR(CheckQuantizedSource(type, elements, values, values_offset, scales, scales_offset));
  const uint64_t sb_bytes = 4 * SuperblockWords(type);
  const uint64_t blocks = (elements + kSuperblock - 1) / kSuperblock, total = blocks * sb_bytes;
  const uint64_t per_chunk = binding_limit / kChunkAlign * kChunkAlign / sb_bytes;  // superblocks a binding
  if (blocks > 3 * per_chunk) {
    return Unimplemented("webgpu: a quantized weight of " + std::to_string(total) + " bytes is more than three bindings of " +
                         std::to_string(per_chunk * sb_bytes) + " bytes");
  }
  std::vector<uint64_t> sizes;
  for (uint64_t b = 0; b < blocks; b += per_chunk) sizes.push_back(std::min(per_chunk, blocks - b) * sb_bytes);
  G4_ASSIGN_OR_RETURN(std::vector<uint32_t> ids, MakeBuffers(sizes, total));
  auto buf = std::make_unique<WeightBuffer>(total, ids, per_chunk * sb_bytes);
  const uint64_t group_bytes = QuantValueBytes(type, kQuantGroup), groups = elements / kQuantGroup;
  constexpr uint64_t kStageBlocks = 32768;
  const uint64_t stage = std::min(kStageBlocks, blocks);
  std::vector<uint8_t> v(stage * 2 * group_bytes), sc(stage * 4), staging(stage * sb_bytes);
  for (uint64_t b0 = 0; b0 < blocks;) {
    const uint64_t n = std::min({stage, blocks - b0, per_chunk - b0 % per_chunk});
    const uint64_t g0 = 2 * b0, ng = std::min(2 * n, groups - g0);
    std::fill(v.begin(), v.end(), 0);
    std::fill(sc.begin(), sc.end(), 0);
    G4_RETURN_IF_ERROR(values.Read(values_offset + g0 * group_bytes, ng * group_bytes, v.data()));
    G4_RETURN_IF_ERROR(scales.Read(scales_offset + g0 * 2, ng * 2, sc.data()));
    for (uint64_t k = 0; k < n; ++k) {
      uint8_t* dst = staging.data() + k * sb_bytes;
      std::memcpy(dst, sc.data() + 4 * k, 4);
      std::memcpy(dst + 4, v.data() + 2 * k * group_bytes, 2 * group_bytes);
    }
    g4_gpu_write_buffer(ids[b0 / per_chunk], static_cast<double>(b0 % per_chunk * sb_bytes), staging.data(),
                        static_cast<uint32_t>(n * sb_bytes));
    b0 += n;
  }
  return std::unique_ptr<Buffer>(std::move(buf));
}

}  // namespace g4::webgpu
