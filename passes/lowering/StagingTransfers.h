//===- StagingTransfers.h - staging's loads, stores and waits ---*- C++ -*-===//
//
// Staging (Staging.cpp) first plans each phase's copies between remote
// buffers and their device temporaries as data, because the events they
// signal and the buffers a wait keeps alive are settled only once every
// range of the phase is known; then it creates them in the IR. This is the
// plan's vocabulary and the one place that turns it into rt.load,
// rt.store and rt.wait ops.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_PASSES_LOWERING_STAGINGTRANSFERS_H
#define FERRY_PASSES_LOWERING_STAGINGTRANSFERS_H

#include "passes/lowering/RtRanges.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <optional>
#include <vector>

namespace ferry::lowering {

// One planned copy or wait.
struct Transfer {
  enum Kind { Load, Store, Wait } kind = Wait;
  BufferRange device, remote; // a load or store
  int64_t event = 0;
  // A prefetch: the load is issued only while guard < limit.
  std::optional<Affine> guard;
  int64_t limit = 0;
  llvm::SmallVector<BufferRange> pending; // a wait: ranges kept live until it

  static Transfer load(BufferRange device, BufferRange remote, int64_t event) {
    return Transfer{Load, std::move(device), std::move(remote), event};
  }
  static Transfer store(BufferRange device, BufferRange remote, int64_t event) {
    return Transfer{Store, std::move(device), std::move(remote), event};
  }
  static Transfer wait(int64_t event) {
    Transfer t;
    t.event = event;
    return t;
  }
};

// Creates `t` at `b`'s insertion point: a slice per range, then the op,
// which it returns (the insertion point moves past it).
mlir::Operation *emitTransfer(mlir::OpBuilder &b, mlir::Location loc,
                              const Transfer &t);

// Keeps `whole` live until the wait for `event` in `transfers`, adding the
// wait when there is none yet.
void holdUntilWait(std::vector<Transfer> &transfers, int64_t event,
                   const BufferRange &whole);

// The copies each loop got right before it (a prefetch's first
// iteration), and every op placed before or after a loop that way: those
// are not instructions of the block they sit in.
struct LoopTransfers {
  llvm::DenseMap<mlir::Operation *, llvm::SmallVector<mlir::Operation *>>
      before;
  llvm::DenseSet<mlir::Operation *> attached;
};

// Across phases (PrefetchLevels::firstLayerEarly): a layer loop's
// first-iteration loads move into the phase right before the loop, after
// that phase's own loads and their wait, so they overlap its compute
// (heads.fwd_bwd computes while layer L-1's weights arrive). Not a load of
// host bytes that phase stores. Returns the number of loads moved.
int64_t hoistIntoPreviousPhase(mlir::Block &top, LoopTransfers &loops);

} // namespace ferry::lowering

#endif // FERRY_PASSES_LOWERING_STAGINGTRANSFERS_H
