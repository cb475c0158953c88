// The safetensors container: an 8-byte little-endian header length, a JSON header naming every
// tensor's dtype, shape and byte range, then the data. Only the header is read here.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"
#include "io/reader.h"

namespace g4 {

struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  uint64_t offset = 0;  // absolute byte offset in the file
  uint64_t bytes = 0;

  int64_t NumElements() const;
  std::string ShapeString() const;  // "[2, 3]"
};

struct SafetensorsHeader {
  std::map<std::string, TensorInfo> tensors;  // by stored name
  std::map<std::string, std::string> metadata;
  uint64_t data_offset = 0;  // where the data section starts
};

// Parses and validates the header as strictly as the format's reference reader (the Rust
// safetensors crate): at most 100,000,000 bytes of JSON object, every dtype known, every shape
// non-negative, every byte range of the size its shape and dtype imply, and the ranges covering
// the data exactly (no byte before, between or after the tensors that no tensor owns, none owned
// twice); beyond it, no key twice in one object (a tensor named twice). Errors name the source
// and the tensor.
Result<SafetensorsHeader> ParseSafetensorsHeader(const Reader& reader);

// Parses a header from raw bytes (the fuzzer's entry point; `file_size` bounds the data ranges).
Result<SafetensorsHeader> ParseSafetensorsHeaderBytes(const std::string& name, const uint8_t* data, size_t size,
                                                      uint64_t file_size);

// Writes a safetensors file (used by tools and tests): tensors in the order given.
struct TensorToWrite {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const void* data = nullptr;  // NumElements * DTypeSize bytes, or null to use `fill`
  // Produces bytes [offset, offset + n) of the tensor's data (for tensors too large to hold), in
  // order of offset; an error stops the write.
  std::function<Status(uint64_t offset, uint8_t* dst, size_t n)> fill;
};
// Writes to PATH.partial, renamed to PATH when complete: an error leaves no file at PATH.
Status WriteSafetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                        const std::map<std::string, std::string>& metadata = {});

}  // namespace g4
