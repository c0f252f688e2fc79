//===- Row.cpp - kernel patterns of row-wise ops --------------------------===//
//
// graph.layer_norm, residual_layer_norm, softmax and their gradients, and
// the dropouts (dropout, softmax_dropout, dropout_softmax_grad) -> the Row
// kernels (dialects/rt/kernels/Row.td). Rows and columns come from the
// result's shape (the last dimension is the row); a dropout's seed, layer
// and sample offset stay affine in the registers, its purpose is hashed
// (runtime/random/Philox.h). Packed rows' sequence ids and dropout keys
// are the kernels' optional last buffers.
//
//===----------------------------------------------------------------------===//

#include "passes/lowering/KernelPatterns.h"

#include "runtime/random/Philox.h"

using namespace mlir;
using namespace ferry;
using namespace ferry::lowering;

namespace {

int64_t purposeOf(StringRef purpose) {
  return static_cast<int64_t>(random::purposeHash(purpose));
}

// A dropout's key: seed, purpose, layer and sample offset, and what the
// kernel needs to find a sample: its element count and the elements a
// sample holds (the leading dimension is the sample).
template <class GraphOp, class KernelOp>
LogicalResult setDropout(GraphOp op, KernelOp k, KernelSelection &s) {
  FailureOr<Affine> seed = s.affine(op.getSeed(), op);
  FailureOr<Affine> layer = s.affine(op.getLayer(), op);
  FailureOr<Affine> offset = s.affine(op.getSampleOffset(), op);
  if (failed(seed) || failed(layer) || failed(offset))
    return failure();
  Value result = op->getResult(0);
  int64_t n = numElements(result.getType());
  ArrayRef<int64_t> shape = shapeOf(result);
  k.setCountAttr(s.i(n));
  k.setPerSampleAttr(s.i(shape.empty() ? n : n / shape.front()));
  k.setSeedAttr(s.a(*seed));
  k.setPurposeAttr(s.i(purposeOf(op.getPurpose())));
  k.setLayerAttr(s.a(*layer));
  k.setSampleOffsetAttr(s.a(*offset));
  k.setPAttr(s.f(op.getProbability()));
  return success();
}

struct DropoutPattern : OpKernelPattern<graph::DropoutOp> {
  SmallVector<Value> packed(graph::DropoutOp op) const override {
    return presentOperands({op.getDropoutKeys()});
  }
  LogicalResult selectOp(graph::DropoutOp op, const LoweredOperands &operands,
                         KernelSelection &s) const override {
    auto k = s.emit<rt::DropoutOp>(operands.all());
    if (failed(setDropout(op, k, s)))
      return failure();
    // Packed rows' dropout keys: the layout of a sample (a token's
    // elements, or the attention probabilities [heads, seq, seq]) and the
    // tokens a row.
    if (Value keys = op.getDropoutKeys()) {
      ArrayRef<int64_t> shape = shapeOf(op.getResult());
      int64_t seq = shapeOf(keys)[1];
      bool probabilities =
          shape.size() == 4 && shape[2] == seq && shape[3] == seq;
      k.setKeyLayoutAttr(s.i(probabilities ? 2 : 1));
      k.setKeySeqAttr(s.i(seq));
    }
    // Tensor parallelism: the rank's part of each sample, keyed by its
    // place in the whole one (the optional integers before it read 0).
    if (std::optional<uint64_t> stride = op.getTensorKeyStride()) {
      if (!op.getDropoutKeys()) {
        k.setKeyLayoutAttr(s.i(0));
        k.setKeySeqAttr(s.i(0));
      }
      k.setTensorKeyStrideAttr(s.i(static_cast<int64_t>(*stride)));
    }
    return success();
  }
};

struct SoftmaxDropoutPattern : OpKernelPattern<graph::SoftmaxDropoutOp> {
  SmallVector<Value> packed(graph::SoftmaxDropoutOp op) const override {
    return presentOperands({op.getSequenceIds(), op.getDropoutKeys()});
  }
  LogicalResult selectOp(graph::SoftmaxDropoutOp op,
                         const LoweredOperands &operands,
                         KernelSelection &s) const override {
    ArrayRef<int64_t> shape = shapeOf(op.getResult());
    int64_t n = numElements(op.getResult().getType()), cols = shape.back();
    auto k = s.emit<rt::SoftmaxDropoutOp>(operands.all());
    k.setBatchAttr(s.i(shape.front()));
    k.setRowsAttr(s.i(n / (shape.front() * cols)));
    k.setColsAttr(s.i(cols));
    if (std::optional<uint64_t> stride = op.getTensorKeyStride())
      k.setTensorKeyStrideAttr(s.i(static_cast<int64_t>(*stride)));
    return setDropout(op, k, s);
  }
};

struct DropoutSoftmaxGradPattern
    : OpKernelPattern<graph::DropoutSoftmaxGradOp> {
  SmallVector<Value> packed(graph::DropoutSoftmaxGradOp op) const override {
    return presentOperands({op.getDropoutKeys()});
  }
  LogicalResult selectOp(graph::DropoutSoftmaxGradOp op,
                         const LoweredOperands &operands,
                         KernelSelection &s) const override {
    ArrayRef<int64_t> shape = shapeOf(op.getResult());
    int64_t cols = shape.empty() ? 1 : shape.back();
    auto k = s.emit<rt::DropoutSoftmaxGradOp>(operands.all());
    k.setRowsAttr(s.i(numElements(op.getResult().getType()) / cols));
    k.setColsAttr(s.i(cols));
    if (std::optional<uint64_t> stride = op.getTensorKeyStride())
      k.setTensorKeyStrideAttr(s.i(static_cast<int64_t>(*stride)));
    return setDropout(op, k, s);
  }
};

struct ResidualLayerNormPattern : OpKernelPattern<graph::ResidualLayerNormOp> {
  SmallVector<Value> packed(graph::ResidualLayerNormOp op) const override {
    return presentOperands({op.getDropoutKeys()});
  }
  LogicalResult selectOp(graph::ResidualLayerNormOp op,
                         const LoweredOperands &operands,
                         KernelSelection &s) const override {
    Value r0 = op->getResult(0);
    ArrayRef<int64_t> shape = shapeOf(r0);
    int64_t n = numElements(r0.getType()), cols = shape.back();
    auto k = s.emit<rt::ResidualLayerNormOp>(operands.all());
    k.setRowsAttr(s.i(n / cols));
    k.setColsAttr(s.i(cols));
    k.setCountAttr(s.i(n));
    // As graph.dropout: the leading dimension is the sample.
    k.setPerSampleAttr(s.i(shape.empty() ? n : n / shape.front()));
    k.setEpsAttr(s.f(op.getEpsilon()));
    if (!op.getSeed()) { // no dropout
      for (auto set : {&rt::ResidualLayerNormOp::setSeedAttr,
                       &rt::ResidualLayerNormOp::setPurposeAttr,
                       &rt::ResidualLayerNormOp::setLayerAttr,
                       &rt::ResidualLayerNormOp::setSampleOffsetAttr})
        (k.*set)(s.i(0));
      k.setPAttr(s.f(0.0));
      return success();
    }
    FailureOr<Affine> seed = s.affine(op.getSeed(), op);
    FailureOr<Affine> layer = s.affine(op.getLayer(), op);
    FailureOr<Affine> offset = s.affine(op.getSampleOffset(), op);
    if (failed(seed) || failed(layer) || failed(offset))
      return failure();
    k.setSeedAttr(s.a(*seed));
    k.setPurposeAttr(s.i(purposeOf(*op.getPurpose())));
    k.setLayerAttr(s.a(*layer));
    k.setSampleOffsetAttr(s.a(*offset));
    k.setPAttr(s.f(*op.getProbability()));
    return success();
  }
};

struct LayerNormPattern : OpKernelPattern<graph::LayerNormOp> {
  LogicalResult selectOp(graph::LayerNormOp op, const LoweredOperands &operands,
                         KernelSelection &s) const override {
    Value r0 = op->getResult(0);
    int64_t cols = shapeOf(r0).back();
    auto k = s.emit<rt::LayerNormOp>(operands.all());
    k.setRowsAttr(s.i(numElements(r0.getType()) / cols));
    k.setColsAttr(s.i(cols));
    k.setEpsAttr(s.f(op.getEpsilon()));
    return success();
  }
};

struct LayerNormGradPattern : OpKernelPattern<graph::LayerNormGradOp> {
  LogicalResult selectOp(graph::LayerNormGradOp op,
                         const LoweredOperands &operands,
                         KernelSelection &s) const override {
    Value r0 = op->getResult(0);
    int64_t cols = shapeOf(r0).back();
    int64_t rows = numElements(r0.getType()) / cols;
    SmallVector<BufferRange> buffers = operands.all();
    // The row statistics the CUDA column pass reads (planned, so that no
    // kernel allocates and the step can be captured as a CUDA graph).
    buffers.push_back(s.workspace(8 * rows, "layer_norm_grad rows"));
    auto k = s.emit<rt::LayerNormGradOp>(buffers);
    k.setRowsAttr(s.i(rows));
    k.setColsAttr(s.i(cols));
    k.setEpsAttr(s.f(op.getEpsilon()));
    return success();
  }
};

struct SoftmaxPattern : OpKernelPattern<graph::SoftmaxOp> {
  SmallVector<Value> packed(graph::SoftmaxOp op) const override {
    return presentOperands({op.getSequenceIds()});
  }
  LogicalResult selectOp(graph::SoftmaxOp op, const LoweredOperands &operands,
                         KernelSelection &s) const override {
    ArrayRef<int64_t> shape = shapeOf(op.getResult());
    int64_t cols = shape.back(), batch = shape.front();
    auto k = s.emit<rt::SoftmaxOp>(operands.all());
    k.setBatchAttr(s.i(batch));
    k.setRowsAttr(s.i(numElements(op.getType()) / (batch * cols)));
    k.setColsAttr(s.i(cols));
    return success();
  }
};

struct SoftmaxGradPattern : OpKernelPattern<graph::SoftmaxGradOp> {
  LogicalResult selectOp(graph::SoftmaxGradOp op,
                         const LoweredOperands &operands,
                         KernelSelection &s) const override {
    int64_t cols = shapeOf(op.getResult()).back();
    auto k = s.emit<rt::SoftmaxGradOp>(operands.all());
    k.setRowsAttr(s.i(numElements(op.getType()) / cols));
    k.setColsAttr(s.i(cols));
    return success();
  }
};

} // namespace

void lowering::populateRowPatterns(KernelPatterns &patterns) {
  patterns.add<DropoutPattern, graph::DropoutOp>();
  patterns.add<SoftmaxDropoutPattern, graph::SoftmaxDropoutOp>();
  patterns.add<DropoutSoftmaxGradPattern, graph::DropoutSoftmaxGradOp>();
  patterns.add<ResidualLayerNormPattern, graph::ResidualLayerNormOp>();
  patterns.add<LayerNormPattern, graph::LayerNormOp>();
  patterns.add<LayerNormGradPattern, graph::LayerNormGradOp>();
  patterns.add<SoftmaxPattern, graph::SoftmaxOp>();
  patterns.add<SoftmaxGradPattern, graph::SoftmaxGradOp>();
}
