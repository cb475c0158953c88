#include "backend/webgpu/command_list.h"

#include <algorithm>

#include "backend/webgpu/gpu_imports.h"

namespace g4::webgpu {

void CommandList::Add(uint32_t kernel, const uint32_t (&weights)[wire::kWeightSlots], uint64_t groups,
                      const void* params, size_t bytes) {
  const uint32_t gx = static_cast<uint32_t>(std::min<uint64_t>(groups, 65535));
  const uint32_t gy = static_cast<uint32_t>((groups + gx - 1) / gx);
  const size_t n = bytes / 4;
  const size_t at = words_.size();
  words_.resize(at + wire::kHeaderWords + n);
  uint32_t* w = words_.data() + at;
  w[wire::kKernel] = kernel;
  std::copy(std::begin(weights), std::end(weights), w + wire::kWeights);
  w[wire::kGroupsX] = gx;
  w[wire::kGroupsY] = gy;
  w[wire::kParamWords] = static_cast<uint32_t>(n);
  std::memcpy(w + wire::kHeaderWords, params, n * 4);
  ++dispatches_;
  if (++pending_ >= max_pending_) Submit();
}

uint32_t CommandList::HostWords(const void* data, size_t n) {
  std::vector<uint32_t> words(n);
  if (n) std::memcpy(words.data(), data, n * 4);
  for (const auto& [w, at] : host_written_) {
    if (w == words) return at;
  }
  const uint64_t bytes = std::max<uint64_t>(16, (n * 4 + 15) / 16 * 16);
  if (host_used_ + bytes > Arena::kHostBytes) {  // the region starts again behind what reads it
    Submit();
    host_used_ = 0;
    host_written_.clear();
  }
  const uint64_t off = arena_.host_base() + host_used_;
  host_used_ += bytes;
  if (n) g4_gpu_write_buffer(arena_.id(), static_cast<double>(off), data, static_cast<uint32_t>(n * 4));
  if (host_written_.size() == 64) host_written_.erase(host_written_.begin());  // the oldest goes
  host_written_.push_back({std::move(words), static_cast<uint32_t>(off / 4)});
  return static_cast<uint32_t>(off / 4);
}

void CommandList::Submit() {
  if (!words_.empty()) g4_gpu_submit(words_.data(), static_cast<uint32_t>(words_.size()));
  Handed();
}

void CommandList::Handed() {
  words_.clear();
  pending_ = 0;
}

}  // namespace g4::webgpu
