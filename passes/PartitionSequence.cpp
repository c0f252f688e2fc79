//===- PartitionSequence.cpp - sequence parallelism's rules ---------------===//
//
// With sequence parallelism (Korthikanti et al. 2022), the activations
// between the layers' matmuls are split along the sequence (dimension 1 of
// [batch, seq, hidden]) instead of replicated:
//
// * a row-parallel matmul's partial sum, and a vocabulary-parallel
//   embedding's, is reduce-scattered into this rank's part of the sequence
//   instead of all-reduced;
// * element-wise ops, dropouts (keyed by their place in the whole sample),
//   bias adds and layer norms run on that part; their replicated
//   parameters enter through f, so their gradients (each rank's from its
//   part of the sequence) are summed over the group; a replicated
//   activation meeting a split one (the position embeddings) is cut to this
//   rank's part (graph.part_of_group, whose gradient gathers);
// * functions take and return it and the layer loop carries it;
// * a column-parallel matmul all-gathers the sequence first (in place of f:
//   the gather's gradient reduce-scatters the partial ones), and any other
//   op that needs the whole sequence (the heads' position gathers, an entry
//   function's result) gets it all-gathered with a replicated gradient
//   (each rank keeps its part).
//
// ferry's activations are [batch, seq, hidden], so a part of the sequence
// is not one block: the collectives run on [T, batch, seq / T, hidden],
// transposed to and from it (Megatron's [seq, batch, hidden] needs no
// transpose).
//
//===----------------------------------------------------------------------===//

#include "passes/Partitioner.h"

#include "dialects/graph/GraphAttributes.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace ferry::graph;
using namespace ferry::partition;

bool Partitioner::isSequenceShaped(Value v) const {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && isa<FloatType>(type.getElementType()) && type.getRank() >= 3 &&
         type.getRank() <= 5 && type.getDimSize(1) % parts == 0;
}

Value Partitioner::toRankMajor(Value whole) {
  auto type = cast<RankedTensorType>(whole.getType());
  SmallVector<int64_t> split = {type.getDimSize(0), parts,
                                type.getDimSize(1) / parts};
  llvm::append_range(split, type.getShape().drop_front(2));
  SmallVector<int64_t> major(split), perm = {1, 0};
  std::swap(major[0], major[1]);
  for (int64_t i = 2; i < static_cast<int64_t>(split.size()); ++i)
    perm.push_back(i);
  Type f = type.getElementType();
  Value r = ReshapeOp::create(builder, whole.getLoc(),
                              RankedTensorType::get(split, f), whole);
  return TransposeOp::create(builder, whole.getLoc(),
                             RankedTensorType::get(major, f), r,
                             builder.getDenseI64ArrayAttr(perm));
}

Value Partitioner::fromRankMajor(Value rankMajor, RankedTensorType whole) {
  auto type = cast<RankedTensorType>(rankMajor.getType());
  SmallVector<int64_t> split(type.getShape());
  std::swap(split[0], split[1]);
  SmallVector<int64_t> perm = {1, 0};
  for (int64_t i = 2; i < type.getRank(); ++i)
    perm.push_back(i);
  Value t =
      TransposeOp::create(builder, rankMajor.getLoc(),
                          RankedTensorType::get(split, type.getElementType()),
                          rankMajor, builder.getDenseI64ArrayAttr(perm));
  return ReshapeOp::create(builder, rankMajor.getLoc(), whole, t);
}

Value Partitioner::reduceScatterSequence(Value partial) {
  auto whole = cast<RankedTensorType>(partial.getType());
  RankedTensorType part = localType(whole, 1, parts);
  builder.setInsertionPointAfterValue(partial);
  Value major = toRankMajor(partial);
  Operation *first = major.getDefiningOp()->getOperand(0).getDefiningOp();
  Value scattered = ReduceScatterOp::create(
      builder, partial.getLoc(),
      RankedTensorType::get({part.getNumElements()}, part.getElementType()),
      major, builder.getI64IntegerAttr(parts),
      MeshAxisAttr::get(builder.getContext(), MeshAxis::tensor));
  Value result = ReshapeOp::create(builder, partial.getLoc(), part, scattered);
  partial.replaceAllUsesExcept(result, first);
  split[result] = 1;
  sequence.insert(result);
  return result;
}

Value Partitioner::gatherSequence(Value part, bool replicatedGradient) {
  DenseMap<Value, Value> &cache = gathered[replicatedGradient ? 1 : 0];
  auto it = cache.find(part);
  if (it != cache.end())
    return it->second;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointAfterValue(part);
  auto type = cast<RankedTensorType>(part.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[1] *= parts;
  auto whole = RankedTensorType::get(shape, type.getElementType());
  SmallVector<int64_t> majorShape = {parts};
  llvm::append_range(majorShape, type.getShape());
  Value flat = ReshapeOp::create(
      builder, part.getLoc(),
      RankedTensorType::get({type.getNumElements()}, type.getElementType()),
      part);
  auto gather = AllGatherOp::create(
      builder, part.getLoc(),
      RankedTensorType::get(majorShape, type.getElementType()), flat,
      builder.getI64IntegerAttr(parts),
      MeshAxisAttr::get(builder.getContext(), MeshAxis::tensor),
      replicatedGradient ? builder.getUnitAttr() : UnitAttr());
  Value result = fromRankMajor(gather, whole);
  cache[part] = result;
  return result;
}

Value Partitioner::cutSequence(Value whole) {
  auto it = cut.find(whole);
  if (it != cut.end())
    return it->second;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointAfterValue(whole);
  RankedTensorType part =
      localType(cast<RankedTensorType>(whole.getType()), 1, parts);
  Value result = PartOfGroupOp::create(
      builder, whole.getLoc(), part, toRankMajor(whole),
      builder.getI64IntegerAttr(parts),
      MeshAxisAttr::get(builder.getContext(), MeshAxis::tensor));
  split[result] = 1;
  sequence.insert(result);
  cut[whole] = result;
  return result;
}

FailureOr<bool> Partitioner::partitionSequenceOp(Operation *op) {
  // A replicated parameter of a split input: through f.
  auto parameter = [&](OpOperand &operand) -> LogicalResult {
    if (splitOf(operand.get()) != kReplicated)
      return noRule(op, operand.get());
    operand.set(copyToGroup(operand.get()));
    return success();
  };
  if (isa<BiasAddOp, LayerNormOp>(op)) {
    Value input = op->getOperand(0);
    if (!isSequence(input)) {
      (void)noRule(op, input);
      return failure();
    }
    for (OpOperand &operand : op->getOpOperands().drop_front())
      if (failed(parameter(operand)))
        return failure();
    setSequence(op->getResult(0));
    return true;
  }
  if (isa<DropoutOp>(op))
    return false; // the split rule below keys it by its place in the sample
  if (!op->hasTrait<OpTrait::Elementwise>())
    return false;
  // Every operand this rank's part of the sequence: a replicated one of the
  // whole shape is cut to it.
  Value part;
  for (Value v : op->getOperands())
    if (isSequence(v))
      part = v;
  for (OpOperand &operand : op->getOpOperands()) {
    Value v = operand.get();
    if (isSequence(v))
      continue;
    if (splitOf(v) != kReplicated || !isSequenceShaped(v) ||
        localType(cast<RankedTensorType>(v.getType()), 1, parts) !=
            part.getType()) {
      (void)noRule(op, v);
      return failure();
    }
    operand.set(cutSequence(v));
  }
  for (Value r : op->getResults())
    setSequence(r);
  return true;
}
