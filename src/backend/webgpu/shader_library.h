// The kernels' WGSL, assembled from the files under kernels/ as their headers declare: the
// prelude, then the pieces a kernel uses (`//! uses a, b`, transitively, each once), the device's
// constants (`//! device`), the variant's constants (webgpu_kernels.h, generated from the
// `//! variant` lines) and the kernel's own text. Profiles name a kernel by its file and the
// flags it was compiled with ("matvec.gate_up.vec"). Each assembled kernel is registered with the
// host once (compiled there) and known by an id afterwards.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
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

  // The id of kernel K compiled with variant v, registered the first time it is asked for.
  template <typename K>
  Result<uint32_t> Id(const typename K::Variant& v) {
    return Id(K::kName, wgsl::Consts(v));
  }
  Result<uint32_t> Id(const char* name, const std::string& consts);

  // The assembled source of a kernel (for tests and errors).
  Result<std::string> Assemble(const char* name, const std::string& consts) const;
  // How many kernels have been registered.
  size_t size() const { return ids_.size(); }

 private:
  // The file a piece is read from: its subgroup twin (NAME_subgroup) where the device has
  // subgroups and there is one.
  std::string PieceFile(const std::string& piece) const;
  Status AddPieces(const std::string& file, std::vector<std::string>* order, std::set<std::string>* seen) const;

  DeviceFeatures device_;
  std::map<std::string, uint32_t> ids_;  // name + consts -> id
};

// The `//! KEY ...` lines of a WGSL text: their rest, one entry each.
std::vector<std::string> HeaderLines(const std::string& text, const std::string& key);

}  // namespace g4::webgpu
