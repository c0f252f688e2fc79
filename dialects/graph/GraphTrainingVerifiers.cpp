//===- GraphTrainingVerifiers.cpp - verifiers of the training ops ---------===//
//
// The verifiers of the `graph` ops autodiff and the optimizer insert: the
// gradient ops, state updates and the optimizer (GraphOps.cpp has the
// forward ops'). Every check emits a diagnostic naming the operand, the
// expected and the found shape or type; none asserts. Each error has a
// -verify-diagnostics case in test/dialects/graph/invalid.mlir.
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace ferry::graph;

//===----------------------------------------------------------------------===//
// Gradient ops
//===----------------------------------------------------------------------===//

LogicalResult LayerNormGradOp::verify() {
  RankedTensorType input = tensorOf(getInput());
  if (input.getRank() < 1)
    return emitOpError() << "expects an input of rank >= 1, found a scalar";
  ArrayRef<int64_t> scale = tensorOf(getScale()).getShape();
  if (scale.size() != 1 || scale[0] != input.getShape().back())
    return emitOpError() << "expects scale of shape " << input.getShape().back()
                         << " (the input's last dimension), found "
                         << shapeString(scale);
  return success();
}

LogicalResult EmbeddingGradOp::verify() {
  RankedTensorType table = tensorOf(getResult());
  if (table.getRank() != 2)
    return emitOpError() << "expects a [rows, width] result, found shape "
                         << shapeString(table.getShape());
  if (failed(verifyTensorRowStride(*this, getTensorRowStride(), table)))
    return failure();
  SmallVector<int64_t> expected(tensorOf(getIds()).getShape());
  expected.push_back(table.getDimSize(1));
  if (tensorOf(getGrad()).getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "expects grad of shape " << shapeString(expected)
                         << " (the ids' shape, then the row width), found "
                         << shapeString(tensorOf(getGrad()).getShape());
  return verifySameElementType(*this,
                               {{"grad", getGrad()}, {"result", getResult()}});
}

LogicalResult GatherPositionsGradOp::verify() {
  RankedTensorType result = tensorOf(getResult());
  RankedTensorType positions = tensorOf(getPositions());
  if (result.getRank() != 3 || positions.getRank() != 2 ||
      positions.getDimSize(0) != result.getDimSize(0))
    return emitOpError() << "expects a [batch, seq, hidden] result and "
                            "[batch, predictions] positions, found "
                         << shapeString(result.getShape()) << " and "
                         << shapeString(positions.getShape());
  if (failed(verifySameElementType(
          *this, {{"grad", getGrad()}, {"result", getResult()}})))
    return failure();
  SmallVector<int64_t> expected = {
      result.getDimSize(0), positions.getDimSize(1), result.getDimSize(2)};
  if (tensorOf(getGrad()).getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "expects grad of shape " << shapeString(expected)
                         << ", found "
                         << shapeString(tensorOf(getGrad()).getShape());
  return success();
}

LogicalResult TakeGradOp::verify() {
  RankedTensorType result = tensorOf(getResult());
  auto dim = static_cast<int64_t>(getDim());
  auto index = static_cast<int64_t>(getIndex());
  if (dim < 0 || dim >= result.getRank() || index < 0 ||
      index >= result.getDimSize(dim))
    return emitOpError() << "dim " << dim << " index " << index
                         << " is out of range for the result shape "
                         << shapeString(result.getShape());
  SmallVector<int64_t> expected(result.getShape());
  expected.erase(expected.begin() + dim);
  if (tensorOf(getGrad()).getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "expects grad of shape " << shapeString(expected)
                         << ", found "
                         << shapeString(tensorOf(getGrad()).getShape());
  return verifySameElementType(*this,
                               {{"grad", getGrad()}, {"result", getResult()}});
}

LogicalResult BroadcastOp::verify() {
  RankedTensorType result = tensorOf(getResult());
  ArrayRef<int64_t> dims = getDims();
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] < 0 || dims[i] >= result.getRank() ||
        (i > 0 && dims[i] <= dims[i - 1]))
      return emitOpError() << "dims must be increasing and within the "
                              "result's rank "
                           << result.getRank() << ", found ["
                           << listString(dims) << "]";
  SmallVector<int64_t> expected;
  for (int64_t d = 0; d < result.getRank(); ++d)
    if (!llvm::is_contained(dims, d))
      expected.push_back(result.getDimSize(d));
  if (tensorOf(getInput()).getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "expects input of shape " << shapeString(expected)
                         << " (the result without dims [" << listString(dims)
                         << "]), found "
                         << shapeString(tensorOf(getInput()).getShape());
  return verifySameElementType(
      *this, {{"input", getInput()}, {"result", getResult()}});
}

// The shared checks of the two ops that read logits, labels and weights.
template <typename Op> static LogicalResult verifyClassSlots(Op op) {
  RankedTensorType logits = tensorOf(op.getLogits());
  if (logits.getRank() < 1)
    return op.emitOpError() << "expects logits [..., classes], found a scalar";
  ArrayRef<int64_t> slots = logits.getShape().drop_back();
  if (tensorOf(op.getLabels()).getShape() != slots ||
      tensorOf(op.getWeights()).getShape() != slots)
    return op.emitOpError()
           << "expects labels and weights of shape " << shapeString(slots)
           << ", found " << shapeString(tensorOf(op.getLabels()).getShape())
           << " and " << shapeString(tensorOf(op.getWeights()).getShape());
  auto numClasses = static_cast<int64_t>(op.getNumClasses());
  if (numClasses < 1 || numClasses > logits.getShape().back())
    return op.emitOpError()
           << "classes " << numClasses << " must be in [1, "
           << logits.getShape().back() << "] (the logits' last dimension)";
  return success();
}

LogicalResult SoftmaxCrossEntropyGradOp::verify() {
  return verifyClassSlots(*this);
}
LogicalResult ArgmaxCorrectOp::verify() { return verifyClassSlots(*this); }

//===----------------------------------------------------------------------===//
// State updates and the optimizer
//===----------------------------------------------------------------------===//

// The value stored into (or added to) a declaration must have its type, or
// the type of one layer entry when a layer index is given.
template <typename Op>
static LogicalResult verifyStateUpdate(Op op,
                                       SymbolTableCollection &symbolTable) {
  RankedTensorType declared;
  bool stacked = false;
  if (failed(lookupDeclaration(op, op.getNameAttr(), symbolTable, declared,
                               stacked)))
    return failure();
  if (!stacked && op.getLayer())
    return op.emitOpError()
           << "'" << op.getName() << "' is not stacked: give no layer index";
  // With a layer index: one entry of a stacked declaration; without: all of
  // it.
  RankedTensorType expected =
      op.getLayer() ? RankedTensorType::get(declared.getShape().drop_front(),
                                            declared.getElementType())
                    : declared;
  if (op.getValue().getType() != expected)
    return op.emitOpError() << "value type " << op.getValue().getType()
                            << " differs from " << expected;
  return success();
}

LogicalResult StoreOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyStateUpdate(*this, symbolTable);
}
LogicalResult
AccumulateOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyStateUpdate(*this, symbolTable);
}

