// libFuzzer target: the safetensors header parser on arbitrary bytes. Accepted headers must
// describe byte ranges of the size their shape implies that tile the data exactly: every byte
// after the header owned by one tensor.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <utility>
#include <vector>

#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto r = g4::ParseSafetensorsHeaderBytes("fuzz.safetensors", data, size, size);
  if (!r.ok()) return 0;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto& [name, t] : r->tensors) {
    if (t.offset < r->data_offset || t.offset + t.bytes > size) std::abort();
    if (static_cast<uint64_t>(t.NumElements()) * g4::DTypeSize(t.dtype) != t.bytes) std::abort();
    ranges.emplace_back(t.offset, t.offset + t.bytes);
  }
  std::sort(ranges.begin(), ranges.end());
  uint64_t at = r->data_offset;
  for (const auto& [b, e] : ranges) {
    if (b != at) std::abort();
    at = e;
  }
  if (at != size) std::abort();
  return 0;
}
