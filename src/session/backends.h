// The backends the front ends offer, made the same way for the CLI and the JavaScript runtime:
// the CPU reference, and (WebAssembly builds) WebGPU.
#pragma once

#include <cstdint>
#include <string>

#include "session/engine.h"

namespace g4 {

// The CPU reference backend on `threads` threads (0: all cores).
BackendFactory CpuBackends(int threads);

// WebGPU (WebAssembly builds; elsewhere an error): `fill` workgroups keep the device busy (0:
// measured when the backend is made). The K/V cache and activations live in one buffer: a
// context whose cache and activations (the slack aside) need more than one binding of the
// adapter takes fails before anything is made, the error ending with `remedy`, the front end's
// way to a shorter context; otherwise the arena is as large as the binding allows.
Result<BackendFactory> WebGpuBackends(uint64_t fill, std::string remedy);

}  // namespace g4
