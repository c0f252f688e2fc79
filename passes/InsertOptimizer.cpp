//===- InsertOptimizer.cpp - the training step around @forward_grad -------===//
//
// ferry-insert-optimizer builds @train_step(%step), one optimizer update:
//
//   zero the metrics
//   for each of the GA micro-batches of the update:
//     read the micro-batch's inputs from the stacked @input.* variables
//     call @forward_grad (adds the gradients into @grad.*)
//     add its loss, MLM loss, NSP loss and MLM hits into @metric.*
//   norm = global norm over every @grad.*     (before clipping)
//   lr   = the schedule at %step (updates already applied)
//   one LAMB / AdamW update per parameter, clipped by the global norm
//   zero the gradients
//
// GA = global_batch_size / (micro_batch_size x data_parallel). With
// replicas, @train_step takes a second input, `replica`, and its samples
// start at replica x global_batch_size / data_parallel. The losses of
// @forward are normalised by the global batch (the MLM loss by the global
// count of counted slots, an input), so summing over micro-batches gives the
// loss of the whole batch and accumulation computes the same step as one big
// batch. Dropout is keyed by the global sample index: sample_offset =
// step x global_batch_size + micro-batch x micro_batch_size.
//
// The settings come from the module's `graph.training` dictionary (the
// builder writes it from the config).
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
#include "mlir/IR/SymbolTable.h"

namespace ferry {
#define GEN_PASS_DEF_INSERTOPTIMIZERPASS
#include "passes/Passes.h.inc"
} // namespace ferry

using namespace mlir;
using namespace ferry::graph;

namespace {

struct InsertOptimizerPass
    : public ferry::impl::InsertOptimizerPassBase<InsertOptimizerPass> {
  using InsertOptimizerPassBase::InsertOptimizerPassBase;
  // Timing reports and crash messages name the pass by its flag.
  StringRef getName() const override { return getArgument(); }
  void runOnOperation() override;
};

// Reads the graph.training dictionary, whose keys and their kinds the graph
// dialect's verifier has checked (GraphAttributes.cpp).
class Settings {
public:
  explicit Settings(DictionaryAttr dict) : dict(dict) {}
  double f(StringRef key) {
    return cast<FloatAttr>(dict.get(key)).getValueAsDouble();
  }
  int64_t i(StringRef key) { return cast<IntegerAttr>(dict.get(key)).getInt(); }
  std::string s(StringRef key) { return cast<StringAttr>(dict.get(key)).str(); }

private:
  DictionaryAttr dict;
};

void InsertOptimizerPass::runOnOperation() {
  ModuleOp module = getOperation();
  SymbolTable symbols(module);
  auto dict =
      module->getAttrOfType<DictionaryAttr>(ferry::graph::attrs::kTraining);
  if (!dict) {
    module.emitError() << "ferry-insert-optimizer needs the module attribute "
                          "graph.training (written by the builder)";
    return signalPassFailure();
  }
  auto grad = lookupEntry(module, Entry::ForwardGrad);
  if (!grad) {
    module.emitError() << "ferry-insert-optimizer needs a function marked "
                          "graph.entry = \"forward_grad\": run ferry-autodiff "
                          "first";
    return signalPassFailure();
  }
  Settings set(dict);
  int64_t micro = set.i("micro_batch_size");
  int64_t global = set.i("global_batch_size");
  int64_t dataParallel = set.i("data_parallel");
  int64_t seed = set.i("seed");
  std::string optimizer = set.s("optimizer");
  double beta1 = set.f("beta1"), beta2 = set.f("beta2");
  double epsilon = set.f("epsilon"), weightDecay = set.f("weight_decay");
  double clipNorm = set.f("clip_norm");
  std::string schedule = set.s("lr_schedule");
  double lr = set.f("lr"), power = set.f("power");
  int64_t warmup = set.i("warmup_steps"),
          startWarmup = set.i("start_warmup_step");
  int64_t totalSteps = set.i("total_steps");
  if (micro < 1 || dataParallel < 1 || global % (micro * dataParallel) != 0) {
    module.emitError() << "global_batch_size " << global
                       << " is not divisible by micro_batch_size " << micro
                       << " x data_parallel " << dataParallel;
    return signalPassFailure();
  }
  int64_t accumulation = global / (micro * dataParallel);

  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  Location loc = module.getLoc();
  auto f32Scalar = RankedTensorType::get({}, b.getF32Type());
  auto firstFunc = *module.getOps<func::FuncOp>().begin();
  auto declare = [&](StringRef name, RankedTensorType type, StringRef hf,
                     bool stacked, ShardingAttr sharding) -> StringRef {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(firstFunc);
    auto var = VariableOp::create(b, loc, name, type, InitKind::zeros,
                                  FloatAttr(), hf, stacked, false);
    if (sharding)
      var.setShardingAttr(sharding);
    symbols.insert(var);
    return var.getSymName();
  };
  // A parameter's moment: its type, sharding and real rows (a padded
  // vocabulary's checkpoints hold only those, so a run resumes with another
  // padding: another tensor_parallel).
  auto declareMoment = [&](const std::string &name, StringRef hfPrefix,
                           ParameterOp p) -> StringRef {
    StringRef sym =
        declare(name, p.getTensorType(), (hfPrefix + p.getHfName()).str(),
                p.getStacked(), p.getShardingAttr());
    if (Attribute rows = p->getAttr(ferry::graph::attrs::kInitRows))
      symbols.lookup(sym)->setAttr(ferry::graph::attrs::kInitRows, rows);
    return sym;
  };
  auto zeros = [&](Type type) -> Value {
    auto t = cast<RankedTensorType>(type);
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(t, b.getF32FloatAttr(0.0f)));
  };

