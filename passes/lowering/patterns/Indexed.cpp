//===- Indexed.cpp - kernel patterns of ops that index rows ---------------===//
//
// graph.embedding, gather_positions and their gradients, and the losses
// over labelled rows (softmax_cross_entropy, its gradient, argmax_correct)
// -> the Indexed kernels (dialects/rt/kernels/Indexed.td). The gradients
// take the indices first; sums per row go through a planned workspace so
// that they are added in a fixed order.
//
//===----------------------------------------------------------------------===//

#include "passes/lowering/KernelPatterns.h"

using namespace mlir;
using namespace ferry;
using namespace ferry::lowering;

namespace {

struct EmbeddingPattern : OpKernelPattern<graph::EmbeddingOp> {
  LogicalResult selectOp(graph::EmbeddingOp op, const LoweredOperands &operands,
                         KernelSelection &s) const override {
    ArrayRef<int64_t> t = shapeOf(op.getTable());
    auto k = s.emit<rt::EmbeddingOp>(operands.all());
    k.setRowsAttr(s.i(numElements(op.getIds().getType())));
    k.setWidthAttr(s.i(t[1]));
    k.setVocabAttr(s.i(t[0]));
    if (std::optional<uint64_t> stride = op.getTensorRowStride())
      k.setTensorRowStrideAttr(s.i(static_cast<int64_t>(*stride)));
    return success();
  }
};

struct EmbeddingGradPattern : OpKernelPattern<graph::EmbeddingGradOp> {
  LogicalResult selectOp(graph::EmbeddingGradOp op,
                         const LoweredOperands &operands,
                         KernelSelection &s) const override {
    ArrayRef<int64_t> t = shapeOf(op.getResult());
    int64_t rows = numElements(op.getIds().getType());
    // The kernel takes [ids, dy, dtable]. The CUDA backend sorts the rows
    // by id (a stable radix sort) and sums each id's rows in row order, as
    // the CPU does: the same bits, run to run, instead of float atomics.
    SmallVector<BufferRange> buffers = {operands.ins[1], operands.ins[0],
                                        operands.outs[0]};
    buffers.push_back(s.workspace(4 * (3 * rows + 256 * ((rows + 255) / 256)),
                                  "embedding_grad sort"));
    auto k = s.emit<rt::EmbeddingGradOp>(buffers);
    k.setRowsAttr(s.i(rows));
    k.setWidthAttr(s.i(t[1]));
    k.setVocabAttr(s.i(t[0]));
    k.setAccumulateAttr(s.i(0));
    if (std::optional<uint64_t> stride = op.getTensorRowStride())
      k.setTensorRowStrideAttr(s.i(static_cast<int64_t>(*stride)));
    return success();
  }
};

struct GatherPositionsPattern : OpKernelPattern<graph::GatherPositionsOp> {
  LogicalResult selectOp(graph::GatherPositionsOp op,
                         const LoweredOperands &operands,
                         KernelSelection &s) const override {
    ArrayRef<int64_t> x = shapeOf(op.getInput()),
                      p = shapeOf(op.getPositions());
    auto k = s.emit<rt::GatherPositionsOp>(operands.all());
    k.setBatchAttr(s.i(x[0]));
    k.setSeqAttr(s.i(x[1]));
    k.setPredictionsAttr(s.i(p[1]));
    k.setWidthAttr(s.i(x[2]));
    return success();
  }
};

struct GatherPositionsGradPattern
    : OpKernelPattern<graph::GatherPositionsGradOp> {
  LogicalResult selectOp(graph::GatherPositionsGradOp op,
                         const LoweredOperands &operands,
                         KernelSelection &s) const override {
    ArrayRef<int64_t> x = shapeOf(op.getResult()),
                      p = shapeOf(op.getPositions());
    // The kernel takes [positions, dy, dx].
    auto k = s.emit<rt::GatherPositionsGradOp>(
        {operands.ins[1], operands.ins[0], operands.outs[0]});
    k.setBatchAttr(s.i(x[0]));
    k.setSeqAttr(s.i(x[1]));
    k.setPredictionsAttr(s.i(p[1]));
    k.setWidthAttr(s.i(x[2]));
    return success();
  }
};

// The losses over [rows, cols] logits with a label per row.
template <class GraphOp, class KernelOp>
struct LabelledRowsPattern : OpKernelPattern<GraphOp> {
  LogicalResult selectOp(GraphOp op, const LoweredOperands &operands,
                         KernelSelection &s) const override {
    ArrayRef<int64_t> logits = shapeOf(op.getLogits());
    int64_t cols = logits.back(), rows = product(logits) / cols;
    SmallVector<BufferRange> buffers = operands.all();
    // The sums: per-row values (doubles), added in a fixed order.
    if (!std::is_same_v<KernelOp, rt::SoftmaxCrossEntropyGradOp>)
      buffers.push_back(s.workspace(
          8 * rows,
          (KernelOp::getOperationName().drop_front(3) + " rows").str()));
    auto k = s.template emit<KernelOp>(buffers);
    k.setRowsAttr(s.i(rows));
    k.setColsAttr(s.i(cols));
    k.setClassesAttr(s.i(static_cast<int64_t>(op.getNumClasses())));
    return success();
  }
};

} // namespace

void lowering::populateIndexedPatterns(KernelPatterns &patterns) {
  patterns.add<EmbeddingPattern, graph::EmbeddingOp>();
  patterns.add<EmbeddingGradPattern, graph::EmbeddingGradOp>();
  patterns.add<GatherPositionsPattern, graph::GatherPositionsOp>();
  patterns.add<GatherPositionsGradPattern, graph::GatherPositionsGradOp>();
  patterns.add<LabelledRowsPattern<graph::SoftmaxCrossEntropyOp,
                                   rt::SoftmaxCrossEntropyOp>,
               graph::SoftmaxCrossEntropyOp>();
  patterns.add<LabelledRowsPattern<graph::SoftmaxCrossEntropyGradOp,
                                   rt::SoftmaxCrossEntropyGradOp>,
               graph::SoftmaxCrossEntropyGradOp>();
  patterns.add<LabelledRowsPattern<graph::ArgmaxCorrectOp, rt::ArgmaxCorrectOp>,
               graph::ArgmaxCorrectOp>();
}
