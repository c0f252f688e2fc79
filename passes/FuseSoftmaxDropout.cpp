//===- FuseSoftmaxDropout.cpp - attention probabilities in one pass -------===//
//
// ferry-fuse-softmax-dropout runs with ferry-fuse-epilogues, right before
// ferry-lower-to-rt (`execution.fusion`). The attention probabilities are
// the largest activations of a layer ([batch, heads, seq, seq]); computing
// them and their dropout, and later their gradient through that dropout, in
// one kernel each saves a write and a read of that tensor every time:
//
//   dropout(softmax(x, mask))          -> softmax_dropout x, mask
//       results: the probabilities (other uses, e.g. the stash the backward
//       reads, keep them) and the dropped probabilities;
//   softmax_grad(y, dropout(dy))       -> dropout_softmax_grad y, dy
//       when that dropout has no other use.
//
// Both ops in one block. The fused kernels compute the same values in the
// same order on the CPU backend (bit for bit, test/e2e/fusion.test).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/graph/GraphDialect.h"
#include "dialects/graph/GraphOps.h"
#include "passes/Analysis/StateWrites.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"

namespace ferry {
#define GEN_PASS_DEF_FUSESOFTMAXDROPOUTPASS
#include "passes/Passes.h.inc"
} // namespace ferry

using namespace mlir;
using namespace ferry::graph;

namespace {

struct FuseSoftmaxDropoutPass
    : public ferry::impl::FuseSoftmaxDropoutPassBase<FuseSoftmaxDropoutPass> {
  using FuseSoftmaxDropoutPassBase::FuseSoftmaxDropoutPassBase;
  // Timing reports and crash messages name the pass by its flag.
  StringRef getName() const override { return getArgument(); }
  void runOnOperation() override;
};

void FuseSoftmaxDropoutPass::runOnOperation() {
  ModuleOp module = getOperation();
  DominanceInfo dominance(module);
  SmallVector<DropoutOp> dropouts;
  module.walk([&](DropoutOp op) { dropouts.push_back(op); });

  for (DropoutOp dropout : dropouts) {
    // Forward: the dropout of a softmax in the same block.
    if (auto softmax = dropout.getInput().getDefiningOp<SoftmaxOp>();
        softmax && softmax->getBlock() == dropout->getBlock() &&
        !ferry::writesStateBetween(softmax, dropout, softmax->getOperands())) {
      // At the softmax when the dropout's seed, layer and offset are already
      // defined there (then every use of the probabilities moves to the
      // fused op), else at the dropout.
      bool early = llvm::all_of(
          ValueRange{dropout.getSeed(), dropout.getLayer(),
                     dropout.getSampleOffset()},
          [&](Value v) { return dominance.properlyDominates(v, softmax); });
      OpBuilder builder(early ? softmax.getOperation()
                              : dropout.getOperation());
      auto fused = SoftmaxDropoutOp::create(
          builder, dropout.getLoc(), softmax.getType(), dropout.getType(),
          softmax.getInput(), softmax.getMask(), dropout.getSeed(),
          dropout.getLayer(), dropout.getSampleOffset(),
          dropout.getProbabilityAttr(), dropout.getPurposeAttr());
      // Uses of the probabilities before the fused op stay with the softmax.
      softmax.getResult().replaceUsesWithIf(
          fused.getProbs(), [&](OpOperand &use) {
            Operation *at =
                fused->getBlock()->findAncestorOpInBlock(*use.getOwner());
            return at && fused->isBeforeInBlock(at);
          });
      dropout.getResult().replaceAllUsesWith(fused.getResult());
      dropout->erase();
      if (softmax->use_empty())
        softmax->erase();
      continue;
    }
    // Backward: a dropout whose only use is a softmax gradient's incoming
    // gradient, in the same block.
    if (!dropout->hasOneUse())
      continue;
    auto grad = dyn_cast<SoftmaxGradOp>(*dropout->getUsers().begin());
    if (!grad || grad.getGrad() != dropout.getResult() ||
        grad->getBlock() != dropout->getBlock() ||
        ferry::writesStateBetween(dropout, grad, dropout->getOperands()))
      continue;
    OpBuilder builder(grad);
    auto fused = DropoutSoftmaxGradOp::create(
        builder, grad.getLoc(), grad.getType(), grad.getOutput(),
        dropout.getInput(), dropout.getSeed(), dropout.getLayer(),
        dropout.getSampleOffset(), dropout.getProbabilityAttr(),
        dropout.getPurposeAttr());
    grad.getResult().replaceAllUsesWith(fused.getResult());
    grad->erase();
    dropout->erase();
  }
}

} // namespace
