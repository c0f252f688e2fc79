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
// With `rts` (replicated tensor sharding), large parameters become shards:
//
// * the declaration (and its Adam moments) takes this replica's shard
//   type, ceil(elements / N) per layer entry, marked `graph.shard_of` (the
//   whole shape) and `graph.shard_replicas` for the runtime, which
//   initialises and checkpoints the whole tensor's values;
// * each read becomes a read of the shard and a graph.all_gather to the
//   whole entry, hoisted out of micro-batch loops (a phase gathers its
//   layer's weights once);
// * at the norm anchor the whole gradient is reduce-scattered into
//   @grad.shard.<name>, which the optimizer reads; the gradient's part of
//   the norm is the norm of the replicas' shard norms, all-gathered, so
//   every element counts once (PopXL's global norm counts replicated
//   tensors once per replica);
// * graph.optimizer_update gets `shard_replicas`: LAMB's per-tensor norms
//   are summed over the replicas in the lowering;
// * in phased execution, a stacked parameter's whole gradient lives only in
//   its layer's backward phase: it becomes one layer's scratch
//   (gradientToPhaseScratch).
//
// Every replica runs this one program, so the collectives match in number,
// order and size on all of them. Run last among the training passes.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/graph/GraphAttributes.h"
#include "dialects/graph/GraphDialect.h"
#include "dialects/graph/GraphOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
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

// A sharded parameter: its whole and shard types, per entry and declared.
struct Shard {
  RankedTensorType wholeDecl, shardDecl;   // the declarations' types
  RankedTensorType wholeEntry, shardEntry; // one layer entry (or the whole)
  std::string hf;
  bool stacked = false;
};

RankedTensorType shardTypeOf(RankedTensorType entry, int64_t replicas) {
  int64_t n = entry.getNumElements();
  return RankedTensorType::get({(n + replicas - 1) / replicas},
                               entry.getElementType());
}

// Retypes a declaration to its shard and marks it for the runtime.
void makeShard(Operation *decl, const Shard &s, int64_t replicas,
               OpBuilder &b) {
  if (auto p = dyn_cast<ParameterOp>(decl))
    p.setType(s.shardDecl);
  else
    cast<VariableOp>(decl).setType(s.shardDecl);
  decl->setAttr(ferry::graph::attrs::kShardOf,
                b.getDenseI64ArrayAttr(s.wholeDecl.getShape()));
  decl->setAttr(ferry::graph::attrs::kShardReplicas,
                b.getI64IntegerAttr(replicas));
}

// Whether `v` can be available before `loop`: defined outside it, or by
// index arithmetic (arith ops) on such values, which is then moved there.
bool hoistIndex(Value v, scf::ForOp loop) {
  if (!loop->isAncestor(v.getParentRegion()->getParentOp()))
    return true;
  Operation *def = v.getDefiningOp();
  if (!def || def->getDialect()->getNamespace() != "arith" ||
      def->getNumRegions() != 0 || def->getParentOp() != loop)
    return false; // the loop's counter, or computed by something else
  for (Value operand : def->getOperands())
    if (!hoistIndex(operand, loop))
      return false;
  def->moveBefore(loop);
  return true;
}

// Moves a read and its gather out of micro-batch loops (batch-serialise's
// `graph.micro_batches`) whose counter it does not use: a phase gathers its
// layer's weights once, not once per micro-batch.
void hoistOutOfMicroBatchLoops(Operation *read, Operation *gather) {
  while (auto loop = dyn_cast<scf::ForOp>(read->getParentOp())) {
    if (!loop->hasAttr(ferry::graph::attrs::kMicroBatches))
      return;
    for (Value v : read->getOperands())
      if (!hoistIndex(v, loop))
        return;
    read->moveBefore(loop);
    gather->moveAfter(read);
  }
}

