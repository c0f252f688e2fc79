//===- RtRanges.cpp - kernel calls and their ranges, on the IR ------------===//

#include "passes/lowering/RtRanges.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace ferry;
using namespace ferry::lowering;

SmallVector<rt::KernelCallOpInterface>
lowering::kernelsInOrder(rt::ProgramOp program) {
  SmallVector<rt::KernelCallOpInterface> calls;
  program.getBody().walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (auto call = dyn_cast<rt::KernelCallOpInterface>(op))
      calls.push_back(call);
  });
  return calls;
}

void lowering::setRange(Operation *op, unsigned index, Value buffer,
                        const Affine &offset, int64_t bytes) {
  OpBuilder b(op);
  rt::SliceOp slice = sliceOf(op->getOperand(index));
  if (slice && slice->hasOneUse()) {
    slice.getSourceMutable().assign(buffer);
    slice.setOffsetAttr(offset.attr(b));
    slice.setBytes(static_cast<uint64_t>(bytes));
    return;
  }
  op->setOperand(index, rt::SliceOp::create(b, op->getLoc(),
                                            b.getType<rt::RangeType>(), buffer,
                                            offset.attr(b), bytes));
}

void lowering::eraseUnusedBuffers(rt::ProgramOp program) {
  SmallVector<Operation *> dead;
  program.getBody().walk([&](rt::SliceOp slice) {
    if (slice->use_empty())
      dead.push_back(slice);
  });
  for (Operation *op : dead)
    op->erase();
  for (Operation &op : llvm::make_early_inc_range(program.getBody().front()))
    if (isa<rt::AllocOp, rt::StateRefOp>(op) && op.use_empty())
      op.erase();
}
