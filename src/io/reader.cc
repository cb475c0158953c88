#include "io/reader.h"

#include <algorithm>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <sys/types.h>

#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#define G4_HAVE_MMAP 1
#endif

namespace g4 {
namespace {

Status RangeCheck(const std::string& name, uint64_t size, uint64_t offset, uint64_t len) {
  if (offset > size || len > size - offset) {
    return OutOfRange(name + ": read of " + std::to_string(len) + " bytes at offset " + std::to_string(offset) +
                      " is past the end (" + std::to_string(size) + " bytes)");
  }
  return Status::Ok();
}

class MemoryReader final : public Reader {
 public:
  MemoryReader(std::vector<uint8_t> bytes, std::string name) : bytes_(std::move(bytes)), name_(std::move(name)) {}
  uint64_t Size() const override { return bytes_.size(); }
  Status Read(uint64_t offset, uint64_t size, void* dst) const override {
    G4_RETURN_IF_ERROR(RangeCheck(name_, bytes_.size(), offset, size));
    if (size) std::memcpy(dst, bytes_.data() + offset, size);
    return Status::Ok();
  }
  const uint8_t* Data() const override { return bytes_.data(); }
  const std::string& Name() const override { return name_; }

 private:
  std::vector<uint8_t> bytes_;
  std::string name_;
};

#ifdef G4_HAVE_MMAP
class MappedFileReader final : public Reader {
 public:
  MappedFileReader(std::string path, const uint8_t* data, uint64_t size)
      : path_(std::move(path)), data_(data), size_(size) {}
  ~MappedFileReader() override {
    if (data_ && size_) munmap(const_cast<uint8_t*>(data_), size_);
  }
  uint64_t Size() const override { return size_; }
  Status Read(uint64_t offset, uint64_t size, void* dst) const override {
    G4_RETURN_IF_ERROR(RangeCheck(path_, size_, offset, size));
    if (size) std::memcpy(dst, data_ + offset, size);
    return Status::Ok();
  }
  const uint8_t* Data() const override { return data_; }
  void Release(uint64_t offset, uint64_t size) const override {
    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const uint64_t begin = (offset + page - 1) / page * page, end = std::min(size_, offset + size) / page * page;
    if (end > begin) madvise(const_cast<uint8_t*>(data_) + begin, end - begin, MADV_DONTNEED);
  }
  const std::string& Name() const override { return path_; }

 private:
  std::string path_;
  const uint8_t* data_;
  uint64_t size_;
};
#endif

#ifndef G4_HAVE_MMAP
// Reads through stdio; used where mmap is unavailable (WASI).
class StdioFileReader final : public Reader {
 public:
  StdioFileReader(std::string path, FILE* f, uint64_t size) : path_(std::move(path)), f_(f), size_(size) {}
  ~StdioFileReader() override { std::fclose(f_); }
  uint64_t Size() const override { return size_; }
  Status Read(uint64_t offset, uint64_t size, void* dst) const override {
    G4_RETURN_IF_ERROR(RangeCheck(path_, size_, offset, size));
    if (fseeko(f_, static_cast<off_t>(offset), SEEK_SET) != 0 || std::fread(dst, 1, size, f_) != size) {
      return DataLoss(path_ + ": short read at offset " + std::to_string(offset));
    }
    return Status::Ok();
  }
  const std::string& Name() const override { return path_; }

 private:
  std::string path_;
  FILE* f_;
  uint64_t size_;
};
#endif

}  // namespace

Result<std::unique_ptr<Reader>> OpenFileReader(const std::string& path) {
#ifdef G4_HAVE_MMAP
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return NotFound(path + ": cannot open (" + std::strerror(errno) + ")");
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return InvalidArgument(path + ": not a regular file");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  const uint8_t* data = nullptr;
  if (size > 0) {
    void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      close(fd);
      return ResourceExhausted(path + ": mmap failed (" + std::strerror(errno) + ")");
    }
    data = static_cast<const uint8_t*>(p);
  }
  close(fd);
  return std::unique_ptr<Reader>(new MappedFileReader(path, data, size));
#else
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return NotFound(path + ": cannot open");
  fseeko(f, 0, SEEK_END);
  const off_t size = ftello(f);
  if (size < 0) {
    std::fclose(f);
    return InvalidArgument(path + ": cannot size");
  }
  return std::unique_ptr<Reader>(new StdioFileReader(path, f, static_cast<uint64_t>(size)));
#endif
}

std::unique_ptr<Reader> MakeMemoryReader(std::vector<uint8_t> bytes, std::string name) {
  return std::make_unique<MemoryReader>(std::move(bytes), std::move(name));
}

Result<std::string> ReadTextFile(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return NotFound(path + ": cannot open (" + std::strerror(errno) + ")");
  std::string out;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  const bool err = std::ferror(f);
  std::fclose(f);
  if (err) return DataLoss(path + ": read error");
  return out;
}

bool FileExists(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  std::fclose(f);
  return true;
}

std::string JoinPath(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

}  // namespace g4
