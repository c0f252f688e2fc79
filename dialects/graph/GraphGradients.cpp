//===- GraphGradients.cpp - gradient rules of the `graph` ops -------------===//
//
// GradientOpInterface for every differentiable forward op: given the gradient
// of the result, build the gradients of the float operands. Rules are written
// with graph ops only (forward ops where the backward is one, the *_grad ops
// otherwise), so the backward goes through the same lowering as the forward.
// Each rule family has a lit test (test/passes/autodiff-*.mlir) and a
// finite-difference check (test/gradcheck/).
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/GraphOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace ferry::graph;

namespace {
RankedTensorType tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}
RankedTensorType withShape(RankedTensorType t, ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, t.getElementType());
}
Value negate(OpBuilder &b, Location loc, Value v) {
  return ScaleOp::create(b, loc, v, b.getF64FloatAttr(-1.0));
}
// Sums `grad` over its leading dimensions down to the shape of `target`
// (rank of target = trailing dims kept).
Value sumLeading(OpBuilder &b, Location loc, Value grad,
                 RankedTensorType target) {
  RankedTensorType g = tensorOf(grad);
  int64_t drop = g.getRank() - target.getRank();
  if (drop == 0)
    return grad;
  SmallVector<int64_t> dims;
  for (int64_t d = 0; d < drop; ++d)
    dims.push_back(d);
  return ReduceOp::create(b, loc, target, ReduceKind::sum, grad,
                          b.getDenseI64ArrayAttr(dims));
}
// Collapses all but the last dimension: [..., n] -> [prod, n].
Value collapseRows(OpBuilder &b, Location loc, Value v) {
  RankedTensorType t = tensorOf(v);
  if (t.getRank() == 2)
    return v;
  int64_t rows = t.getNumElements() / t.getShape().back();
  return ReshapeOp::create(b, loc, withShape(t, {rows, t.getShape().back()}),
                           v);
}
} // namespace

LogicalResult EmbeddingOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                          SmallVectorImpl<Value> &grads) {
  grads.assign((*this)->getNumOperands(), Value());
  grads[0] =
      EmbeddingGradOp::create(b, getLoc(), getTable().getType(), resultGrads[0],
                              getIds(), getTensorRowStrideAttr());
  return success();
}

LogicalResult GatherPositionsOp::buildGradients(OpBuilder &b,
                                                ValueRange resultGrads,
                                                SmallVectorImpl<Value> &grads) {
  grads.assign((*this)->getNumOperands(), Value());
  grads[0] = GatherPositionsGradOp::create(b, getLoc(), getInput().getType(),
                                           resultGrads[0], getPositions());
  return success();
}

LogicalResult TakeOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &grads) {
  grads.assign((*this)->getNumOperands(), Value());
  grads[0] = TakeGradOp::create(b, getLoc(), getInput().getType(),
                                resultGrads[0], getDim(), getIndex());
  return success();
}

// C = op(A) op(B). With A: [..., M, K] (or [..., K, M] transposed) and B:
// [..., K, N] (or [..., N, K]); B may be rank 2 and shared by every batch
// entry of A, in which case its gradient sums over the batch, done as one
// GEMM on A and dC collapsed to rows.
LogicalResult MatmulOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value a = getLhs(), bm = getRhs(), dc = resultGrads[0];
  bool ta = getTransposeLhs(), tb = getTransposeRhs();
  RankedTensorType at = tensorOf(a), bt = tensorOf(bm);
  bool shared = bt.getRank() == 2 && at.getRank() > 2;
  if (shared && ta)
    return emitOpError() << "has no gradient rule for a transposed batched "
                            "lhs with a shared rank-2 rhs";
  grads.assign(2, Value());
  // dA = dC op(B)^T, or for stored A^T: op(B) dC^T.
  if (!ta)
    grads[0] = MatmulOp::create(b, loc, at, dc, bm, false, !tb);
  else
    grads[0] = MatmulOp::create(b, loc, at, bm, dc, tb, true);
  // dB = op(A)^T dC, or for stored B^T: dC^T op(A).
  Value lhs = a, rhsGrad = dc;
  if (shared) {
    lhs = collapseRows(b, loc, a);
    rhsGrad = collapseRows(b, loc, dc);
  }
  if (!tb)
    grads[1] = MatmulOp::create(b, loc, bt, lhs, rhsGrad, !ta, false);
  else
    grads[1] = MatmulOp::create(b, loc, bt, rhsGrad, lhs, true, ta);
  return success();
}

LogicalResult BiasAddOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                        SmallVectorImpl<Value> &grads) {
  grads.assign(2, Value());
  grads[0] = resultGrads[0];
  grads[1] = sumLeading(b, getLoc(), resultGrads[0], tensorOf(getBias()));
  return success();
}

