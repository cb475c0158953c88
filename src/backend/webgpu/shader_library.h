// The kernels' WGSL, assembled from the files under kernels/ as their headers declare: the
// prelude, then the pieces a kernel uses (`//! uses a, b`, transitively, each once), the device's
// constants (`//! device`), the variant's constants (webgpu_kernels.h, generated from the
// `//! variant` lines) and the kernel's own text. Profiles name a kernel by its file and the
// flags it was compiled with ("matvec.gate_up.vec"). Each assembled kernel is registered with the
// host once (compiled there) and known by an id afterwards.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "webgpu_kernels.h"

namespace g4::webgpu {

// What the shader library takes from the device.
struct DeviceFeatures {
  uint32_t subgroup = 0;  // the width of every subgroup where team reductions use them, else 0
};

class ShaderLibrary {
 public:
  explicit ShaderLibrary(DeviceFeatures device) : device_(device) {}

  // The id of kernel K compiled with variant v, registered the first time it is asked for. Every
  // dispatch asks, so a variant seen before is found by its constants' values (no text built).
  template <typename K>
  Result<uint32_t> Id(const typename K::Variant& v) {
    std::array<uint32_t, K::Variant::kWords> words{};
    wgsl::Words(v, words.data());
    const uint64_t hash = Hash(K::kName, words.data(), words.size());
    const auto [first, last] = known_.equal_range(hash);
    for (auto it = first; it != last; ++it) {
      const Known& k = it->second;
      const bool same = std::equal(words.begin(), words.end(), k.words.begin(), k.words.end());
      if (same && std::strcmp(k.name, K::kName) == 0) return k.id;
    }
    G4_ASSIGN_OR_RETURN(uint32_t id, Register(K::kName, wgsl::Consts(v)));
    known_.emplace(hash, Known{K::kName, std::vector<uint32_t>(words.begin(), words.end()), id});
    return id;
  }

  // The assembled source of a kernel (for tests and errors).
  Result<std::string> Assemble(const char* name, const std::string& consts) const;
  // How many kernels have been registered.
  size_t size() const { return known_.size(); }
  // The name profiles give kernel `id` (its file and flags: "matvec.gate_up.vec"); "" for none.
  const std::string& Label(uint32_t id) const {
    static const std::string none;
    return id >= 1 && id <= labels_.size() ? labels_[id - 1] : none;
  }

 private:
  // Assembles kernel `name` with the variant constants `consts` and registers it with the host
  // under the next id.
  Result<uint32_t> Register(const char* name, const std::string& consts);
  // The file a piece is read from: its subgroup twin (NAME_subgroup) where the device has
  // subgroups and there is one.
  std::string PieceFile(const std::string& piece) const;
  Status AddPieces(const std::string& file, std::vector<std::string>* order, std::set<std::string>* seen) const;

  // FNV-1a-style: over a kernel's name (bytes) and its variant's values (whole words).
  static uint64_t Hash(const char* name, const uint32_t* words, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (const char* c = name; *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 1099511628211ull;
    for (size_t i = 0; i < n; ++i) h = (h ^ words[i]) * 1099511628211ull;
    return h;
  }
  struct Known {
    const char* name;
    std::vector<uint32_t> words;
    uint32_t id;
  };

  DeviceFeatures device_;
  std::unordered_multimap<uint64_t, Known> known_;  // Hash(name, variant values) -> id
  std::vector<std::string> labels_;                 // by id - 1
};

// The `//! KEY ...` lines of a WGSL text: their rest, one entry each.
std::vector<std::string> HeaderLines(const std::string& text, const std::string& key);

}  // namespace g4::webgpu
