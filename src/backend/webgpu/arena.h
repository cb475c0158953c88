// The activation arena: one GPU buffer that holds every float32 activation and cache of a
// backend, so that a dispatch binds it once whatever it reads and writes (in-place ops never bind
// a buffer twice). Its top holds two regions of the backend's own: small host inputs written
// before the submit that reads them (ids, positions, frequencies), and scratch for the partial
// results of split work (attention's splits, argmax's and top-k's slices).
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "backend/backend.h"

namespace g4::webgpu {

class Arena {
 public:
  static constexpr uint64_t kAlign = 256;
  static constexpr uint64_t kHostBytes = 4u << 20;   // the host inputs' region
  static constexpr uint64_t kSplitBytes = 4u << 20;  // the split results' region

  Arena() = default;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  ~Arena();
  // Makes the buffer: `bytes` rounded down to kAlign (at least the two regions and a block).
  Status Init(uint64_t bytes);

  uint32_t id() const { return id_; }
  uint64_t bytes() const { return bytes_; }
  uint64_t host_base() const { return bytes_ - kHostBytes; }
  uint64_t split_base() const { return host_base() - kSplitBytes; }

  // The bytes `bytes` take: whole kAlign blocks, at least one.
  static uint64_t Rounded(uint64_t bytes) { return (std::max<uint64_t>(bytes, 4) + kAlign - 1) / kAlign * kAlign; }
  // The offset of Rounded(bytes) taken from the first free range that holds them, if any.
  std::optional<uint64_t> Take(uint64_t bytes);
  void Release(uint64_t offset, uint64_t bytes);
  // The bytes of the largest free range: what one Take can have at most. Free ranges are whole
  // kAlign blocks, so Take(bytes) succeeds for any bytes up to it.
  uint64_t LargestFree() const;

 private:
  uint32_t id_ = 0;
  uint64_t bytes_ = 0;
  std::vector<std::pair<uint64_t, uint64_t>> free_;  // (offset, bytes), sorted, merged
};

// A float32 buffer in the arena (Backend::Allocate); its bytes go back to the arena when it goes.
class ArenaBuffer final : public Buffer {
 public:
  ArenaBuffer(size_t bytes, uint64_t offset, Arena* arena) : Buffer(bytes), offset_(offset), arena_(arena) {}
  ~ArenaBuffer() override { arena_->Release(offset_, bytes()); }
  uint64_t offset() const { return offset_; }

 private:
  uint64_t offset_;
  Arena* arena_;
};

}  // namespace g4::webgpu
