#include "backend/webgpu/dispatch_policy.h"

#include <algorithm>

namespace g4::webgpu {
namespace {

// matmul.wgsl's tiles (rows x outputs) by TILE, and the TILEs from small to large.
constexpr uint64_t kTiles[4][2] = {{64, 64}, {128, 64}, {128, 128}, {64, 32}};
constexpr uint32_t kBySize[4] = {3, 0, 1, 2};
constexpr uint64_t kSplitColumns = 128;  // columns a part of a split product takes at least

// Bytes of one stage of a tile's workgroup memory: BM inputs and BN weights, each KQ vec4s (KQ
// is 8 for tiles of at most 128 rows and outputs together, else 4).
uint64_t StageBytes(uint32_t tile) {
  const uint64_t sides = kTiles[tile][0] + kTiles[tile][1];
  return sides * (sides <= 128 ? 8 : 4) * 16;
}

uint64_t TileCount(uint32_t tile, uint64_t rows, uint64_t outs) {
  return (rows + kTiles[tile][0] - 1) / kTiles[tile][0] * ((outs + kTiles[tile][1] - 1) / kTiles[tile][1]);
}

}  // namespace

uint32_t StageFloats(const Tuning& t, int rows, int64_t ins) {
  const uint64_t floats = static_cast<uint64_t>(RowsVariant(rows)) * static_cast<uint64_t>(ins);
  return ins % 8 == 0 && 4 * floats <= t.stage_bytes ? static_cast<uint32_t>(floats) : 0;
}

uint32_t Q8Octs(const Tuning& t, int rows, int64_t ins, uint32_t stage_floats) {
  const uint64_t bytes = Q8Bytes(rows, ins);
  return ins % 8 == 0 && 4ull * stage_floats + bytes <= t.stage_bytes ? static_cast<uint32_t>(bytes / 16) : 0;
}

JoinPlace JoinPlaceFor(const Tuning& t, int rows, int64_t ins, bool gate_up) {
  const bool fits = StageFloats(t, rows, ins) > 0;
  if (rows <= 1) return gate_up && fits ? JoinPlace::kStaged : JoinPlace::kOnTheWay;
  return !gate_up && fits ? JoinPlace::kStaged : JoinPlace::kApart;
}

TeamSplit TeamsPerFeature(const Tuning& t, int64_t features, int64_t cols, int64_t least_octs) {
  const int64_t octs = cols / 8;
  int log2_teams = 0;
  while (log2_teams < 3 && static_cast<uint64_t>(features << log2_teams) < t.teams && (octs >> (log2_teams + 1)) >= least_octs) {
    ++log2_teams;
  }
  return {static_cast<uint64_t>(((features << log2_teams) + 7) / 8), 1u << log2_teams};
}

uint64_t AttentionSplits(const Tuning& t, uint64_t pairs, uint64_t positions, uint64_t head_dim,
                         uint64_t scratch_floats) {
  uint64_t splits = std::min<uint64_t>({(t.fill + pairs - 1) / pairs, (positions + 63) / 64, 64});
  return std::max<uint64_t>(1, std::min<uint64_t>(splits, scratch_floats / (pairs * (head_dim + 2))));
}

MatmulShape MatmulTiles(const Tuning& t, uint64_t rows, uint64_t outs, uint64_t cols, bool vec, uint64_t max_parts) {
  auto two_stages = [&](uint32_t tile) { return 2 * StageBytes(tile) <= t.workgroup_bytes; };
  if (!vec) return {0, TileCount(0, rows, outs), 1, cols, two_stages(0)};
  // A product with at most half of t.fill of the largest tiles splits its columns into as many
  // parts as still fit in t.fill workgroups, of at least kSplitColumns columns each, and in the
  // scratch (max_parts): the largest tile uses each staged word the most times, which pays for
  // split_sum's pass over the parts.
  const uint32_t big = kBySize[3];
  uint64_t parts = std::min<uint64_t>({t.fill / TileCount(big, rows, outs), cols / kSplitColumns, max_parts});
  if (parts > 1) {
    const uint64_t kc = ((cols + parts - 1) / parts + 31) / 32 * 32;  // whole stages of columns
    parts = (cols + kc - 1) / kc;
    if (parts > 1) return {big, TileCount(big, rows, outs) * parts, parts, kc, two_stages(big)};
  }
  // Else the largest tile that still gives the device t.fill workgroups.
  int pick = 3;
  while (pick > 0 && TileCount(kBySize[pick], rows, outs) < t.fill) --pick;
  return {kBySize[pick], TileCount(kBySize[pick], rows, outs), 1, cols, two_stages(kBySize[pick])};
}

}  // namespace g4::webgpu
