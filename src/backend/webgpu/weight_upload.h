// Weights on the GPU: each in buffers of its own, in its stored type (kernels/weights.wgsl reads
// them). A weight larger than one binding may be is split in up to three chunks of whole
// superblocks (quantized) or of a multiple of kChunkAlign bytes, bound as W1, W2 and W3 of the
// kernel that reads it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "backend/backend.h"

namespace g4::webgpu {

class WeightBuffer final : public Buffer {
 public:
  WeightBuffer(size_t bytes, std::vector<uint32_t> ids, uint64_t chunk_bytes)
      : Buffer(bytes), ids_(std::move(ids)), chunk_bytes_(chunk_bytes) {}
  ~WeightBuffer() override;
  uint32_t id(size_t chunk = 0) const { return ids_[chunk]; }
  size_t chunks() const { return ids_.size(); }
  uint64_t chunk_bytes() const { return chunk_bytes_; }
  // Called before the GPU buffers are destroyed, if its owner still lives: the backend hands over
  // the dispatches it has recorded, which may bind them, so that none is run after they are gone.
  void set_before_destroy(std::weak_ptr<const std::function<void()>> f) { before_destroy_ = std::move(f); }

 private:
  std::vector<uint32_t> ids_;
  uint64_t chunk_bytes_;
  std::weak_ptr<const std::function<void()>> before_destroy_;
};

// Chunks of a split weight are a multiple of this many bytes: no oct of eight elements of any
// stored type straddles two.
inline constexpr uint64_t kChunkAlign = 256;

// Quantized weights on the GPU: superblocks of 64 values (two groups of 32), each a word of the
// two float16 scales then the values: 16 words of four int8 (q8) or 8 words of eight int4 offset
// by 8 (q4), lowest element in the lowest bits. Every word is aligned, and a superblock never
// straddles two bindings.
inline constexpr uint64_t kSuperblock = 64;
uint64_t SuperblockWords(DType t);
// Elements of a weight of type t each chunk of a split weight holds (the kernels' W1_CHUNK).
uint64_t ChunkElements(DType t, uint64_t chunk_bytes);

// Bytes [offset, offset + size) of `source`, as stored, in chunks of at most `binding_limit`.
Result<std::unique_ptr<Buffer>> UploadWeights(const Reader& source, uint64_t offset, uint64_t size,
                                              uint64_t binding_limit);
// A quantized weight from its values and scales (Backend::LoadQuantizedWeights), as superblocks.
Result<std::unique_ptr<Buffer>> UploadQuantized(DType type, uint64_t elements, const Reader& values,
                                                uint64_t values_offset, const Reader& scales, uint64_t scales_offset,
                                                uint64_t binding_limit);

}  // namespace g4::webgpu
