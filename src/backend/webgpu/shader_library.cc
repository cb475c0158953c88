#include "backend/webgpu/shader_library.h"

#include <cctype>
#include <sstream>

#include "backend/webgpu/gpu_imports.h"

namespace g4::webgpu {

std::vector<std::string> HeaderLines(const std::string& text, const std::string& key) {
  std::vector<std::string> out;
  const std::string tag = "//! " + key + " ";
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(tag, 0) == 0) out.push_back(line.substr(tag.size()));
  }
  return out;
}

std::string ShaderLibrary::PieceFile(const std::string& piece) const {
  const std::string twin = piece + "_subgroup";
  return device_.subgroup && wgsl::Source(twin.c_str()) ? twin : piece;
}

Status ShaderLibrary::AddPieces(const std::string& file, std::vector<std::string>* order,
                                std::set<std::string>* seen) const {
  const char* text = wgsl::Source(file.c_str());
  if (!text) return Internal("webgpu: no kernel file " + file + ".wgsl");
  for (const std::string& line : HeaderLines(text, "uses")) {
    std::istringstream names(line);
    for (std::string name; std::getline(names, name, ',');) {
      const size_t a = name.find_first_not_of(' '), b = name.find_last_not_of(' ');
      if (a == std::string::npos) continue;
      const std::string piece = PieceFile(name.substr(a, b - a + 1));
      if (!seen->insert(piece).second) continue;
      G4_RETURN_IF_ERROR(AddPieces(piece, order, seen));
      order->push_back(piece);
    }
  }
  return Status::Ok();
}

Result<std::string> ShaderLibrary::Assemble(const char* name, const std::string& consts) const {
  std::vector<std::string> order;
  std::set<std::string> seen = {name};
  G4_RETURN_IF_ERROR(AddPieces(name, &order, &seen));
  std::string src;
  if (device_.subgroup) src += "enable subgroups;\n";
  src += consts;
  for (const std::string& piece : order) {
    for (const std::string& device : HeaderLines(wgsl::Source(piece.c_str()), "device")) {
      if (device.rfind("SUBGROUP:", 0) != 0) return Internal("webgpu: " + piece + ".wgsl: unknown device constant " + device);
      wgsl::AppendConst(&src, "SUBGROUP", device_.subgroup);
    }
  }
  src += wgsl::Source("prelude");
  for (const std::string& piece : order) src += wgsl::Source(piece.c_str());
  src += wgsl::Source(name);
  return src;
}

Result<uint32_t> ShaderLibrary::Register(const char* name, const std::string& consts) {
  G4_ASSIGN_OR_RETURN(std::string src, Assemble(name, consts));
  const uint32_t id = static_cast<uint32_t>(known_.size() + 1);
  // Profiles name a kernel by its file and the flags it was compiled with: "matvec.gate_up.vec".
  std::string label = name;
  std::istringstream lines(consts);
  for (std::string line; std::getline(lines, line);) {
    const size_t colon = line.find(": bool = true");
    if (line.rfind("const ", 0) != 0 || colon == std::string::npos) continue;
    std::string flag = line.substr(6, colon - 6);
    for (char& c : flag) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    label += "." + flag;
  }
  g4_gpu_register_kernel(id, src.data(), static_cast<uint32_t>(src.size()), label.data(),
                         static_cast<uint32_t>(label.size()));
  labels_.push_back(std::move(label));
  return id;
}

}  // namespace g4::webgpu
