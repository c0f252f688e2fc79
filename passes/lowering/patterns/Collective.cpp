//===- Collective.cpp - kernel patterns of collectives --------------------===//
//
// graph.all_reduce, reduce_scatter and all_gather -> the Collective kernels
// (dialects/rt/kernels/Collective.td). When the shards do not divide the
// whole tensor, its side is padded to replicas * shard elements in a
// planned workspace.
//
//===----------------------------------------------------------------------===//

#include "passes/lowering/KernelPatterns.h"

using namespace mlir;
using namespace ferry;
using namespace ferry::lowering;

namespace {

// The executable's collectives run over the data-parallel group by sum
// (Collective.td); the tensor group and the maximum come with tensor
// parallelism's runtime (docs/parallelism.md).
LogicalResult checkLowered(Operation *op, graph::MeshAxis group,
                           graph::ReduceKind reduction) {
  if (group != graph::MeshAxis::data)
    return op->emitOpError()
           << "over the tensor group is not lowered to kernels yet "
              "(docs/parallelism.md)";
  if (reduction != graph::ReduceKind::sum)
    return op->emitOpError()
           << "reduction " << graph::stringifyReduceKind(reduction)
           << " is not lowered to kernels yet "
              "(docs/parallelism.md)";
  return success();
}

struct AllReducePattern : OpKernelPattern<graph::AllReduceOp> {
  LogicalResult selectOp(graph::AllReduceOp op, const LoweredOperands &operands,
                         KernelSelection &s) const override {
    if (failed(checkLowered(op, op.getGroup(), op.getReduction())))
      return failure();
    auto k = s.emit<rt::AllReduceOp>(operands.all());
    k.setCountAttr(s.i(numElements(op->getResult(0).getType())));
    k.setReplicasAttr(s.i(static_cast<int64_t>(op.getReplicas())));
    return success();
  }
};

// The whole tensor is reduce_scatter's input and all_gather's result.
template <class GraphOp, class KernelOp>
struct ShardPattern : OpKernelPattern<GraphOp> {
  LogicalResult selectOp(GraphOp op, const LoweredOperands &operands,
                         KernelSelection &s) const override {
    if (failed(checkLowered(op, op.getGroup(), graph::ReduceKind::sum)))
      return failure();
    constexpr bool scatter = std::is_same_v<GraphOp, graph::ReduceScatterOp>;
    auto replicas = static_cast<int64_t>(op.getReplicas());
    Value whole = scatter ? op->getOperand(0) : op->getResult(0);
    Value shard = scatter ? op->getResult(0) : op->getOperand(0);
    int64_t count = numElements(whole.getType());
    int64_t shardCount = numElements(shard.getType());
    SmallVector<BufferRange> buffers = operands.all();
    if (count < shardCount * replicas)
      buffers.push_back(
          s.temp(RankedTensorType::get({shardCount * replicas},
                                       Float32Type::get(op.getContext())),
                 "padded collective workspace"));
    auto k = s.template emit<KernelOp>(buffers);
    k.setCountAttr(s.i(count));
    k.setShardAttr(s.i(shardCount));
    k.setReplicasAttr(s.i(replicas));
    return success();
  }
};

} // namespace

void lowering::populateCollectivePatterns(KernelPatterns &patterns) {
  patterns.add<AllReducePattern, graph::AllReduceOp>();
  patterns.add<ShardPattern<graph::ReduceScatterOp, rt::ReduceScatterOp>,
               graph::ReduceScatterOp>();
  patterns.add<ShardPattern<graph::AllGatherOp, rt::AllGatherOp>,
               graph::AllGatherOp>();
}
