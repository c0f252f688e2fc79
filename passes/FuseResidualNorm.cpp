//===- FuseResidualNorm.cpp - a sublayer's end in one kernel --------------===//
//
// ferry-fuse-residual-norm runs with the other fusions, right before
// ferry-lower-to-rt (`execution.fusion`). Every BERT sublayer (attention,
// feed-forward) ends with
//
//   %d = graph.dropout %y, ...            (training only)
//   %s = graph.add %d, %residual
//   %o = graph.layer_norm %s, %scale, %bias
//
// three passes over [tokens, hidden] that become one
// `graph.residual_layer_norm` (results %s, which the layer norm's gradient
// reads, and %o): the kernel reads y and the residual once and writes the sum
// and the normalised row. The dropout folds in when the sum is its only use;
// either operand of the add may be the dropout (the sum is the same either
// way). All in one block. On the CPU the fused kernel computes what the three
// did, in the same order (bit for bit, test/e2e/fusion.test).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/graph/GraphDialect.h"
#include "dialects/graph/GraphOps.h"
#include "passes/Analysis/StateWrites.h"
#include "passes/FusionRewrite.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace ferry {
#define GEN_PASS_DEF_FUSERESIDUALNORMPASS
#include "passes/Passes.h.inc"
} // namespace ferry

using namespace mlir;
using namespace ferry::graph;

namespace {

// layer_norm(add(dropout(y), residual)) -> residual_layer_norm, rooted at the
// layer norm.
struct FuseResidualLayerNorm : public OpRewritePattern<LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LayerNormOp norm,
                                PatternRewriter &rewriter) const override {
    auto add = norm.getInput().getDefiningOp<AddOp>();
    if (!add || add->getBlock() != norm->getBlock() ||
        ferry::writesStateBetween(add, norm, add->getOperands()))
      return failure();
    // The fused op goes where the layer norm is: every other use of the sum
    // must come after it.
    Block *block = norm->getBlock();
    bool usesAfter = llvm::all_of(add->getUsers(), [&](Operation *user) {
      Operation *at = block->findAncestorOpInBlock(*user);
      return at && (at == norm.getOperation() || norm->isBeforeInBlock(at));
    });
    if (!usesAfter)
      return failure();
    // The dropped operand: a dropout in the block whose only use is this
    // add (with recompute or stashing, the dropout's output is not read
    // elsewhere; if it is, it stays a kernel of its own).
    Value input = add.getLhs(), residual = add.getRhs();
    DropoutOp dropout;
    for (bool swap : {false, true}) {
      Value v = swap ? add.getRhs() : add.getLhs();
      auto d = v.getDefiningOp<DropoutOp>();
      // A dropout of a split tensor (keyed by its place in the whole one:
      // sequence parallelism's before a residual norm) stays a kernel of
      // its own; the fused kernel takes no such key offset.
      if (d && d->hasOneUse() && d->getBlock() == add->getBlock() &&
          add.getLhs() != add.getRhs() && !d.getTensorKeyStride() &&
          !ferry::writesStateBetween(d, norm, d->getOperands())) {
        dropout = d;
        input = d.getInput();
        residual = swap ? add.getLhs() : add.getRhs();
        break;
      }
    }
    rewriter.setInsertionPoint(norm);
    auto fused = ResidualLayerNormOp::create(
        rewriter, norm.getLoc(), add.getType(), norm.getType(), input, residual,
        norm.getScale(), norm.getBias(), norm.getEpsilonAttr(),
        dropout ? dropout.getSeed() : Value(),
        dropout ? dropout.getLayer() : Value(),
        dropout ? dropout.getSampleOffset() : Value(),
        dropout ? dropout.getDropoutKeys() : Value(),
        dropout ? dropout.getProbabilityAttr() : FloatAttr(),
        dropout ? dropout.getPurposeAttr() : StringAttr());
    rewriter.replaceOp(norm, fused.getResult());
    rewriter.replaceOp(add, fused.getSum());
    if (dropout)
      rewriter.eraseOp(dropout);
    return success();
  }
};

struct FuseResidualNormPass
    : public ferry::impl::FuseResidualNormPassBase<FuseResidualNormPass> {
  using FuseResidualNormPassBase::FuseResidualNormPassBase;
  // Timing reports and crash messages name the pass by its flag.
  StringRef getName() const override { return getArgument(); }

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseResidualLayerNorm>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     ferry::fusionRewriteConfig())))
      signalPassFailure();
  }
};

} // namespace