LogicalResult LearningRateOp::verify() {
  if (getKind() != "poly" && getKind() != "constant")
    return emitOpError() << "kind must be poly or constant, found '"
                         << getKind() << "'";
  if (static_cast<int64_t>(getTotalSteps()) < 1)
    return emitOpError() << "total_steps must be >= 1";
  return success();
}

LogicalResult OptimizerUpdateOp::verify() {
  if (getOptimizer() != "lamb" && getOptimizer() != "adamw")
    return emitOpError() << "optimizer must be lamb or adamw, found '"
                         << getOptimizer() << "'";
  return success();
}

LogicalResult
OptimizerUpdateOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  RankedTensorType paramType;
  bool stacked = false;
  if (failed(lookupDeclaration(*this, getParamAttr(), symbolTable, paramType,
                               stacked)))
    return failure();
  for (FlatSymbolRefAttr other : {getGradAttr(), getMAttr(), getVAttr()}) {
    RankedTensorType type;
    bool otherStacked = false;
    if (failed(
            lookupDeclaration(*this, other, symbolTable, type, otherStacked)))
      return failure();
    if (type != paramType)
      return emitOpError() << "'" << other.getValue() << "' has type " << type
                           << ", the parameter '" << getParam() << "' has "
                           << paramType;
  }
  if (getLayer() && !stacked)
    return emitOpError() << "'" << getParam()
                         << "' is not stacked: give no layer index";
  return success();
}
