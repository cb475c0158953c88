#include "tests/test_util.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <sys/wait.h>

#include "io/checkpoint.h"

namespace g4::test {

namespace fs = std::filesystem;

std::string TestData(const std::string& rel) { return std::string(G4_TESTDATA) + "/" + rel; }

std::vector<std::string> GoldenModelDirs() {
  std::vector<std::string> roots = {TestData("models")};
  if (const char* extra = std::getenv("G4_EXTRA_GOLDENS")) {
    std::stringstream ss(extra);
    std::string item;
    while (std::getline(ss, item, ':')) {
      if (!item.empty()) roots.push_back(item);
    }
  }
  std::vector<std::string> dirs;
  for (const auto& root : roots) {
    std::vector<std::string> found;
    for (const auto& e : fs::directory_iterator(root)) {
      if (fs::exists(e.path() / "golden.json")) found.push_back(e.path().string());
    }
    std::sort(found.begin(), found.end());
    dirs.insert(dirs.end(), found.begin(), found.end());
  }
  return dirs;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

nlohmann::json ReadJson(const std::string& path) { return nlohmann::json::parse(ReadFile(path)); }

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

CliRun Shell(const std::string& command) {
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

CliRun Cli(const std::string& args) { return Shell(std::string(G4_CLI) + " " + args); }

std::string MakeTempDir() {
  std::string tmpl = (fs::temp_directory_path() / "g4test-XXXXXX").string();
  char* p = mkdtemp(tmpl.data());
  return p ? std::string(p) : std::string();
}

std::vector<uint8_t> ConvertFloat(const std::vector<uint8_t>& bytes, DType from, DType to) {
  const size_t n = bytes.size() / DTypeSize(from);
  std::vector<uint8_t> out(n * DTypeSize(to));
  for (size_t i = 0; i < n; ++i) {
    float v = 0;
    uint16_t h;
    if (from == DType::kF32) {
      std::memcpy(&v, &bytes[i * 4], 4);
    } else {
      std::memcpy(&h, &bytes[i * 2], 2);
      v = from == DType::kBF16 ? Bf16ToF32(h) : F16ToF32(h);
    }
    if (to == DType::kF32) {
      std::memcpy(&out[i * 4], &v, 4);
    } else {
      h = to == DType::kBF16 ? F32ToBf16(v) : F32ToF16(v);
      std::memcpy(&out[i * 2], &h, 2);
    }
  }
  return out;
}

void CopyCheckpoint(const std::string& from, const std::string& to, const std::function<bool(TensorData&)>& rewrite,
                    std::vector<TensorData> extra) {
  fs::create_directories(to);
  for (const char* name : {"config.json", "generation_config.json"}) {
    if (fs::exists(fs::path(from) / name)) fs::copy_file(fs::path(from) / name, fs::path(to) / name);
  }
  auto ckpt = Checkpoint::Open(from);
  if (!ckpt.ok()) std::abort();
  std::vector<TensorData> tensors;
  for (const auto& [name, t] : (*ckpt)->tensors()) {
    TensorData d{name, t.info.dtype, t.info.shape, std::vector<uint8_t>(t.info.bytes)};
    if (!(*ckpt)->file(t.file).Read(t.info.offset, t.info.bytes, d.bytes.data()).ok()) std::abort();
    if (rewrite && !rewrite(d)) continue;
    tensors.push_back(std::move(d));
  }
  for (TensorData& d : extra) tensors.push_back(std::move(d));
  std::vector<TensorToWrite> out;
  for (const auto& t : tensors) out.push_back(TensorToWrite{t.name, t.dtype, t.shape, t.bytes.data(), {}});
  if (!WriteSafetensors((fs::path(to) / "model.safetensors").string(), out).ok()) std::abort();
}

std::vector<int> EmittedDrafts(const GenerationResult& r) {
  std::vector<int> emitted;
  for (size_t i = 0; i < r.rounds.size(); ++i) {
    const RoundTrace& round = r.rounds[i];
    int e = round.accepted;
    if (i + 1 == r.rounds.size() && r.stop_reason == "eos") {
      for (int j = 0; j < round.accepted; ++j) {
        if (round.drafts[j] == r.tokens.back()) {
          e = j + 1;
          break;
        }
      }
    }
    emitted.push_back(e);
  }
  return emitted;
}

}  // namespace g4::test
