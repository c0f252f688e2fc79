//===- RtRanges.cpp - kernel calls and their ranges, on the IR ------------===//

#include "passes/lowering/RtRanges.h"
#include "dialects/rt/RtAttributes.h"
#include "dialects/rt/RtKernelCall.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace ferry;
using namespace ferry::lowering;

std::vector<StateInfo> lowering::readStates(ModuleOp module) {
  std::vector<StateInfo> states;
  for (auto s : module.getOps<rt::StateOp>())
    states.push_back(StateInfo{s.getSymName().str(), s.getRole().str(),
                               static_cast<int64_t>(s.getBytes()),
                               s->hasAttr("host")});
  return states;
}

SmallVector<rt::KernelCallOpInterface>
lowering::kernelsInOrder(rt::ProgramOp program) {
  SmallVector<rt::KernelCallOpInterface> calls;
  program.getBody().walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (auto call = dyn_cast<rt::KernelCallOpInterface>(op))
      calls.push_back(call);
  });
  return calls;
}

namespace {
void appendInstructions(Block &block, Instructions &out) {
  for (Operation &op : block) {
    if (auto loop = dyn_cast<rt::LoopOp>(op)) {
      size_t at = out.ops.size();
      out.ops.push_back(&op);
      out.loopEnds.push_back(0);
      appendInstructions(loop.getBody().front(), out);
      out.loopEnds[at] = static_cast<int64_t>(out.ops.size()) - 1;
    } else if (isa<rt::KernelCallOpInterface>(op)) {
      out.ops.push_back(&op);
      out.loopEnds.push_back(-1);
    }
  }
}
} // namespace

Instructions lowering::instructionsInOrder(rt::ProgramOp program) {
  Instructions out;
  appendInstructions(program.getBody().front(), out);
  return out;
}

std::vector<std::string> lowering::phaseNamesOf(rt::ProgramOp program) {
  std::vector<std::string> names;
  if (auto attr = program->getAttrOfType<ArrayAttr>(rt::attrs::kPhaseNames))
    for (Attribute a : attr)
      names.push_back(cast<StringAttr>(a).str());
  return names;
}

kernels::Resolved lowering::resolvedUses(rt::KernelCallOpInterface call) {
  rt::KernelCallParts parts = rt::kernelCallParts(call);
  std::vector<int64_t> ints;
  for (const rt::AffineArray &a : parts.ints)
    ints.push_back(a.front());
  return kernels::resolve(parts.kernel, ints, parts.buffers.size());
}

void lowering::accessOf(rt::KernelCallOpInterface call, unsigned index,
                        bool &reads, bool &writes) {
  kernels::Resolved r = resolvedUses(call);
  reads = r.buffers[index].reads;
  writes = r.buffers[index].writes;
}

LogicalResult lowering::checkBeforeLayout(rt::ProgramOp program) {
  WalkResult bad =
      program.getBody().walk([&](Operation *op) {
        if (isa<rt::AllocOp, rt::StateRefOp, rt::SliceOp, rt::LoopOp>(op))
          return WalkResult::advance();
        if (!isa<rt::KernelCallOpInterface>(op)) {
          op->emitOpError()
              << "is not part of a program before the arena layout "
                 "(rt.alloc, rt.state_ref, rt.slice, kernel calls, rt.loop)";
          return WalkResult::interrupt();
        }
        for (Value range : op->getOperands()) {
          rt::SliceOp slice = sliceOf(range);
          Operation *buffer =
              slice ? slice.getSource().getDefiningOp() : nullptr;
          if (!buffer || !isa<rt::AllocOp, rt::StateRefOp>(buffer) ||
              buffer->getParentOfType<rt::ProgramOp>() != program) {
            op->emitOpError() << "takes a range that is not an rt.slice of an "
                                 "rt.alloc or rt.state_ref of the program";
            return WalkResult::interrupt();
          }
        }
        return WalkResult::advance();
      });
  return failure(bad.wasInterrupted());
}

Operation *lowering::firstOpOf(Operation *op) {
  Operation *first = op;
  while (auto slice = dyn_cast_or_null<rt::SliceOp>(first->getPrevNode())) {
    if (!llvm::all_of(slice->getUsers(),
                      [&](Operation *user) { return user == op; }))
      break;
    first = slice;
  }
  return first;
}

Value lowering::sliceBefore(Operation *at, Value buffer, const Affine &offset,
                            int64_t bytes) {
  OpBuilder b(at);
  return rt::SliceOp::create(b, at->getLoc(), b.getType<rt::RangeType>(),
                             buffer, offset.attr(b), bytes);
}

void lowering::setRange(Operation *op, unsigned index, Value buffer,
                        const Affine &offset, int64_t bytes) {
  rt::SliceOp slice = sliceOf(op->getOperand(index));
  if (slice && slice->hasOneUse()) {
    Builder b(op->getContext());
    slice.getSourceMutable().assign(buffer);
    slice.setOffsetAttr(offset.attr(b));
    slice.setBytes(static_cast<uint64_t>(bytes));
    return;
  }
  op->setOperand(index, sliceBefore(op, buffer, offset, bytes));
}

rt::AllocOp lowering::appendAlloc(rt::ProgramOp program, int64_t bytes,
                                  StringRef label) {
  Block &top = program.getBody().front();
  OpBuilder b = OpBuilder::atBlockBegin(&top);
  // After the buffers the program starts with (an rt.alloc written among
  // the calls would not dominate the slices before it).
  for (Operation &op : top) {
    if (!isa<rt::AllocOp, rt::StateRefOp>(op))
      break;
    b.setInsertionPointAfter(&op);
  }
  return rt::AllocOp::create(b, program.getLoc(), b.getType<rt::BufferType>(),
                             static_cast<uint64_t>(bytes),
                             label.empty() ? StringAttr()
                                           : b.getStringAttr(label),
                             IntegerAttr(), false);
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
