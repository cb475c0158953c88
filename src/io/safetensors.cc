#include "io/safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

namespace g4 {
namespace {

using nlohmann::json;

// The reference reader's limit on the header (the Rust safetensors crate's MAX_HEADER_SIZE).
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

bool MulOverflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_mul_overflow(a, b, out); }

// Parses the header JSON, noting the first key that appears twice in one object: JSON parsers
// keep one of the two silently (the last, here), so a tensor named twice would lose an entry.
class DuplicateKeys {
 public:
  json Parse(const char* begin, const char* end) {
    return json::parse(
        begin, end,
        [this](int, json::parse_event_t event, json& parsed) {
          if (event == json::parse_event_t::object_start) {
            keys_.emplace_back();
          } else if (event == json::parse_event_t::object_end) {
            keys_.pop_back();
          } else if (event == json::parse_event_t::key) {
            const std::string& key = parsed.get_ref<const std::string&>();
            if (keys_.size() == 1) entry_ = key;
            if (!keys_.back().insert(key).second && where_.empty()) {
              const std::string entry = entry_ == "__metadata__" ? entry_ : "tensor " + entry_;
              if (keys_.size() > 1) {
                where_ = entry + ": key '" + key + "' appears twice";
              } else {
                where_ = key == "__metadata__" ? "__metadata__ appears twice" : entry + " is named twice";
              }
            }
          }
          return true;
        },
        /*allow_exceptions=*/false);
  }
  // The first duplicate, or empty.
  const std::string& first() const { return where_; }

 private:
  std::vector<std::set<std::string>> keys_;  // per open object
  std::string entry_;                        // the top-level key being read
  std::string where_;
};

}  // namespace

int64_t TensorInfo::NumElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string TensorInfo::ShapeString() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

Result<SafetensorsHeader> ParseSafetensorsHeaderBytes(const std::string& name, const uint8_t* data, size_t size,
                                                      uint64_t file_size) {
  if (size < 8) return DataLoss(name + ": too short for a safetensors header");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | data[i];
  if (n > kMaxHeaderBytes || n > size - 8) {
    return DataLoss(name + ": safetensors header length " + std::to_string(n) + " exceeds the file");
  }
  const char* text = reinterpret_cast<const char*>(data + 8);
  DuplicateKeys duplicates;
  json j = n > 0 && text[0] == '{' ? duplicates.Parse(text, text + n) : json(nullptr);
  if (j.is_discarded() || !j.is_object()) return DataLoss(name + ": safetensors header is not a JSON object");
  if (!duplicates.first().empty()) return DataLoss(name + ": " + duplicates.first());

  SafetensorsHeader h;
  h.data_offset = 8 + n;
  const uint64_t data_bytes = file_size >= h.data_offset ? file_size - h.data_offset : 0;
  if (file_size < h.data_offset) return DataLoss(name + ": file ends inside the safetensors header");

  std::vector<std::tuple<uint64_t, uint64_t, std::string>> ranges;  // begin, end, tensor
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const json& v = it.value();
    if (key == "__metadata__") {
      if (!v.is_object()) return DataLoss(name + ": __metadata__ is not an object");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string()) return DataLoss(name + ": __metadata__ value '" + m.key() + "' is not a string");
        h.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const std::string where = name + ": tensor " + key;
    if (!v.is_object()) return DataLoss(where + ": entry is not an object");
    auto dt = v.find("dtype");
    auto sh = v.find("shape");
    auto off = v.find("data_offsets");
    if (dt == v.end() || !dt->is_string()) return DataLoss(where + ": missing dtype");
    if (sh == v.end() || !sh->is_array()) return DataLoss(where + ": missing shape");
    if (off == v.end() || !off->is_array() || off->size() != 2) return DataLoss(where + ": missing data_offsets");
    TensorInfo t;
    t.name = key;
    if (!ParseDType(dt->get<std::string>(), &t.dtype)) {
      return DataLoss(where + ": unsupported dtype " + dt->get<std::string>());
    }
    uint64_t numel = 1;
    for (const json& d : *sh) {
      if (!d.is_number_unsigned()) return DataLoss(where + ": shape entries must be non-negative integers");
      const uint64_t dim = d.get<uint64_t>();
      if (dim > (1ull << 40) || MulOverflows(numel, dim, &numel)) return DataLoss(where + ": shape too large");
      t.shape.push_back(static_cast<int64_t>(dim));
    }
    if (t.shape.size() > 8) return DataLoss(where + ": more than 8 dimensions");
    if (!(*off)[0].is_number_unsigned() || !(*off)[1].is_number_unsigned()) {
      return DataLoss(where + ": data_offsets must be non-negative integers");
    }
    const uint64_t b = (*off)[0].get<uint64_t>(), e = (*off)[1].get<uint64_t>();
    uint64_t want;
    if (MulOverflows(numel, DTypeSize(t.dtype), &want)) return DataLoss(where + ": shape too large");
    if (b > e || e > data_bytes) {
      return DataLoss(where + ": byte range [" + std::to_string(b) + ", " + std::to_string(e) +
                      ") is outside the file's data (" + std::to_string(data_bytes) + " bytes)");
    }
    if (e - b != want) {
      return DataLoss(where + ": holds " + std::to_string(e - b) + " bytes but " + t.ShapeString() + " " +
                      DTypeName(t.dtype) + " needs " + std::to_string(want));
    }
    t.offset = h.data_offset + b;
    t.bytes = want;
    ranges.emplace_back(b, e, key);
    h.tensors.emplace(key, std::move(t));
  }
  // As the reference reader: the tensors, in order of their ranges, cover the data exactly, each
  // starting where the one before ends and the last ending with the file. Bytes no tensor owns,
  // or owned twice, mean a damaged or hand-made file.
  std::sort(ranges.begin(), ranges.end());
  uint64_t at = 0;
  std::string previous;
  for (const auto& [b, e, key] : ranges) {
    if (b < at) return DataLoss(name + ": tensor " + key + "'s bytes overlap tensor " + previous + "'s");
    if (b > at) {
      return DataLoss(name + ": data bytes [" + std::to_string(at) + ", " + std::to_string(b) +
                      ") belong to no tensor (before tensor " + key + ")");
    }
    at = e;
    previous = key;
  }
  if (at != data_bytes) {
    return DataLoss(name + ": data bytes [" + std::to_string(at) + ", " + std::to_string(data_bytes) +
                    ") after the last tensor belong to no tensor");
  }
  return h;
}

