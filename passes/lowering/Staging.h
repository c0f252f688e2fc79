//===- Staging.h - remote buffers staged through device buffers -*- C++ -*-===//
//
// A state placed in host memory (a remote buffer) is never touched by a
// kernel. Within each phase, every distinct byte range of it the phase
// touches gets a device temporary: loaded when its scope starts (unless the
// first touch overwrites it), stored back when its scope ends (if anything
// wrote it). The scope is the phase itself when the range depends only on
// registers outside the phase (a layer's weights: loaded once, used GA
// times), else the innermost loop inside the phase whose counter the address
// uses (a micro-batch's activation row).
//
// Prefetch double-buffers a staged range over a loop so the next
// iteration's load overlaps this one's compute; PrefetchLevels names which
// loops. ferry-place-buffers chooses the levels under the budget and
// ferry-stage-remote-buffers applies them; both call stageProgram.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_PASSES_LOWERING_STAGING_H
#define FERRY_PASSES_LOWERING_STAGING_H

#include "passes/lowering/RtRanges.h"

#include <optional>

namespace ferry::lowering {

// Which staged ranges are double-buffered.
struct PrefetchLevels {
  // The layer loop a phase is the body of: layer l + 1's weights load
  // while layer l computes.
  bool nextLayer = false;
  // Loops inside a phase: micro-batch i + 1's activations while i computes.
  bool nextMicroBatch = false;
  // A layer loop's first layer loads during the phase before the loop
  // (needs nextLayer).
  bool firstLayerEarly = false;

  static PrefetchLevels all() { return {true, true, true}; }
  static PrefetchLevels none() { return {}; }
  bool any() const { return nextLayer || nextMicroBatch; }
  bool operator==(const PrefetchLevels &o) const {
    return nextLayer == o.nextLayer && nextMicroBatch == o.nextMicroBatch &&
           firstLayerEarly == o.firstLayerEarly;
  }
  // For the rt.prefetch note: "next layer and next micro-batch", ...
  std::string describe() const;
  // As the module attribute rt.prefetch_levels holds them: "next-layer",
  // "next-micro-batch", "first-layer-early".
  std::vector<std::string> names() const;
  // Unknown names: std::nullopt.
  static std::optional<PrefetchLevels>
  fromNames(const std::vector<std::string> &names);
};

struct StagingResult {
  int64_t prefetchedGroups = 0, syncGroups = 0; // ranges double / single
  std::string error; // non-empty: the program cannot be staged
};

// Stages every remote range of `program` (the states `states` marks host,
// by name) through new rt.allocs, adding loads, stores, waits and parity
// registers, in place. The program must be before the layout
// (checkBeforeLayout).
StagingResult stageProgram(rt::ProgramOp program,
                           const std::vector<StateInfo> &states,
                           PrefetchLevels levels);

} // namespace ferry::lowering

#endif // FERRY_PASSES_LOWERING_STAGING_H
