// Every backend op on the WebGPU backend against the CPU reference, both inside the WebAssembly
// module: random inputs of odd sizes, NMSE per op against a per-op bound; and calls the WebGPU
// backend must refuse. Prints one JSON line a case and exits non-zero when any case fails. Arguments select cases (op_harness.h). Run by
// tests/js/webgpu_ops.test.mjs.
#include <cstdio>

#include "tests/wasm/op_harness.h"

extern "C" __attribute__((export_name("g4_main"))) int g4_main(int argc, char** argv) {
  g4::ops::ParseSelection(argc, argv);
  // A fixed fill (not the device's measured one), so that every device takes the same dispatch
  // shapes: splits of attention's positions and of tiled products' columns among them.
  constexpr uint64_t kFill = 264;
  // One backend at a time: the host binds the arena of the last one made.
  auto cpu = g4::MakeCpuBackend();
  {
    auto gpu = g4::MakeWebGpuBackend(64ull << 20, 0, kFill);
    if (!gpu.ok()) return std::fprintf(stderr, "%s\n", gpu.status().message().c_str()), 1;
    g4::ops::RunProducts(**gpu, *cpu);
    g4::ops::RunAttention(**gpu, *cpu);
    g4::ops::RunPositionShift(**gpu, *cpu);
    g4::ops::RunOther(**gpu, *cpu);
  }
  {
    // Weight bindings of 1 KiB: weights split over three.
    auto split = g4::MakeWebGpuBackend(16ull << 20, 1024, kFill);
    if (!split.ok()) return std::fprintf(stderr, "%s\n", split.status().message().c_str()), 1;
    g4::ops::RunSplitProducts(**split, *cpu);
  }
  auto refusing = g4::MakeWebGpuBackend(16ull << 20, 0, kFill);
  if (!refusing.ok()) return std::fprintf(stderr, "%s\n", refusing.status().message().c_str()), 1;
  g4::ops::RunAttentionRefusal(**refusing);
  std::printf("{\"failures\": %d}\n", g4::ops::Failures());
  return g4::ops::Failures() ? 1 : 0;
}
extern "C" __attribute__((export_name("g4_flush"))) void g4_flush() {
  std::fflush(stdout);
  std::fflush(stderr);
}