// A sharded stacked parameter's whole gradient, in phased execution, is
// accumulated, reduce-scattered and zeroed by one phase (its layer's
// backward) and read nowhere else: it only needs one layer's entry, reused
// by every layer. Turns @grad.<name> [L, ...] into one entry, so it no
// longer holds every layer's whole gradient on every replica. Leaves it
// stacked when anything reads it outside that one phase (resident steps).
void gradientToPhaseScratch(ModuleOp module, StringRef gradName) {
  SmallVector<Operation *> uses;
  module.walk([&](Operation *op) {
    auto ref = op->getAttrOfType<FlatSymbolRefAttr>("name");
    if (ref && ref.getValue() == gradName)
      uses.push_back(op);
  });
  Operation *phase = nullptr;
  bool zeroed = false;
  for (Operation *op : uses) {
    if (!isa<ParameterSliceOp, AccumulateOp, ferry::graph::StoreOp>(op))
      return; // a whole read, or an op this does not know
    if (auto acc = dyn_cast<AccumulateOp>(op); acc && !acc.getLayer())
      return;
    if (auto store = dyn_cast<ferry::graph::StoreOp>(op);
        store && !store.getLayer())
      return;
    auto p = op->getParentOfType<PhaseOp>();
    if (!p || (phase && p != phase))
      return;
    phase = p;
    zeroed |= isa<ferry::graph::StoreOp>(op);
  }
  if (!phase || !zeroed)
    return;
  auto var = SymbolTable::lookupNearestSymbolFrom<VariableOp>(
      module, StringAttr::get(module.getContext(), gradName));
  if (!var || !var.getStacked())
    return;
  RankedTensorType whole = var.getTensorType();
  var.setType(RankedTensorType::get(whole.getShape().drop_front(),
                                    whole.getElementType()));
  var.setStacked(false);
  // A split gradient (tensor parallelism) splits the same dimension, one
  // lower now that the layer's is gone.
  if (ShardingAttr sharding = var.getShardingAttr();
      sharding && sharding.isSplit())
    var.setShardingAttr(
        ShardingAttr::get(module.getContext(), sharding.getSplit() - 1, false));
  // Its name no longer has a layer: "grad.<...>.layer.{}.<...>" names the
  // one scratch entry.
  std::string hf = var.getHfName().str();
  if (size_t at = hf.find("{}"); at != std::string::npos)
    hf.replace(at, 2, "scratch");
  var.setHfName(hf);
  OpBuilder b(module.getContext());
  for (Operation *op : uses) {
    if (auto slice = dyn_cast<ParameterSliceOp>(op)) {
      b.setInsertionPoint(slice);
      Value ref =
          ParameterRefOp::create(b, slice.getLoc(), slice.getType(), gradName);
      slice.replaceAllUsesWith(ref);
      slice.erase();
    } else if (auto acc = dyn_cast<AccumulateOp>(op)) {
      acc.getLayerMutable().clear();
    } else {
      cast<ferry::graph::StoreOp>(op).getLayerMutable().clear();
    }
  }
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
  const int64_t n = replicas;

  // Replicated tensor sharding: which parameters, their declarations and
  // moments retyped, their reads gathered, their updates on shards.
  llvm::StringMap<Shard> shards;
  if (rts) {
    SymbolTable symbols(module);
    for (ParameterOp p : module.getOps<ParameterOp>()) {
      Shard s;
      s.wholeDecl = p.getTensorType();
      s.stacked = p.getStacked();
      ArrayRef<int64_t> dims = s.wholeDecl.getShape();
      s.wholeEntry = RankedTensorType::get(s.stacked ? dims.drop_front() : dims,
                                           s.wholeDecl.getElementType());
      if (s.wholeEntry.getNumElements() < rtsMinElements)
        continue; // small: stays replicated
      s.shardEntry = shardTypeOf(s.wholeEntry, n);
      s.shardDecl = s.stacked ? RankedTensorType::get(
                                    {dims.front(), s.shardEntry.getDimSize(0)},
                                    s.wholeDecl.getElementType())
                              : s.shardEntry;
      s.hf = p.getHfName().str();
      makeShard(p, s, n, b);
      shards[p.getSymName()] = s;
    }
    // The optimizer: moments retyped, the gradient's shard declared.
    llvm::StringSet<> retyped;
    SmallVector<OptimizerUpdateOp> updates;
    module.walk([&](OptimizerUpdateOp up) { updates.push_back(up); });
    for (OptimizerUpdateOp up : updates) {
      auto it = shards.find(up.getParam());
      if (it == shards.end())
        continue;
      const Shard &s = it->second;
      for (StringRef moment : {up.getM(), up.getV()})
        if (retyped.insert(moment).second)
          makeShard(symbols.lookup(moment), s, n, b);
      std::string gradShard = ("grad.shard." + up.getParam()).str();
      if (!symbols.lookup(gradShard)) {
        b.setInsertionPoint(symbols.lookup(up.getParam()));
        auto var = VariableOp::create(b, module.getLoc(), gradShard,
                                      s.shardDecl, InitKind::zeros, FloatAttr(),
                                      "grad.shard." + s.hf, s.stacked, false);
        symbols.insert(var);
      }
      up.setGrad(gradShard);
      up.setShardReplicasAttr(b.getI64IntegerAttr(n));
    }
    // Reads: the shard, gathered to the whole entry.
    SmallVector<Operation *> reads;
    module.walk([&](Operation *op) {
      if (auto ref = dyn_cast<ParameterRefOp>(op)) {
        if (shards.count(ref.getName()))
          reads.push_back(op);
      } else if (auto slice = dyn_cast<ParameterSliceOp>(op)) {
        if (shards.count(slice.getName()))
          reads.push_back(op);
      }
    });
    for (Operation *op : reads) {
      b.setInsertionPoint(op);
      Value whole = op->getResult(0);
      Operation *read;
      if (auto ref = dyn_cast<ParameterRefOp>(op))
        read = ParameterRefOp::create(
            b, op->getLoc(), shards[ref.getName()].shardDecl, ref.getName());
      else {
        auto slice = cast<ParameterSliceOp>(op);
        read = ParameterSliceOp::create(b, op->getLoc(),
                                        shards[slice.getName()].shardEntry,
                                        slice.getName(), slice.getLayer());
      }
      Value shard = read->getResult(0);
      // A whole stacked read (resident steps slice the gathered value)
      // gathers each entry's shard: flatten [L, s] -> [L * s] only when
      // unstacked reads see one entry.
      RankedTensorType shardType = cast<RankedTensorType>(shard.getType());
      if (shardType.getRank() != 1) {
        op->emitOpError() << "reads the whole of a sharded stacked "
                             "parameter; ferry-insert-collectives gathers "
                             "one layer entry at a time (read it with "
                             "graph.parameter_slice)";
        return signalPassFailure();
      }
      auto gather = AllGatherOp::create(b, op->getLoc(), whole.getType(), shard,
                                        replicaAttr);
      whole.replaceAllUsesWith(gather.getResult());
      op->erase();
      hoistOutOfMicroBatchLoops(read, gather);
    }
  }

  // Gradients, where their norm is taken.
  llvm::StringSet<> summed, anchored;
  SmallVector<GlobalNormOp> norms;
  module.walk([&](GlobalNormOp n) { norms.push_back(n); });
  for (GlobalNormOp norm : norms) {
    for (OpOperand &use : norm->getOpOperands()) {
      std::optional<StateRead> read = stateRead(use.get());
      if (!read || !isGradient(read->name))
        continue;
      if (!anchored.insert(read->name).second) {
        norm.emitOpError() << "reads @" << read->name
                           << " after another norm did: "
                              "ferry-insert-collectives sums each gradient "
                              "once, where its one norm is taken";
        return signalPassFailure();
      }
      Operation *def = use.get().getDefiningOp();
      Location loc = def->getLoc();
      b.setInsertionPointAfter(def);
      auto shard = shards.find(read->name.drop_front(strlen("grad.")));
      if (shard != shards.end()) {
        // Sharded: reduce-scatter into the shard the optimizer reads; the
        // norm of the whole gradient from the replicas' shard norms.
        const Shard &s = shard->second;
        std::string target = ("grad.shard." + shard->first()).str();
        auto f32 = RankedTensorType::get({}, b.getF32Type());
        // One layer entry (or an unstacked gradient): scatter, and the
        // entry's norm from the replicas' shard norms.
        auto scatterEntry = [&](Value entry, Value layer) -> Value {
          auto scattered =
              ReduceScatterOp::create(b, loc, s.shardEntry, entry, replicaAttr);
          ferry::graph::StoreOp::create(b, loc, scattered, target, layer);
          Value part = GlobalNormOp::create(b, loc, f32,
                                            ValueRange{scattered.getResult()});
          Value one = ReshapeOp::create(
              b, loc, RankedTensorType::get({1}, b.getF32Type()), part);
          Value parts = AllGatherOp::create(
              b, loc, RankedTensorType::get({n}, b.getF32Type()), one,
              replicaAttr);
          return GlobalNormOp::create(b, loc, f32, ValueRange{parts});
        };
        if (read->layer || !s.stacked) {
          use.set(scatterEntry(use.get(), read->layer));
        } else {
          // A whole stacked gradient (a resident step's global norm): each
          // layer's entry in turn.
          SmallVector<Value> entryNorms;
          for (int64_t l = 0; l < s.wholeDecl.getDimSize(0); ++l) {
            Value index = arith::ConstantIndexOp::create(b, loc, l);
            Value entry = ParameterSliceOp::create(b, loc, s.wholeEntry,
                                                   read->name, index);
            entryNorms.push_back(scatterEntry(entry, index));
          }
          use.set(GlobalNormOp::create(b, loc, f32, entryNorms));
        }
        summed.insert(target);
        continue;
      }
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

  // Sharded stacked gradients that live within one phase: one layer's
  // scratch instead of every layer's whole gradient.
  for (auto &[name, s] : shards)
    if (s.stacked)
      gradientToPhaseScratch(module, ("grad." + name).str());

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
