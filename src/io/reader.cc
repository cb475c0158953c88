#include "io/reader.h"

#include <algorithm>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <sys/stat.h>
#include <sys/types.h>

#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <sys/mman.h>
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

Status OpenError(const std::string& path, int err) {
  const std::string what = path + ": cannot open (" + std::strerror(err) + ")";
  if (err == EACCES || err == EPERM) return FailedPrecondition(what);
  return err == ENOENT ? NotFound(what) : InvalidArgument(what);
}

// What a file is when it is not a regular file, for errors.
const char* FileTypeName(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

Status NotRegular(const std::string& path, mode_t mode) {
  return InvalidArgument(path + ": not a regular file (" + FileTypeName(mode) + ")");
}

#ifdef G4_HAVE_MMAP
// Opens a regular file for reading. The open does not block (a FIFO without a writer would block
// a plain open() for ever); anything but a regular file is then refused before a byte is read.
Result<int> OpenRegularFile(const std::string& path, struct stat* st) {
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return OpenError(path, errno);
  if (fstat(fd, st) != 0) {
    const int err = errno;
    close(fd);
    return InvalidArgument(path + ": cannot stat (" + std::strerror(err) + ")");
  }
  if (!S_ISREG(st->st_mode)) {
    close(fd);
    return NotRegular(path, st->st_mode);
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}
#else
// The same check by path, where files are opened through stdio (WASI).
Status CheckRegularFile(const std::string& path, uint64_t* size) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return OpenError(path, errno);
  if (!S_ISREG(st.st_mode)) return NotRegular(path, st.st_mode);
  if (size) *size = static_cast<uint64_t>(st.st_size);
  return Status::Ok();
}
#endif

}  // namespace

Result<std::unique_ptr<Reader>> OpenFileReader(const std::string& path) {
#ifdef G4_HAVE_MMAP
  struct stat st;
  G4_ASSIGN_OR_RETURN(const int fd, OpenRegularFile(path, &st));
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
  G4_RETURN_IF_ERROR(CheckRegularFile(path, nullptr));
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return OpenError(path, errno);
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

Result<std::string> ReadTextFile(const std::string& path, uint64_t max_bytes, bool allow_stream) {
  const auto too_large = [&] {
    const std::string limit = max_bytes % (1ull << 30) == 0   ? std::to_string(max_bytes >> 30) + " GiB"
                              : max_bytes % (1ull << 20) == 0 ? std::to_string(max_bytes >> 20) + " MiB"
                                                              : std::to_string(max_bytes) + " bytes";
    return ResourceExhausted(path + ": larger than " + limit + ", more than a file of this kind holds");
  };
  uint64_t expected = 0;  // the size a regular file reports (a stream reports none)
#ifdef G4_HAVE_MMAP
  struct stat st;
  int fd = -1;
  if (allow_stream) {
    fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return OpenError(path, errno);
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) expected = static_cast<uint64_t>(st.st_size);
  } else {
    G4_ASSIGN_OR_RETURN(fd, OpenRegularFile(path, &st));
    expected = static_cast<uint64_t>(st.st_size);
  }
#else
  if (!allow_stream) {
    G4_RETURN_IF_ERROR(CheckRegularFile(path, &expected));
  }
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return OpenError(path, errno);
#endif
  std::string out;
  Status status;
  if (expected > max_bytes) {
    status = too_large();
  } else {
    // Read at most max_bytes + 1 bytes: one byte over the cap is enough to refuse the file.
    out.reserve(static_cast<size_t>(expected));
    char buf[65536];
    while (status.ok()) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(sizeof buf, max_bytes + 1 - out.size()));
#ifdef G4_HAVE_MMAP
      const ssize_t n = read(fd, buf, want);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) status = DataLoss(path + ": read error (" + std::strerror(errno) + ")");
#else
      const size_t n = std::fread(buf, 1, want, f);
      if (n == 0 && std::ferror(f)) status = DataLoss(path + ": read error");
#endif
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
      if (out.size() > max_bytes) status = too_large();
    }
  }
#ifdef G4_HAVE_MMAP
  close(fd);
#else
  std::fclose(f);
#endif
  if (!status.ok()) return status;
  return out;
}

Status WriteTextFile(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return NotFound(path + ": cannot create");
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  int err = ok ? 0 : errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok) return Status::Ok();
  return DataLoss(path + ": write failed" + (err ? std::string(" (") + std::strerror(err) + ")" : std::string()));
}

bool FileExists(const std::string& path) {
  // lstat: a link that leads nowhere (or around in a loop) is there, so that reading it fails with
  // its reason instead of the file counting as absent.
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

std::string JoinPath(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

}  // namespace g4
