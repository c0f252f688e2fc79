//===- GraphCollectives.cpp - verifiers and gradients of collectives ------===//
//
// The shape rules of graph.all_reduce, graph.copy_to_group,
// graph.reduce_scatter, graph.all_gather and graph.part_of_group
// (GraphCollectiveOps.td): a shard holds ceil(elements / replicas) elements
// of the whole tensor, in one dimension; a part, elements / replicas in any
// shape. Each error has a -verify-diagnostics case in
// test/dialects/graph/invalid-collectives.mlir. Their gradient rules are
// each other (test/passes/autodiff-collectives.mlir): copy_to_group's is an
// all-reduce, a sum's is the identity, a reduce-scatter's an all-gather and
// back, a part's an all-gather, and an all-gather with a replicated
// gradient's a part.
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/GraphOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace ferry::graph;

namespace {

LogicalResult checkReplicas(Operation *op, int64_t replicas) {
  if (replicas < 1)
    return op->emitOpError()
           << "replicas must be at least 1, found " << replicas;
  return success();
}

// In a module with a mesh, the group's size is the mesh's along its axis.
LogicalResult checkGroup(Operation *op, int64_t replicas, MeshAxis group) {
  if (failed(checkReplicas(op, replicas)))
    return failure();
  MeshAttr mesh = meshOf(op);
  if (!mesh)
    return success();
  int64_t size = group == MeshAxis::tensor ? mesh.getTensor() : mesh.getData();
  if (replicas != size)
    return op->emitOpError()
           << "runs over the " << stringifyMeshAxis(group) << " group of "
           << size << " ranks (the module's graph.mesh), but says replicas "
           << replicas;
  return success();
}

// `shard` must be the one-dimensional shard of `whole` over `replicas`.
LogicalResult checkShard(Operation *op, RankedTensorType shard,
                         RankedTensorType whole, int64_t replicas,
                         StringRef shardName) {
  if (shard.getElementType() != whole.getElementType())
    return op->emitOpError()
           << "the shard's element type " << shard.getElementType()
           << " differs from the whole tensor's " << whole.getElementType();
  int64_t elements = whole.getNumElements();
  int64_t expected = (elements + replicas - 1) / replicas;
  if (shard.getRank() != 1 || shard.getDimSize(0) != expected)
    return op->emitOpError()
           << "the " << shardName << " must be "
           << RankedTensorType::get({expected}, whole.getElementType())
           << ": ceil(" << elements << " / " << replicas
           << ") elements in one dimension, found " << shard;
  return success();
}

} // namespace

LogicalResult AllReduceOp::verify() {
  if (getReduction() != ReduceKind::sum && getReduction() != ReduceKind::max)
    return emitOpError() << "reduces by sum or max, found "
                         << stringifyReduceKind(getReduction());
  return checkGroup(*this, static_cast<int64_t>(getReplicas()), getGroup());
}

LogicalResult CopyToGroupOp::verify() {
  return checkGroup(*this, static_cast<int64_t>(getReplicas()), getGroup());
}

LogicalResult ReduceScatterOp::verify() {
  if (failed(
          checkGroup(*this, static_cast<int64_t>(getReplicas()), getGroup())))
    return failure();
  return checkShard(*this, cast<RankedTensorType>(getResult().getType()),
                    cast<RankedTensorType>(getInput().getType()),
                    static_cast<int64_t>(getReplicas()), "result");
}

LogicalResult AllGatherOp::verify() {
  if (failed(
          checkGroup(*this, static_cast<int64_t>(getReplicas()), getGroup())))
    return failure();
  // Its gradient is this rank's part (graph.part_of_group): equal parts.
  int64_t whole =
      cast<RankedTensorType>(getResult().getType()).getNumElements();
  if (getReplicatedGradient() &&
      whole % static_cast<int64_t>(getReplicas()) != 0)
    return emitOpError() << "with replicated_gradient gathers equal parts, "
                            "but its "
                         << whole << " elements are not a multiple of "
                         << getReplicas() << " replicas";
  return checkShard(*this, cast<RankedTensorType>(getInput().getType()),
                    cast<RankedTensorType>(getResult().getType()),
                    static_cast<int64_t>(getReplicas()), "input");
}

