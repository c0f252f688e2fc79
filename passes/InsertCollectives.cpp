//===- InsertCollectives.cpp - replicas sum their gradients ---------------===//
//
// ferry-insert-collectives (execution.data_parallel > 1). Every replica
// runs the same @train_step on its own share of the global batch; the
// losses are normalised by global counts (mlm_count, the global batch size),
// so each replica's accumulated gradient is a partial sum and the sum over
// the replicas is the single-process gradient. This pass adds that sum, as
// IR, where each gradient is complete:
//
// * the gradient's norm is the anchor. A resident step takes the global
//   norm of every gradient after the micro-batch loop; a phased step takes
//   each gradient's part of the norm in the phase that completes it. Every
//   `graph.parameter_ref` / `graph.parameter_slice` of a `@grad.*` variable
//   that a `graph.global_norm` reads is all-reduced there, in place
//   (all_reduce, store back), and the norm and the optimizer read the sum.
//   A gradient that is only added into another one (the tied embedding's
//   @grad.tied.*) is summed as part of that one, never twice.
// * the metrics accumulated over the micro-batches (`@metric.*` targets of
//   graph.accumulate) are all-reduced at the end of each entry function, so
//   every replica reports the global batch's loss and evaluation sums.
//
// Every replica runs this one program, so the collectives match in number,
// order and size on all of them. Run last among the training passes.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/graph/GraphDialect.h"
#include "dialects/graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

namespace ferry {
#define GEN_PASS_DEF_INSERTCOLLECTIVESPASS
#include "passes/Passes.h.inc"
} // namespace ferry

using namespace mlir;
using namespace ferry::graph;

namespace {

struct InsertCollectivesPass
    : public ferry::impl::InsertCollectivesPassBase<InsertCollectivesPass> {
  using InsertCollectivesPassBase::InsertCollectivesPassBase;
  StringRef getName() const override { return getArgument(); }
  void runOnOperation() override;
};

bool isGradient(StringRef name) { return name.starts_with("grad."); }

// The declaration and layer index a state read names, if it is one.
struct StateRead {
  StringRef name;
  Value layer; // null for a whole (unstacked) read
};
std::optional<StateRead> stateRead(Value v) {
  if (auto ref = v.getDefiningOp<ParameterRefOp>())
    return StateRead{ref.getName(), Value()};
  if (auto slice = v.getDefiningOp<ParameterSliceOp>())
    return StateRead{slice.getName(), slice.getLayer()};
  return std::nullopt;
}

// The read again, after `at` (which stored into it).
Value reread(OpBuilder &b, Location loc, const StateRead &r, Type type) {
  if (r.layer)
    return ParameterSliceOp::create(b, loc, type, r.name, r.layer);
  return ParameterRefOp::create(b, loc, type, r.name);
}

} // namespace

void InsertCollectivesPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (replicas < 1) {
    module.emitError() << "ferry-insert-collectives: replicas must be at "
                          "least 1, found "
                       << replicas.getValue();
    return signalPassFailure();
  }
  if (replicas == 1)
    return; // one replica: nothing to sum
  OpBuilder b(module.getContext());
  auto replicaAttr = static_cast<uint64_t>(replicas.getValue());

  // Gradients, where their norm is taken.
  llvm::StringSet<> summed;
  SmallVector<GlobalNormOp> norms;
  module.walk([&](GlobalNormOp n) { norms.push_back(n); });
  for (GlobalNormOp norm : norms) {
    for (OpOperand &use : norm->getOpOperands()) {
      std::optional<StateRead> read = stateRead(use.get());
      if (!read || !isGradient(read->name))
        continue;
      Operation *def = use.get().getDefiningOp();
      Location loc = def->getLoc();
      b.setInsertionPointAfter(def);
      auto sum = AllReduceOp::create(b, loc, use.get().getType(), use.get(),
                                     replicaAttr);
      ferry::graph::StoreOp::create(b, loc, sum, read->name, read->layer);
      // The norm reads the stored sum, so the partial gradient's buffer is
      // dead after the all-reduce (which may then run in place).
      b.setInsertionPoint(norm);
      use.set(reread(b, loc, *read, use.get().getType()));
      summed.insert(read->name);
    }
  }
  // Every gradient the optimizer reads must have been summed.
  WalkResult missing = module.walk([&](OptimizerUpdateOp up) {
    if (summed.contains(up.getGrad()))
      return WalkResult::advance();
    up.emitOpError() << "reads @" << up.getGrad()
                     << ", whose norm no graph.global_norm takes: "
                        "ferry-insert-collectives sums each gradient where "
                        "its norm is taken, and cannot place this one";
    return WalkResult::interrupt();
  });
  if (missing.wasInterrupted())
    return signalPassFailure();

  // Metrics summed over the micro-batches, at the end of each entry.
  for (func::FuncOp f : module.getOps<func::FuncOp>()) {
    if (f.isDeclaration() || f.isPrivate())
      continue;
    llvm::SetVector<StringRef> metrics;
    SmallVector<Type> types;
    f.walk([&](AccumulateOp acc) {
      if (acc.getName().starts_with("metric.") && !acc.getLayer() &&
          metrics.insert(acc.getName()))
        types.push_back(acc.getValue().getType());
    });
    if (metrics.empty())
      continue;
    Operation *ret = f.getBody().back().getTerminator();
    b.setInsertionPoint(ret);
    for (auto [name, type] : llvm::zip(metrics, types)) {
      Value partial = ParameterRefOp::create(b, ret->getLoc(), type, name);
      auto sum =
          AllReduceOp::create(b, ret->getLoc(), type, partial, replicaAttr);
      ferry::graph::StoreOp::create(b, ret->getLoc(), sum, name, Value());
    }
  }
}
