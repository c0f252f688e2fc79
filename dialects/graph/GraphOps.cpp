//===- GraphOps.cpp - verifiers of the `graph` dialect --------------------===//
//
// The forward ops' verifiers and the checks every verifier shares
// (GraphOps.h); the gradient ops' and the optimizer's are in
// GraphTrainingVerifiers.cpp. Every check here emits a diagnostic naming the
// operand, the expected and the found shape or type; none asserts. Each
// error has a -verify-diagnostics case in test/dialects/graph/invalid.mlir.
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <cmath>

using namespace mlir;
using namespace ferry::graph;

#include "dialects/graph/GraphEnums.cpp.inc"
#include "dialects/graph/GraphInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "dialects/graph/GraphOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

std::string ferry::graph::shapeString(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string out;
  llvm::raw_string_ostream os(out);
  llvm::interleave(shape, os, "x");
  return out;
}

RankedTensorType ferry::graph::tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

// "0, 2, 1" for attribute lists in diagnostics.
std::string ferry::graph::listString(ArrayRef<int64_t> values) {
  std::string out;
  llvm::raw_string_ostream os(out);
  llvm::interleave(values, os, ", ");
  return out;
}

// Checks that every named value has the element type of the first one.
LogicalResult ferry::graph::verifySameElementType(
    Operation *op, ArrayRef<std::pair<StringRef, Value>> named) {
  Type expected = getElementTypeOrSelf(named.front().second.getType());
  for (auto [name, value] : named.drop_front()) {
    Type found = getElementTypeOrSelf(value.getType());
    if (found != expected)
      return op->emitOpError()
             << "expects " << name << " to have element type " << expected
             << " (as " << named.front().first << "), found " << found;
  }
  return success();
}

LogicalResult ferry::graph::verifyResultShape(Operation *op,
                                              ArrayRef<int64_t> expected,
                                              Value result) {
  ArrayRef<int64_t> found = tensorOf(result).getShape();
  if (found != expected)
    return op->emitOpError() << "expects result shape " << shapeString(expected)
                             << ", found " << shapeString(found);
  return success();
}

// The shared verifier of graph.parameter and graph.variable.
template <typename DeclOp> static LogicalResult verifyDeclaration(DeclOp op) {
  RankedTensorType type = op.getTensorType();
  std::optional<double> std;
  if (std::optional<llvm::APFloat> value = op.getInitStd())
    std = value->convertToDouble();
  if (op.getInit() == InitKind::normal) {
    if (!isa<FloatType>(type.getElementType()))
      return op.emitOpError() << "normal initialisation needs a floating-point "
                                 "type, found "
                              << type.getElementType();
    if (!std || !(*std > 0.0) || !std::isfinite(*std))
      return op.emitOpError()
             << "normal initialisation needs a positive, finite standard "
                "deviation, e.g. init(normal, 2.000000e-02)";
  } else if (std) {
    return op.emitOpError() << "init(" << stringifyInitKind(op.getInit())
                            << ") takes no standard deviation";
  }
  StringRef hf = op.getHfName();
  if (hf.empty())
    return op.emitOpError() << "needs a non-empty hf name";
  size_t placeholders = hf.count("{}");
  if (op.getStacked()) {
    if (type.getRank() < 1)
      return op.emitOpError() << "is stacked, so its leading dimension is the "
                                 "layer; a scalar cannot be stacked";
    if (placeholders != 1)
      return op.emitOpError()
             << "is stacked, so its hf name needs exactly one '{}' where the "
                "layer number goes, found \""
             << hf << "\"";
  } else if (placeholders != 0) {
    return op.emitOpError() << "hf name \"" << hf
                            << "\" has a '{}' layer placeholder but the "
                               "declaration is not stacked";
  }
  return verifyDeclarationSharding(op, type, op.getStacked(),
                                   op.getShardingAttr());
}

// Finds the graph.parameter or graph.variable `name` refers to.
LogicalResult
ferry::graph::lookupDeclaration(Operation *user, FlatSymbolRefAttr name,
                                SymbolTableCollection &symbolTable,
                                RankedTensorType &type, bool &stacked) {
  Operation *decl = symbolTable.lookupNearestSymbolFrom(user, name.getAttr());
  if (auto param = dyn_cast_or_null<ParameterOp>(decl)) {
    type = param.getTensorType();
    stacked = param.getStacked();
    return success();
  }
  if (auto var = dyn_cast_or_null<VariableOp>(decl)) {
    type = var.getTensorType();
    stacked = var.getStacked();
    return success();
  }
  return user->emitOpError() << "'" << name.getValue()
                             << "' does not name a graph.parameter or "
                                "graph.variable";
}

