//===- Reduction.cpp - kernel patterns of reductions and the optimizer ----===//
//
// graph.reduce, global_norm, learning_rate and optimizer_update -> the
// Reduction kernels (dialects/rt/kernels/Reduction.td). An optimizer update
// works on its states' ranges directly (one layer's entry under phases);
// LAMB over replicated shards is two kernels around an all-reduce of each
// segment's sums, so the trust ratio is the whole tensor's.
//
//===----------------------------------------------------------------------===//

#include "passes/lowering/KernelPatterns.h"

using namespace mlir;
using namespace ferry;
using namespace ferry::lowering;

namespace {

struct ReducePattern : OpKernelPattern<graph::ReduceOp> {
  LogicalResult selectOp(graph::ReduceOp op, const LoweredOperands &operands,
                         KernelSelection &s) const override {
    FailureOr<std::array<int64_t, 3>> e =
        contiguousExtents(op, shapeOf(op.getInput()), op.getDims());
    if (failed(e))
      return failure();
    auto k = s.emit<rt::ReduceOp>(operands.all());
    k.setKindAttr(s.i(static_cast<int64_t>(op.getKind())));
    k.setOuterAttr(s.i((*e)[0]));
    k.setSizeAttr(s.i((*e)[1]));
    k.setInnerAttr(s.i((*e)[2]));
    return success();
  }
};

struct GlobalNormPattern : OpKernelPattern<graph::GlobalNormOp> {
  LogicalResult selectOp(graph::GlobalNormOp op,
                         const LoweredOperands &operands,
                         KernelSelection &s) const override {
    SmallVector<int64_t> counts;
    for (Value v : op.getInputs())
      counts.push_back(numElements(v.getType()));
    s.emit<rt::GlobalNormOp>(operands.all()).setCountsAttr(s.list(counts));
    return success();
  }
};

struct LearningRatePattern : OpKernelPattern<graph::LearningRateOp> {
  LogicalResult selectOp(graph::LearningRateOp op,
                         const LoweredOperands &operands,
                         KernelSelection &s) const override {
    FailureOr<Affine> step = s.affine(op.getStep(), op);
    if (failed(step))
      return failure();
    auto k = s.emit<rt::LearningRateOp>(operands.all());
    k.setKindAttr(s.i(op.getKind() == "poly" ? 0 : 1));
    k.setWarmupStepsAttr(s.i(static_cast<int64_t>(op.getWarmupSteps())));
    k.setStartWarmupStepAttr(
        s.i(static_cast<int64_t>(op.getStartWarmupStep())));
    k.setTotalStepsAttr(s.i(static_cast<int64_t>(op.getTotalSteps())));
    k.setStepAttr(s.a(*step));
    k.setLrAttr(s.f(op.getLr()));
    k.setPowerAttr(s.f(op.getPower()));
    return success();
  }
};

// The hyper-parameters every optimizer kernel takes, and the clip norm
// those that read the gradient take.
template <class KernelOp>
void setHyperParameters(KernelOp k, graph::OptimizerUpdateOp up,
                        KernelSelection &s, int64_t count, int64_t segments,
                        const Affine &step) {
  k.setCountAttr(s.i(count));
  k.setSegmentsAttr(s.i(segments));
  k.setStepAttr(s.a(step));
  k.setBeta1Attr(s.f(up.getBeta1()));
  k.setBeta2Attr(s.f(up.getBeta2()));
  k.setEpsilonAttr(s.f(up.getEpsilon()));
  k.setWeightDecayAttr(s.f(up.getWeightDecay()));
  if constexpr (!std::is_same_v<KernelOp, rt::LambApplyOp>)
    k.setClipNormAttr(s.f(up.getClipNorm()));
}

// One parameter's AdamW / LAMB step (one layer's entry under phases).
struct OptimizerUpdatePattern : OpKernelPattern<graph::OptimizerUpdateOp> {
  LogicalResult selectOp(graph::OptimizerUpdateOp up,
                         const LoweredOperands &operands,
                         KernelSelection &s) const override {
    FailureOr<Affine> step = s.affine(up.getStep(), up);
    if (failed(step))
      return failure();
    auto param = s.symbolTable().lookup<graph::ParameterOp>(up.getParam());
    RankedTensorType t = param.getTensorType();
    int64_t segments = param.getStacked() ? t.getDimSize(0) : 1;
    // w, g, m, v.
    SmallVector<BufferRange> states = {s.state(up.getParam()),
                                       s.state(up.getGrad()),
                                       s.state(up.getM()), s.state(up.getV())};
    int64_t count = t.getNumElements() / segments;
    if (up.getLayer()) { // one layer's entry (phased execution)
      FailureOr<Affine> layer = s.affine(up.getLayer(), up);
      if (failed(layer))
        return failure();
      int64_t entryBytes = states[0].bytes / segments;
      for (BufferRange &r : states) {
        r.offset = *layer * entryBytes;
        r.bytes = entryBytes;
      }
      segments = 1;
    }
    const SmallVector<BufferRange> &ins =
        operands.ins; // lr, norm, [loss scale]
    std::optional<uint64_t> shards = up.getShardReplicas();
    // Tensor parallelism: a split parameter's part on each rank of the
    // tensor group.
    graph::ShardingAttr split = param.getShardingAttr();
    int64_t parts =
        split && split.isSplit() ? graph::meshOf(param).getTensor() : 1;
    if (up.getOptimizer() == "lamb" && ((shards && *shards > 1) || parts > 1)) {
      // Shards of N replicas or parts of T ranks: LAMB's two passes around
      // an all-reduce of each segment's sums of w^2 and u^2 over the group
      // that holds the rest of the tensor.
      BufferRange sums =
          s.temp(RankedTensorType::get({2 * segments},
                                       Float32Type::get(up.getContext())),
                 "LAMB norm sums");
      SmallVector<BufferRange> first = {states[0], states[1], states[2],
                                        states[3], ins[1],    sums};
      SmallVector<BufferRange> second = {states[0], states[2], states[3],
                                         ins[0],    ins[1],    sums};
      if (ins.size() > 2) { // the loss scale
        first.push_back(ins[2]);
        second.push_back(ins[2]);
      }
      setHyperParameters(s.emit<rt::LambMomentsOp>(first), up, s, count,
                         segments, *step);
      if (shards && *shards > 1) {
        auto sum = s.emit<rt::AllReduceOp>({sums, sums});
        sum.setCountAttr(s.i(2 * segments));
        sum.setReplicasAttr(s.i(static_cast<int64_t>(*shards)));
      }
      if (parts > 1) {
        auto sum = s.emit<rt::AllReduceOp>({sums, sums});
        sum.setCountAttr(s.i(2 * segments));
        sum.setReplicasAttr(s.i(parts));
        sum.setGroupAttr(s.i(1));
      }
      setHyperParameters(s.emit<rt::LambApplyOp>(second), up, s, count,
                         segments, *step);
      return success();
    }
    states.append(ins.begin(), ins.end());
    auto k = s.emit<rt::OptimizerUpdateOp>(states);
    setHyperParameters(k, up, s, count, segments, *step);
    k.setLambAttr(s.i(up.getOptimizer() == "lamb" ? 1 : 0));
    return success();
  }
};

} // namespace

void lowering::populateReductionPatterns(KernelPatterns &patterns) {
  patterns.add<ReducePattern, graph::ReduceOp>();
  patterns.add<GlobalNormPattern, graph::GlobalNormOp>();
  patterns.add<LearningRatePattern, graph::LearningRateOp>();
  patterns.add<OptimizerUpdatePattern, graph::OptimizerUpdateOp>();
}
