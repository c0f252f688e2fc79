//===- LayoutArena.cpp - virtual buffers -> arena addresses ---------------===//
//
// ferry-layout-arena, the last of the lowering's passes: states get their
// final offsets (device states packed in declaration order, remote buffers
// in host memory), temporaries share the range above the states by their
// live ranges (passes/lowering/ArenaLayout.h), and every slice becomes a
// slice of rt.arena at its address. It records the plan: each program's
// `transient` bytes and per-phase statistics, the module's arena size.
//
//===----------------------------------------------------------------------===//

#include "dialects/rt/RtAttributes.h"
#include "passes/Passes.h"

#include "passes/lowering/ArenaLayout.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

namespace ferry {
#define GEN_PASS_DEF_LAYOUTARENAPASS
#include "passes/Passes.h.inc"
} // namespace ferry

using namespace mlir;
using namespace ferry;
using namespace ferry::lowering;

namespace {

struct LayoutArenaPass
    : public ferry::impl::LayoutArenaPassBase<LayoutArenaPass> {
  using LayoutArenaPassBase::LayoutArenaPassBase;
  StringRef getName() const override { return getArgument(); }
  void runOnOperation() override;
};

// Host memory is not in the arena: only transfers may name it (whatever
// else touched it was staged by ferry-stage-remote-buffers).
LogicalResult checkHostRanges(rt::ProgramOp program,
                              const llvm::StringMap<size_t> &stateIndex,
                              const std::vector<StateInfo> &states) {
  WalkResult bad = program.getBody().walk([&](Operation *op) {
    if (!isa<rt::KernelCallOpInterface>(op))
      return WalkResult::advance();
    for (OpOperand &range : op->getOpOperands()) {
      StringAttr state = stateOf(bufferOf(range.get()));
      if (!state || !states[stateIndex.lookup(state)].host)
        continue;
      unsigned b = range.getOperandNumber();
      bool transfer =
          (isa<rt::LoadOp>(op) && b == 0) || (isa<rt::StoreOp>(op) && b == 1);
      if (transfer)
        continue;
      program.emitOpError()
          << "calls '" << op->getName().stripDialect() << "' on @"
          << state.getValue()
          << ", a remote buffer in host memory that only load and store may "
             "touch; run ferry-stage-remote-buffers first";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(bad.wasInterrupted());
}

// Moves every slice of `program` onto rt.arena (or rt.arena host for a
// remote buffer) at its buffer's address, and erases the buffers.
void moveOntoArena(rt::ProgramOp program, const ProgramLayout &layout,
                   const StateLayout &stateLayout,
                   const llvm::StringMap<size_t> &stateIndex,
                   const std::vector<StateInfo> &states) {
  Block &top = program.getBody().front();
  OpBuilder b = OpBuilder::atBlockBegin(&top);
  Type bufferType = b.getType<rt::BufferType>();
  Value arena = rt::ArenaOp::create(b, program.getLoc(), bufferType, false);
  Value host;
  llvm::DenseMap<Value, int64_t> address;
  for (TempLayout t : layout.temps)
    address[t.alloc.getResult()] = t.address;
  program.getBody().walk([&](rt::SliceOp slice) {
    Value source = arena;
    int64_t at = 0;
    if (StringAttr state = stateOf(slice.getSource())) {
      size_t i = stateIndex.lookup(state);
      at = stateLayout.offsets[i];
      if (states[i].host) {
        if (!host)
          host = rt::ArenaOp::create(b, program.getLoc(), bufferType, true);
        source = host;
      }
    } else {
      at = address.lookup(slice.getSource());
    }
    slice.getSourceMutable().assign(source);
    slice.setOffsetAttr((offsetOf(slice) + Affine::constant(at)).attr(b));
  });
  for (Operation &op : llvm::make_early_inc_range(top))
    if (isa<rt::AllocOp, rt::StateRefOp>(op))
      op.erase();
}

void LayoutArenaPass::runOnOperation() {
  ModuleOp module = getOperation();
  Builder b(module.getContext());
  std::vector<StateInfo> states = readStates(module);
  llvm::StringMap<size_t> stateIndex;
  for (auto [i, s] : llvm::enumerate(states))
    stateIndex[s.name] = i;
  StateLayout stateLayout = layoutStates(states);
  int64_t maxTransient = 0;
  for (auto op : module.getOps<rt::ProgramOp>()) {
    if (failed(checkBeforeLayout(op)) ||
        failed(checkHostRanges(op, stateIndex, states)))
      return signalPassFailure();
    eraseUnusedBuffers(op); // what no call takes gets no address
    ProgramLayout layout = layoutProgram(op, stateLayout);
    maxTransient = std::max(maxTransient, layout.plan.peakBytes);
    moveOntoArena(op, layout, stateLayout, stateIndex, states);
    op.setTransient(static_cast<uint64_t>(layout.plan.peakBytes));
    op->setAttr(rt::attrs::kMaxLiveBytes,
                b.getI64IntegerAttr(layout.plan.maxLiveBytes));
    if (layout.collectiveBytes > 0)
      op->setAttr(rt::attrs::kCollectiveBytes,
                  b.getI64IntegerAttr(layout.collectiveBytes));
    if (layout.phases.empty())
      continue;
    SmallVector<Attribute> phases;
    for (const PhaseStats &ps : layout.phases) {
      SmallVector<NamedAttribute> fields = {
          b.getNamedAttr("name", b.getStringAttr(ps.name)),
          b.getNamedAttr("executions", b.getI64IntegerAttr(ps.executions)),
          b.getNamedAttr("bytes_in", b.getI64IntegerAttr(ps.bytesIn)),
          b.getNamedAttr("bytes_out", b.getI64IntegerAttr(ps.bytesOut)),
          b.getNamedAttr("flops", b.getF64FloatAttr(ps.flops)),
          b.getNamedAttr("peak_bytes", b.getI64IntegerAttr(ps.peakBytes))};
      if (ps.collectiveBytes > 0) // replicas only
        fields.push_back(b.getNamedAttr(
            "collective_bytes", b.getI64IntegerAttr(ps.collectiveBytes)));
      phases.push_back(b.getDictionaryAttr(fields));
    }
    op->setAttr(rt::attrs::kPhases, b.getArrayAttr(phases));
  }
  int64_t params = 0;
  for (auto [i, op] : llvm::enumerate(module.getOps<rt::StateOp>())) {
    op.setOffset(static_cast<uint64_t>(stateLayout.offsets[i]));
    if (op.getRole() != "parameter")
      continue;
    // The whole model's elements: a sharded state counts its whole shape
    // (replicated tensor sharding), a split one all its parts (tensor
    // parallelism); the padded vocabulary's rows (past init_rows) are not
    // the model's, so every layout of one model counts the same.
    auto type = cast<RankedTensorType>(op.getType());
    int64_t elements = type.getNumElements();
    int64_t rows = type.getRank() > 0 ? type.getDimSize(0) : 1;
    if (auto whole = op->getAttrOfType<DenseI64ArrayAttr>("shard_of")) {
      elements = 1;
      for (int64_t d : whole.asArrayRef())
        elements *= d;
      rows = whole.empty() ? 1 : whole[0];
    }
    if (auto parts = op->getAttrOfType<IntegerAttr>("split_parts")) {
      elements *= parts.getInt();
      auto dim = op->getAttrOfType<IntegerAttr>("split_dim");
      if (dim && dim.getInt() == 0)
        rows *= parts.getInt();
    }
    auto initRows = op->getAttrOfType<IntegerAttr>("init_rows");
    if (initRows && !op.getStacked() && initRows.getInt() < rows)
      elements = elements / rows * initRows.getInt();
    params += elements;
  }
  module->removeAttr(rt::attrs::kRecompute); // read by ferry-place-buffers only
  module->setAttr(
      rt::attrs::kArenaBytes,
      b.getI64IntegerAttr(stateLayout.deviceStateBytes + maxTransient));
  module->setAttr(rt::attrs::kStateBytes,
                  b.getI64IntegerAttr(stateLayout.deviceStateBytes));
  if (stateLayout.hostBytes > 0)
    module->setAttr(rt::attrs::kHostBytes,
                    b.getI64IntegerAttr(stateLayout.hostBytes));
  module->setAttr(rt::attrs::kAlignment, b.getI64IntegerAttr(kAlignment));
  module->setAttr(rt::attrs::kParameterCount, b.getI64IntegerAttr(params));
}

} // namespace