Result<SafetensorsHeader> ParseSafetensorsHeader(const Reader& reader) {
  const uint64_t size = reader.Size();
  if (size < 8) return DataLoss(reader.Name() + ": too short for a safetensors file");
  uint8_t len_bytes[8];
  G4_RETURN_IF_ERROR(reader.Read(0, 8, len_bytes));
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len_bytes[i];
  if (n > kMaxHeaderBytes || n > size - 8) {
    return DataLoss(reader.Name() + ": safetensors header length " + std::to_string(n) + " exceeds the file");
  }
  std::vector<uint8_t> buf(8 + n);
  G4_RETURN_IF_ERROR(reader.Read(0, 8 + n, buf.data()));
  return ParseSafetensorsHeaderBytes(reader.Name(), buf.data(), buf.size(), size);
}

Status WriteSafetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                        const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    uint64_t numel = 1;
    for (int64_t d : t.shape) numel *= static_cast<uint64_t>(d);
    const uint64_t bytes = numel * DTypeSize(t.dtype);
    header[t.name] = {{"dtype", DTypeName(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8) text.push_back(' ');
  const std::string partial = path + ".partial";
  FILE* f = std::fopen(partial.c_str(), "wb");
  if (!f) return NotFound(partial + ": cannot create");
  Status fill_status;
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * i));
  bool ok = std::fwrite(len, 1, 8, f) == 8 && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  std::vector<uint8_t> chunk;
  for (const auto& t : tensors) {
    if (!ok) break;
    uint64_t numel = 1;
    for (int64_t d : t.shape) numel *= static_cast<uint64_t>(d);
    const uint64_t bytes = numel * DTypeSize(t.dtype);
    if (t.data) {
      ok = bytes == 0 || std::fwrite(t.data, 1, bytes, f) == bytes;
      continue;
    }
    constexpr uint64_t kChunk = 8u << 20;
    chunk.resize(kChunk);
    for (uint64_t off = 0; ok && off < bytes; off += kChunk) {
      const size_t n = static_cast<size_t>(std::min(kChunk, bytes - off));
      fill_status = t.fill(off, chunk.data(), n);
      ok = fill_status.ok() && std::fwrite(chunk.data(), 1, n, f) == n;
    }
  }
  int err = ok ? 0 : errno;  // the failed write's reason (a full disk: ENOSPC)
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && std::rename(partial.c_str(), path.c_str()) == 0) return Status::Ok();
  if (ok) err = errno;
  std::remove(partial.c_str());
  if (!fill_status.ok()) return fill_status.WithContext(path);
  return DataLoss(path + ": write failed" + (err ? std::string(" (") + std::strerror(err) + ")" : std::string()));
}

}  // namespace g4