LogicalResult PartOfGroupOp::verify() {
  auto replicas = static_cast<int64_t>(getReplicas());
  if (failed(checkGroup(*this, replicas, getGroup())))
    return failure();
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  if (in.getElementType() != out.getElementType())
    return emitOpError() << "the part's element type " << out.getElementType()
                         << " differs from the input's " << in.getElementType();
  int64_t elements = in.getNumElements();
  if (elements % replicas != 0 || out.getNumElements() != elements / replicas)
    return emitOpError() << "takes 1/" << replicas << " of " << in
                         << ", which needs the group to divide its " << elements
                         << " elements and a result of " << elements / replicas
                         << ", found " << out;
  return success();
}

LogicalResult AllReduceOp::buildGradients(OpBuilder &, ValueRange resultGrads,
                                          SmallVectorImpl<Value> &grads) {
  if (getReduction() != ReduceKind::sum)
    return emitOpError() << "has no gradient rule for reduction "
                         << stringifyReduceKind(getReduction())
                         << ": a maximum over the group may only feed "
                            "values whose gradient does not depend on it";
  // g's identity backward holds where every rank of the group computes the
  // same loss from the sum: the tensor group. Each data-parallel replica
  // has a loss of its own, and their sums come after autodiff.
  if (getGroup() != MeshAxis::tensor)
    return emitOpError() << "over the data group has no gradient rule: "
                            "each replica's loss differs, so data-parallel "
                            "sums belong after autodiff "
                            "(ferry-insert-collectives)";
  grads.assign(1, resultGrads[0]);
  return success();
}

LogicalResult CopyToGroupOp::buildGradients(OpBuilder &b,
                                            ValueRange resultGrads,
                                            SmallVectorImpl<Value> &grads) {
  grads.assign(1, AllReduceOp::create(b, getLoc(), resultGrads[0].getType(),
                                      resultGrads[0], getReplicasAttr(),
                                      getGroupAttr(), nullptr));
  return success();
}

LogicalResult ReduceScatterOp::buildGradients(OpBuilder &b,
                                              ValueRange resultGrads,
                                              SmallVectorImpl<Value> &grads) {
  grads.assign(1, AllGatherOp::create(b, getLoc(), getInput().getType(),
                                      resultGrads[0], getReplicasAttr(),
                                      getGroupAttr()));
  return success();
}

LogicalResult AllGatherOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                          SmallVectorImpl<Value> &grads) {
  if (getReplicatedGradient())
    grads.assign(1, PartOfGroupOp::create(b, getLoc(), getInput().getType(),
                                          resultGrads[0], getReplicasAttr(),
                                          getGroupAttr()));
  else
    grads.assign(1, ReduceScatterOp::create(b, getLoc(), getInput().getType(),
                                            resultGrads[0], getReplicasAttr(),
                                            getGroupAttr()));
  return success();
}

LogicalResult PartOfGroupOp::buildGradients(OpBuilder &b,
                                            ValueRange resultGrads,
                                            SmallVectorImpl<Value> &grads) {
  // The whole gradient on every rank, from each rank's part: gathered as one
  // dimension (an all-gather's input), then in the input's shape.
  Value part = resultGrads[0];
  auto type = cast<RankedTensorType>(part.getType());
  if (type.getRank() != 1)
    part = ReshapeOp::create(
        b, getLoc(),
        RankedTensorType::get({type.getNumElements()}, type.getElementType()),
        part);
  grads.assign(1, AllGatherOp::create(b, getLoc(), getInput().getType(), part,
                                      getReplicasAttr(), getGroupAttr(),
                                      /*replicated_gradient=*/nullptr));
  return success();
}
