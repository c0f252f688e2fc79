//===- GraphClassSplit.cpp - losses over split classes: rules -------------===//
//
// The verifiers and gradient rules of the ops that compute the softmax
// cross-entropy and the argmax metric of logits split over their classes
// (GraphClassSplitOps.td), and the check of the row stride of a
// vocabulary-parallel graph.embedding. Each verifier error has a
// -verify-diagnostics case in test/dialects/graph/invalid-class-split.mlir.
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace ferry::graph;

namespace {

// Float holds every integer up to 2^24 exactly: class_argmax's indices.
constexpr int64_t kMaxClasses = int64_t{1} << 24;

// `named` values must have `slots` as their shape.
LogicalResult verifySlots(Operation *op, ArrayRef<int64_t> slots,
                          ArrayRef<std::pair<StringRef, Value>> named,
                          StringRef whose) {
  for (auto [name, value] : named)
    if (tensorOf(value).getShape() != slots)
      return op->emitOpError()
             << "expects " << name << " of shape " << shapeString(slots) << " ("
             << whose << "), found " << shapeString(tensorOf(value).getShape());
  return success();
}

// The logits [..., cols] of this rank's classes, the whole count of real
// classes and the stride (this rank's classes start at rank x stride),
// which is the rank's columns: every rank holds an equal part.
LogicalResult verifySplitLogits(Operation *op, Value logits, int64_t numClasses,
                                int64_t stride) {
  RankedTensorType t = tensorOf(logits);
  if (t.getRank() < 1)
    return op->emitOpError() << "expects logits [..., classes], found a scalar";
  if (stride != t.getShape().back())
    return op->emitOpError()
           << "tensor_class_stride " << stride
           << " must equal the logits' last dimension " << t.getShape().back()
           << " (every rank holds as many classes)";
  if (numClasses < 1 || numClasses > kMaxClasses)
    return op->emitOpError() << "classes " << numClasses << " must be in [1, "
                             << kMaxClasses << "]";
  return success();
}

} // namespace

LogicalResult ferry::graph::verifyTensorRowStride(
    Operation *op, std::optional<uint64_t> stride, RankedTensorType table) {
  if (stride && static_cast<int64_t>(*stride) != table.getDimSize(0))
    return op->emitOpError()
           << "tensor_row_stride " << *stride << " must equal the table's rows "
           << table.getDimSize(0) << " (every rank holds as many rows)";
  return success();
}

LogicalResult ClassMaxOp::verify() {
  if (failed(verifySplitLogits(*this, getLogits(),
                               static_cast<int64_t>(getNumClasses()),
                               static_cast<int64_t>(getTensorClassStride()))))
    return failure();
  return verifySlots(*this, tensorOf(getLogits()).getShape().drop_back(),
                     {{"result", getResult()}},
                     "the logits without the class dimension");
}

// class_stats and its gradient: split logits, labels and row maxima of
// their rows, and `stats` (named `statsName`) of [rows..., 2].
template <class Op>
static LogicalResult verifyClassStats(Op op, Value stats, StringRef statsName,
                                      StringRef whose) {
  if (failed(verifySplitLogits(
          op, op.getLogits(), static_cast<int64_t>(op.getNumClasses()),
          static_cast<int64_t>(op.getTensorClassStride()))))
    return failure();
  ArrayRef<int64_t> slots = tensorOf(op.getLogits()).getShape().drop_back();
  if (failed(verifySlots(
          op, slots, {{"labels", op.getLabels()}, {"row_max", op.getRowMax()}},
          "the logits without the class dimension")))
    return failure();
  SmallVector<int64_t> shape(slots);
  shape.push_back(2);
  return verifySlots(op, shape, {{statsName, stats}}, whose);
}

LogicalResult ClassStatsOp::verify() {
  return verifyClassStats(*this, getResult(), "result",
                          "a sum and a target logit a row");
}

LogicalResult ClassStatsGradOp::verify() {
  return verifyClassStats(*this, getGrad(), "grad",
                          "graph.class_stats's result");
}

// Stats [..., 2] and the other operands of its rows' shape.
static LogicalResult
verifyStatsRows(Operation *op, Value stats,
                ArrayRef<std::pair<StringRef, Value>> rows) {
  ArrayRef<int64_t> shape = tensorOf(stats).getShape();
  if (shape.empty() || shape.back() != 2)
    return op->emitOpError()
           << "expects stats [..., 2] (a sum and a target logit a row), found "
           << shapeString(shape);
  return verifySlots(op, shape.drop_back(), rows,
                     "the stats without their last dimension");
}

LogicalResult CrossEntropyOfStatsOp::verify() {
  return verifyStatsRows(*this, getStats(),
                         {{"row_max", getRowMax()}, {"weights", getWeights()}});
}

LogicalResult CrossEntropyOfStatsGradOp::verify() {
  return verifyStatsRows(*this, getStats(), {{"weights", getWeights()}});
}

LogicalResult ClassArgmaxOp::verify() {
  if (failed(verifySplitLogits(*this, getLogits(),
                               static_cast<int64_t>(getNumClasses()),
                               static_cast<int64_t>(getTensorClassStride()))))
    return failure();
  ArrayRef<int64_t> slots = tensorOf(getLogits()).getShape().drop_back();
  return verifySlots(*this, slots,
                     {{"row_max", getRowMax()}, {"result", getResult()}},
                     "the logits without the class dimension");
}

LogicalResult IndexCorrectOp::verify() {
  ArrayRef<int64_t> slots = tensorOf(getNegatedIndex()).getShape();
  return verifySlots(*this, slots,
                     {{"labels", getLabels()}, {"weights", getWeights()}},
                     "as negated_index");
}

//===----------------------------------------------------------------------===//
// Gradients
//===----------------------------------------------------------------------===//

LogicalResult ClassStatsOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                           SmallVectorImpl<Value> &grads) {
  // The row maxima take none: the loss is the same whatever shift the
  // softmax uses (d/dm of log(sum exp(l - m)) + m is 0).
  grads.assign(3, Value());
  grads[0] = ClassStatsGradOp::create(
      b, getLoc(), getLogits().getType(), getLogits(), getLabels(), getRowMax(),
      resultGrads[0], getNumClassesAttr(), getTensorClassStrideAttr());
  return success();
}

LogicalResult
CrossEntropyOfStatsOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                      SmallVectorImpl<Value> &grads) {
  grads.assign(3, Value());
  grads[0] = CrossEntropyOfStatsGradOp::create(b, getLoc(),
                                               getStats().getType(), getStats(),
                                               getWeights(), resultGrads[0]);
  return success();
}
