//===- GraphAttention.cpp - graph.attention: verifiers and gradient -------===//
//
// The shape rules of graph.attention and graph.attention_grad
// (GraphAttentionOps.td) and the attention's gradient. Each verifier error
// has a -verify-diagnostics case in test/dialects/graph/invalid-attention.mlir.
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/GraphOps.h"

#include <cmath>

using namespace mlir;
using namespace ferry::graph;

namespace {

// The rules both ops share: query [batch, heads, seq, head_dim] ([batch,
// seq, heads, head_dim] sequence-major) with head_dim in [1, 64]; key and value
// (and the listed others) of its type; mask [batch, seq]; the row logsumexp
// [batch, heads, seq]; sequence ids, when given, i32 [batch, seq]; the
// dropout and scale attributes.
LogicalResult verifyAttention(Operation *op, Value query,
                              ArrayRef<std::pair<StringRef, Value>> sameAsQuery,
                              Value mask, Value sequenceIds, Value dropoutKeys,
                              Value rowLogsumexp, double scale,
                              double probability, StringRef purpose,
                              bool sequenceMajor) {
  auto q = cast<RankedTensorType>(query.getType());
  if (q.getRank() != 4)
    return op->emitOpError()
           << "expects query "
           << (sequenceMajor ? "[batch, seq, heads, head_dim]"
                             : "[batch, heads, seq, head_dim]")
           << ", found " << q;
  int64_t batch = q.getDimSize(0), heads = q.getDimSize(sequenceMajor ? 2 : 1),
          seq = q.getDimSize(sequenceMajor ? 1 : 2), dim = q.getDimSize(3);
  if (dim < 1 || dim > 64)
    return op->emitOpError() << "head_dim must be in [1, 64] (the CUDA "
                                "kernel's tile), found "
                             << dim;
  for (auto [name, value] : sameAsQuery)
    if (value.getType() != q)
      return op->emitOpError() << "expects " << name << " of the query's type "
                               << q << ", found " << value.getType();
  auto m = cast<RankedTensorType>(mask.getType());
  if (m.getRank() != 2 || m.getDimSize(0) != batch || m.getDimSize(1) != seq ||
      m.getElementType() != q.getElementType())
    return op->emitOpError()
           << "expects mask "
           << RankedTensorType::get({batch, seq}, q.getElementType())
           << ", found " << m;
  auto expectedLse =
      RankedTensorType::get({batch, heads, seq}, q.getElementType());
  if (failed(verifySequenceIds(op, sequenceIds, batch, seq)))
    return failure();
  if (dropoutKeys && !sequenceIds)
    return op->emitOpError()
           << "takes dropout_keys only with sequences (packed rows)";
  if (dropoutKeys &&
      failed(verifyDropoutKeys(
          op, dropoutKeys,
          RankedTensorType::get({batch, heads, seq, seq}, q.getElementType()))))
    return failure();
  if (rowLogsumexp.getType() != expectedLse)
    return op->emitOpError() << "expects row_logsumexp " << expectedLse
                             << ", found " << rowLogsumexp.getType();
  if (!std::isfinite(scale) || scale == 0.0)
    return op->emitOpError()
           << "scale must be finite and non-zero, found " << scale;
  if (!(probability >= 0.0 && probability < 1.0))
    return op->emitOpError()
           << "probability must be in [0, 1), found " << probability;
  if (purpose.empty())
    return op->emitOpError()
           << "needs a non-empty purpose naming the dropout site";
  return success();
}

} // namespace

LogicalResult AttentionOp::verify() {
  return verifyAttention(
      *this, getQuery(),
      {{"key", getKey()}, {"value", getValue()}, {"result", getResult()}},
      getMask(), getSequenceIds(), getDropoutKeys(), getRowLogsumexp(),
      getScale().convertToDouble(), getProbability().convertToDouble(),
      getPurpose(), getSequenceMajor());
}

LogicalResult AttentionGradOp::verify() {
  return verifyAttention(*this, getQuery(),
                         {{"key", getKey()},
                          {"value", getValue()},
                          {"result", getResult()},
                          {"grad", getGrad()},
                          {"query_grad", getQueryGrad()},
                          {"key_grad", getKeyGrad()},
                          {"value_grad", getValueGrad()}},
                         getMask(), getSequenceIds(), getDropoutKeys(),
                         getRowLogsumexp(), getScale().convertToDouble(),
                         getProbability().convertToDouble(), getPurpose(),
                         getSequenceMajor());
}

// The row logsumexp exists for the backward: it has no gradient of its own
// (ferry-fuse-attention creates it with no use in the forward). The mask,
// from integer inputs, is a constant, as are the sequence ids.
LogicalResult AttentionOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                          SmallVectorImpl<Value> &grads) {
  grads.assign((*this)->getNumOperands(), Value());
  Type t = getQuery().getType();
  auto g = AttentionGradOp::create(
      b, getLoc(), t, t, t, getQuery(), getKey(), getValue(), getMask(),
      getResult(), getRowLogsumexp(), resultGrads[0], getSeed(), getLayer(),
      getSampleOffset(), getSequenceIds(), getDropoutKeys(), getScaleAttr(),
      getProbabilityAttr(), getPurposeAttr(), getSequenceMajorAttr(),
      getTensorKeyStrideAttr());
  grads[0] = g.getQueryGrad();
  grads[1] = g.getKeyGrad();
  grads[2] = g.getValueGrad();
  return success();
}
