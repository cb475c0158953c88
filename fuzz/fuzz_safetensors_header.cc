// libFuzzer target: the safetensors header parser on arbitrary bytes. Accepted headers must
// describe only byte ranges inside the input and of the size their shape implies.
#include <cstdint>
#include <cstdlib>

#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto r = g4::ParseSafetensorsHeaderBytes("fuzz.safetensors", data, size, size);
  if (!r.ok()) return 0;
  for (const auto& [name, t] : r->tensors) {
    if (t.offset < r->data_offset || t.offset + t.bytes > size) std::abort();
    if (static_cast<uint64_t>(t.NumElements()) * g4::DTypeSize(t.dtype) != t.bytes) std::abort();
  }
  return 0;
}
