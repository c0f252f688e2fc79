//===- StagingTransfers.cpp - staging's loads, stores and waits -----------===//

#include "passes/lowering/StagingTransfers.h"

using namespace mlir;
using namespace ferry;
using namespace ferry::lowering;

Operation *lowering::emitTransfer(OpBuilder &b, Location loc,
                                  const Transfer &t) {
  auto slice = [&](const BufferRange &r) -> Value {
    return rt::SliceOp::create(b, loc, b.getType<rt::RangeType>(), r.buffer,
                               r.offset.attr(b), r.bytes);
  };
  auto constant = [&](int64_t v) { return Affine::constant(v).attr(b); };
  if (t.kind == Transfer::Wait) {
    SmallVector<Value> pending;
    for (const BufferRange &r : t.pending)
      pending.push_back(slice(r));
    return rt::WaitOp::create(b, loc, pending, constant(t.event),
                              IntegerAttr());
  }
  if (t.kind == Transfer::Store) {
    Value src = slice(t.device), dst = slice(t.remote);
    return rt::StoreOp::create(b, loc, src, dst, constant(t.device.bytes),
                               constant(t.event), IntegerAttr());
  }
  Value src = slice(t.remote), dst = slice(t.device);
  return rt::LoadOp::create(
      b, loc, src, dst, constant(t.device.bytes), constant(t.event),
      t.guard ? t.guard->attr(b) : DenseI64ArrayAttr(),
      t.guard ? constant(t.limit) : DenseI64ArrayAttr(), IntegerAttr());
}

void lowering::holdUntilWait(std::vector<Transfer> &transfers, int64_t event,
                             const BufferRange &whole) {
  for (Transfer &t : transfers)
    if (t.kind == Transfer::Wait && t.event == event) {
      t.pending.push_back(whole);
      return;
    }
  transfers.push_back(Transfer::wait(event));
  transfers.back().pending.push_back(whole);
}

namespace {

// The block's instructions around `op`: kernel calls and loops, not the
// slices they take nor what staging put before or after a loop.
bool isInstruction(Operation *op, const LoopTransfers &loops) {
  return !isa<rt::SliceOp, rt::AllocOp, rt::StateRefOp>(op) &&
         !loops.attached.contains(op);
}
Operation *previousInstruction(Operation *op, const LoopTransfers &loops) {
  for (op = op->getPrevNode(); op; op = op->getPrevNode())
    if (isInstruction(op, loops))
      return op;
  return nullptr;
}
Operation *nextInstruction(Operation *op, const LoopTransfers &loops) {
  for (op = op->getNextNode(); op; op = op->getNextNode())
    if (isInstruction(op, loops))
      return op;
  return nullptr;
}

// Whether anything from `begin` to `end` (nested ops included) stores into
// `state`.
bool storesInto(Operation *begin, Operation *end, StringAttr state) {
  for (Operation *op = begin; op; op = op->getNextNode()) {
    WalkResult found = op->walk([&](rt::StoreOp store) {
      return stateOf(bufferOf(store.getDst())) == state
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    });
    if (found.wasInterrupted())
      return true;
    if (op == end)
      break;
  }
  return false;
}

} // namespace

int64_t lowering::hoistIntoPreviousPhase(Block &top, LoopTransfers &loops) {
  int64_t moved = 0;
  SmallVector<rt::LoopOp> topLoops(top.getOps<rt::LoopOp>());
  for (rt::LoopOp loop : topLoops) {
    auto it = loops.before.find(loop);
    if (it == loops.before.end() || it->second.empty())
      continue;
    auto end =
        dyn_cast_or_null<rt::PhaseEndOp>(previousInstruction(loop, loops));
    if (!end)
      continue;
    Operation *begin = end->getPrevNode();
    while (begin && !isa<rt::PhaseBeginOp>(begin))
      begin = begin->getPrevNode();
    if (!begin)
      continue;
    // After the phase's own loads and their wait, if any.
    Operation *anchor = begin, *n = nextInstruction(begin, loops);
    bool loads = false;
    while (n && n != end && isa<rt::LoadOp>(n)) {
      loads = true;
      n = nextInstruction(n, loops);
    }
    if (loads && n && isa<rt::WaitOp>(n))
      anchor = n;
    SmallVector<Operation *> kept;
    for (Operation *op : it->second) {
      auto load = dyn_cast<rt::LoadOp>(op);
      if (!load || storesInto(begin, end, stateOf(bufferOf(load.getSrc())))) {
        kept.push_back(op);
        continue;
      }
      for (Value range : load->getOperands()) {
        sliceOf(range)->moveAfter(anchor);
        anchor = sliceOf(range);
      }
      load->moveAfter(anchor);
      anchor = load;
      loops.attached.erase(load);
      ++moved;
    }
    it->second = std::move(kept);
  }
  return moved;
}
