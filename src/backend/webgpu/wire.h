// The command list the WebGPU backend records in wasm memory and web/gpu_bridge.mjs runs, and the
// bind group layout every kernel shares (kernels/prelude.wgsl). Defined here only: the backend
// hands this layout to the bridge (g4_gpu_configure) before it records anything.
//
// A dispatch is kHeaderWords words, then its parameter words (the kernel's struct Params):
//   [kKernel] kernel id, [kWeights ..] kWeightSlots weight buffer ids (0: none),
//   [kGroupsX], [kGroupsY] workgroups, [kParamWords] n, then n words of parameters.
#pragma once

#include <cstdint>

namespace g4::wire {

inline constexpr uint32_t kKernel = 0;
inline constexpr uint32_t kWeights = 1;
inline constexpr uint32_t kWeightSlots = 4;
inline constexpr uint32_t kGroupsX = kWeights + kWeightSlots;
inline constexpr uint32_t kGroupsY = kGroupsX + 1;
inline constexpr uint32_t kParamWords = kGroupsY + 1;
inline constexpr uint32_t kHeaderWords = kParamWords + 1;
// The most parameter words a dispatch may have: the bridge gives each a uniform slot this size.
inline constexpr uint32_t kMaxParamWords = 32;
// Bindings: the arena (read-write storage), the parameters (uniform), then the weights
// (read-only storage) in slots kFirstWeightBinding .. + kWeightSlots - 1.
inline constexpr uint32_t kArenaBinding = 0;
inline constexpr uint32_t kParamsBinding = 1;
inline constexpr uint32_t kFirstWeightBinding = 2;

// What g4_gpu_configure hands over, in this order (the bridge reads it by these names).
inline constexpr uint32_t kLayout[] = {kKernel,       kWeights,       kWeightSlots,   kGroupsX,
                                       kGroupsY,      kParamWords,    kHeaderWords,   kMaxParamWords,
                                       kArenaBinding, kParamsBinding, kFirstWeightBinding};
inline constexpr const char* kLayoutNames =
    "kernel weights weightSlots groupsX groupsY paramWords headerWords maxParamWords arenaBinding paramsBinding "
    "firstWeightBinding";

}  // namespace g4::wire
