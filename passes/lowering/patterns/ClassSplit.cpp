//===- ClassSplit.cpp - kernel patterns of the losses over split classes --===//
//
// graph.class_max, class_stats, its gradient, cross_entropy_of_stats, its
// gradient, class_argmax and index_correct (GraphClassSplitOps.td) -> the
// ClassSplit kernels (dialects/rt/kernels/ClassSplit.td), one each: the
// logits flattened to [rows, cols], the attributes as the kernels' ints.
//
//===----------------------------------------------------------------------===//

#include "passes/lowering/KernelPatterns.h"

using namespace mlir;
using namespace ferry;
using namespace ferry::lowering;

namespace {

// The ops over this rank's logits [..., cols]: rows, cols, the whole row's
// real classes and the stride.
template <class GraphOp, class KernelOp>
struct SplitLogitsPattern : OpKernelPattern<GraphOp> {
  LogicalResult selectOp(GraphOp op, const LoweredOperands &operands,
                         KernelSelection &s) const override {
    ArrayRef<int64_t> logits = shapeOf(op.getLogits());
    int64_t cols = logits.back(), rows = product(logits) / cols;
    auto k = s.template emit<KernelOp>(operands.all());
    k.setRowsAttr(s.i(rows));
    k.setColsAttr(s.i(cols));
    k.setClassesAttr(s.i(static_cast<int64_t>(op.getNumClasses())));
    k.setTensorClassStrideAttr(
        s.i(static_cast<int64_t>(op.getTensorClassStride())));
    return success();
  }
};

// The ops over rows only: their count is the weights'.
template <class GraphOp, class KernelOp>
struct RowsPattern : OpKernelPattern<GraphOp> {
  LogicalResult selectOp(GraphOp op, const LoweredOperands &operands,
                         KernelSelection &s) const override {
    auto k = s.template emit<KernelOp>(operands.all());
    k.setRowsAttr(s.i(product(shapeOf(op.getWeights()))));
    return success();
  }
};

struct IndexCorrectPattern : OpKernelPattern<graph::IndexCorrectOp> {
  LogicalResult selectOp(graph::IndexCorrectOp op,
                         const LoweredOperands &operands,
                         KernelSelection &s) const override {
    auto k = s.emit<rt::IndexCorrectOp>(operands.all());
    k.setRowsAttr(s.i(product(shapeOf(op.getWeights()))));
    k.setClassesAttr(s.i(static_cast<int64_t>(op.getNumClasses())));
    return success();
  }
};

} // namespace

void lowering::populateClassSplitPatterns(KernelPatterns &patterns) {
  patterns.add<SplitLogitsPattern<graph::ClassMaxOp, rt::ClassMaxOp>,
               graph::ClassMaxOp>();
  patterns.add<SplitLogitsPattern<graph::ClassStatsOp, rt::ClassStatsOp>,
               graph::ClassStatsOp>();
  patterns
      .add<SplitLogitsPattern<graph::ClassStatsGradOp, rt::ClassStatsGradOp>,
           graph::ClassStatsGradOp>();
  patterns.add<SplitLogitsPattern<graph::ClassArgmaxOp, rt::ClassArgmaxOp>,
               graph::ClassArgmaxOp>();
  patterns
      .add<RowsPattern<graph::CrossEntropyOfStatsOp, rt::CrossEntropyOfStatsOp>,
           graph::CrossEntropyOfStatsOp>();
  patterns.add<RowsPattern<graph::CrossEntropyOfStatsGradOp,
                           rt::CrossEntropyOfStatsGradOp>,
               graph::CrossEntropyOfStatsGradOp>();
  patterns.add<IndexCorrectPattern, graph::IndexCorrectOp>();
}