//===----------------------------------------------------------------------===//
// State
//===----------------------------------------------------------------------===//

LogicalResult ParameterOp::verify() { return verifyDeclaration(*this); }
LogicalResult VariableOp::verify() { return verifyDeclaration(*this); }

LogicalResult
ParameterRefOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  RankedTensorType declared;
  bool stacked = false;
  if (failed(lookupDeclaration(*this, getNameAttr(), symbolTable, declared,
                               stacked)))
    return failure();
  // A stacked declaration is read whole (all layers) by the optimizer and
  // the global norm; one layer's entry is read with graph.parameter_slice.
  if (stacked && declared != getType())
    return emitOpError() << "'" << getName()
                         << "' is stacked: read one layer's entry with "
                            "graph.parameter_slice";
  if (declared != getType())
    return emitOpError() << "result type " << getType()
                         << " differs from the declared type " << declared;
  return success();
}

LogicalResult
ParameterSliceOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  RankedTensorType declared;
  bool stacked = false;
  if (failed(lookupDeclaration(*this, getNameAttr(), symbolTable, declared,
                               stacked)))
    return failure();
  if (!stacked)
    return emitOpError() << "'" << getName()
                         << "' is not stacked: read it with "
                            "graph.parameter_ref";
  auto expected = RankedTensorType::get(declared.getShape().drop_front(),
                                        declared.getElementType());
  if (getType() != expected)
    return emitOpError() << "expects result type " << expected
                         << " (the declared type without its layer "
                            "dimension), found "
                         << getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Index tensors
//===----------------------------------------------------------------------===//

LogicalResult IotaOp::verify() {
  // I64Attr accessors return uint64_t; read them as the signed values written.
  int64_t rank = getType().getRank();
  auto dim = static_cast<int64_t>(getDim());
  if (dim < 0 || dim >= rank)
    return emitOpError() << "dim " << dim << " is out of range for rank "
                         << rank;
  return success();
}

LogicalResult AttentionMaskOp::verify() {
  if (tensorOf(getInputMask()).getShape() != getType().getShape())
    return emitOpError() << "expects the result to have the input mask's "
                            "shape "
                         << shapeString(tensorOf(getInputMask()).getShape())
                         << ", found " << shapeString(getType().getShape());
  double fill = getFill().convertToDouble();
  if (!(fill < 0.0) || !std::isfinite(fill))
    return emitOpError() << "fill must be negative and finite to hide padded "
                            "keys, found "
                         << getFill().convertToDouble();
  return success();
}

//===----------------------------------------------------------------------===//
// Gathers
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::verify() {
  RankedTensorType table = tensorOf(getTable());
  if (table.getRank() != 2)
    return emitOpError() << "expects a [rows, width] table, found shape "
                         << shapeString(table.getShape());
  if (failed(verifySameElementType(
          *this, {{"table", getTable()}, {"result", getResult()}})) ||
      failed(verifyTensorRowStride(*this, getTensorRowStride(), table)))
    return failure();
  SmallVector<int64_t> expected(tensorOf(getIds()).getShape());
  expected.push_back(table.getDimSize(1));
  return verifyResultShape(*this, expected, getResult());
}

LogicalResult GatherPositionsOp::verify() {
  RankedTensorType input = tensorOf(getInput());
  RankedTensorType positions = tensorOf(getPositions());
  if (input.getRank() != 3)
    return emitOpError() << "expects input [batch, seq, hidden], found shape "
                         << shapeString(input.getShape());
  if (positions.getRank() != 2 ||
      positions.getDimSize(0) != input.getDimSize(0))
    return emitOpError() << "expects positions [batch = " << input.getDimSize(0)
                         << ", predictions], found shape "
                         << shapeString(positions.getShape());
  if (failed(verifySameElementType(
          *this, {{"input", getInput()}, {"result", getResult()}})))
    return failure();
  return verifyResultShape(
      *this,
      {input.getDimSize(0), positions.getDimSize(1), input.getDimSize(2)},
      getResult());
}

