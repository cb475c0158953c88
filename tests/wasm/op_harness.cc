#include "tests/wasm/op_harness.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "tests/weight_bytes.h"

namespace g4::ops {
namespace {

int failures = 0;
std::string only;
std::vector<std::string> types;
std::vector<std::string> skipped;
bool typed_only = false;  // --typed-only: of the cases, only those over a weight type

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  for (size_t start = 0; start <= s.size();) {
    const size_t end = std::min(s.find(sep, start), s.size());
    parts.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

}  // namespace

bool Selected(const std::string& name) {
  if (!only.empty() && name.find(only) == std::string::npos) return false;
  for (const std::string& s : skipped) {
    if (name.find(s) != std::string::npos) return false;
  }
  bool typed = false;
  for (const std::string& part : Split(name, '_')) {
    bool is_type = false;
    for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8, DType::kQ4}) is_type |= part == DTypeName(t);
    if (!is_type) continue;
    typed = true;
    if (types.empty() || std::find(types.begin(), types.end(), part) != types.end()) return true;
  }
  return !typed && !typed_only;
}

namespace {

void Check(const std::string& name, const std::vector<float>& got, const std::vector<float>& want, double bound) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    num += (got[i] - want[i]) * static_cast<double>(got[i] - want[i]);
    den += want[i] * static_cast<double>(want[i]);
  }
  const double nmse = den > 0 ? num / den : num;
  const bool ok = nmse <= bound && got.size() == want.size();
  if (!ok) ++failures;
  std::printf("{\"op\": \"%s\", \"nmse\": %.3g, \"bound\": %.3g, \"norm\": %.3g, \"ok\": %s}\n", name.c_str(), nmse, bound,
              den, ok ? "true" : "false");
  std::fflush(stdout);  // a case a line as it ends, so that a run cut short shows how far it got
}

}  // namespace

std::mt19937 rng(7);

std::vector<float> Random(size_t n, float scale) {
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

F32 Side::Floats(const std::vector<float>& v) {
  auto b = be->Allocate(std::max<size_t>(1, v.size()) * 4);
  if (!b.ok()) std::abort();
  if (!v.empty() && !be->Upload(**b, 0, v.data(), v.size() * 4).ok()) std::abort();
  owned.push_back(std::move(b).value());
  return F32{owned.back().get(), 0};
}

Weight Side::MakeWeight(const std::vector<float>& v, int64_t count, int64_t rows, int64_t cols, DType dt) {
  const std::vector<uint8_t> bytes = test::WeightBytes(v, dt);
  readers.push_back(MakeMemoryReader(bytes, "w"));
  auto b = be->LoadWeights(*readers.back(), 0, bytes.size());
  if (!b.ok()) std::abort();
  owned.push_back(std::move(b).value());
  return Weight{owned.back().get(), dt, count, rows, cols};
}

Weight Side::MakeQuantized(const std::vector<float>& v, int64_t count, int64_t rows, int64_t cols, DType type) {
  const test::Quantized q = test::Quantize(v, type);
  readers.push_back(MakeMemoryReader(q.values, "values"));
  const Reader& values = *readers.back();
  readers.push_back(MakeMemoryReader(q.scales, "scales"));
  auto b = be->LoadQuantizedWeights(type, v.size(), values, 0, *readers.back(), 0);
  if (!b.ok()) {
    std::fprintf(stderr, "%s\n", b.status().message().c_str());
    std::abort();
  }
  owned.push_back(std::move(b).value());
  return Weight{owned.back().get(), type, count, rows, cols};
}

Weight Side::Matrix(int64_t rows, int64_t cols, DType dt, float scale) {
  const std::vector<float> v = Random(rows * cols, scale);
  return IsQuantized(dt) ? MakeQuantized(v, 1, rows, cols, dt) : MakeWeight(v, 1, rows, cols, dt);
}

std::vector<float> Side::Read(F32 t, size_t n) {
  std::vector<float> out(n);
  if (!be->Download(*t.buffer, t.offset * 4, out.data(), n * 4).ok()) std::abort();
  return out;
}

void ParseSelection(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--types=", 0) == 0) {
      types = Split(arg.substr(8), ',');
    } else if (arg == "--typed-only") {
      typed_only = true;
    } else if (arg.rfind("--skip=", 0) == 0) {
      skipped.push_back(arg.substr(7));
    } else {
      only = arg;
    }
  }
}

void Case(const std::string& name, Backend& gpu, Backend& cpu, double bound,
          const std::function<std::vector<float>(Side&)>& body) {
  if (!Selected(name)) return;
  const auto state = rng;
  Side g{&gpu, {}, {}}, c{&cpu, {}, {}};
  const auto got = body(g);
  rng = state;
  const auto want = body(c);
  Check(name, got, want, bound);
}

void Expect(const std::string& name, bool ok, const std::string& detail) {
  if (!ok) ++failures;
  std::string quoted;  // detail as a JSON string
  for (char c : detail) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
  }
  std::printf("{\"op\": \"%s\", \"ok\": %s, \"detail\": \"%s\"}\n", name.c_str(), ok ? "true" : "false",
              ok ? "" : quoted.c_str());
  std::fflush(stdout);
}

int Failures() { return failures; }

void Append(std::vector<float>& a, const std::vector<float>& b) { a.insert(a.end(), b.begin(), b.end()); }

}  // namespace g4::ops
