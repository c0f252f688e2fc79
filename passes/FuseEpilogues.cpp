//===- FuseEpilogues.cpp - fold ops around matmuls into GEMM epilogues ----===//
//
// ferry-fuse-epilogues runs after the training passes, right before
// ferry-lower-to-rt (`execution.fusion: true`, the default). It turns a
// `graph.matmul` and the op next to it that the same GEMM call can compute
// into one `graph.fused_matmul`, which lowers to one `gemm_epilogue` (or
// `gemm`) kernel: one launch and one pass over the output fewer, and one
// temporary less in the memory plan.
//
//   bias_add(matmul(x, w), b)          -> fused_matmul x, w bias b
//       a linear layer (cuBLASLt's BIAS epilogue), when the product has no
//       other use and both ops are in one block;
//   scale(matmul(a, b), f)             -> fused_matmul a, b {alpha = f}
//       attention scores, when the product has no other use;
//   matmul(scale(t, f), b)             -> fused_matmul t, b {alpha = f}
//       the scores' gradient, when f is a power of two (then the product is
//       the same to the bit: scaling by 2^e commutes with rounding), and
//       not with fp16 inputs (`fold-operand-scales`: t rounded to fp16
//       could overflow where f * t does not);
//   reduce sum(dy over rows) beside matmul(dy as [rows, n] transposed, x)
//                                      -> fused_matmul dy, x -> dw, db
//       a linear layer's bias and weight gradients from one read of dy
//       (cuBLASLt's BGRADB epilogue), when the matmul comes first in the
//       block (every use of the sum must follow it).
//
// GELU is not fused: ferry's GELU is the exact erf form (as BERT's), and
// cuBLASLt's GELU epilogues compute the tanh approximation.
//
// On the CPU backend every fused kernel computes what the ops it replaces
// computed, in the same order: training with and without fusion gives the
// same losses bit for bit (test/e2e/fusion.test).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/graph/GraphDialect.h"
#include "dialects/graph/GraphOps.h"
#include "passes/Analysis/StateWrites.h"
#include "passes/FusionRewrite.h"

#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>

namespace ferry {
#define GEN_PASS_DEF_FUSEEPILOGUESPASS
#include "passes/Passes.h.inc"
} // namespace ferry

using namespace mlir;
using namespace ferry::graph;

namespace {

bool isPowerOfTwo(double f) {
  int exponent;
  return f != 0.0 && std::isfinite(f) &&
         std::fabs(std::frexp(f, &exponent)) == 0.5;
}

// The only user of `v`, if it has exactly one and it is in `block`.
Operation *soleUserIn(Value v, Block *block) {
  if (!v.hasOneUse())
    return nullptr;
  Operation *user = *v.getUsers().begin();
  return user->getBlock() == block ? user : nullptr;
}

// The `graph.reduce sum` of `dy` over every dimension but the last, whose
// every use `matmul` dominates, if there is one. `lhs` is the matmul's
// operand: `dy` itself (rank 2) or a reshape of it to [rows, n].
ReduceOp biasGradientOf(Value lhs, MatmulOp matmul, DominanceInfo &dominance) {
  Value dy = lhs;
  if (auto reshape = lhs.getDefiningOp<ReshapeOp>())
    dy = reshape.getInput();
  auto type = cast<RankedTensorType>(dy.getType());
  if (type.getRank() < 2 ||
      type.getShape().back() !=
          cast<RankedTensorType>(lhs.getType()).getShape().back())
    return nullptr;
  for (Operation *user : dy.getUsers()) {
    auto reduce = dyn_cast<ReduceOp>(user);
    if (!reduce || reduce.getKind() != ReduceKind::sum ||
        reduce.getInput() != dy)
      continue;
    ArrayRef<int64_t> dims = reduce.getDims();
    bool allButLast = static_cast<int64_t>(dims.size()) == type.getRank() - 1;
    for (size_t i = 0; allButLast && i < dims.size(); ++i)
      allButLast = dims[i] == static_cast<int64_t>(i);
    if (!allButLast)
      continue;
    bool dominated = llvm::all_of(reduce->getUsers(), [&](Operation *use) {
      return dominance.properlyDominates(matmul.getOperation(), use);
    });
    // The sum moves up to the matmul: nothing between may write what dy
    // reads.
    Operation *early = matmul, *late = reduce;
    if (late->getBlock() != early->getBlock())
      continue;
    if (late->isBeforeInBlock(early))
      std::swap(early, late);
    if (dominated &&
        !ferry::writesStateBetween(early, late, reduce->getOperands()))
      return reduce;
  }
  return nullptr;
}

// A graph.matmul and the op next to it that the same GEMM call computes ->
// graph.fused_matmul, rooted at the matmul.
struct FuseMatmulEpilogue : public OpRewritePattern<MatmulOp> {
  FuseMatmulEpilogue(MLIRContext *context, DominanceInfo &dominance,
                     bool foldOperandScales)
      : OpRewritePattern(context), dominance(dominance),
        foldOperandScales(foldOperandScales) {}

