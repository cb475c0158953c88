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
  if (!preparing_) ++dispatches_;
  if (++pending_ >= max_pending_) Submit();
}

uint32_t CommandList::HostWords(const void* data, size_t n) {
  if (preparing_) return static_cast<uint32_t>(arena_.host_base() / 4);  // parameters are written again
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
  if (words_.empty()) return Handed();
  const uint32_t count = static_cast<uint32_t>(words_.size());
  if (preparing_) {
    kept_.push_back(Headers());
    ++lists_prepared_;
    g4_gpu_submit(words_.data(), count);
  } else if (!RunFromKept()) {
    kept_.clear();
    g4_gpu_submit(words_.data(), count);
  }
  Handed();
}

bool CommandList::RunFromKept() {
  if (!MatchesKept()) return false;
  kept_.pop_front();
  if (g4_gpu_submit_prepared(words_.data(), static_cast<uint32_t>(words_.size()))) {
    ++lists_run_prepared_;
  } else {
    kept_.clear();  // the host ran it afresh and dropped what it kept
  }
  return true;
}

std::span<const uint32_t> CommandList::WordsForRead() {
  if (!preparing_ && !words_.empty() && RunFromKept()) words_.clear();
  kept_.clear();
  return words_;
}

std::vector<uint32_t> CommandList::Headers() const {
  std::vector<uint32_t> headers;
  for (size_t at = 0; at < words_.size(); at += wire::kHeaderWords + words_[at + wire::kParamWords]) {
    headers.insert(headers.end(), words_.begin() + at, words_.begin() + at + wire::kHeaderWords);
  }
  return headers;
}

bool CommandList::MatchesKept() const { return !kept_.empty() && kept_.front() == Headers(); }

void CommandList::BeginPrepare() {
  Submit();
  kept_.clear();
  g4_gpu_prepare(1);
  preparing_ = true;
}

void CommandList::EndPrepare() {
  Submit();
  preparing_ = false;
  g4_gpu_prepare(0);
}

void CommandList::DropPrepared() {
  if (preparing_) {  // what is recorded still is dropped too
    words_.clear();
    pending_ = 0;
    preparing_ = false;
  }
  kept_.clear();
  g4_gpu_prepare(2);
}

void CommandList::Handed() {
  words_.clear();
  pending_ = 0;
}

}  // namespace g4::webgpu
