//===- DeviceBudget.h - what the device budget implies ----------*- C++ -*-===//
//
// Every heuristic about the device budget, owned by ferry-place-buffers (the
// pass that plans device memory and refuses a budget its plan cannot meet)
// and defined in PlaceBuffers.cpp. The pipeline derives the options of the
// passes before it from these, so no other pass reasons about the budget.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_PASSES_DEVICEBUDGET_H
#define FERRY_PASSES_DEVICEBUDGET_H

#include "passes/PassOptions.h"

namespace ferry {

// ferry-batch-serialise's `carry-row-budget`: the forward's activation stays
// in one carry row when that row is at most a third of the device budget
// (ferry-place-buffers keeps activation rows on the device first, and the
// rest of a phase needs the other two thirds). Unlimited without a budget.
ByteBudget carryRowBudget(ByteBudget device);

// The largest cuBLASLt scratch one GEMM may take under the budget: a 32nd of
// it, at least one aligned slot.
int64_t gemmScratchCap(uint64_t device);

} // namespace ferry

#endif // FERRY_PASSES_DEVICEBUDGET_H