  // Inputs of one update: stacked [GA, micro, ...] per tensor input of
  // @forward (the mlm_count scalar is the whole batch's, unstacked).
  SmallVector<Value> callArgs;
  SmallVector<std::pair<StringRef, RankedTensorType>> inputs;
  for (unsigned i = 0; i < grad.getNumArguments(); ++i) {
    auto name =
        grad.getArgAttrOfType<StringAttr>(i, ferry::graph::attrs::kInput);
    if (!name) {
      grad.emitOpError() << "argument " << i
                         << " has no graph.input name; @train_step cannot "
                            "feed it";
      return signalPassFailure();
    }
    auto type = dyn_cast<RankedTensorType>(grad.getArgumentTypes()[i]);
    inputs.push_back({name.getValue(), type});
  }

  if (auto done = lookupEntry(module, Entry::TrainStep)) {
    module.emitError() << "ferry-insert-optimizer runs once: @"
                       << done.getSymName()
                       << " is already marked graph.entry = \"train_step\"";
    return signalPassFailure();
  }
  b.setInsertionPointToEnd(module.getBody());
  // With replicas, each runs this step on its own rows of the global batch:
  // the `replica` input (its rank) places them.
  SmallVector<Type> stepArgs = {b.getIndexType()};
  if (dataParallel > 1)
    stepArgs.push_back(b.getIndexType());
  auto step = func::FuncOp::create(b, loc, "train_step",
                                   b.getFunctionType(stepArgs, {}));
  markEntry(step, Entry::TrainStep);
  step.setArgAttr(0, ferry::graph::attrs::kInput, b.getStringAttr("step"));
  if (dataParallel > 1)
    step.setArgAttr(1, ferry::graph::attrs::kInput, b.getStringAttr("replica"));
  symbols.insert(step);
  Block *entry = step.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value stepIndex = entry->getArgument(0);
  Value replicaIndex = dataParallel > 1 ? entry->getArgument(1) : Value();

  // Metrics, summed over the micro-batches: the gradient function's scalar
  // results, named by their `graph.output` attribute (the pretraining
  // results' default names otherwise). Other results (the span head's
  // logits) are outputs training does not keep.
  const StringRef defaultNames[] = {"loss", "mlm_loss", "nsp_loss",
                                    "mlm_correct", "nsp_correct"};
  SmallVector<std::pair<unsigned, StringRef>> metrics; // (result, variable)
  for (unsigned k = 0; k < std::size(defaultNames); ++k) {
    StringAttr named = k < grad.getNumResults()
                           ? grad.getResultAttrOfType<StringAttr>(
                                 k, ferry::graph::attrs::kOutput)
                           : StringAttr();
    if (k < grad.getNumResults() && grad.getResultTypes()[k] != f32Scalar)
      continue;
    if (k >= grad.getNumResults() && grad.getNumResults() > 0 &&
        grad.getResultAttrOfType<StringAttr>(0, ferry::graph::attrs::kOutput))
      break; // named results: only those
    StringRef m = named ? named.getValue() : defaultNames[k];
    std::string name = ("metric." + m).str();
    metrics.push_back({k, declare(name, f32Scalar, name, false, {})});
    ferry::graph::StoreOp::create(b, loc, zeros(f32Scalar),
                                  metrics.back().second, Value());
  }
  StringRef normVar =
      declare("metric.grad_norm", f32Scalar, "metric.grad_norm", false, {});
  StringRef lrVar = declare("metric.lr", f32Scalar, "metric.lr", false, {});