LogicalResult AddOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &grads) {
  grads.assign(2, resultGrads[0]);
  return success();
}

LogicalResult SubOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &grads) {
  grads.assign(2, Value());
  grads[0] = resultGrads[0];
  grads[1] = negate(b, getLoc(), resultGrads[0]);
  return success();
}

LogicalResult MulOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &grads) {
  grads.assign(2, Value());
  grads[0] = MulOp::create(b, getLoc(), resultGrads[0], getRhs());
  grads[1] = MulOp::create(b, getLoc(), resultGrads[0], getLhs());
  return success();
}

// d(a/b) = da / b - db * (a/b) / b.
LogicalResult DivOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  grads.assign(2, Value());
  grads[0] = DivOp::create(b, loc, resultGrads[0], getRhs());
  Value quotient = MulOp::create(b, loc, grads[0], getResult());
  grads[1] = negate(b, loc, quotient);
  return success();
}

LogicalResult GeluOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &grads) {
  grads.assign(1, GeluGradOp::create(b, getLoc(), getInput(), resultGrads[0]));
  return success();
}

LogicalResult TanhOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &grads) {
  grads.assign(1, TanhGradOp::create(b, getLoc(), getResult(), resultGrads[0]));
  return success();
}

LogicalResult ScaleOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                      SmallVectorImpl<Value> &grads) {
  grads.assign(1,
               ScaleOp::create(b, getLoc(), resultGrads[0], getFactorAttr()));
  return success();
}

LogicalResult LayerNormOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                          SmallVectorImpl<Value> &grads) {
  auto g = LayerNormGradOp::create(b, getLoc(), getInput().getType(),
                                   getScale().getType(), getScale().getType(),
                                   getInput(), getScale(), resultGrads[0],
                                   getEpsilonAttr());
  grads.assign({g.getInputGrad(), g.getScaleGrad(), g.getBiasGrad()});
  return success();
}

// The additive mask is treated as a constant (it comes from integer inputs).
LogicalResult SoftmaxOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                        SmallVectorImpl<Value> &grads) {
  // The mask and sequence ids are constants: the gradient reads only the
  // probabilities (a key left out has probability 0 and gradient 0).
  grads.assign((*this)->getNumOperands(), Value());
  grads[0] = SoftmaxGradOp::create(b, getLoc(), getResult(), resultGrads[0]);
  return success();
}

// Dropout is linear in its input with a mask that depends only on the seed,
// layer and sample offset: its gradient is the same dropout of the result's
// gradient, the mask regenerated rather than stored.
LogicalResult DropoutOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                        SmallVectorImpl<Value> &grads) {
  grads.assign((*this)->getNumOperands(), Value());
  grads[0] = DropoutOp::create(b, getLoc(), resultGrads[0], getSeed(),
                               getLayer(), getSampleOffset(), getDropoutKeys(),
                               getProbabilityAttr(), getPurposeAttr(),
                               getTensorKeyStrideAttr());
  return success();
}

LogicalResult ReshapeOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                        SmallVectorImpl<Value> &grads) {
  grads.assign(
      1, ReshapeOp::create(b, getLoc(), getInput().getType(), resultGrads[0]));
  return success();
}

LogicalResult TransposeOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                          SmallVectorImpl<Value> &grads) {
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = static_cast<int64_t>(i);
  grads.assign(1, TransposeOp::create(b, getLoc(), getInput().getType(),
                                      resultGrads[0],
                                      b.getDenseI64ArrayAttr(inverse)));
  return success();
}

LogicalResult ReduceOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  RankedTensorType input = tensorOf(getInput());
  Value spread =
      BroadcastOp::create(b, loc, input, resultGrads[0], getDimsAttr());
  switch (getKind()) {
  case ReduceKind::sum:
    break;
  case ReduceKind::mean: {
    int64_t count = 1;
    for (int64_t d : getDims())
      count *= input.getDimSize(d);
    spread = ScaleOp::create(
        b, loc, spread, b.getF64FloatAttr(1.0 / static_cast<double>(count)));
    break;
  }
  case ReduceKind::sum_squares: {
    Value twice = ScaleOp::create(b, loc, getInput(), b.getF64FloatAttr(2.0));
    spread = MulOp::create(b, loc, spread, twice);
    break;
  }
  case ReduceKind::max:
    return emitOpError() << "has no gradient rule: reduce max is used only "
                            "for metrics";
  }
  grads.assign(1, spread);
  return success();
}

LogicalResult
SoftmaxCrossEntropyOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                      SmallVectorImpl<Value> &grads) {
  grads.assign(3, Value());
  grads[0] = SoftmaxCrossEntropyGradOp::create(
      b, getLoc(), getLogits().getType(), getLogits(), getLabels(),
      getWeights(), resultGrads[0], getNumClassesAttr());
  return success();
}
