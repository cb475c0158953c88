// Byte sources for checkpoints: a mapped file, a memory block, or chunks handed in by a host.
// Everything that reads weights goes through Reader, so the same loader serves native files,
// memory and streamed data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace g4 {

class Reader {
 public:
  virtual ~Reader() = default;
  virtual uint64_t Size() const = 0;
  // Copies [offset, offset + size) into dst; an error if the range is outside the source.
  virtual Status Read(uint64_t offset, uint64_t size, void* dst) const = 0;
  // The whole source as one block of memory when it is one (mapped file, memory), else null.
  virtual const uint8_t* Data() const { return nullptr; }
  // A hint that [offset, offset + size) will not be read again soon (a mapped file lets go of
  // those pages, so streaming through a large file keeps memory flat).
  virtual void Release(uint64_t offset, uint64_t size) const { (void)offset; (void)size; }
  // What to call this source in error messages (a file path, "memory", ...).
  virtual const std::string& Name() const = 0;
};

// A read-only memory map of a file (native builds); falls back to reading on demand.
Result<std::unique_ptr<Reader>> OpenFileReader(const std::string& path);

// A copy of bytes held in memory.
std::unique_ptr<Reader> MakeMemoryReader(std::vector<uint8_t> bytes, std::string name);

// Upper bounds on what a text file of each kind may hold: far beyond any real one, so a wrong
// file (a device, a mislabelled weights file) is an error instead of filling memory.
inline constexpr uint64_t kMaxConfigBytes = 16ull << 20;     // config.json, generation_config.json
inline constexpr uint64_t kMaxIndexBytes = 256ull << 20;     // model.safetensors.index.json
inline constexpr uint64_t kMaxTokenizerBytes = 1ull << 30;   // tokenizer.json
inline constexpr uint64_t kMaxTextBytes = 256ull << 20;      // text handed in to encode

// Reads a whole file of at most `max_bytes`. It must be a regular file (so a FIFO or a device
// is an error, never a read that blocks or never ends) unless `allow_stream`, which takes any
// file that can be read (a pipe, /dev/stdin) and stops at `max_bytes`.
Result<std::string> ReadTextFile(const std::string& path, uint64_t max_bytes, bool allow_stream = false);
// Writes `text` as the whole of a new or truncated file; a failure names the file and its reason.
Status WriteTextFile(const std::string& path, const std::string& text);
// Whether `path` names anything (a file of any type, readable or not): what is there but cannot
// be read is then an error naming it, not taken for absent.
bool FileExists(const std::string& path);
std::string JoinPath(const std::string& dir, const std::string& name);

}  // namespace g4
