//===- ArenaLayout.cpp - states and temporaries placed in the arena -------===//

#include "passes/lowering/ArenaLayout.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

#include <map>

using namespace mlir;
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

int64_t lowering::collectiveBytes(Operation *op) {
  int64_t whole = 0, replicas = 1, factor = 1;
  if (auto sum = dyn_cast<rt::AllReduceOp>(op)) {
    replicas = sum.getReplicas()[0];
    whole = sum.getCount()[0];
    factor = 2;
  } else if (auto scatter = dyn_cast<rt::ReduceScatterOp>(op)) {
    replicas = scatter.getReplicas()[0];
    whole = scatter.getShard()[0] * replicas;
  } else if (auto gather = dyn_cast<rt::AllGatherOp>(op)) {
    replicas = gather.getReplicas()[0];
    whole = gather.getShard()[0] * replicas;
  } else {
    return 0;
  }
  return factor * 4 * whole * (replicas - 1) / replicas;
}

namespace {

// First and last position of every temporary. Whole loops are included
// when a temporary is used both inside a loop and outside it: the body
// runs again while the value must survive.
void computeLiveness(const Instructions &ins, std::vector<TempLayout> &temps) {
  llvm::DenseMap<Value, size_t> index;
  for (auto [i, t] : llvm::enumerate(temps))
    index[t.alloc.getResult()] = i;
  for (auto [q, op] : llvm::enumerate(ins.ops)) {
    if (isa<rt::LoopOp>(op))
      continue;
    for (Value range : op->getOperands()) {
      auto it = index.find(bufferOf(range));
      if (it == index.end())
        continue; // a state
      TempLayout &t = temps[it->second];
      t.first = std::min<int64_t>(t.first, q);
      t.last = std::max<int64_t>(t.last, q);
    }
  }
  bool changed = true;
  while (changed) {
    changed = false;
    for (auto [q, end] : llvm::enumerate(ins.loopEnds)) {
      int64_t begin = static_cast<int64_t>(q);
      if (end < 0)
        continue;
      for (TempLayout &t : temps) {
        if (t.last < begin || t.first > end)
          continue;
        if (t.first >= begin && t.last <= end)
          continue; // inside
        if (t.first > begin || t.last < end) {
          t.first = std::min(t.first, begin);
          t.last = std::max(t.last, end);
          changed = true;
        }
      }
    }
  }
}

// The multiplier of each position: how often it runs per run of the
// program (the product of the enclosing loops' counts).
std::vector<int64_t> multipliers(const Instructions &ins) {
  std::vector<int64_t> mult(ins.ops.size(), 1);
  for (auto [q, op] : llvm::enumerate(ins.ops)) {
    auto loop = dyn_cast<rt::LoopOp>(op);
    if (!loop)
      continue;
    for (int64_t k = q + 1; k <= ins.loopEnds[q]; ++k)
      mult[k] *= static_cast<int64_t>(loop.getCount());
  }
  return mult;
}

// Per phase: executions, host-link bytes, matmul FLOPs, peak device bytes.
std::vector<PhaseStats> phaseStats(rt::ProgramOp program,
                                   const ProgramLayout &layout,
                                   const std::vector<int64_t> &mult,
                                   int64_t deviceStateBytes) {
  std::vector<std::string> names = phaseNamesOf(program);
  const Instructions &ins = layout.instructions;
  size_t n = ins.ops.size();
  std::vector<int64_t> live(n + 1, 0);
  for (const TempLayout &t : layout.temps)
    if (t.last >= 0) {
      rt::AllocOp alloc = t.alloc;
      int64_t bytes = alignUp(static_cast<int64_t>(alloc.getBytes()));
      live[t.first] += bytes;
      live[t.last + 1] -= bytes;
    }
  std::vector<PhaseStats> stats;
  std::map<std::string, size_t> index;
  int64_t alive = 0;
  int current = -1;
  auto bytesOf = [](Value range) {
    return static_cast<int64_t>(sliceOf(range).getBytes());
  };
  for (size_t q = 0; q < n; ++q) {
    alive += live[q];
    Operation *op = ins.ops[q];
    if (auto begin = dyn_cast<rt::PhaseBeginOp>(op)) {
      const std::string &name = names[begin.getPhase()[0]];
      auto [it, added] = index.try_emplace(name, stats.size());
      if (added)
        stats.push_back(PhaseStats{name});
      current = static_cast<int>(it->second);
      stats[current].executions += mult[q];
      continue;
    }
    if (isa<rt::PhaseEndOp>(op)) {
      current = -1;
      continue;
    }
    if (current < 0 || isa<rt::LoopOp>(op))
      continue;
    PhaseStats &s = stats[current];
    s.peakBytes = std::max(s.peakBytes, deviceStateBytes + alive);
    auto shape = [](auto gemm) {
      return 2.0 * static_cast<double>(gemm.getBatch()[0]) *
             static_cast<double>(gemm.getM()[0]) *
             static_cast<double>(gemm.getN()[0]) *
             static_cast<double>(gemm.getK()[0]);
    };
    if (auto load = dyn_cast<rt::LoadOp>(op))
      s.bytesIn += bytesOf(load.getSrc()) * mult[q];
    else if (auto store = dyn_cast<rt::StoreOp>(op))
      s.bytesOut += bytesOf(store.getSrc()) * mult[q];
    else if (int64_t sent = collectiveBytes(op))
      s.collectiveBytes += sent * mult[q];
    else if (auto gemm = dyn_cast<rt::GemmOp>(op))
      s.flops += shape(gemm) * static_cast<double>(mult[q]);
    else if (auto fused = dyn_cast<rt::GemmEpilogueOp>(op))
      s.flops += shape(fused) * static_cast<double>(mult[q]);
  }
  return stats;
}

} // namespace

ProgramLayout lowering::layoutProgram(rt::ProgramOp program,
                                      const StateLayout &states) {
  ProgramLayout layout;
  layout.instructions = instructionsInOrder(program);
  const Instructions &ins = layout.instructions;
  for (auto alloc : program.getBody().front().getOps<rt::AllocOp>())
    layout.temps.push_back(TempLayout{alloc});
  computeLiveness(ins, layout.temps);
  std::vector<LiveInterval> intervals;
  std::vector<size_t> placed;
  for (auto [i, t] : llvm::enumerate(layout.temps)) {
    if (t.last < 0)
      continue;
    intervals.push_back(
        {static_cast<int64_t>(t.alloc.getBytes()), t.first, t.last});
    placed.push_back(i);
  }
  layout.plan = planMemory(intervals, kAlignment);
  for (auto [k, i] : llvm::enumerate(placed))
    layout.temps[i].address = states.deviceStateBytes + layout.plan.offsets[k];
  std::vector<int64_t> mult = multipliers(ins);
  layout.phases = phaseStats(program, layout, mult, states.deviceStateBytes);
  for (auto [q, op] : llvm::enumerate(ins.ops))
    layout.collectiveBytes += collectiveBytes(op) * mult[q];
  // Where the most temporary bytes are alive, for budget errors.
  std::vector<int64_t> live(ins.ops.size() + 1, 0);
  for (const LiveInterval &iv : intervals) {
    live[iv.first] += alignUp(iv.bytes);
    live[iv.last + 1] -= alignUp(iv.bytes);
  }
  int64_t alive = 0, most = -1;
  for (size_t q = 0; q < ins.ops.size(); ++q) {
    alive += live[q];
    if (alive > most) {
      most = alive;
      layout.peakPosition = static_cast<int64_t>(q);
    }
  }
  return layout;
}
