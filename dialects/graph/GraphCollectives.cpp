//===- GraphCollectives.cpp - verifiers of the replica collectives --------===//
//
// The shape rules of graph.all_reduce, graph.reduce_scatter and
// graph.all_gather (GraphCollectiveOps.td): a shard holds ceil(elements /
// replicas) elements of the whole tensor, in one dimension. Each error has a
// -verify-diagnostics case in test/dialects/graph/invalid-collectives.mlir.
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/GraphOps.h"

using namespace mlir;
using namespace ferry::graph;

namespace {

LogicalResult checkReplicas(Operation *op, int64_t replicas) {
  if (replicas < 1)
    return op->emitOpError() << "replicas must be at least 1, found "
                             << replicas;
  return success();
}

// `shard` must be the one-dimensional shard of `whole` over `replicas`.
LogicalResult checkShard(Operation *op, RankedTensorType shard,
                         RankedTensorType whole, int64_t replicas,
                         StringRef shardName) {
  if (failed(checkReplicas(op, replicas)))
    return failure();
  if (shard.getElementType() != whole.getElementType())
    return op->emitOpError() << "the shard's element type "
                             << shard.getElementType()
                             << " differs from the whole tensor's "
                             << whole.getElementType();
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
  return checkReplicas(*this, static_cast<int64_t>(getReplicas()));
}

LogicalResult ReduceScatterOp::verify() {
  return checkShard(*this, cast<RankedTensorType>(getResult().getType()),
                    cast<RankedTensorType>(getInput().getType()),
                    static_cast<int64_t>(getReplicas()), "result");
}

LogicalResult AllGatherOp::verify() {
  return checkShard(*this, cast<RankedTensorType>(getInput().getType()),
                    cast<RankedTensorType>(getResult().getType()),
                    static_cast<int64_t>(getReplicas()), "input");
}
