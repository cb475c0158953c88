#include "backend/webgpu/arena.h"

#include <algorithm>
#include <string>

#include "backend/webgpu/gpu_imports.h"

namespace g4::webgpu {

Arena::~Arena() {
  if (id_) g4_gpu_destroy_buffer(id_);
}

Status Arena::Init(uint64_t bytes) {
  bytes_ = std::max(bytes / kAlign * kAlign, kHostBytes + kSplitBytes + kAlign);
  id_ = g4_gpu_create_buffer(static_cast<double>(bytes_), 0);
  if (!id_) return ResourceExhausted("webgpu: cannot allocate the " + std::to_string(bytes_ >> 20) + " MiB arena");
  free_ = {{0, split_base()}};
  return Status::Ok();
}

std::optional<uint64_t> Arena::Take(uint64_t bytes) {
  const uint64_t need = Rounded(bytes);
  for (size_t i = 0; i < free_.size(); ++i) {
    if (free_[i].second >= need) {
      const uint64_t off = free_[i].first;
      free_[i].first += need;
      free_[i].second -= need;
      if (!free_[i].second) free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
      return off;
    }
  }
  return std::nullopt;
}

uint64_t Arena::LargestFree() const {
  uint64_t most = 0;
  for (const auto& f : free_) most = std::max(most, f.second);
  return most;
}

void Arena::Release(uint64_t offset, uint64_t bytes) {
  free_.push_back({offset, Rounded(bytes)});
  std::sort(free_.begin(), free_.end());
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  for (const auto& f : free_) {
    if (!merged.empty() && merged.back().first + merged.back().second == f.first) {
      merged.back().second += f.second;
    } else {
      merged.push_back(f);
    }
  }
  free_ = std::move(merged);
}

}  // namespace g4::webgpu
