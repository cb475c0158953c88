// What the C APIs the WebAssembly module exports to JavaScript share.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#define G4_EXPORT(name) extern "C" __attribute__((export_name(#name)))

namespace g4::wasm {

// The message g4_last_error returns: set by any export that fails.
void SetLastError(std::string message);

// A malloc'd copy of n values (at least one byte, so a valid pointer even when empty), for the
// host to free(); null when memory runs out.
template <typename T>
T* Copy(const T* data, size_t n) {
  T* out = static_cast<T*>(std::malloc(std::max<size_t>(1, n * sizeof(T))));
  if (out && n) std::memcpy(out, data, n * sizeof(T));
  return out;
}

// The same for text, its byte length in *length.
inline char* CopyText(const std::string& s, uint32_t* length) {
  *length = static_cast<uint32_t>(s.size());
  return Copy(s.data(), s.size());
}

}  // namespace g4::wasm
