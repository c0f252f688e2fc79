//===- StateWrites.h - does anything write a declaration between two ops -===//
//
// The fusion passes move a computation to a neighbouring op's place. Reads
// of declarations (graph.parameter_ref / parameter_slice) are views that
// ferry-lower-to-rt reads where they are used, so moving a computation past
// a write of a declaration would change what it reads. This says whether
// any op strictly between two ops of one block (or nested in one) writes a
// declaration the moved computation reads.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_PASSES_ANALYSIS_STATEWRITES_H
#define FERRY_PASSES_ANALYSIS_STATEWRITES_H

#include "dialects/graph/GraphOps.h"

#include "mlir/IR/Operation.h"

namespace ferry {

// Whether an op strictly between `first` and `last` (same block, `first`
// before `last`) stores, accumulates or updates a declaration that one of
// `reads` views (a graph.parameter_ref or parameter_slice result).
inline bool writesStateBetween(mlir::Operation *first, mlir::Operation *last,
                               mlir::ValueRange reads) {
  llvm::SmallVector<llvm::StringRef> names;
  for (mlir::Value v : reads) {
    if (auto ref = v.getDefiningOp<graph::ParameterRefOp>())
      names.push_back(ref.getName());
    else if (auto slice = v.getDefiningOp<graph::ParameterSliceOp>())
      names.push_back(slice.getName());
  }
  if (names.empty())
    return false;
  auto viewed = [&](llvm::StringRef name) {
    return llvm::is_contained(names, name);
  };
  for (mlir::Operation *op = first->getNextNode(); op && op != last;
       op = op->getNextNode()) {
    bool writes = false;
    op->walk([&](mlir::Operation *inner) {
      if (auto st = mlir::dyn_cast<graph::StoreOp>(inner))
        writes |= viewed(st.getName());
      else if (auto acc = mlir::dyn_cast<graph::AccumulateOp>(inner))
        writes |= viewed(acc.getName());
      else if (auto up = mlir::dyn_cast<graph::OptimizerUpdateOp>(inner))
        writes |= viewed(up.getParam()) || viewed(up.getM()) ||
                  viewed(up.getV()) || viewed(up.getGrad());
    });
    if (writes)
      return true;
  }
  return false;
}

} // namespace ferry

#endif // FERRY_PASSES_ANALYSIS_STATEWRITES_H
