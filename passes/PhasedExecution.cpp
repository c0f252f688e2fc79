//===- PhasedExecution.cpp - the phase schedule of one training step ------===//
//
// ferry-phased-execution (execution.mode: phased) cuts @train_step and
// @eval_step, as ferry-batch-serialise left them, into graph.phase regions:
// the units between which the runtime moves buffers over the host link. The
// schedule is PopXL's (../shared/design/PHASED.md):
//
//   embeddings.fwd                 loop over the micro-batches
//   scf.for %l: layer.fwd          one phase per layer: weights of layer %l
//   heads.fwd_bwd                  MLM + NSP loss and backward
//   scf.for %k: layer.bwd          layer L-1-k; adds its gradients' norms
//   embeddings.bwd                 + the tied word-embedding gradient, the
//                                  global norm, the learning rate and the
//                                  embeddings' optimizer update
//   scf.for %l: layer.optimizer    one layer's weights, moments, gradients
//   heads.optimizer                the pooler's and heads' updates
//
// Besides cutting, it makes the step streamable:
// * Tied gradients: a gradient accumulated in two phases (the word embedding,
//   from the MLM decoder in heads.fwd_bwd and from the embedding lookup in
//   embeddings.bwd) is accumulated in the earlier phase into its own
//   variable @grad.tied.<name>, added into @grad.<name> at the end of the
//   last phase and zeroed there, so the shared weight gets one update from
//   one summed gradient.
// * The global norm: each gradient's own norm is stored into @norm.parts (one
//   entry per tensor, per layer for stacked ones) at the end of the phase
//   that completes it, while it is on the device; the global norm is the
//   norm of those norms. No phase needs every gradient at once.
// * The optimizer: stacked parameters are updated one layer per phase
//   (graph.optimizer_update with a layer index), the others in the phase
//   that completed their gradient (embeddings) or in heads.optimizer. The
//   optimizer phases read the norm and learning rate from @metric.grad_norm
//   and @metric.lr.
// * Gradients are zeroed at the start of the phase that first accumulates
//   into them (zeroGradientsWhereAccumulated), not after their update.
// Run after ferry-batch-serialise.
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
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"

namespace ferry {
#define GEN_PASS_DEF_PHASEDEXECUTIONPASS
#include "passes/Passes.h.inc"
} // namespace ferry

using namespace mlir;
using namespace ferry::graph;

