//===- Collective.cpp - kernel patterns of collectives --------------------===//
//
// graph.all_reduce, reduce_scatter, all_gather and part_of_group -> the
// Collective kernels
// (dialects/rt/kernels/Collective.td). When the shards do not divide the
// whole tensor, its side is padded to replicas * shard elements in a
// planned workspace. A collective names its group (data or tensor) and an
// all-reduce its reduction (sum or maximum).
//
//===----------------------------------------------------------------------===//

#include "passes/lowering/KernelPatterns.h"

using namespace mlir;
using namespace ferry;
using namespace ferry::lowering;

namespace {

// The kernels' encoding of a group (Collective.td): absent for the data
// group, so data-parallel executables stay as they were.
template <class KernelOp>
void setGroup(KernelOp k, graph::MeshAxis group, KernelSelection &s) {
  if (group == graph::MeshAxis::tensor)
    k.setGroupAttr(s.i(1));
}

struct AllReducePattern : OpKernelPattern<graph::AllReduceOp> {
  LogicalResult selectOp(graph::AllReduceOp op, const LoweredOperands &operands,
                         KernelSelection &s) const override {
    auto k = s.emit<rt::AllReduceOp>(operands.all());
    k.setCountAttr(s.i(numElements(op->getResult(0).getType())));
    k.setReplicasAttr(s.i(static_cast<int64_t>(op.getReplicas())));
    setGroup(k, op.getGroup(), s);
    // The verifier allows a sum or a maximum. The integers are a list: a
    // reduction needs the group before it.
    if (op.getReduction() == graph::ReduceKind::max) {
      if (op.getGroup() == graph::MeshAxis::data)
        k.setGroupAttr(s.i(0));
      k.setReductionAttr(s.i(1));
    }
    return success();
  }
};

// The whole tensor is reduce_scatter's input and all_gather's result.
template <class GraphOp, class KernelOp>
struct ShardPattern : OpKernelPattern<GraphOp> {
  LogicalResult selectOp(GraphOp op, const LoweredOperands &operands,
                         KernelSelection &s) const override {
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
    setGroup(k, op.getGroup(), s);
    return success();
  }
};

struct PartOfGroupPattern : OpKernelPattern<graph::PartOfGroupOp> {
  LogicalResult selectOp(graph::PartOfGroupOp op,
                         const LoweredOperands &operands,
                         KernelSelection &s) const override {
    auto k = s.emit<rt::PartOfGroupOp>(operands.all());
    k.setCountAttr(s.i(numElements(op.getResult().getType())));
    k.setReplicasAttr(s.i(static_cast<int64_t>(op.getReplicas())));
    setGroup(k, op.getGroup(), s);
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
  patterns.add<PartOfGroupPattern, graph::PartOfGroupOp>();
}