  SmallVector<StringRef> inputVars(inputs.size());
  for (auto [k, in] : llvm::enumerate(inputs)) {
    // A scalar tensor (mlm_count, nsp_count) is one value per update, the
    // global batch's; the others are stacked by micro-batch.
    if (!in.second || in.second.getRank() == 0) {
      if (in.second) {
        std::string name = ("input." + in.first).str();
        inputVars[k] = declare(name, in.second, name, false, {});
      }
      continue;
    }
    SmallVector<int64_t> shape = {accumulation};
    shape.append(in.second.getShape().begin(), in.second.getShape().end());
    std::string name = ("input." + in.first).str();
    inputVars[k] =
        declare(name, RankedTensorType::get(shape, in.second.getElementType()),
                name + ".{}", true, {});
  }

  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value cGA = arith::ConstantIndexOp::create(b, loc, accumulation);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ForOp::create(b, loc, c0, cGA, c1);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    Value mb = loop.getInductionVar();
    for (auto [k, in] : llvm::enumerate(inputs)) {
      if (in.first == "seed") {
        callArgs.push_back(
            arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(seed)));
      } else if (in.first == "sample_offset") {
        Value g = arith::ConstantIndexOp::create(b, loc, global);
        Value m = arith::ConstantIndexOp::create(b, loc, micro);
        Value base = arith::MulIOp::create(b, loc, stepIndex, g);
        if (replicaIndex) { // + replica x its rows of the global batch
          Value rows =
              arith::ConstantIndexOp::create(b, loc, global / dataParallel);
          base = arith::AddIOp::create(
              b, loc, base, arith::MulIOp::create(b, loc, replicaIndex, rows));
        }
        Value within = arith::MulIOp::create(b, loc, mb, m);
        callArgs.push_back(arith::AddIOp::create(b, loc, base, within));
      } else if (in.second && in.second.getRank() == 0) {
        callArgs.push_back(
            ParameterRefOp::create(b, loc, in.second, inputVars[k]));
      } else if (in.second) {
        callArgs.push_back(
            ParameterSliceOp::create(b, loc, in.second, inputVars[k], mb));
      } else {
        grad.emitOpError() << "input '" << in.first
                           << "' is neither a tensor nor a known scalar "
                              "(seed, sample_offset)";
        return signalPassFailure();
      }
    }
    auto call = func::CallOp::create(b, loc, grad, callArgs);
    for (auto [k, metric] : metrics)
      if (k < call.getNumResults())
        AccumulateOp::create(b, loc, call.getResult(k), metric, Value());
  }

  // Parameters with their gradients.
  SmallVector<ParameterOp> params;
  SmallVector<Value> gradValues;
  for (ParameterOp p : module.getOps<ParameterOp>()) {
    std::string gradName = ("grad." + p.getSymName()).str();
    if (!symbols.lookup<VariableOp>(gradName)) {
      p.emitOpError() << "has no gradient variable @" << gradName
                      << ": the loss does not depend on it";
      return signalPassFailure();
    }
    params.push_back(p);
    gradValues.push_back(
        ParameterRefOp::create(b, loc, p.getTensorType(), gradName));
  }
  Value norm = GlobalNormOp::create(b, loc, f32Scalar, gradValues);
  // fp16 loss scaling (ferry-autodiff seeded the backward with
  // @input.loss_scale): the gradients hold s times their values. The norm
  // reported and used for clipping is the true one; the updates divide the
  // gradient by s and skip themselves when the norm overflowed.
  Value lossScale;
  if (SymbolTable::lookupSymbolIn(module, "input.loss_scale")) {
    lossScale = ParameterRefOp::create(b, loc, f32Scalar, "input.loss_scale");
    norm = DivOp::create(b, loc, f32Scalar, norm, lossScale);
  }
  ferry::graph::StoreOp::create(b, loc, norm, normVar, Value());
  Value rate = LearningRateOp::create(
      b, loc, f32Scalar, stepIndex, b.getStringAttr(schedule),
      b.getF64FloatAttr(lr), b.getI64IntegerAttr(warmup),
      b.getI64IntegerAttr(startWarmup), b.getF64FloatAttr(power),
      b.getI64IntegerAttr(totalSteps));
  ferry::graph::StoreOp::create(b, loc, rate, lrVar, Value());
  for (ParameterOp p : params) {
    std::string name = p.getSymName().str();
    StringRef m = declareMoment("adam_m." + name, "optimizer.m.", p);
    StringRef v = declareMoment("adam_v." + name, "optimizer.v.", p);
    OptimizerUpdateOp::create(
        b, loc, FlatSymbolRefAttr::get(ctx, p.getSymName()),
        FlatSymbolRefAttr::get(ctx, "grad." + name),
        FlatSymbolRefAttr::get(ctx, m), FlatSymbolRefAttr::get(ctx, v), rate,
        norm, stepIndex, b.getStringAttr(optimizer), b.getF64FloatAttr(beta1),
        b.getF64FloatAttr(beta2), b.getF64FloatAttr(epsilon),
        b.getF64FloatAttr(p.getNoWeightDecay() ? 0.0 : weightDecay),
        b.getF64FloatAttr(clipNorm), /*layer=*/Value(), lossScale,
        /*shard_replicas=*/IntegerAttr());
  }
  for (ParameterOp p : params)
    ferry::graph::StoreOp::create(b, loc, zeros(p.getTensorType()),
                                  "grad." + p.getSymName().str(), Value());
  func::ReturnOp::create(b, loc);
}

} // namespace
