//===- Recompute.cpp - re-run each layer's forward inside its backward ----===//
//
// ferry-recompute trades FLOPs for memory at layer granularity
// (`execution.recompute: layer`). After ferry-autodiff, the forward layer
// loop stores every activation the backward needs into stacked stash
// variables:
//
//   scf.for %l {
//     %r:12 = func.call @encoder_layer_fwd(%x, %mask, %seed, %l, ...)
//     graph.store %x    into @stash.encoder_layer.0[%l]   // the layer input
//     graph.store %r#1  into @stash.encoder_layer.1[%l]   // internals
//     ...
//   }
//   scf.for %k {   // backward, %i = L-1-k
//     %x  = graph.parameter_slice @stash.encoder_layer.0[%i]
//     %s1 = graph.parameter_slice @stash.encoder_layer.1[%i]
//     ...
//     func.call @encoder_layer_bwd(%x, %mask, %seed, %i, ..., %s1, ..., %dy)
//   }
//
// This pass keeps only the stores of values the layer did not compute (its
// input; seeds and indices are call operands, not stash) and re-runs
// @encoder_layer_fwd right before each @encoder_layer_bwd from the leading
// operands of that call, which are exactly the forward's arguments. Dropout
// masks are functions of (seed, layer, sample offset), so the recomputed
// activations are the stored ones bit for bit and the gradients do not
// change. Stash variables left without a use are erased.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/graph/GraphAttributes.h"
#include "dialects/graph/GraphDialect.h"
#include "dialects/graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"

namespace ferry {
#define GEN_PASS_DEF_RECOMPUTEPASS
#include "passes/Passes.h.inc"
} // namespace ferry

using namespace mlir;
using namespace ferry::graph;

namespace {

struct RecomputePass : public ferry::impl::RecomputePassBase<RecomputePass> {
  using RecomputePassBase::RecomputePassBase;
  // Timing reports and crash messages name the pass by its flag.
  StringRef getName() const override { return getArgument(); }
  void runOnOperation() override;
};

// A stash variable whose contents a forward call computed: result `index`
// of @`forward`.
struct Recomputable {
  func::FuncOp forward;
  unsigned index;
  SmallVector<StoreOp> stores;
};

void RecomputePass::runOnOperation() {
  ModuleOp module = getOperation();
  SymbolTable symbols(module);

  // 1. Stash stores in forward layer loops whose value a @*_fwd call made.
  llvm::MapVector<StringAttr, Recomputable> stashes;
  WalkResult found = module.walk([&](StoreOp store) {
    if (!store.getLayer() || !isa<scf::ForOp>(store->getParentOp()))
      return WalkResult::advance();
    auto result = dyn_cast<OpResult>(store.getValue());
    auto call = result ? dyn_cast<func::CallOp>(result.getOwner()) : nullptr;
    if (!call || !call.getCallee().ends_with("_fwd") ||
        call->getBlock() != store->getBlock())
      return WalkResult::advance();
    auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
    if (!callee || callee.isExternal()) {
      call.emitOpError() << "ferry-recompute: @" << call.getCallee()
                         << " has no body to re-run";
      return WalkResult::interrupt();
    }
    Recomputable &stash = stashes[store.getNameAttr().getAttr()];
    if (!stash.stores.empty() &&
        (stash.forward != callee || stash.index != result.getResultNumber())) {
      store.emitOpError() << "ferry-recompute: the stash @" << store.getName()
                          << " holds results of two different calls";
      return WalkResult::interrupt();
    }
    stash.forward = callee;
    stash.index = result.getResultNumber();
    stash.stores.push_back(store);
    return WalkResult::advance();
  });
  if (found.wasInterrupted())
    return signalPassFailure();
  if (stashes.empty())
    return;

  // 2. Each read of such a stash feeds a @*_bwd call: recompute before it.
  llvm::MapVector<Operation *, SmallVector<ParameterSliceOp>> readsPerCall;
  WalkResult checked = module.walk([&](ParameterSliceOp slice) {
    if (!stashes.count(slice.getNameAttr().getAttr()))
      return WalkResult::advance();
    func::FuncOp forward = stashes[slice.getNameAttr().getAttr()].forward;
    std::string backward = (forward.getSymName().drop_back(4) + "_bwd").str();
    Operation *user = nullptr;
    for (Operation *u : slice->getUsers()) {
      auto call = dyn_cast<func::CallOp>(u);
      if (!call || call.getCallee() != backward ||
          u->getBlock() != slice->getBlock() || (user && user != u)) {
        slice.emitOpError()
            << "ferry-recompute: the stash @" << slice.getName()
            << " is read by something other than one call to @" << backward
            << "; only a layer's own backward may read what it recomputes";
        return WalkResult::interrupt();
      }
      user = u;
    }
    if (user)
      readsPerCall[user].push_back(slice);
    return WalkResult::advance();
  });
  if (checked.wasInterrupted())
    return signalPassFailure();

  for (auto &[op, slices] : readsPerCall) {
    auto backwardCall = cast<func::CallOp>(op);
    func::FuncOp forward =
        stashes[slices.front().getNameAttr().getAttr()].forward;
    FunctionType fwdType = forward.getFunctionType();
    unsigned numArgs = fwdType.getNumInputs();
    if (backwardCall.getNumOperands() < numArgs ||
        TypeRange(backwardCall.getOperands().take_front(numArgs)) !=
            fwdType.getInputs()) {
      backwardCall.emitOpError()
          << "ferry-recompute: the leading operands of @"
          << backwardCall.getCallee() << " are not the arguments of @"
          << forward.getSymName() << ", so its forward cannot be re-run";
      return signalPassFailure();
    }
    OpBuilder b(backwardCall);
    auto again =
        func::CallOp::create(b, backwardCall.getLoc(), forward,
                             backwardCall.getOperands().take_front(numArgs));
    again->setAttr(ferry::graph::attrs::kRecompute, b.getUnitAttr());
    for (ParameterSliceOp slice : slices) {
      unsigned index = stashes[slice.getNameAttr().getAttr()].index;
      slice.getResult().replaceAllUsesWith(again.getResult(index));
      slice.erase();
    }
  }

  // 3. The stores, then the variables nothing reads any more.
  for (auto &[name, stash] : stashes) {
    for (StoreOp store : stash.stores)
      store.erase();
    Operation *decl = symbols.lookup(name.getValue());
    if (!decl)
      continue;
    if (auto uses = SymbolTable::getSymbolUses(decl, module);
        uses && !uses->empty()) {
      uses->begin()->getUser()->emitOpError()
          << "ferry-recompute: reads the stash @" << name.getValue()
          << " that recomputation no longer fills";
      return signalPassFailure();
    }
    decl->erase();
  }
}

} // namespace
