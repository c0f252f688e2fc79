//===- MemoryPlan.cpp - liveness-based placement of temporaries -----------===//

#include "passes/Analysis/MemoryPlan.h"

#include <algorithm>
#include <map>
#include <numeric>

using namespace ferry;

MemoryPlan ferry::planMemory(const std::vector<LiveInterval> &intervals,
                             int64_t alignment) {
  auto align = [&](int64_t v) {
    return (v + alignment - 1) / alignment * alignment;
  };
  MemoryPlan plan;
  plan.offsets.assign(intervals.size(), 0);
  std::vector<size_t> order(intervals.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return intervals[a].bytes > intervals[b].bytes;
  });
  std::vector<size_t> placed;
  for (size_t i : order) {
    const LiveInterval &cur = intervals[i];
    int64_t size = align(cur.bytes);
    // Ranges taken by already-placed buffers that overlap in time, by offset.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (size_t j : placed) {
      const LiveInterval &other = intervals[j];
      if (other.last < cur.first || cur.last < other.first)
        continue;
      busy.push_back({plan.offsets[j], plan.offsets[j] + align(other.bytes)});
    }
    std::sort(busy.begin(), busy.end());
    // Best fit: the smallest gap that holds it, else after the last range.
    int64_t best = -1, bestGap = INT64_MAX, cursor = 0;
    for (auto [begin, end] : busy) {
      if (begin - cursor >= size && begin - cursor < bestGap) {
        best = cursor;
        bestGap = begin - cursor;
      }
      cursor = std::max(cursor, end);
    }
    if (best < 0)
      best = cursor;
    plan.offsets[i] = best;
    plan.peakBytes = std::max(plan.peakBytes, best + size);
    placed.push_back(i);
  }
  // The lower bound, for reports: the most bytes alive at one position.
  std::map<int64_t, int64_t> delta;
  for (const LiveInterval &iv : intervals) {
    delta[iv.first] += align(iv.bytes);
    delta[iv.last + 1] -= align(iv.bytes);
  }
  int64_t live = 0;
  for (auto [pos, d] : delta) {
    live += d;
    plan.maxLiveBytes = std::max(plan.maxLiveBytes, live);
  }
  return plan;
}
