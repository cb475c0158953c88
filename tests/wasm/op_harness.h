// The harness of ops_compare: test cases that run one body on the WebGPU backend and on the CPU
// reference with the same random draws, and compare what each returns (NMSE against a bound).
// Each case prints one JSON line as it ends.
#pragma once

#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "io/reader.h"

namespace g4::ops {

extern std::mt19937 rng;
std::vector<float> Random(size_t n, float scale = 1.0f);

// One backend's view of a test case: buffers made from host vectors.
struct Side {
  Backend* be;
  std::vector<std::unique_ptr<Buffer>> owned;
  std::vector<std::unique_ptr<Reader>> readers;
  F32 Floats(const std::vector<float>& v);
  Weight MakeWeight(const std::vector<float>& v, int64_t count, int64_t rows, int64_t cols, DType dt);
  // Float values quantized as `type` (kQ8, kQ4): the same stored bytes on both backends.
  Weight MakeQuantized(const std::vector<float>& v, int64_t count, int64_t rows, int64_t cols, DType type);
  // A matrix of random values in any type, the quantized ones quantized.
  Weight Matrix(int64_t rows, int64_t cols, DType dt, float scale = 1.0f);
  std::vector<float> Read(F32 t, size_t n);
};

// Which cases run: the first argument that is not an option (a part of their names), --types=A,B
// (of the cases whose names name a weight type, a part between underscores: only these types),
// --typed-only (no case that names no weight type), --skip=S (not the cases whose names contain
// S; any number).
void ParseSelection(int argc, char** argv);

// Runs `body` on both backends with the same random draws and checks what they return; counts
// failures.
void Case(const std::string& name, Backend& gpu, Backend& cpu, double bound,
          const std::function<std::vector<float>(Side&)>& body);
int Failures();

// Whether the arguments select the case `name`.
bool Selected(const std::string& name);
// The end of a case that runs on the WebGPU backend alone and checks a property: prints its line
// (with `detail` when `ok` is false) and counts a failure when the property does not hold.
void Expect(const std::string& name, bool ok, const std::string& detail);

// Appends b to a: the values a case returns, several tensors one after another.
void Append(std::vector<float>& a, const std::vector<float>& b);

// The case groups (ops_products.cc, ops_attention.cc, ops_other.cc); `split`: a backend whose
// weight bindings hold 1 KiB.
void RunProducts(Backend& gpu, Backend& cpu);
void RunSplitProducts(Backend& split, Backend& cpu);
void RunAttention(Backend& gpu, Backend& cpu);
void RunPositionShift(Backend& gpu, Backend& cpu);
void RunOther(Backend& gpu, Backend& cpu);
// Calls the WebGPU backend must refuse; each leaves the backend failed, so it takes one of its own.
void RunAttentionRefusal(Backend& gpu);

}  // namespace g4::ops