namespace {

struct PhasedExecutionPass
    : public ferry::impl::PhasedExecutionPassBase<PhasedExecutionPass> {
  using PhasedExecutionPassBase::PhasedExecutionPassBase;
  // Timing reports and crash messages name the pass by its flag.
  StringRef getName() const override { return getArgument(); }
  void runOnOperation() override;
};

// "embeddings.fwd", "layer.bwd", "heads.fwd_bwd": from the block functions
// the loop calls.
std::string phaseName(Operation *loop) {
  std::string block;
  bool fwd = false, bwd = false;
  loop->walk([&](func::CallOp call) {
    StringRef name = call.getCallee();
    bool isBwd = name.consume_back("_bwd");
    bool isFwd = name.consume_back("_fwd") || name.consume_back("_eval");
    if (!isBwd && !isFwd)
      return;
    if (call->hasAttr(ferry::graph::attrs::kRecompute))
      isFwd = false; // a recomputation belongs to the backward
    fwd |= isFwd;
    bwd |= isBwd;
    if (block.empty())
      block = name == "encoder_layer" ? "layer" : name.str();
  });
  if (block.empty())
    block = "block";
  return block + (fwd && bwd ? ".fwd_bwd" : bwd ? ".bwd" : ".fwd");
}

bool isMicroBatchLoop(Operation *op) {
  return isa<scf::ForOp>(op) && op->hasAttr(ferry::graph::attrs::kMicroBatches);
}

// Wraps `ops` (consecutive, in one block) into a graph.phase.
PhaseOp wrap(ArrayRef<Operation *> ops, StringRef name) {
  OpBuilder b(ops.front());
  auto phase = PhaseOp::create(b, ops.front()->getLoc(), name);
  Block *body = b.createBlock(&phase.getBody());
  for (Operation *op : ops)
    op->moveBefore(body, body->end());
  return phase;
}

// Cuts a serialised entry function into phases; returns them in order.
SmallVector<PhaseOp> cutPhases(func::FuncOp fn) {
  SmallVector<PhaseOp> phases;
  for (Operation &op : llvm::make_early_inc_range(fn.getBody().front())) {
    if (isMicroBatchLoop(&op)) {
      phases.push_back(wrap({&op}, phaseName(&op)));
      continue;
    }
    auto layers = dyn_cast<scf::ForOp>(op);
    if (!layers)
      continue;
    bool serialised = false;
    for (Operation &inner : *layers.getBody())
      serialised |= isMicroBatchLoop(&inner);
    if (!serialised)
      continue;
    SmallVector<Operation *> body;
    for (Operation &inner : layers.getBody()->without_terminator())
      body.push_back(&inner);
    phases.push_back(wrap(body, phaseName(layers)));
  }
  return phases;
}

Value constantIndex(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value zeros(OpBuilder &b, Location loc, RankedTensorType type) {
  return arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(type, b.getFloatAttr(type.getElementType(), 0.0)));
}

// Rebuilds an index computed from constants, arithmetic and loop counters
// outside `phase` at the builder's position (a layer index that the
// micro-batch loop computed from the layer loop's counter).
FailureOr<Value> rebuildIndex(Value v, PhaseOp phase, OpBuilder &b,
                              IRMapping &map) {
  if (Value m = map.lookupOrNull(v))
    return m;
  Operation *def = v.getDefiningOp();
  if (!def || !phase->isAncestor(def))
    return v;
  if (!isa<arith::ConstantOp, arith::AddIOp, arith::SubIOp, arith::MulIOp>(def))
    return failure();
  for (Value operand : def->getOperands())
    if (failed(rebuildIndex(operand, phase, b, map)))
      return failure();
  b.clone(*def, map);
  return map.lookup(v);
}

// Each gradient is zeroed where the step first accumulates into it (at the
// start of that phase) instead of after its update: a phase whose first
// touch of a range overwrites it loads nothing, and the optimizer phase,
// now only reading the gradient, stores nothing back. For a layer's
// gradient that is one load and one store of all its bytes per update
// saved over the host link; the values the step computes do not change
// (between the update and the next accumulation nothing reads it;
// checkpoints do not hold gradients).
void zeroGradientsWhereAccumulated(func::FuncOp fn) {
  llvm::DenseMap<Operation *, int64_t> order; // program order
  SmallVector<StoreOp> zeroings;
  fn.walk<WalkOrder::PreOrder>([&](Operation *op) {
    order[op] = static_cast<int64_t>(order.size());
    auto st = dyn_cast<StoreOp>(op);
    auto c = st ? st.getValue().getDefiningOp<arith::ConstantOp>()
                : arith::ConstantOp();
    auto dense = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : nullptr;
    if (st && st.getName().starts_with("grad.") && dense && dense.isSplat() &&
        dense.getSplatValue<APFloat>().isZero() &&
        st->getParentOfType<PhaseOp>())
      zeroings.push_back(st);
  });
  for (StoreOp zero : zeroings) {
    AccumulateOp first;
    fn.walk([&](AccumulateOp acc) {
      if (acc.getName() == zero.getName() &&
          (!first || order[acc] < order[first]))
        first = acc;
    });
    PhaseOp phase = first ? first->getParentOfType<PhaseOp>() : PhaseOp();
    if (!phase || order[first] > order[zero])
      continue;
    // A phase inside a loop runs once per iteration (a layer's phase): only
    // a stacked gradient zeroed at the entry that loop's accumulation
    // addresses may move there; one without a layer index would be zeroed
    // on every iteration.
    bool repeated = phase->getParentOfType<scf::ForOp>() &&
                    fn->isProperAncestor(phase->getParentOfType<scf::ForOp>());
    if (repeated != static_cast<bool>(zero.getLayer()) ||
        (zero.getLayer() && !first.getLayer()))
      continue;
    OpBuilder b = OpBuilder::atBlockBegin(&phase.getBody().front());
    Value layer;
    if (zero.getLayer()) {
      IRMapping map;
      FailureOr<Value> index =
          first.getLayer() ? rebuildIndex(first.getLayer(), phase, b, map)
                           : FailureOr<Value>(failure());
      if (failed(index))
        continue;
      layer = *index;
    }
    auto type = cast<RankedTensorType>(zero.getValue().getType());
    StoreOp::create(b, zero.getLoc(), zeros(b, zero.getLoc(), type),
                    zero.getName(), layer);
    zero.erase();
  }
}

struct GradInfo {
  SmallVector<PhaseOp> phases; // phases accumulating into it, in order
  AccumulateOp lastAccumulate;
};

LogicalResult scheduleTrainStep(ModuleOp module, func::FuncOp fn) {
  SymbolTable symbols(module);
  SmallVector<PhaseOp> phases = cutPhases(fn);
  if (phases.empty())
    return fn.emitOpError()
           << "ferry-phased-execution: no micro-batch loops to cut into "
              "phases; run ferry-batch-serialise first";
  Location loc = fn.getLoc();
  OpBuilder mb(module.getBody(), module.getBody()->begin());
  auto declare = [&](const std::string &name, RankedTensorType type,
                     bool stacked) {
    auto var =
        VariableOp::create(mb, loc, name, type, InitKind::zeros, FloatAttr(),
                           stacked ? name + ".{}" : name, stacked, false);
    symbols.insert(var);
    return var;
  };

  // Where each gradient is accumulated.
  llvm::MapVector<StringRef, GradInfo> grads;
  for (PhaseOp phase : phases)
    phase.walk([&](AccumulateOp acc) {
      if (!acc.getName().starts_with("grad."))
        return;
      GradInfo &g = grads[acc.getName()];
      if (g.phases.empty() || g.phases.back() != phase)
        g.phases.push_back(phase);
      g.lastAccumulate = acc;
    });

  // Tied gradients: earlier phases accumulate into @grad.tied.<name>.
  for (auto &[name, info] : grads) {
    if (info.phases.size() < 2)
      continue;
    auto decl = symbols.lookup<VariableOp>(name);
    if (!decl || decl.getStacked())
      return fn.emitOpError()
             << "ferry-phased-execution: @" << name
             << " is accumulated in several phases; only unstacked "
                "gradients (a tied embedding) may be";
    std::string tied = ("grad.tied." + name.drop_front(5)).str();
    declare(tied, decl.getTensorType(), false);
    for (PhaseOp early : ArrayRef(info.phases).drop_back())
      early.walk([&](AccumulateOp acc) {
        if (acc.getName() == name)
          acc.setNameAttr(FlatSymbolRefAttr::get(module.getContext(), tied));
      });
    OpBuilder b = OpBuilder::atBlockEnd(&info.phases.back().getBody().front());
    Value partial = ParameterRefOp::create(b, loc, decl.getTensorType(), tied);
    AccumulateOp::create(b, loc, partial, name, Value());
    StoreOp::create(b, loc, zeros(b, loc, decl.getTensorType()), tied, Value());
  }

  // The global norm: per-gradient norms at the end of the completing phase.
  GlobalNormOp globalNorm;
  fn.walk([&](GlobalNormOp op) { globalNorm = op; });
  if (!globalNorm || globalNorm->getParentOp() != fn)
    return fn.emitOpError() << "ferry-phased-execution: @train_step has no "
                               "global norm after its phases; run "
                               "ferry-insert-optimizer first";
  int64_t slots = 0;
  SmallVector<std::pair<StringRef, int64_t>> slotOf;
  for (Value v : globalNorm.getInputs()) {
    auto ref = v.getDefiningOp<ParameterRefOp>();
    if (!ref)
      return globalNorm.emitOpError()
             << "ferry-phased-execution: expects the global norm of "
                "gradient variables (graph.parameter_ref)";
    auto decl = symbols.lookup<VariableOp>(ref.getName());
    slotOf.push_back({ref.getName(), slots});
    slots += decl.getStacked() ? decl.getTensorType().getDimSize(0) : 1;
  }
  auto scalar = RankedTensorType::get({}, mb.getF32Type());
  std::string parts =
      declare("norm.parts", RankedTensorType::get({slots}, mb.getF32Type()),
              true)
          .getSymName()
          .str();
  for (auto [name, slot] : slotOf) {
    auto it = grads.find(name);
    if (it == grads.end())
      continue; // never accumulated: its norm stays 0
    AccumulateOp last = it->second.lastAccumulate;
    PhaseOp phase = it->second.phases.back();
    auto decl = symbols.lookup<VariableOp>(name);
    OpBuilder b = OpBuilder::atBlockEnd(&phase.getBody().front());
    Value grad, at;
    if (decl.getStacked()) {
      IRMapping map;
      FailureOr<Value> layer = rebuildIndex(last.getLayer(), phase, b, map);
      if (failed(layer))
        return last.emitOpError()
               << "ferry-phased-execution: the layer index of @" << name
               << " must be computed from constants and loop counters";
      auto entry =
          RankedTensorType::get(decl.getTensorType().getShape().drop_front(),
                                decl.getTensorType().getElementType());
      grad = ParameterSliceOp::create(b, loc, entry, name, *layer);
      at = arith::AddIOp::create(b, loc, *layer, constantIndex(b, loc, slot));
    } else {
      grad = ParameterRefOp::create(b, loc, decl.getTensorType(), name);
      at = constantIndex(b, loc, slot);
    }
    Value norm = GlobalNormOp::create(b, loc, scalar, ValueRange{grad});
    StoreOp::create(b, loc, norm, parts, at);
  }
  {
    OpBuilder b(globalNorm);
    Value all = ParameterRefOp::create(
        b, loc, RankedTensorType::get({slots}, b.getF32Type()), parts);
    SmallVector<Value> old(globalNorm.getInputs());
    globalNorm->setOperands(ValueRange{all});
    for (Value v : old)
      if (v.use_empty())
        v.getDefiningOp()->erase();
  }

  // The step's tail: norm, learning rate, updates, zeroing.
  PhaseOp last = phases.back();
  SmallVector<Operation *> tail;
  for (Operation *op = last->getNextNode(); op; op = op->getNextNode())
    if (!isa<func::ReturnOp>(op))
      tail.push_back(op);
  for (Operation *op : tail)
    if (isa<arith::ConstantOp>(op))
      op->moveBefore(phases.front()); // above every use, wherever it moves
  llvm::MapVector<StringRef, StoreOp> zeroing; // grad name -> its zeroing
  SmallVector<OptimizerUpdateOp> updates;
  Block &lastBody = last.getBody().front();
  for (Operation *op : tail) {
    if (auto up = dyn_cast<OptimizerUpdateOp>(op)) {
      updates.push_back(up);
    } else if (auto st = dyn_cast<StoreOp>(op);
               st && st.getName().starts_with("grad.") && !st.getLayer()) {
      zeroing[st.getName()] = st;
    } else if (isa<arith::ConstantOp>(op)) {
      continue; // stays where it is, above every use
    } else {
      // The norm, the learning rate and their metric stores run where the
      // last gradient is complete.
      op->moveBefore(&lastBody, lastBody.end());
    }
  }
  auto readMetric = [&](OpBuilder &b, StringRef name) -> Value {
    return ParameterRefOp::create(b, loc, scalar, name);
  };
  // Updates of gradients completed in the last phase: there, at once.
  SmallVector<OptimizerUpdateOp> stacked, others;
  for (OptimizerUpdateOp up : updates) {
    auto decl = symbols.lookup<ParameterOp>(up.getParam());
    auto it = grads.find(up.getGrad());
    if (decl.getStacked())
      stacked.push_back(up);
    else if (it != grads.end() && it->second.phases.back() == last)
      up->moveBefore(&lastBody, lastBody.end());
    else
      others.push_back(up);
    if (StoreOp zero = zeroing.lookup(up.getGrad());
        zero && !decl.getStacked() && up->getParentOp() == last)
      zero->moveBefore(&lastBody, lastBody.end());
  }
  OpBuilder b(fn.getBody().front().getTerminator());
  // One layer per phase.
  if (!stacked.empty()) {
    auto first = symbols.lookup<ParameterOp>(stacked.front().getParam());
    int64_t layers = first.getTensorType().getDimSize(0);
    auto loop = scf::ForOp::create(b, loc, constantIndex(b, loc, 0),
                                   constantIndex(b, loc, layers),
                                   constantIndex(b, loc, 1));
    OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
    auto phase = PhaseOp::create(lb, loc, "layer.optimizer");
    OpBuilder pb = OpBuilder::atBlockBegin(lb.createBlock(&phase.getBody()));
    Value lr = readMetric(pb, "metric.lr");
    Value norm = readMetric(pb, "metric.grad_norm");
    Value l = loop.getInductionVar();
    for (OptimizerUpdateOp up : stacked) {
      auto decl = symbols.lookup<ParameterOp>(up.getParam());
      if (decl.getTensorType().getDimSize(0) != layers)
        return up.emitOpError() << "ferry-phased-execution: stacked "
                                   "parameters must all have "
                                << layers << " layers";
      auto copy = cast<OptimizerUpdateOp>(pb.clone(*up));
      copy.getLrMutable().assign(lr);
      copy.getGlobalNormMutable().assign(norm);
      copy.getLayerMutable().assign(l);
      if (up.getLossScale())
        copy.getLossScaleMutable().assign(readMetric(pb, "input.loss_scale"));
      auto entry =
          RankedTensorType::get(decl.getTensorType().getShape().drop_front(),
                                decl.getTensorType().getElementType());
      StoreOp::create(pb, loc, zeros(pb, loc, entry), up.getGrad(), l);
      if (StoreOp zero = zeroing.lookup(up.getGrad()))
        zero.erase();
      up.erase();
    }
  }
  if (!others.empty()) {
    auto phase = PhaseOp::create(b, loc, "heads.optimizer");
    OpBuilder pb = OpBuilder::atBlockBegin(b.createBlock(&phase.getBody()));
    Value lr = readMetric(pb, "metric.lr");
    Value norm = readMetric(pb, "metric.grad_norm");
    for (OptimizerUpdateOp up : others) {
      up->moveBefore(pb.getInsertionBlock(), pb.getInsertionBlock()->end());
      up.getLrMutable().assign(lr);
      up.getGlobalNormMutable().assign(norm);
      if (up.getLossScale()) {
        OpBuilder at(up);
        up.getLossScaleMutable().assign(readMetric(at, "input.loss_scale"));
      }
      if (StoreOp zero = zeroing.lookup(up.getGrad()))
        zero->moveBefore(pb.getInsertionBlock(), pb.getInsertionBlock()->end());
    }
  }
  return success();
}

void PhasedExecutionPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto step = lookupEntry(module, Entry::TrainStep);
  if (!step || step.isExternal()) {
    module.emitError() << "ferry-phased-execution needs a function with a "
                          "body marked graph.entry = \"train_step\": run "
                          "ferry-insert-optimizer and ferry-batch-serialise "
                          "first";
    return signalPassFailure();
  }
  if (failed(scheduleTrainStep(module, step)))
    return signalPassFailure();
  zeroGradientsWhereAccumulated(step);
  if (auto eval = lookupEntry(module, Entry::EvalStep);
      eval && !eval.isExternal())
    cutPhases(eval);
}

} // namespace
