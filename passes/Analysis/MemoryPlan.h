//===- MemoryPlan.h - liveness-based placement of temporaries ---*- C++ -*-===//
//
// Places buffers with known live intervals (first and last instruction that
// touches them, loops already accounted for by the caller) in one address
// range so that buffers alive at the same time never overlap. Greedy
// best-fit by decreasing size: a classic offline heuristic (as in TFLite's
// and XLA's planners) that is within a few percent of the peak of live bytes
// on transformer programs.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_PASSES_ANALYSIS_MEMORYPLAN_H
#define FERRY_PASSES_ANALYSIS_MEMORYPLAN_H

#include <cstdint>
#include <vector>

namespace ferry {

struct LiveInterval {
  int64_t bytes = 0;
  int64_t first = 0, last = 0; // inclusive instruction positions
};

struct MemoryPlan {
  std::vector<int64_t> offsets; // per interval, multiples of `alignment`
  int64_t peakBytes = 0;        // the planned range's size
  int64_t maxLiveBytes = 0;     // lower bound: most bytes alive at once
};

MemoryPlan planMemory(const std::vector<LiveInterval> &intervals,
                      int64_t alignment);

} // namespace ferry

#endif // FERRY_PASSES_ANALYSIS_MEMORYPLAN_H
