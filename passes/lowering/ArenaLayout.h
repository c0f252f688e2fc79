//===- ArenaLayout.h - states and temporaries placed in the arena -*- C++
//-*-===//
//
// The last step of the lowering, and the measure ferry-place-buffers judges
// candidate placements by: states get fixed addresses (device states packed
// in declaration order from 0, remote buffers the same in host memory),
// temporaries live from their first to their last instruction (whole loops
// when used both inside and outside one) and share the range above the
// states by the liveness-based plan of passes/Analysis/MemoryPlan.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_PASSES_LOWERING_ARENALAYOUT_H
#define FERRY_PASSES_LOWERING_ARENALAYOUT_H

#include "passes/Analysis/MemoryPlan.h"
#include "passes/lowering/RtProgram.h"

namespace ferry::lowering {

// Per phase (by name): executions per run of the program, bytes loaded and
// stored, matmul FLOPs, and the most device bytes alive at once.
struct PhaseStats {
  std::string name;
  int64_t executions = 0, bytesIn = 0, bytesOut = 0, peakBytes = 0;
  int64_t collectiveBytes = 0; // sent per replica, see collectiveBytes()
  double flops = 0;
};

// Bytes one replica sends for a collective instruction (a ring's count:
// all-reduce 2(N-1)/N of the buffer, reduce-scatter and all-gather (N-1)/N
// of the whole tensor); 0 for any other instruction.
int64_t collectiveBytes(const Instr &in);

struct StateLayout {
  std::vector<int64_t> offsets; // per state: in the arena or in host memory
  int64_t deviceStateBytes = 0, hostBytes = 0;
};

struct ProgramLayout {
  MemoryPlan plan; // the temporaries, above the states
  std::vector<PhaseStats> phases;
  int64_t collectiveBytes = 0; // per run of the program, per replica
  int64_t peakPosition = 0; // where the most temporaries are alive
};

StateLayout layoutStates(const std::vector<StateInfo> &states);

// Live ranges of every buffer of `p` (Buffer::first, last).
void computeLiveness(Program &p);

// Liveness, the plan of the temporaries, every buffer's address, and the
// per-phase statistics.
ProgramLayout layoutProgram(Program &p, const StateLayout &states);

} // namespace ferry::lowering

#endif // FERRY_PASSES_LOWERING_ARENALAYOUT_H
