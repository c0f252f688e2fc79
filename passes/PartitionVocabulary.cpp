//===- PartitionVocabulary.cpp - the vocabulary-parallel rules ------------===//
//
// ferry-partition-tensors' rules for a table and logits split along the
// vocabulary (Megatron's vocabulary-parallel embedding and cross-entropy):
// the lookup gives zeros for the other ranks' ids and is summed over the
// group; the softmax cross-entropy and argmax metric become the
// class-split ops around a max and a sum all-reduce, so the logits are
// never gathered.
//
//===----------------------------------------------------------------------===//

#include "passes/Partitioner.h"

#include "dialects/graph/GraphAttributes.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace ferry::graph;
using namespace ferry::partition;

// A table split along its rows (the vocabulary): each rank looks up the ids
// among its rows, zeros for the others', and the sum over the group is the
// whole table's lookup. Its gradient scatters only this rank's ids.
LogicalResult Partitioner::partitionEmbedding(EmbeddingOp op) {
  if (splitOf(op.getTable()) != 0 || splitOf(op.getIds()) != kReplicated)
    return noRule(op,
                  splitOf(op.getTable()) != 0 ? op.getTable() : op.getIds());
  op.setTensorRowStrideAttr(builder.getI64IntegerAttr(
      cast<RankedTensorType>(op.getTable().getType()).getDimSize(0)));
  sumPartial(op.getResult());
  return success();
}

template <class Op> Value Partitioner::notSplitAlongClasses(Op op) const {
  auto logits = cast<RankedTensorType>(op.getLogits().getType());
  if (splitOf(op.getLogits()) != logits.getRank() - 1)
    return op.getLogits();
  for (Value v : {op.getLabels(), op.getWeights()})
    if (splitOf(v) != kReplicated)
      return v;
  return Value();
}

Value Partitioner::rowMaxOf(Value logits, uint64_t numClasses) {
  auto it = rowMaxima.find({logits, numClasses});
  if (it != rowMaxima.end())
    return it->second;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointAfterValue(logits);
  auto type = cast<RankedTensorType>(logits.getType());
  auto rows =
      RankedTensorType::get(type.getShape().drop_back(), type.getElementType());
  Value local = ClassMaxOp::create(
      builder, logits.getLoc(), rows, logits,
      builder.getI64IntegerAttr(static_cast<int64_t>(numClasses)),
      builder.getI64IntegerAttr(type.getShape().back()));
  Value whole = allReduce(local, ReduceKind::max);
  rowMaxima[{logits, numClasses}] = whole;
  return whole;
}

// Megatron's vocabulary-parallel cross-entropy: the rows' maxima (max over
// the group), each rank's sums of exponentials and target logits (summed
// over the group), and the loss from those; the logits are never gathered.
LogicalResult Partitioner::partitionCrossEntropy(SoftmaxCrossEntropyOp op) {
  if (Value operand = notSplitAlongClasses(op))
    return noRule(op, operand);
  Value logits = op.getLogits();
  Value rowMax = rowMaxOf(logits, op.getNumClasses());
  auto type = cast<RankedTensorType>(logits.getType());
  SmallVector<int64_t> statsShape(type.getShape().drop_back());
  statsShape.push_back(2);
  builder.setInsertionPoint(op);
  Value stats = ClassStatsOp::create(
      builder, op.getLoc(),
      RankedTensorType::get(statsShape, type.getElementType()), logits,
      op.getLabels(), rowMax, op.getNumClassesAttr(),
      builder.getI64IntegerAttr(type.getShape().back()));
  Value sums = allReduce(stats, ReduceKind::sum);
  Value loss = CrossEntropyOfStatsOp::create(builder, op.getLoc(), op.getType(),
                                             sums, rowMax, op.getWeights());
  op.getResult().replaceAllUsesWith(loss);
  op.erase();
  return success();
}

// The lowest class holding each row's maximum: minus it, maximised over the
// group, then compared with the labels.
LogicalResult Partitioner::partitionArgmaxCorrect(ArgmaxCorrectOp op) {
  if (Value operand = notSplitAlongClasses(op))
    return noRule(op, operand);
  Value logits = op.getLogits();
  Value rowMax = rowMaxOf(logits, op.getNumClasses());
  auto type = cast<RankedTensorType>(logits.getType());
  builder.setInsertionPoint(op);
  Value negated =
      ClassArgmaxOp::create(builder, op.getLoc(), rowMax.getType(), logits,
                            rowMax, op.getNumClassesAttr(),
                            builder.getI64IntegerAttr(type.getShape().back()));
  Value lowest = allReduce(negated, ReduceKind::max);
  Value correct = IndexCorrectOp::create(
      builder, op.getLoc(), op.getType(), lowest, op.getLabels(),
      op.getWeights(), op.getNumClassesAttr());
  op.getResult().replaceAllUsesWith(correct);
  op.erase();
  return success();
}
