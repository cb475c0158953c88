// The WebGPU backend's dispatch shapes (src/backend/webgpu/dispatch_policy.h), over many sizes
// and tunings: the rules they promise, checked as properties.
#include "backend/webgpu/dispatch_policy.h"

#include <gtest/gtest.h>

#include <random>

namespace g4::webgpu {
namespace {

TEST(DispatchPolicy, RowsVariantsAreExactToFourThenEight) {
  for (int rows = 1; rows <= 4; ++rows) EXPECT_EQ(RowsVariant(rows), rows);
  for (int rows = 5; rows <= 8; ++rows) EXPECT_EQ(RowsVariant(rows), 8);
}

TEST(DispatchPolicy, JoinsAreStagedForSeveralRowsThatFit) {
  Tuning t;
  t.stage_bytes = 32768 - kMatVecOwnWorkgroupBytes;
  EXPECT_EQ(StageFloats(t, 1, 1536), 1536u);
  EXPECT_EQ(StageFloats(t, 3, 1536), 3u * 1536);
  EXPECT_EQ(StageFloats(t, 4, 1536), 4u * 1536);
  EXPECT_EQ(StageFloats(t, 5, 512), 8u * 512);  // the 8-row kernel's stage
  EXPECT_EQ(StageFloats(t, 8, 1536), 0u);       // 48 KiB do not fit
  EXPECT_EQ(StageFloats(t, 3, 1540), 0u);       // not whole octs
  EXPECT_EQ(StageFloats(t, 4, 2048), 0u);       // 32 KiB do not either
  t.stage_bytes = 4 * 3 * 2048;
  EXPECT_EQ(StageFloats(t, 3, 2048), 3u * 2048);  // exactly full
  t.stage_bytes -= 4;
  EXPECT_EQ(StageFloats(t, 3, 2048), 0u);
  t.stage_bytes = 0;  // a device without room
  EXPECT_EQ(StageFloats(t, 2, 8), 0u);
}

TEST(DispatchPolicy, EightBitInputsTakeWhatIsLeftBesideAJoinsStage) {
  Tuning t;
  t.stage_bytes = 16384 - kMatVecOwnWorkgroupBytes;                // 10 KiB
  EXPECT_EQ(Q8Octs(t, 1, 1536, 0), 192u);                           // 3 KiB
  EXPECT_EQ(Q8Octs(t, 1, 1536, 1536), 192u);                        // and a join's 6 KiB
  EXPECT_EQ(Q8Octs(t, 3, 1536, 0), 3u * 192);                       // 9 KiB
  EXPECT_EQ(Q8Octs(t, 3, 1536, 3 * 1536), 0u);                      // 27 KiB in all
  EXPECT_EQ(Q8Octs(t, 5, 256, 0), 8u * 32);                         // the 8-row kernel's rows
  EXPECT_EQ(Q8Octs(t, 1, 1540, 0), 0u);                             // not whole octs
  EXPECT_EQ(Q8Octs(t, 1, 8192, 0), 0u);                             // 16 KiB do not fit
  t.stage_bytes = 4 * 512 + 16 * 64;
  EXPECT_EQ(Q8Octs(t, 1, 512, 512), 64u);                           // exactly full
  EXPECT_EQ(Q8Octs(t, 1, 512, 513), 0u);
}

TEST(DispatchPolicy, JoinsGoOnTheWayStagedOrApartByRowsAndProduct) {
  Tuning t;
  t.stage_bytes = 32768 - kMatVecOwnWorkgroupBytes;
  // One row: a plain product joins on the way in, the gate and up product stages it.
  EXPECT_EQ(JoinPlaceFor(t, 1, 1536, false), JoinPlace::kOnTheWay);
  EXPECT_EQ(JoinPlaceFor(t, 1, 1536, true), JoinPlace::kStaged);
  // Several rows: a plain product stages them where they fit, the gate and up product never.
  EXPECT_EQ(JoinPlaceFor(t, 3, 1536, false), JoinPlace::kStaged);
  EXPECT_EQ(JoinPlaceFor(t, 3, 1536, true), JoinPlace::kApart);
  EXPECT_EQ(JoinPlaceFor(t, 8, 1536, false), JoinPlace::kApart);  // 48 KiB do not fit
  // What does not fit is not staged: a row too long, or a device without room.
  EXPECT_EQ(JoinPlaceFor(t, 1, 8192, true), JoinPlace::kOnTheWay);
  EXPECT_EQ(JoinPlaceFor(t, 1, 1540, true), JoinPlace::kOnTheWay);  // not whole octs
  t.stage_bytes = 0;
  EXPECT_EQ(JoinPlaceFor(t, 1, 1536, true), JoinPlace::kOnTheWay);
  EXPECT_EQ(JoinPlaceFor(t, 2, 8, false), JoinPlace::kApart);
}

TEST(DispatchPolicy, TeamsDoubleWhileTheDispatchIsSmallAndRowsLong) {
  std::mt19937 rng(3);
  for (int i = 0; i < 5000; ++i) {
    Tuning t;
    t.teams = 64u << (rng() % 8);
    const int64_t features = 1 + rng() % 20000, cols = 8 * (1 + rng() % 4000);
    const int64_t least = rng() % 2 ? 64 : 16;
    const TeamSplit s = TeamsPerFeature(t, features, cols, least);
    ASSERT_TRUE(s.teams == 1 || s.teams == 2 || s.teams == 4 || s.teams == 8);
    EXPECT_EQ(s.groups, static_cast<uint64_t>((features * s.teams + 7) / 8));  // eight teams a workgroup
    const int64_t octs = cols / 8;
    if (s.teams > 1) {  // each doubling was wanted: too few teams, rows long enough
      EXPECT_LT(static_cast<uint64_t>(features * (s.teams / 2)), t.teams);
      EXPECT_GE(octs / s.teams, least);
    }
    if (s.teams < 8) {  // and the next one is not
      EXPECT_TRUE(static_cast<uint64_t>(features * s.teams) >= t.teams || octs / (2 * s.teams) < least);
    }
  }
}

TEST(DispatchPolicy, OneRowOf16BitWeightsTakesMoreTeamsOnShortRows) {
  EXPECT_EQ(LeastTeamOcts(1, true), 16);
  EXPECT_EQ(LeastTeamOcts(1, false), 64);
  EXPECT_EQ(LeastTeamOcts(3, true), 64);
  Tuning t;  // 4,096 teams at least
  // E2B's keys and values (512 features of 1,536 inputs, 192 octs): 8 teams for one 16-bit row,
  // 2 otherwise.
  EXPECT_EQ(TeamsPerFeature(t, 512, 1536, LeastTeamOcts(1, true)).teams, 8u);
  EXPECT_EQ(TeamsPerFeature(t, 512, 1536, LeastTeamOcts(3, true)).teams, 2u);
  EXPECT_EQ(TeamsPerFeature(t, 512, 1536, LeastTeamOcts(1, false)).teams, 2u);
  // The per-layer projection (1,536 features of 256 inputs): 2 teams against 1.
  EXPECT_EQ(TeamsPerFeature(t, 1536, 256, LeastTeamOcts(1, true)).teams, 2u);
  EXPECT_EQ(TeamsPerFeature(t, 1536, 256, LeastTeamOcts(2, true)).teams, 1u);
}

TEST(DispatchPolicy, AttentionSplitsFillTheDeviceWithinTheirLimits) {
  std::mt19937 rng(5);
  for (int i = 0; i < 5000; ++i) {
    Tuning t;
    t.fill = 1 + rng() % 2000;
    const uint64_t pairs = 1 + rng() % 64, positions = 1 + rng() % 40000, hd = 8 * (1 + rng() % 64);
    const uint64_t scratch = 1u << 20;
    const uint64_t s = AttentionSplits(t, pairs, positions, hd, scratch);
    ASSERT_GE(s, 1u);
    EXPECT_LE(s, 64u);
    EXPECT_LE(s, (positions + 63) / 64);                        // no split of less than a tile's worth
    EXPECT_TRUE(s == 1 || s * pairs * (hd + 2) <= scratch);     // the partials fit
    EXPECT_TRUE(s == 1 || (s - 1) * pairs < t.fill);            // no more splits than fill the device
  }
}

// A tiled product of random shape on a device of random fill.
struct TiledCase {
  Tuning t;
  uint64_t rows, outs, cols;
  bool vec;
  uint64_t max_parts;
};
TiledCase RandomTiledCase(std::mt19937& rng) {
  TiledCase c;
  c.t.fill = 1 + rng() % 600;
  c.rows = 9 + rng() % 2000;
  c.outs = 1 + rng() % 20000;
  c.cols = 1 + rng() % 20000;
  c.vec = rng() % 2;
  c.max_parts = rng() % 3 == 0 ? 1 : 1 + rng() % 64;
  return c;
}

TEST(DispatchPolicy, TiledProductsCoverEveryColumnOnce) {
  std::mt19937 rng(7);
  for (int i = 0; i < 5000; ++i) {
    const auto [t, rows, outs, cols, vec, max_parts] = RandomTiledCase(rng);
    const MatmulShape s = MatmulTiles(t, rows, outs, cols, vec, max_parts);
    ASSERT_LE(s.tile, 3u);
    ASSERT_GE(s.parts, 1u);
    if (!vec) {
      EXPECT_EQ(s.tile, 0u);
    }
    if (s.parts == 1) {
      EXPECT_EQ(s.kc, cols);
    } else {
      EXPECT_TRUE(vec);
      EXPECT_LE(s.parts, max_parts);                         // the scratch holds them
      EXPECT_EQ(s.kc % 32, 0u);                              // whole stages of columns
      EXPECT_GE(s.kc, 128u);                                 // a few stages a part
      EXPECT_LE(s.groups, t.fill);                           // parts that fit the device
      EXPECT_GE(s.parts * s.kc, cols);                       // every column in a part
      EXPECT_LT((s.parts - 1) * s.kc, cols);                 // and no part empty
    }
    static constexpr uint64_t kTile[4][2] = {{64, 64}, {128, 64}, {128, 128}, {64, 32}};
    const uint64_t tiles = (rows + kTile[s.tile][0] - 1) / kTile[s.tile][0] * ((outs + kTile[s.tile][1] - 1) / kTile[s.tile][1]);
    EXPECT_EQ(s.groups, tiles * s.parts);
  }
}

// Where the scratch holds fewer parts than would fill the device, the product takes as many as it
// holds, not none: E2B's query projection of a 512-token prefill on 264 workgroups.
TEST(DispatchPolicy, TiledProductsSplitAsFarAsTheScratchHolds) {
  Tuning t;
  t.fill = 264;
  EXPECT_EQ(MatmulTiles(t, 512, 2048, 1536, true, 64).parts, 4u);
  EXPECT_EQ(MatmulTiles(t, 512, 2048, 1536, true, 3).parts, 3u);
  EXPECT_EQ(MatmulTiles(t, 512, 2048, 1536, true, 2).parts, 2u);
  EXPECT_EQ(MatmulTiles(t, 512, 2048, 1536, true, 1).parts, 1u);
  EXPECT_EQ(MatmulTiles(t, 512, 2048, 1536, true, 0).parts, 1u);
}

// A stage of matmul.wgsl's workgroup memory is 16 KiB for the 64 x 64 and 128 x 128 tiles and
// 12 KiB for 128 x 64 and 64 x 32: two stages only where the device has room for both.
TEST(DispatchPolicy, TiledProductsTakeTwoStagesOnlyWhereTheyFit) {
  std::mt19937 rng(11);
  for (int i = 0; i < 2000; ++i) {
    auto [t, rows, outs, cols, vec, max_parts] = RandomTiledCase(rng);
    t.workgroup_bytes = 16384;  // the WebGPU default: one stage always
    EXPECT_FALSE(MatmulTiles(t, rows, outs, cols, vec, max_parts).two_stages);
    t.workgroup_bytes = 32768;
    EXPECT_TRUE(MatmulTiles(t, rows, outs, cols, vec, max_parts).two_stages);
    t.workgroup_bytes = 24576;
    const MatmulShape s = MatmulTiles(t, rows, outs, cols, vec, max_parts);
    EXPECT_EQ(s.two_stages, s.tile == 1 || s.tile == 3) << "tile " << s.tile;
  }
}

}  // namespace
}  // namespace g4::webgpu
