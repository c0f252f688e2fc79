//===- RtRanges.h - kernel calls and their ranges, on the IR ----*- C++ -*-===//
//
// What the lowering passes that work on the rt IR in place share: the
// module's states, the kernel calls and loops of a program in the order the
// runtime runs them, the slice and buffer behind each range a call takes,
// what a call does to each range, and the clean-up of buffers and slices
// nothing uses any more. Before ferry-layout-arena a range is always an
// rt.slice of an rt.alloc or rt.state_ref of its program (RtOps.td);
// checkBeforeLayout says so or names the op that breaks it.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_PASSES_LOWERING_RTRANGES_H
#define FERRY_PASSES_LOWERING_RTRANGES_H

#include "dialects/rt/RtKernelOps.h"
#include "passes/lowering/Affine.h"
#include "runtime/executable/KernelTable.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallVector.h"

#include <string>
#include <vector>

namespace ferry::lowering {

// What the lowering keeps of an rt.state.
struct StateInfo {
  std::string name, role;
  int64_t bytes = 0;
  bool host = false; // a remote buffer (phased execution)
};

// The module's rt.state ops in declaration order.
std::vector<StateInfo> readStates(mlir::ModuleOp module);

// A byte range of a buffer value (an rt.alloc or rt.state_ref), before it
// is a slice.
struct BufferRange {
  mlir::Value buffer;
  Affine offset;
  int64_t bytes = 0;
};

// The program's kernel calls in pre-order (a loop's body where the loop
// is), as the executable lists them.
llvm::SmallVector<rt::KernelCallOpInterface>
kernelsInOrder(rt::ProgramOp program);

// The program's instructions as the runtime steps through them: kernel
// calls and rt.loops in pre-order. An instruction's index in this list is
// its position (liveness, phase statistics); a loop's body holds the
// positions after it up to loopEnds[its position].
struct Instructions {
  llvm::SmallVector<mlir::Operation *> ops;
  llvm::SmallVector<int64_t> loopEnds; // per position; -1 for a call
};
Instructions instructionsInOrder(rt::ProgramOp program);

inline rt::SliceOp sliceOf(mlir::Value range) {
  return range.getDefiningOp<rt::SliceOp>();
}
inline mlir::Value bufferOf(mlir::Value range) {
  return sliceOf(range).getSource();
}
inline Affine offsetOf(rt::SliceOp slice) {
  return Affine::fromArray(slice.getOffset());
}
// The state a buffer is (its rt.state_ref's symbol), or null for an
// rt.alloc.
inline mlir::StringAttr stateOf(mlir::Value buffer) {
  auto ref = buffer.getDefiningOp<rt::StateRefOp>();
  return ref ? ref.getStateAttr().getAttr() : mlir::StringAttr();
}

// The program's phase names (rt.phase_names; the verifier of rt.program
// checks that every phase marker indexes them).
std::vector<std::string> phaseNamesOf(rt::ProgramOp program);

// Whether `call` reads / writes its range operand `index`: the roles its
// kernel record declares, resolved against the call's integers (their
// constant terms), finer than the op's memory effects, which are the
// superset over every value of the integers.
void accessOf(rt::KernelCallOpInterface call, unsigned index, bool &reads,
              bool &writes);
// All of the call's buffers so resolved: access, element type, whether
// bf16 storage is allowed.
kernels::Resolved resolvedUses(rt::KernelCallOpInterface call);

// Succeeds when `program` is in the form before the layout: only rt.alloc,
// rt.state_ref, rt.slice, kernel calls and rt.loops, every range an
// rt.slice of one of its buffers. Else says which op is not, at that op.
mlir::LogicalResult checkBeforeLayout(rt::ProgramOp program);

// Makes operand `index` of `op` the range `bytes` bytes at `offset` of
// `buffer`: its slice is changed in place when `op` is its only user, else
// a new slice is put right before `op`.
void setRange(mlir::Operation *op, unsigned index, mlir::Value buffer,
              const Affine &offset, int64_t bytes);

// Where what runs before `op` is inserted: before the slices right before
// it that only it takes.
mlir::Operation *firstOpOf(mlir::Operation *op);

// A new slice right before `at`.
mlir::Value sliceBefore(mlir::Operation *at, mlir::Value buffer,
                        const Affine &offset, int64_t bytes);

// A new rt.alloc of `program` after the buffers it starts with (so
// temporaries keep the order they were made in, which the layout's ties
// follow).
rt::AllocOp appendAlloc(rt::ProgramOp program, int64_t bytes,
                        llvm::StringRef label);

// Erases slices, rt.allocs and rt.state_refs of `program` that nothing
// uses (a forwarded temporary, a state no call touches any more).
void eraseUnusedBuffers(rt::ProgramOp program);

} // namespace ferry::lowering

#endif // FERRY_PASSES_LOWERING_RTRANGES_H
