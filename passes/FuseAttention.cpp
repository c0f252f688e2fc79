//===- FuseAttention.cpp - attention as one op, before autodiff -----------===//
//
// ferry-fuse-attention runs first in the training pipeline, before
// ferry-autodiff (`execution.fusion`, except with fp16 products). It turns
//
//   %s = graph.matmul %q, %k {transpose_rhs}        [batch, heads, seq, seq]
//   %t = graph.scale %s {factor}                     (optional)
//   %p = graph.softmax %t, %mask [sequences %ids]
//   %d = graph.dropout %p, %seed, %l, %off {...}     (optional)
//   %o = graph.matmul %d, %v                         [batch, heads, seq, dim]
//
// into one graph.attention, every intermediate having that one use. The
// fused op's gradient (graph.attention_grad) recomputes the probabilities
// from the row logsumexp, so autodiff stashes q, k, v, the output and the
// row logsumexp instead of the [batch, heads, seq, seq] probabilities and
// their dropout, and no kernel writes that tensor at all. Before autodiff,
// because the backward is where the fusion pays: after it, the probabilities
// would already be stashed. head_dim must be at most 64 (the CUDA kernel's
// tile); other attention stays unfused. Where q, k and v are head splits
// (a [0, 2, 1, 3] transpose of [batch, seq, heads, dim]) and the result is
// merged back the same way, the attention takes the [batch, seq, heads,
// dim] tensors itself (sequence_major) and the transposes go.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/graph/GraphDialect.h"
#include "dialects/graph/GraphOps.h"
#include "passes/FusionRewrite.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/PatternMatch.h"

namespace ferry {
#define GEN_PASS_DEF_FUSEATTENTIONPASS
#include "passes/Passes.h.inc"
} // namespace ferry

using namespace mlir;
using namespace ferry::graph;

namespace {

template <typename Op> Op soleUser(Value v) {
  if (!v.hasOneUse())
    return Op();
  return dyn_cast<Op>(*v.getUsers().begin());
}

// Rooted at the scores' matmul q kᵀ, walking forward through single uses.
struct FuseAttentionChain : public OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatmulOp scores,
                                PatternRewriter &rewriter) const override {
    if (scores.getTransposeLhs() || !scores.getTransposeRhs())
      return failure();
    auto q = cast<RankedTensorType>(scores.getLhs().getType());
    if (q.getRank() != 4 || scores.getRhs().getType() != q ||
        q.getDimSize(3) > 64)
      return failure();
    Value chain = scores.getResult();
    double scale = 1.0;
    auto scaleOp = soleUser<ScaleOp>(chain);
    if (scaleOp) {
      scale = scaleOp.getFactor().convertToDouble();
      chain = scaleOp.getResult();
    }
    auto softmax = soleUser<SoftmaxOp>(chain);
    if (!softmax || softmax.getInput() != chain)
      return failure();
    chain = softmax.getResult();
    DropoutOp dropout = soleUser<DropoutOp>(chain);
    if (dropout)
      chain = dropout.getResult();
    auto context = soleUser<MatmulOp>(chain);
    if (!context || context.getLhs() != chain || context.getTransposeLhs() ||
        context.getTransposeRhs() || context.getRhs().getType() != q ||
        context.getType() != q)
      return failure();
    rewriter.setInsertionPoint(context);
    Location loc = context.getLoc();
    Value seed, layer, offset;
    double probability = 0.0;
    StringRef purpose = "attention.probs";
    if (dropout) {
      seed = dropout.getSeed(), layer = dropout.getLayer();
      offset = dropout.getSampleOffset();
      probability = dropout.getProbability().convertToDouble();
      purpose = dropout.getPurpose();
    } else { // no dropout: a key that drops nothing
      seed = arith::ConstantOp::create(rewriter, loc,
                                       rewriter.getI64IntegerAttr(0));
      layer = arith::ConstantIndexOp::create(rewriter, loc, 0);
      offset = layer;
    }
    auto lse = RankedTensorType::get(
        {q.getDimSize(0), q.getDimSize(1), q.getDimSize(2)},
        q.getElementType());
    auto fused = AttentionOp::create(
        rewriter, loc, q, lse, scores.getLhs(), scores.getRhs(),
        context.getRhs(), softmax.getMask(), seed, layer, offset,
        softmax.getSequenceIds(), dropout ? dropout.getDropoutKeys() : Value(),
        rewriter.getF64FloatAttr(scale), rewriter.getF64FloatAttr(probability),
        rewriter.getStringAttr(purpose), /*sequence_major=*/UnitAttr(),
        dropout ? dropout.getTensorKeyStrideAttr() : IntegerAttr());
    rewriter.replaceOp(context, fused.getResult());
    // The chain, last first: each op's one use is gone.
    if (dropout)
      rewriter.eraseOp(dropout);
    rewriter.eraseOp(softmax);
    if (scaleOp)
      rewriter.eraseOp(scaleOp);
    rewriter.eraseOp(scores);
    return success();
  }
};

// The head split of q, k and v (a [0, 2, 1, 3] transpose of the linear
// layers' [batch, seq, heads, dim]) and the merge of the result (the same
// transpose back), each with the attention as its only use: the attention
// reads and writes the [batch, seq, heads, dim] tensors itself
// (sequence_major), and the four transposes go, forward and backward.
struct AbsorbHeadTransposes : public OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  static bool isHeadSwap(TransposeOp t) {
    return t && t.getPermutation() == ArrayRef<int64_t>{0, 2, 1, 3};
  }

  LogicalResult matchAndRewrite(AttentionOp attention,
                                PatternRewriter &rewriter) const override {
    if (attention.getSequenceMajor())
      return failure();
    SmallVector<TransposeOp> splits;
    for (Value v :
         {attention.getQuery(), attention.getKey(), attention.getValue()}) {
      auto t = v.getDefiningOp<TransposeOp>();
      if (!isHeadSwap(t) || !v.hasOneUse())
        return failure();
      splits.push_back(t);
    }
    // q, k and v may not be one value used three times (one use each).
    Type input = splits[0].getInput().getType();
    if (splits[1].getInput().getType() != input ||
        splits[2].getInput().getType() != input)
      return failure();
    auto merge = soleUser<TransposeOp>(attention.getResult());
    if (!isHeadSwap(merge) || merge.getType() != input)
      return failure();
    rewriter.setInsertionPoint(attention);
    auto fused = AttentionOp::create(
        rewriter, attention.getLoc(), input,
        attention.getRowLogsumexp().getType(), splits[0].getInput(),
        splits[1].getInput(), splits[2].getInput(), attention.getMask(),
        attention.getSeed(), attention.getLayer(), attention.getSampleOffset(),
        attention.getSequenceIds(), attention.getDropoutKeys(),
        attention.getScaleAttr(), attention.getProbabilityAttr(),
        attention.getPurposeAttr(), rewriter.getUnitAttr(),
        attention.getTensorKeyStrideAttr());
    rewriter.replaceOp(merge, fused.getResult());
    rewriter.replaceAllUsesWith(attention.getRowLogsumexp(),
                                fused.getRowLogsumexp());
    rewriter.eraseOp(attention);
    for (TransposeOp t : splits)
      rewriter.eraseOp(t);
    return success();
  }
};

struct FuseAttentionPass
    : public ferry::impl::FuseAttentionPassBase<FuseAttentionPass> {
  using FuseAttentionPassBase::FuseAttentionPassBase;
  StringRef getName() const override { return getArgument(); }

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseAttentionChain, AbsorbHeadTransposes>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     ferry::fusionRewriteConfig())))
      signalPassFailure();
  }
};

} // namespace