LogicalResult TakeOp::verify() {
  RankedTensorType input = tensorOf(getInput());
  auto dim = static_cast<int64_t>(getDim());
  auto index = static_cast<int64_t>(getIndex());
  if (dim < 0 || dim >= input.getRank())
    return emitOpError() << "dim " << dim << " is out of range for rank "
                         << input.getRank();
  if (index < 0 || index >= input.getDimSize(dim))
    return emitOpError() << "index " << index
                         << " is out of range for dimension " << dim
                         << " of size " << input.getDimSize(dim);
  if (failed(verifySameElementType(
          *this, {{"input", getInput()}, {"result", getResult()}})))
    return failure();
  SmallVector<int64_t> expected(input.getShape());
  expected.erase(expected.begin() + dim);
  return verifyResultShape(*this, expected, getResult());
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

// The shapes of `graph.matmul` and `graph.fused_matmul`; sets `mOut` and
// `nOut` to the product's last two dimensions.
static LogicalResult verifyMatmulShapes(Operation *op, Value lhsValue,
                                        Value rhsValue, bool transposeLhs,
                                        bool transposeRhs, Value result,
                                        int64_t &mOut, int64_t &nOut) {
  RankedTensorType lhs = tensorOf(lhsValue);
  RankedTensorType rhs = tensorOf(rhsValue);
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return op->emitOpError() << "expects operands of rank 2 or more, found "
                             << shapeString(lhs.getShape()) << " and "
                             << shapeString(rhs.getShape());
  if (failed(verifySameElementType(
          op, {{"lhs", lhsValue}, {"rhs", rhsValue}, {"result", result}})))
    return failure();
  ArrayRef<int64_t> batch = lhs.getShape().drop_back(2);
  if (rhs.getRank() != 2 && rhs.getShape().drop_back(2) != batch)
    return op->emitOpError()
           << "expects rhs to have rank 2 (shared) or the batch "
              "dimensions of lhs ("
           << shapeString(batch) << "), found shape "
           << shapeString(rhs.getShape());
  int64_t lr = lhs.getRank(), rr = rhs.getRank();
  int64_t m = lhs.getDimSize(transposeLhs ? lr - 1 : lr - 2);
  int64_t kl = lhs.getDimSize(transposeLhs ? lr - 2 : lr - 1);
  int64_t kr = rhs.getDimSize(transposeRhs ? rr - 1 : rr - 2);
  int64_t n = rhs.getDimSize(transposeRhs ? rr - 2 : rr - 1);
  if (kl != kr)
    return op->emitOpError()
           << "contraction sizes differ: lhs has " << kl << ", rhs has " << kr
           << " (lhs " << shapeString(lhs.getShape()) << ", rhs "
           << shapeString(rhs.getShape())
           << (transposeRhs ? ", rhs transposed" : "")
           << (transposeLhs ? ", lhs transposed" : "") << ")";
  mOut = m;
  nOut = n;
  SmallVector<int64_t> expected(batch);
  expected.append({m, n});
  return verifyResultShape(op, expected, result);
}

LogicalResult MatmulOp::verify() {
  int64_t m, n;
  return verifyMatmulShapes(*this, getLhs(), getRhs(), getTransposeLhs(),
                            getTransposeRhs(), getResult(), m, n);
}

LogicalResult FusedMatmulOp::verify() {
  int64_t m, n;
  if (failed(verifyMatmulShapes(*this, getLhs(), getRhs(), getTransposeLhs(),
                                getTransposeRhs(), getResult(), m, n)))
    return failure();
  if (!std::isfinite(getAlpha().convertToDouble()))
    return emitOpError() << "alpha must be finite, found "
                         << getAlpha().convertToDouble();
  if (getBias() && getBiasGrad())
    return emitOpError() << "takes a bias or computes a bias gradient, not "
                            "both (one GEMM epilogue)";
  if (Value bias = getBias()) {
    ArrayRef<int64_t> shape = tensorOf(bias).getShape();
    if (shape.size() != 1 || shape[0] != n)
      return emitOpError() << "expects a bias of shape " << n
                           << " (the product's last dimension), found "
                           << shapeString(shape);
    if (failed(verifySameElementType(
            *this, {{"bias", bias}, {"result", getResult()}})))
      return failure();
  }
  if (Value grad = getBiasGrad()) {
    if (!getTransposeLhs() || tensorOf(getLhs()).getRank() != 2)
      return emitOpError() << "computes a bias gradient only from a rank-2 "
                              "lhs used transposed (the weight gradient of a "
                              "linear layer)";
    SmallVector<int64_t> expected = {m};
    if (failed(verifyResultShape(*this, expected, grad)))
      return failure();
    if (failed(verifySameElementType(
            *this, {{"bias_grad", grad}, {"result", getResult()}})))
      return failure();
  }
  return success();
}

LogicalResult BiasAddOp::verify() {
  RankedTensorType input = tensorOf(getInput());
  RankedTensorType bias = tensorOf(getBias());
  if (input.getRank() < 1)
    return emitOpError() << "expects an input of rank 1 or more, found a "
                            "scalar";
  if (bias.getRank() != 1 || bias.getDimSize(0) != input.getShape().back())
    return emitOpError() << "expects a bias of shape "
                         << input.getShape().back()
                         << " (the input's last dimension), found "
                         << shapeString(bias.getShape());
  return verifySameElementType(*this,
                               {{"input", getInput()}, {"bias", getBias()}});
}

LogicalResult ScaleOp::verify() {
  double factor = getFactor().convertToDouble();
  if (!std::isfinite(factor))
    return emitOpError() << "factor must be finite, found " << factor;
  return success();
}

//===----------------------------------------------------------------------===//
// Normalisation, softmax, dropout
//===----------------------------------------------------------------------===//

// graph.layer_norm's operands and epsilon (also graph.residual_layer_norm's).
static LogicalResult verifyLayerNorm(Operation *op, Value inputValue,
                                     Value scale, Value bias, double epsilon) {
  RankedTensorType input = tensorOf(inputValue);
  if (input.getRank() < 1)
    return op->emitOpError() << "expects an input of rank 1 or more";
  int64_t width = input.getShape().back();
  for (auto [name, value] :
       {std::pair<StringRef, Value>{"scale", scale}, {"bias", bias}}) {
    ArrayRef<int64_t> shape = tensorOf(value).getShape();
    if (shape.size() != 1 || shape[0] != width)
      return op->emitOpError()
             << "expects " << name << " of shape " << width
             << " (the input's last dimension), found " << shapeString(shape);
  }
  if (failed(verifySameElementType(
          op, {{"input", inputValue}, {"scale", scale}, {"bias", bias}})))
    return failure();
  if (!(epsilon > 0.0) || !std::isfinite(epsilon))
    return op->emitOpError()
           << "epsilon must be positive and finite, found " << epsilon;
  return success();
}

LogicalResult LayerNormOp::verify() {
  return verifyLayerNorm(*this, getInput(), getScale(), getBias(),
                         getEpsilon().convertToDouble());
}

// Packed rows' sequence ids (graph.softmax, graph.softmax_dropout and
// graph.attention): i32 [batch, seq].
LogicalResult ferry::graph::verifySequenceIds(Operation *op, Value ids,
                                              int64_t batch, int64_t seq) {
  if (!ids)
    return success();
  RankedTensorType t = tensorOf(ids);
  if (t.getRank() != 2 || t.getDimSize(0) != batch || t.getDimSize(1) != seq ||
      !t.getElementType().isInteger(32))
    return op->emitOpError() << "expects sequence_ids i32 [batch = " << batch
                             << ", seq = " << seq << "], found " << t;
  return success();
}

// graph.softmax's input and mask (also graph.softmax_dropout's), and the
// packed rows' sequence ids when given.
static LogicalResult verifySoftmax(Operation *op, Value inputValue,
                                   Value maskValue, Value sequenceIds) {
  RankedTensorType input = tensorOf(inputValue);
  RankedTensorType mask = tensorOf(maskValue);
  if (input.getRank() < 2)
    return op->emitOpError() << "expects input [batch, ..., keys], found shape "
                             << shapeString(input.getShape());
  if (mask.getRank() != 2 || mask.getDimSize(0) != input.getDimSize(0) ||
      mask.getDimSize(1) != input.getShape().back())
    return op->emitOpError()
           << "expects mask [batch = " << input.getDimSize(0)
           << ", keys = " << input.getShape().back() << "], found shape "
           << shapeString(mask.getShape());
  if (sequenceIds) {
    ArrayRef<int64_t> shape = input.getShape();
    if (shape.size() < 3 || shape[shape.size() - 2] != shape.back())
      return op->emitOpError()
             << "with sequences expects input [batch, ..., queries, keys] "
                "with as many queries as keys, found shape "
             << shapeString(shape);
    if (failed(verifySequenceIds(op, sequenceIds, input.getDimSize(0),
                                 shape.back())))
      return failure();
  }
  return verifySameElementType(op,
                               {{"input", inputValue}, {"mask", maskValue}});
}

LogicalResult SoftmaxOp::verify() {
  return verifySoftmax(*this, getInput(), getMask(), getSequenceIds());
}

// The dropout attributes and operand of graph.dropout and the fused ops
// that contain one.
static LogicalResult verifyDropout(Operation *op, double p,
                                   RankedTensorType type, StringRef purpose) {
  if (!(p >= 0.0 && p < 1.0))
    return op->emitOpError() << "probability must be in [0, 1), found " << p;
  if (type.getRank() < 1)
    return op->emitOpError()
           << "expects an input whose leading dimension is the "
              "sample, found a scalar";
  if (purpose.empty())
    return op->emitOpError()
           << "needs a non-empty purpose naming the dropout site";
  return success();
}

// Packed rows' dropout keys (absent, or i32 [batch, seq, 2]) of a dropout
// over `type`: [batch, seq, ...] (a token's elements) or [batch, heads, seq,
// seq] (attention probabilities).
LogicalResult ferry::graph::verifyDropoutKeys(Operation *op, Value keys,
                                              RankedTensorType type) {
  if (!keys)
    return success();
  RankedTensorType k = tensorOf(keys);
  ArrayRef<int64_t> shape = type.getShape();
  if (k.getRank() != 3 || k.getDimSize(2) != 2 || shape.empty() ||
      k.getDimSize(0) != shape[0])
    return op->emitOpError()
           << "expects dropout_keys i32 [batch = "
           << (shape.empty() ? 0 : shape[0]) << ", seq, 2], found " << k;
  int64_t seq = k.getDimSize(1);
  bool probabilities = shape.size() == 4 && shape[2] == seq && shape[3] == seq;
  bool tokens = shape.size() >= 2 && shape[1] == seq && shape.size() != 4;
  if (!probabilities && !tokens)
    return op->emitOpError()
           << "with dropout_keys expects input [batch, seq = " << seq
           << ", ...] or [batch, heads, seq, seq], found shape "
           << shapeString(shape);
  return success();
}

LogicalResult DropoutOp::verify() {
  if (failed(verifyDropoutKeys(*this, getDropoutKeys(), getType())))
    return failure();
  return verifyDropout(*this, getProbability().convertToDouble(), getType(),
                       getPurpose());
}

LogicalResult SoftmaxDropoutOp::verify() {
  if (failed(verifySoftmax(*this, getInput(), getMask(), getSequenceIds())))
    return failure();
  if (getDropoutKeys() && !getSequenceIds())
    return emitOpError() << "takes dropout_keys only with sequences (packed "
                            "rows)";
  if (failed(verifyDropoutKeys(*this, getDropoutKeys(), tensorOf(getInput()))))
    return failure();
  return verifyDropout(*this, getProbability().convertToDouble(),
                       tensorOf(getInput()), getPurpose());
}

LogicalResult ResidualLayerNormOp::verify() {
  if (failed(verifyLayerNorm(*this, getInput(), getScale(), getBias(),
                             getEpsilon().convertToDouble())))
    return failure();
  bool dropout = static_cast<bool>(getSeed());
  if (dropout != static_cast<bool>(getLayer()) ||
      dropout != static_cast<bool>(getSampleOffset()) ||
      dropout != getProbability().has_value() ||
      dropout != getPurpose().has_value())
    return emitOpError() << "takes a dropout's seed, layer, sample offset, "
                            "probability and purpose together or none of them";
  if (getDropoutKeys() && !dropout)
    return emitOpError() << "takes dropout_keys only with a dropout";
  if (failed(verifyDropoutKeys(*this, getDropoutKeys(), tensorOf(getInput()))))
    return failure();
  if (dropout)
    return verifyDropout(*this, getProbability()->convertToDouble(),
                         tensorOf(getInput()), *getPurpose());
  return success();
}

LogicalResult DropoutSoftmaxGradOp::verify() {
  if (tensorOf(getOutput()).getRank() < 2)
    return emitOpError() << "expects the softmax's output [batch, ..., keys], "
                            "found shape "
                         << shapeString(tensorOf(getOutput()).getShape());
  if (failed(verifyDropoutKeys(*this, getDropoutKeys(), tensorOf(getOutput()))))
    return failure();
  return verifyDropout(*this, getProbability().convertToDouble(),
                       tensorOf(getOutput()), getPurpose());
}

//===----------------------------------------------------------------------===//
// Shape
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  RankedTensorType input = tensorOf(getInput());
  if (input.getNumElements() != getType().getNumElements())
    return emitOpError() << "cannot reshape " << shapeString(input.getShape())
                         << " (" << input.getNumElements() << " elements) to "
                         << shapeString(getType().getShape()) << " ("
                         << getType().getNumElements() << " elements)";
  return verifySameElementType(
      *this, {{"input", getInput()}, {"result", getResult()}});
}