  LogicalResult matchAndRewrite(MatmulOp mm,
                                PatternRewriter &rewriter) const override {
    Block *block = mm->getBlock();
    Value lhs = mm.getLhs(), rhs = mm.getRhs();
    double alpha = 1.0;
    // matmul(scale(t, 2^e), b): the factor moves into alpha.
    SmallVector<ScaleOp> foldedScales;
    for (Value *operand : {&lhs, &rhs})
      if (auto scale = operand->getDefiningOp<ScaleOp>();
          foldOperandScales && scale && scale->getBlock() == block &&
          isPowerOfTwo(scale.getFactor().convertToDouble()) &&
          !ferry::writesStateBetween(scale, mm, scale->getOperands())) {
        alpha *= scale.getFactor().convertToDouble();
        *operand = scale.getInput();
        foldedScales.push_back(scale);
      }

    Operation *replaced = mm; // the op whose result the fused op replaces
    Value bias;
    ReduceOp biasGrad;
    Operation *user = soleUserIn(mm.getResult(), block);
    if (user && ferry::writesStateBetween(mm, user, mm->getOperands()))
      user = nullptr; // the matmul would read its operands later
    if (auto scale = dyn_cast_or_null<ScaleOp>(user)) {
      alpha *= scale.getFactor().convertToDouble();
      replaced = scale;
    } else if (auto add = dyn_cast_or_null<BiasAddOp>(user);
               add && add.getInput() == mm.getResult()) {
      bias = add.getBias();
      replaced = add;
    } else if (mm.getTransposeLhs() && lhs == mm.getLhs() &&
               cast<RankedTensorType>(lhs.getType()).getRank() == 2) {
      biasGrad = biasGradientOf(lhs, mm, dominance);
    }
    if (alpha == 1.0 && replaced == mm.getOperation() && !biasGrad)
      return failure();

    // At the replaced op: the bias may be defined between the two.
    rewriter.setInsertionPoint(replaced);
    Type gradType = biasGrad ? biasGrad.getResult().getType() : Type();
    auto fused = FusedMatmulOp::create(
        rewriter, mm.getLoc(), replaced->getResult(0).getType(), gradType, lhs,
        rhs, bias, mm.getTransposeLhs(), mm.getTransposeRhs(),
        llvm::APFloat(alpha));
    rewriter.replaceOp(replaced, fused.getResult());
    if (replaced != mm.getOperation())
      rewriter.eraseOp(mm);
    if (biasGrad)
      rewriter.replaceOp(biasGrad, fused.getBiasGrad());
    // Scales whose every use moved into alpha.
    for (ScaleOp scale : foldedScales)
      if (scale->use_empty())
        rewriter.eraseOp(scale);
    return success();
  }

  DominanceInfo &dominance;
  bool foldOperandScales;
};

struct FuseEpiloguesPass
    : public ferry::impl::FuseEpiloguesPassBase<FuseEpiloguesPass> {
  using FuseEpiloguesPassBase::FuseEpiloguesPassBase;
  // Timing reports and crash messages name the pass by its flag.
  StringRef getName() const override { return getArgument(); }

  void runOnOperation() override {
    // The fusions move no block, so dominance stays valid while they run.
    DominanceInfo dominance(getOperation());
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseMatmulEpilogue>(&getContext(), dominance,
                                     foldOperandScales);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     ferry::fusionRewriteConfig())))
      signalPassFailure();
  }
};

} // namespace
