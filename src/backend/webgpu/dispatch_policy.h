// How the WebGPU backend shapes its dispatches: pure functions of the problem's sizes and of the
// device's Tuning, kept apart from the recording so that tests can check them natively.
#pragma once

#include <cstdint>

namespace g4::webgpu {

// Bytes of workgroup memory matvec.wgsl's own variables may take (its team reductions without
// subgroups the largest); a stage gets the rest of the device's.
constexpr uint64_t kMatVecOwnWorkgroupBytes = 6144;

// What the dispatch shapes depend on in the device.
struct Tuning {
  // Workgroups that keep the whole device busy: a dispatch of fewer leaves part of it idle, so
  // work of few rows is split until it has about this many (attention's positions, a tiled
  // product's columns). Measured at start-up (Calibrate), at least 1.
  uint64_t fill = 264;
  // Teams of 32 threads a matrix-vector dispatch has at least, features permitting.
  uint64_t teams = 4096;
  // Output features from which a product over 2 to 8 rows, or over 8-bit input words at any
  // rows, gives each team two (an input read then serves both; with fewer features the halved
  // number of teams costs more).
  int64_t rows_features = 65536;
  // Bytes of workgroup memory a matrix-vector kernel may stage its rows' input in: the device's
  // maxComputeWorkgroupStorageSize less what the kernel's own reductions take.
  uint64_t stage_bytes = 0;
  // The device's maxComputeWorkgroupStorageSize (WebGPU's default until Init reads it).
  uint64_t workgroup_bytes = 16384;
};

// The rows a matrix-vector kernel is compiled for: 1 to 4 exactly, 5 to 8 share the 8-row kernel.
inline int RowsVariant(int rows) { return rows <= 4 ? (rows < 1 ? 1 : rows) : 8; }

// Floats of workgroup memory for a matrix-vector kernel over `rows` rows of `ins` inputs to stage
// a pending residual join in (residual_stage.wgsl): the rows' kernel's rows (RowsVariant) of whole
// octs, or 0 where they do not fit.
uint32_t StageFloats(const Tuning& t, int rows, int64_t ins);

// Blocks of eight output features a workgroup of GateUp over q4 weights takes from the one stage
// of its 8-bit input (matvec.wgsl's BLOCKS): each workgroup reads the rows' residual, block output
// and norms for its stage, about as many bytes as its features' weights, so two blocks halve
// those reads while a layer's product keeps hundreds of workgroups (docs/PERFORMANCE.md).
constexpr uint32_t kGateUpQ8Blocks = 2;

// Octs of workgroup memory for a matrix-vector kernel over `rows` rows of `ins` inputs to keep its
// input 8-bit in (q8_stage.wgsl: a 16-byte word an oct) beside a join's stage of `stage_floats`:
// the rows' kernel's rows of whole octs, or 0 where they do not fit.
uint32_t Q8Octs(const Tuning& t, int rows, int64_t ins, uint32_t stage_floats);
// The bytes of those words: 16 an oct of the rows' kernel's rows.
inline uint64_t Q8Bytes(int rows, int64_t ins) {
  return 16ull * static_cast<uint64_t>(RowsVariant(rows)) * static_cast<uint64_t>(ins) / 8;
}

// Where a matrix-vector product makes a pending residual join over `rows` rows of `ins` inputs.
// kOnTheWay: as it reads its input (PRE), every lane summing the join's parts with its weights;
// kStaged: once a workgroup in workgroup memory (STAGE); kApart: a dispatch of its own first.
// A plain product takes one row on the way and stages more (on the way, each row's delta would
// be read again for every output feature). The MLP's gate and up product (gate_up: a team a
// feature, the most workgroups of a layer) stages one row, where the join's sums on the way would
// weigh on each of its two matrices' words, and joins more rows apart: every workgroup staging
// several rows' residual and delta costs more than one small dispatch.
enum class JoinPlace { kApart, kOnTheWay, kStaged };
JoinPlace JoinPlaceFor(const Tuning& t, int rows, int64_t ins, bool gate_up);

// Teams of 32 threads an output feature for a matrix-vector product: doubled (up to 8) while the
// dispatch has fewer than tuning.teams teams and each team keeps at least `least_octs` octs of its
// row (LeastTeamOcts).
struct TeamSplit {
  uint64_t groups;  // workgroups of eight teams
  uint32_t teams;   // teams a feature
};
TeamSplit TeamsPerFeature(const Tuning& t, int64_t features, int64_t cols, int64_t least_octs);

// The octs of its row a team keeps at least: 64, and 16 for one row of 16-bit weights, whose short
// rows (the keys and values, the per-layer gate and projection) then take more teams. Over several
// rows more teams a feature cost the rows' sums more than the shorter runs save
// (docs/PERFORMANCE.md); q4's products keep 64 (not measured otherwise).
inline int64_t LeastTeamOcts(int rows, bool sixteen_bit) { return rows == 1 && sixteen_bit ? 16 : 64; }

// Splits of the positions each (row, head) of attention sees, for `pairs` (row, head) pairs over
// `positions`: enough for about tuning.fill workgroups in all, each at most a tile of 64
// positions, at most 64, and what `scratch_floats` holds of (head_dim + 2) floats each.
uint64_t AttentionSplits(const Tuning& t, uint64_t pairs, uint64_t positions, uint64_t head_dim,
                         uint64_t scratch_floats);

// A tiled product (matmul.wgsl): the tile shape and how many parts its columns are split in.
struct MatmulShape {
  uint32_t tile;    // matmul.wgsl's TILE
  uint64_t groups;  // workgroups
  uint64_t parts;   // column parts (1: not split), each kc columns
  uint64_t kc;
  bool two_stages;  // matmul.wgsl's TWO_STAGES: two stages fit the device's workgroup memory
};
// vec: the kernel reads 16 bytes at a time (VEC); split columns need it, output rows of whole
// vec4s, and scratch for the parts: max_parts is how many parts' results the scratch holds (0 or 1:
// no split). Where it holds fewer than would fill the device, the product still takes the largest
// tile in that many parts (each staged word used the most times), not the smaller tiles of an
// unsplit product; not measured against them.
MatmulShape MatmulTiles(const Tuning& t, uint64_t rows, uint64_t outs, uint64_t cols, bool vec, uint64_t max_parts);

}  // namespace g4::webgpu
