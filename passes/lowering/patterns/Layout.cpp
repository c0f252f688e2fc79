//===- Layout.cpp - kernel patterns of ops that move elements -------------===//
//
// graph.take, take_grad, transpose and broadcast -> the Layout kernels
// (dialects/rt/kernels/Layout.td). A shape is given as the products of the
// dimensions before, at and after the ones the op works on.
//
//===----------------------------------------------------------------------===//

#include "passes/lowering/KernelPatterns.h"

using namespace mlir;
using namespace ferry;
using namespace ferry::lowering;

namespace {

template <class GraphOp, class KernelOp>
struct TakePattern : OpKernelPattern<GraphOp> {
  LogicalResult selectOp(GraphOp op, const LoweredOperands &operands,
                         KernelSelection &s) const override {
    // The whole tensor: take's input, take_grad's result.
    ArrayRef<int64_t> x = std::is_same_v<GraphOp, graph::TakeGradOp>
                              ? shapeOf(op->getResult(0))
                              : shapeOf(op->getOperand(0));
    auto dim = static_cast<int64_t>(op.getDim());
    auto k = s.template emit<KernelOp>(operands.all());
    k.setOuterAttr(s.i(product(x.take_front(dim))));
    k.setSizeAttr(s.i(x[dim]));
    k.setInnerAttr(s.i(product(x.drop_front(dim + 1))));
    k.setIndexAttr(s.i(static_cast<int64_t>(op.getIndex())));
    return success();
  }
};

struct TransposePattern : OpKernelPattern<graph::TransposeOp> {
  LogicalResult selectOp(graph::TransposeOp op, const LoweredOperands &operands,
                         KernelSelection &s) const override {
    ArrayRef<int64_t> x = shapeOf(op.getInput());
    if (x.size() > 6)
      return op.emitOpError() << "transposes of rank > 6 are not lowered";
    // The shape, then the permutation.
    SmallVector<int64_t> shape(x.begin(), x.end());
    shape.append(op.getPermutation().begin(), op.getPermutation().end());
    auto k = s.emit<rt::TransposeOp>(operands.all());
    k.setRankAttr(s.i(static_cast<int64_t>(x.size())));
    k.setShapeAttr(s.list(shape));
    return success();
  }
};

} // namespace

FailureOr<std::array<int64_t, 3>>
lowering::contiguousExtents(Operation *op, ArrayRef<int64_t> full,
                            ArrayRef<int64_t> dims) {
  for (size_t i = 1; i < dims.size(); ++i)
    if (dims[i] != dims[i - 1] + 1)
      return op->emitOpError() << "ferry-lower-to-rt needs contiguous "
                                  "dimensions to reduce or broadcast";
  int64_t first = dims.empty() ? 0 : dims.front();
  auto count = static_cast<int64_t>(dims.size());
  return std::array<int64_t, 3>{product(full.take_front(first)),
                                product(full.slice(first, count)),
                                product(full.drop_front(first + count))};
}

namespace {

struct BroadcastPattern : OpKernelPattern<graph::BroadcastOp> {
  LogicalResult selectOp(graph::BroadcastOp op, const LoweredOperands &operands,
                         KernelSelection &s) const override {
    FailureOr<std::array<int64_t, 3>> e =
        contiguousExtents(op, shapeOf(op.getResult()), op.getDims());
    if (failed(e))
      return failure();
    auto k = s.emit<rt::BroadcastOp>(operands.all());
    k.setOuterAttr(s.i((*e)[0]));
    k.setSizeAttr(s.i((*e)[1]));
    k.setInnerAttr(s.i((*e)[2]));
    return success();
  }
};

} // namespace

void lowering::populateLayoutPatterns(KernelPatterns &patterns) {
  patterns.add<TakePattern<graph::TakeOp, rt::TakeOp>, graph::TakeOp>();
  patterns
      .add<TakePattern<graph::TakeGradOp, rt::TakeGradOp>, graph::TakeGradOp>();
  patterns.add<TransposePattern, graph::TransposeOp>();
  patterns.add<BroadcastPattern, graph::BroadcastOp>();
}
