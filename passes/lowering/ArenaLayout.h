//===- ArenaLayout.h - states and temporaries placed in the arena -*- C++ -*-=//
//
// The last step of the lowering, and the measure ferry-place-buffers judges
// candidate placements by: states get fixed addresses (device states packed
// in declaration order from 0, remote buffers the same in host memory),
// temporaries (rt.allocs) live from the first to the last instruction that
// takes a slice of them (whole loops when used both inside and outside one)
// and share the range above the states by the liveness-based plan of
// passes/Analysis/MemoryPlan. layoutProgram only reads the program;
// ferry-layout-arena then moves every slice onto rt.arena.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_PASSES_LOWERING_ARENALAYOUT_H
#define FERRY_PASSES_LOWERING_ARENALAYOUT_H

#include "passes/Analysis/MemoryPlan.h"
#include "passes/lowering/RtRanges.h"

namespace ferry::lowering {

// Per phase (by name): executions per run of the program, bytes loaded and
// stored, matmul FLOPs, and the most device bytes alive at once.
struct PhaseStats {
  std::string name;
  int64_t executions = 0, bytesIn = 0, bytesOut = 0, peakBytes = 0;
  int64_t collectiveBytes = 0; // sent per replica, see collectiveBytes()
  double flops = 0;
};

// Bytes one replica sends for a collective call (a ring's count: all-reduce
// 2(N-1)/N of the buffer, reduce-scatter and all-gather (N-1)/N of the
// whole tensor); 0 for any other op.
int64_t collectiveBytes(mlir::Operation *op);

struct StateLayout {
  std::vector<int64_t> offsets; // per state: in the arena or in host memory
  int64_t deviceStateBytes = 0, hostBytes = 0;
};

StateLayout layoutStates(const std::vector<StateInfo> &states);

// A temporary's live range (instruction positions) and arena address.
struct TempLayout {
  rt::AllocOp alloc;
  int64_t first = INT64_MAX, last = -1;
  int64_t address = 0;
};

struct ProgramLayout {
  MemoryPlan plan; // the temporaries, above the states
  std::vector<PhaseStats> phases;
  int64_t collectiveBytes = 0;   // per run of the program, per replica
  int64_t peakPosition = 0;      // where the most temporaries are alive
  Instructions instructions;     // the positions
  std::vector<TempLayout> temps; // the program's rt.allocs, in order
};

// Liveness, the plan of the temporaries, their addresses and the per-phase
// statistics of a program before the layout. The program is not changed.
ProgramLayout layoutProgram(rt::ProgramOp program, const StateLayout &states);

} // namespace ferry::lowering

#endif // FERRY_PASSES_LOWERING_ARENALAYOUT_H
