//===- RtRanges.h - kernel calls and their ranges, on the IR ----*- C++ -*-===//
//
// What the lowering passes that work on the rt IR in place share: the
// kernel calls of a program in the order the runtime runs them, the slice
// and buffer behind each range a call takes, and the clean-up of buffers
// and slices nothing uses any more. A range is always an rt.slice of an
// rt.alloc, rt.state_ref or rt.arena value (RtOps.td).
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_PASSES_LOWERING_RTRANGES_H
#define FERRY_PASSES_LOWERING_RTRANGES_H

#include "dialects/rt/RtKernelOps.h"
#include "passes/lowering/RtProgram.h"

#include "llvm/ADT/SmallVector.h"

namespace ferry::lowering {

// The program's kernel calls in pre-order (a loop's body where the loop
// is), as the executable lists them.
llvm::SmallVector<rt::KernelCallOpInterface>
kernelsInOrder(rt::ProgramOp program);

inline rt::SliceOp sliceOf(mlir::Value range) {
  return range.getDefiningOp<rt::SliceOp>();
}
inline mlir::Value bufferOf(mlir::Value range) {
  return sliceOf(range).getSource();
}
inline Affine offsetOf(rt::SliceOp slice) {
  return Affine::fromArray(slice.getOffset());
}

// Makes operand `index` of `op` the range `bytes` bytes at `offset` of
// `buffer`: its slice is changed in place when `op` is its only user, else
// a new slice is put right before `op`.
void setRange(mlir::Operation *op, unsigned index, mlir::Value buffer,
              const Affine &offset, int64_t bytes);

// Erases slices, rt.allocs and rt.state_refs of `program` that nothing
// uses (a forwarded temporary, a state no call touches any more).
void eraseUnusedBuffers(rt::ProgramOp program);

} // namespace ferry::lowering

#endif // FERRY_PASSES_LOWERING_RTRANGES_H
