// Recording: the dispatches of a step as one command list in wasm memory (wire.h), handed to the
// host in one call when a result is needed (with the read that needs it) or when it grows long;
// and the small host inputs those dispatches read, written to the arena's host region before the
// submit that reads them.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <utility>
#include <vector>

#include "backend/webgpu/arena.h"
#include "backend/webgpu/wire.h"

namespace g4::webgpu {

class CommandList {
 public:
  explicit CommandList(const Arena& arena) : arena_(arena) {}

  // One dispatch of kernel `kernel` over groups workgroups (as x, y), with its weight buffers and
  // its parameters' bytes (a multiple of 4, at most wire::kMaxParamWords words).
  void Add(uint32_t kernel, const uint32_t (&weights)[wire::kWeightSlots], uint64_t groups, const void* params,
           size_t bytes);

  // n words at `data` in the host region: their word offset in the arena. Written now (a queue
  // write, ahead of the submit of the list being recorded) and kept until the region is full:
  // the call that finds no room hands the list over and starts the region again. So an op may
  // record several dispatches between taking its words and the one that reads them, even where
  // the list is handed over in between, as long as it takes no other host words meanwhile (one
  // op's arrays go in one call). One of the last 64 arrays written since the region started is
  // reused.
  uint32_t HostWords(const void* data, size_t n);

  // Hands the list over to run (g4_gpu_submit), if it holds anything.
  void Submit();
  // The list, for a call that hands it over itself with a read (g4_gpu_read_start); Handed()
  // after it.
  std::span<const uint32_t> words() const { return words_; }
  void Handed();

  uint64_t dispatches() const { return dispatches_; }
  // Dispatches a list holds before it is handed over (at least 1).
  void set_max_pending(int n) { max_pending_ = n < 1 ? 1 : n; }

 private:
  // Dispatches a list holds before it is handed over: the GPU starts on a long batch (a
  // speculative round is one, recorded whole before its read) while the rest is recorded. As
  // many as the host puts in one submit (g4_gpu_submit_dispatches), so handing over costs no
  // submits.
  int max_pending_ = 128;
  const Arena& arena_;
  std::vector<uint32_t> words_;
  int pending_ = 0;
  uint64_t dispatches_ = 0;
  uint64_t host_used_ = 0;
  std::vector<std::pair<std::vector<uint32_t>, uint32_t>> host_written_;  // the region's last arrays
};

}  // namespace g4::webgpu
