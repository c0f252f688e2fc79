//===- ArenaLayout.cpp - states and temporaries placed in the arena -------===//

#include "passes/lowering/ArenaLayout.h"

#include "llvm/ADT/STLExtras.h"

#include <map>

using namespace ferry;
using namespace ferry::lowering;

StateLayout lowering::layoutStates(const std::vector<StateInfo> &states) {
  StateLayout l;
  for (const StateInfo &s : states) {
    int64_t &end = s.host ? l.hostBytes : l.deviceStateBytes;
    l.offsets.push_back(end);
    end = alignUp(end + s.bytes);
  }
  return l;
}

// Whole loops are included when a temporary is used both inside a loop and
// outside it: the body runs again while the value must survive.
void lowering::computeLiveness(Program &p) {
  std::vector<Buffer> &buffers = p.buffers;
  const std::vector<Instr> &instrs = p.instrs;
  for (size_t q = 0; q < instrs.size(); ++q)
    for (const Ref &r : instrs[q].buffers) {
      Buffer &b = buffers[r.buffer];
      b.first = std::min<int64_t>(b.first, q);
      b.last = std::max<int64_t>(b.last, q);
    }
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t q = 0; q < instrs.size(); ++q) {
      if (!instrs[q].isLoop())
        continue;
      int64_t begin = q, end = q + instrs[q].loopBody;
      for (Buffer &b : buffers) {
        if (b.isState || b.last < begin || b.first > end)
          continue;
        bool inside = b.first >= begin && b.last <= end;
        if (inside)
          continue;
        if (b.first > begin || b.last < end) {
          b.first = std::min(b.first, begin);
          b.last = std::max(b.last, end);
          changed = true;
        }
      }
    }
  }
}

int64_t lowering::collectiveBytes(const Instr &in) {
  bool reduce = in.kernel == "all_reduce";
  if (!reduce && in.kernel != "reduce_scatter" && in.kernel != "all_gather")
    return 0;
  int64_t replicas = in.ints[reduce ? 1 : 2].c;
  int64_t whole = reduce ? in.ints[0].c : in.ints[1].c * replicas;
  return (reduce ? 2 : 1) * 4 * whole * (replicas - 1) / replicas;
}

namespace {

// Per phase: executions, host-link bytes, matmul FLOPs, peak device bytes.
std::vector<PhaseStats> phaseStats(const Program &p, int64_t deviceStateBytes) {
  const std::vector<std::string> &names = p.phaseNames;
  size_t n = p.instrs.size();
  std::vector<int64_t> live(n + 1, 0);
  for (const Buffer &b : p.buffers)
    if (!b.isState && b.last >= 0) {
      live[b.first] += alignUp(b.bytes);
      live[b.last + 1] -= alignUp(b.bytes);
    }
  std::vector<PhaseStats> stats;
  std::map<std::string, size_t> index;
  std::vector<std::pair<size_t, int64_t>> loops; // (end, multiplier)
  int64_t alive = 0;
  int current = -1;
  for (size_t q = 0; q < n; ++q) {
    alive += live[q];
    while (!loops.empty() && q >= loops.back().first)
      loops.pop_back();
    int64_t mult = loops.empty() ? 1 : loops.back().second;
    const Instr &in = p.instrs[q];
    if (in.kernel.empty()) {
      loops.push_back({q + 1 + in.loopBody, mult * in.loopCount});
      continue;
    }
    if (in.kernel == "phase_begin") {
      const std::string &name = names[in.ints[0].c];
      auto [it, added] = index.try_emplace(name, stats.size());
      if (added)
        stats.push_back(PhaseStats{name});
      current = static_cast<int>(it->second);
      stats[current].executions += mult;
      continue;
    }
    if (in.kernel == "phase_end") {
      current = -1;
      continue;
    }
    if (current < 0)
      continue;
    PhaseStats &s = stats[current];
    s.peakBytes = std::max(s.peakBytes, deviceStateBytes + alive);
    if (in.kernel == "load")
      s.bytesIn += in.buffers[0].bytes * mult;
    else if (in.kernel == "store")
      s.bytesOut += in.buffers[0].bytes * mult;
    else if (int64_t sent = collectiveBytes(in))
      s.collectiveBytes += sent * mult;
    else if (in.kernel == "gemm" || in.kernel == "gemm_epilogue")
      s.flops += 2.0 * static_cast<double>(in.ints[0].c) *
                 static_cast<double>(in.ints[1].c) *
                 static_cast<double>(in.ints[2].c) *
                 static_cast<double>(in.ints[3].c) * static_cast<double>(mult);
  }
  return stats;
}

} // namespace

ProgramLayout lowering::layoutProgram(Program &p, const StateLayout &states) {
  ProgramLayout layout;
  for (size_t i = 0; i < states.offsets.size(); ++i)
    p.buffers[i].address = states.offsets[i];
  computeLiveness(p);
  std::vector<LiveInterval> intervals;
  std::vector<size_t> temps;
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    if (p.buffers[i].isState || p.buffers[i].last < 0)
      continue;
    intervals.push_back(
        {p.buffers[i].bytes, p.buffers[i].first, p.buffers[i].last});
    temps.push_back(i);
  }
  layout.plan = planMemory(intervals, kAlignment);
  for (auto [t, i] : llvm::enumerate(temps))
    p.buffers[i].address = states.deviceStateBytes + layout.plan.offsets[t];
  layout.phases = phaseStats(p, states.deviceStateBytes);
  // Collective bytes of one run, loops multiplied out.
  std::vector<std::pair<size_t, int64_t>> loops; // (end, multiplier)
  for (size_t q = 0; q < p.instrs.size(); ++q) {
    while (!loops.empty() && q >= loops.back().first)
      loops.pop_back();
    int64_t mult = loops.empty() ? 1 : loops.back().second;
    const Instr &in = p.instrs[q];
    if (in.kernel.empty())
      loops.push_back({q + 1 + in.loopBody, mult * in.loopCount});
    else
      layout.collectiveBytes += collectiveBytes(in) * mult;
  }
  // Where the most temporary bytes are alive, for budget errors.
  std::vector<int64_t> live(p.instrs.size() + 1, 0);
  for (const LiveInterval &iv : intervals) {
    live[iv.first] += alignUp(iv.bytes);
    live[iv.last + 1] -= alignUp(iv.bytes);
  }
  int64_t alive = 0, most = -1;
  for (size_t q = 0; q < p.instrs.size(); ++q) {
    alive += live[q];
    if (alive > most) {
      most = alive;
      layout.peakPosition = static_cast<int64_t>(q);
    }
  }
  return layout;
}
