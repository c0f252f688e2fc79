//===- MemoryPlanTest.cpp - the liveness-based memory planner -------------===//
//
// planMemory (passes/Analysis/MemoryPlan.h) on hand-made and random live
// intervals: buffers alive at the same time never share bytes, every offset
// is aligned, buffers alive at different times reuse space, the smallest
// gap that holds a buffer is chosen, and the peak is at least the most
// bytes alive at once.
//
//===----------------------------------------------------------------------===//

#include "passes/Analysis/MemoryPlan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

using namespace ferry;

namespace {

constexpr int64_t kAlign = 64;

int64_t aligned(int64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

// Every pair alive at once occupies disjoint aligned ranges inside the peak.
void expectValid(const std::vector<LiveInterval> &in, const MemoryPlan &plan) {
  ASSERT_EQ(plan.offsets.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(plan.offsets[i] % kAlign, 0) << "interval " << i;
    EXPECT_GE(plan.offsets[i], 0) << "interval " << i;
    EXPECT_LE(plan.offsets[i] + aligned(in[i].bytes), plan.peakBytes)
        << "interval " << i;
    for (size_t j = i + 1; j < in.size(); ++j) {
      bool together = !(in[i].last < in[j].first || in[j].last < in[i].first);
      if (!together)
        continue;
      bool apart = plan.offsets[i] + in[i].bytes <= plan.offsets[j] ||
                   plan.offsets[j] + in[j].bytes <= plan.offsets[i];
      EXPECT_TRUE(apart) << "intervals " << i << " and " << j
                         << " are alive together and overlap";
    }
  }
  EXPECT_GE(plan.peakBytes, plan.maxLiveBytes);
}

TEST(MemoryPlanTest, EmptyPlanHasNoBytes) {
  MemoryPlan plan = planMemory({}, kAlign);
  EXPECT_EQ(plan.peakBytes, 0);
  EXPECT_EQ(plan.maxLiveBytes, 0);
  EXPECT_TRUE(plan.offsets.empty());
}

TEST(MemoryPlanTest, BuffersAliveAtDifferentTimesShareSpace) {
  std::vector<LiveInterval> in = {{4096, 0, 1}, {4096, 2, 3}, {1024, 4, 9}};
  MemoryPlan plan = planMemory(in, kAlign);
  expectValid(in, plan);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(plan.peakBytes, 4096);
  EXPECT_EQ(plan.maxLiveBytes, 4096);
}

TEST(MemoryPlanTest, BuffersAliveTogetherAreApartAndAligned) {
  // 100 bytes take a 128-byte slot: the next buffer starts aligned.
  std::vector<LiveInterval> in = {{100, 0, 5}, {100, 3, 8}, {64, 5, 5}};
  MemoryPlan plan = planMemory(in, kAlign);
  expectValid(in, plan);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 128, 256}));
  EXPECT_EQ(plan.peakBytes, 320);
  EXPECT_EQ(plan.maxLiveBytes, 320); // all three at position 5
}

TEST(MemoryPlanTest, LargestFirstThenTheSmallestGapThatFits) {
  // Placed by decreasing size: A 0, B 512, C 768, D 960, F 1024. At
  // positions 5-9 only A, C and F are alive, leaving gaps of 256 bytes
  // (B's) and 64 bytes (D's); E (64 bytes) takes the 64-byte one.
  std::vector<LiveInterval> in = {
      {512, 0, 9}, // A
      {256, 0, 1}, // B
      {192, 0, 9}, // C
      {64, 0, 1},  // D
      {64, 0, 9},  // F
      {64, 5, 9},  // E
  };
  MemoryPlan plan = planMemory(in, kAlign);
  expectValid(in, plan);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 512, 768, 960, 1024, 960}));
  EXPECT_EQ(plan.peakBytes, 1088);
}

TEST(MemoryPlanTest, RandomProgramsArePlannedSafelyAndTightly) {
  std::mt19937_64 rng(20261125);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<LiveInterval> in;
    int64_t positions = 200, total = 0;
    std::uniform_int_distribution<int64_t> size(1, 1 << 16), pos(0, positions);
    std::uniform_int_distribution<int64_t> length(0, 30);
    for (int i = 0; i < 150; ++i) {
      int64_t first = pos(rng);
      LiveInterval iv{size(rng), first,
                      std::min<int64_t>(positions, first + length(rng))};
      total += aligned(iv.bytes);
      in.push_back(iv);
    }
    MemoryPlan plan = planMemory(in, kAlign);
    expectValid(in, plan);
    EXPECT_LE(plan.peakBytes, total);
    // Best fit by decreasing size stays close to the lower bound on such
    // programs; a plan 1.5x over it would mean reuse broke.
    EXPECT_LE(plan.peakBytes, plan.maxLiveBytes * 3 / 2)
        << "trial " << trial << ": peak " << plan.peakBytes << ", bound "
        << plan.maxLiveBytes;
  }
}

} // namespace
