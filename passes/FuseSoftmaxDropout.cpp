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
#include "passes/FusionRewrite.h"

#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"

namespace ferry {
#define GEN_PASS_DEF_FUSESOFTMAXDROPOUTPASS
#include "passes/Passes.h.inc"
} // namespace ferry

using namespace mlir;
using namespace ferry::graph;

namespace {

// Forward: dropout(softmax(x)) in one block -> softmax_dropout, rooted at the
// dropout.
struct FuseSoftmaxThenDropout : public OpRewritePattern<DropoutOp> {
  FuseSoftmaxThenDropout(MLIRContext *context, DominanceInfo &dominance)
      : OpRewritePattern(context), dominance(dominance) {}

  LogicalResult matchAndRewrite(DropoutOp dropout,
                                PatternRewriter &rewriter) const override {
    auto softmax = dropout.getInput().getDefiningOp<SoftmaxOp>();
    if (!softmax || softmax->getBlock() != dropout->getBlock() ||
        ferry::writesStateBetween(softmax, dropout, softmax->getOperands()))
      return failure();
    // At the softmax when the dropout's seed, layer and offset are already
    // defined there (then every use of the probabilities moves to the fused
    // op), else at the dropout.
    SmallVector<Value> key = {dropout.getSeed(), dropout.getLayer(),
                              dropout.getSampleOffset()};
    if (Value keys = dropout.getDropoutKeys())
      key.push_back(keys);
    bool early = llvm::all_of(
        key, [&](Value v) { return dominance.properlyDominates(v, softmax); });
    rewriter.setInsertionPoint(early ? softmax.getOperation()
                                     : dropout.getOperation());
    auto fused = SoftmaxDropoutOp::create(
        rewriter, dropout.getLoc(), softmax.getType(), dropout.getType(),
        softmax.getInput(), softmax.getMask(), dropout.getSeed(),
        dropout.getLayer(), dropout.getSampleOffset(), softmax.getSequenceIds(),
        dropout.getDropoutKeys(), dropout.getProbabilityAttr(),
        dropout.getPurposeAttr(), dropout.getTensorKeyStrideAttr());
    // Uses of the probabilities before the fused op stay with the softmax.
    rewriter.replaceUsesWithIf(
        softmax.getResult(), fused.getProbs(), [&](OpOperand &use) {
          Operation *at =
              fused->getBlock()->findAncestorOpInBlock(*use.getOwner());
          return at && fused->isBeforeInBlock(at);
        });
    rewriter.replaceOp(dropout, fused.getResult());
    if (softmax->use_empty())
      rewriter.eraseOp(softmax);
    return success();
  }

  DominanceInfo &dominance;
};

// Backward: softmax_grad(y, dropout(dy)), the dropout's only use, in one
// block -> dropout_softmax_grad, rooted at the gradient.
struct FuseDropoutThenSoftmaxGrad : public OpRewritePattern<SoftmaxGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SoftmaxGradOp grad,
                                PatternRewriter &rewriter) const override {
    auto dropout = grad.getGrad().getDefiningOp<DropoutOp>();
    if (!dropout || !dropout->hasOneUse() ||
        grad->getBlock() != dropout->getBlock() ||
        ferry::writesStateBetween(dropout, grad, dropout->getOperands()))
      return failure();
    rewriter.setInsertionPoint(grad);
    auto fused = DropoutSoftmaxGradOp::create(
        rewriter, grad.getLoc(), grad.getType(), grad.getOutput(),
        dropout.getInput(), dropout.getSeed(), dropout.getLayer(),
        dropout.getSampleOffset(), dropout.getDropoutKeys(),
        dropout.getProbabilityAttr(), dropout.getPurposeAttr(),
        dropout.getTensorKeyStrideAttr());
    rewriter.replaceOp(grad, fused.getResult());
    rewriter.eraseOp(dropout);
    return success();
  }
};

struct FuseSoftmaxDropoutPass
    : public ferry::impl::FuseSoftmaxDropoutPassBase<FuseSoftmaxDropoutPass> {
  using FuseSoftmaxDropoutPassBase::FuseSoftmaxDropoutPassBase;
  // Timing reports and crash messages name the pass by its flag.
  StringRef getName() const override { return getArgument(); }

  void runOnOperation() override {
    // The fusions move no block, so dominance stays valid while they run.
    DominanceInfo dominance(getOperation());
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseSoftmaxThenDropout>(&getContext(), dominance);
    patterns.add<FuseDropoutThenSoftmaxGrad>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     ferry::fusionRewriteConfig())))
      signalPassFailure();
  }
};

} // namespace