LogicalResult TransposeOp::verify() {
  RankedTensorType input = tensorOf(getInput());
  ArrayRef<int64_t> perm = getPermutation();
  int64_t rank = input.getRank();
  SmallVector<bool> seen(rank, false);
  bool valid = static_cast<int64_t>(perm.size()) == rank;
  for (int64_t p : perm) {
    if (!valid || p < 0 || p >= rank || seen[p]) {
      valid = false;
      break;
    }
    seen[p] = true;
  }
  if (!valid)
    return emitOpError() << "permutation [" << listString(perm)
                         << "] is not a permutation of the " << rank
                         << " dimensions of the input";
  SmallVector<int64_t> expected;
  for (int64_t p : perm)
    expected.push_back(input.getDimSize(p));
  if (failed(verifySameElementType(
          *this, {{"input", getInput()}, {"result", getResult()}})))
    return failure();
  return verifyResultShape(*this, expected, getResult());
}

//===----------------------------------------------------------------------===//
// Reductions and the loss
//===----------------------------------------------------------------------===//

LogicalResult ReduceOp::verify() {
  RankedTensorType input = tensorOf(getInput());
  ArrayRef<int64_t> dims = getDims();
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= input.getRank() ||
        (i > 0 && dims[i] <= dims[i - 1]))
      return emitOpError() << "dims must be increasing and within the input's "
                              "rank "
                           << input.getRank() << ", found [" << listString(dims)
                           << "]";
  }
  SmallVector<int64_t> expected;
  for (int64_t d = 0; d < input.getRank(); ++d)
    if (!llvm::is_contained(dims, d))
      expected.push_back(input.getDimSize(d));
  if (failed(verifySameElementType(
          *this, {{"input", getInput()}, {"result", getResult()}})))
    return failure();
  return verifyResultShape(*this, expected, getResult());
}

LogicalResult SoftmaxCrossEntropyOp::verify() {
  RankedTensorType logits = tensorOf(getLogits());
  if (logits.getRank() < 1)
    return emitOpError() << "expects logits [..., classes], found a scalar";
  ArrayRef<int64_t> slots = logits.getShape().drop_back();
  if (tensorOf(getLabels()).getShape() != slots)
    return emitOpError() << "expects labels of shape " << shapeString(slots)
                         << " (the logits without the class dimension), found "
                         << shapeString(tensorOf(getLabels()).getShape());
  if (tensorOf(getWeights()).getShape() != slots)
    return emitOpError() << "expects weights of shape " << shapeString(slots)
                         << " (as labels), found "
                         << shapeString(tensorOf(getWeights()).getShape());
  int64_t classes = logits.getShape().back();
  auto numClasses = static_cast<int64_t>(getNumClasses());
  if (numClasses < 1 || numClasses > classes)
    return emitOpError() << "classes " << numClasses << " must be in [1, "
                         << classes << "] (the logits' last dimension)";
  return verifySameElementType(*this, {{"logits", getLogits()},
                                       {"weights", getWeights()},
                                       {"result", getResult()}});
}
