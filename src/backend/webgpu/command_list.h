// Recording: the dispatches of a step as one command list in wasm memory (wire.h), handed to the
// host in one call when a result is needed (with the read that needs it) or when it grows long;
// and the small host inputs those dispatches read, written to the arena's host region before the
// submit that reads them.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
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
  // reused. While preparing it writes nothing and returns the region's start: the lists prepared
  // run with the parameters of the lists recorded again, which take their own words.
  uint32_t HostWords(const void* data, size_t n);

  // Hands the list over to run (g4_gpu_submit), if it holds anything: while preparing, to be
  // kept; else, when it holds the same dispatches as the first list kept, to run from that
  // (g4_gpu_submit_prepared).
  void Submit();
  // The list, for a call that hands it over itself with a read (g4_gpu_read_start), which drops
  // what is kept; Handed() after it. A list that matches the first kept one is run from it here,
  // and what is left to hand over with the read is empty. Not while preparing (reads are refused
  // then).
  std::span<const uint32_t> WordsForRead();
  void Handed();

  // Preparing ahead: the lists recorded between BeginPrepare and EndPrepare are handed over to be
  // encoded and kept, not run, and take no host words (HostWords writes nothing); the lists
  // recorded next run from them as long as each holds the same dispatches as the next one kept
  // (kernel, weights, workgroups; any parameters), and the first that does not drops the rest.
  void BeginPrepare();
  void EndPrepare();
  // Drops what is kept (after a preparation that failed, or one that will not be used).
  void DropPrepared();
  bool preparing() const { return preparing_; }
  uint64_t lists_prepared() const { return lists_prepared_; }
  // Lists that ran from what the host kept (it confirms each).
  uint64_t lists_run_prepared() const { return lists_run_prepared_; }

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
  // words_'s dispatch headers, one after the other: what a kept list is known by.
  std::vector<uint32_t> Headers() const;
  // Whether words_ holds the same dispatches as the first kept list.
  bool MatchesKept() const;
  // Where it does, runs words_ from that list (g4_gpu_submit_prepared; the host runs it afresh
  // where its own check fails) and returns true; else runs nothing.
  bool RunFromKept();
  bool preparing_ = false;
  std::deque<std::vector<uint32_t>> kept_;  // the kept lists' dispatch headers, in order
  uint64_t lists_prepared_ = 0, lists_run_prepared_ = 0;
};

}  // namespace g4::webgpu
