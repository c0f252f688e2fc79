//===- InsertEval.cpp - the evaluation program beside @train_step ---------===//
//
// ferry-insert-eval builds @eval_step(), the forward pass over one batch of
// evaluation samples, without dropout and without gradients:
//
//   zero @metric.eval.{loss, mlm_loss, nsp_loss, mlm_correct, nsp_correct}
//   for each of the GA micro-batches:
//     read the micro-batch's inputs from the stacked @input.* variables
//     call @forward_eval (a copy of @forward and of every function it calls,
//                         with each graph.dropout replaced by its input and
//                         each graph.attention's dropout probability 0)
//     add each of its results into @metric.eval.* (loss, MLM loss, NSP loss,
//     MLM hits, NSP hits: as many as @forward returns)
//
// It reuses the inputs @train_step reads (so run it after
// ferry-insert-optimizer): the runtime fills them with an evaluation batch,
// padding a partial last batch with rows whose masked-LM and NSP weights are
// 0. The sums are then what an evaluation needs: @forward divides the MLM
// loss by the @input.mlm_count the runtime feeds and scales the NSP loss by
// 1/global_batch_size, both known to the runtime.
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
#define GEN_PASS_DEF_INSERTEVALPASS
#include "passes/Passes.h.inc"
} // namespace ferry

using namespace mlir;
using namespace ferry::graph;

namespace {

struct InsertEvalPass : public ferry::impl::InsertEvalPassBase<InsertEvalPass> {
  using InsertEvalPassBase::InsertEvalPassBase;
  // Timing reports and crash messages name the pass by its flag.
  StringRef getName() const override { return getArgument(); }
  void runOnOperation() override;
};

// The metric variable each result of @forward is summed into, by position
// (the BERT builder's results; a smaller model may return fewer).
constexpr const char *kEvalMetrics[] = {
    "metric.eval.loss",        "metric.eval.mlm_loss",
    "metric.eval.nsp_loss",    "metric.eval.mlm_correct",
    "metric.eval.nsp_correct",
};

// Copies `fn` as @<name>_eval, and every function it calls (transitively),
// with each graph.dropout replaced by its input. Returns the copy of `fn`.
func::FuncOp cloneWithoutDropout(func::FuncOp fn, SymbolTable &symbols,
                                 llvm::StringMap<func::FuncOp> &copies) {
  std::string name = (fn.getSymName() + "_eval").str();
  if (auto it = copies.find(name); it != copies.end())
    return it->second;
  OpBuilder b(fn);
  b.setInsertionPointAfter(fn);
  auto copy = cast<func::FuncOp>(b.clone(*fn));
  copy.setSymName(name);
  copy.setPrivate();
  copy->removeAttr(ferry::graph::attrs::kEntry);
  symbols.insert(copy);
  copies[name] = copy;
  copy.walk([](DropoutOp dropout) {
    dropout.getResult().replaceAllUsesWith(dropout.getInput());
    dropout.erase();
  });
  // The fused attention's dropout (ferry-fuse-attention) drops nothing.
  copy.walk([](AttentionOp attention) {
    attention.setProbabilityAttr(
        FloatAttr::get(Float64Type::get(attention.getContext()), 0.0));
  });
  SmallVector<func::CallOp> calls;
  copy.walk([&](func::CallOp call) { calls.push_back(call); });
  for (func::CallOp call : calls) {
    auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
    if (!callee || callee.isExternal())
      continue;
    func::FuncOp calleeCopy = cloneWithoutDropout(callee, symbols, copies);
    call.setCallee(calleeCopy.getSymName());
  }
  return copy;
}

void InsertEvalPass::runOnOperation() {
  ModuleOp module = getOperation();
  SymbolTable symbols(module);
  auto forward = lookupEntry(module, Entry::Forward);
  if (!forward || forward.isExternal()) {
    module.emitError() << "ferry-insert-eval needs a function with a body "
                          "marked graph.entry = \"forward\" (the model "
                          "builder writes it)";
    return signalPassFailure();
  }
  // Results named by `graph.output` (the span head's) may be any tensors:
  // a scalar is a metric, summed; another tensor an output, stored per
  // micro-batch. Unnamed results are the pretraining metrics, by position.
  bool named =
      forward.getNumResults() > 0 &&
      forward.getResultAttrOfType<StringAttr>(0, ferry::graph::attrs::kOutput);
  if (forward.getNumResults() < 1 ||
      (!named && forward.getNumResults() > std::size(kEvalMetrics))) {
    forward.emitOpError()
        << "returns " << forward.getNumResults()
        << " results; ferry-insert-eval sums 1 to 5 of them: (loss, "
           "mlm_loss, nsp_loss, mlm_correct, nsp_correct)";
    return signalPassFailure();
  }
  for (auto [k, type] : llvm::enumerate(forward.getResultTypes())) {
    if (named && !forward.getResultAttrOfType<StringAttr>(
                     k, ferry::graph::attrs::kOutput)) {
      forward.emitOpError() << "names result 0 with graph.output but not "
                               "result "
                            << k << "; name every result or none";
      return signalPassFailure();
    }
    if (!named &&
        type != RankedTensorType::get({}, Float32Type::get(&getContext()))) {
      forward.emitOpError() << "returns " << type
                            << "; ferry-insert-eval sums f32 scalar results";
      return signalPassFailure();
    }
  }
  if (lookupEntry(module, Entry::EvalStep) || symbols.lookup("eval_step")) {
    module.emitError() << "@eval_step already exists; ferry-insert-eval runs "
                          "once";
    return signalPassFailure();
  }

  // The stacked inputs of @train_step: [GA, micro-batch, ...] each.
  SmallVector<std::pair<StringRef, Type>> args;
  int64_t accumulation = -1;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    auto name =
        forward.getArgAttrOfType<StringAttr>(i, ferry::graph::attrs::kInput);
    if (!name) {
      forward.emitOpError() << "argument " << i
                            << " has no graph.input name; @eval_step "
                               "cannot feed it";
      return signalPassFailure();
    }
    Type type = forward.getArgumentTypes()[i];
    args.push_back({name.getValue(), type});
    if (!isa<RankedTensorType>(type))
      continue;
    std::string var = ("input." + name.getValue()).str();
    auto decl = symbols.lookup<VariableOp>(var);
    if (!decl) {
      bool scalar = cast<RankedTensorType>(type).getRank() == 0;
      module.emitError() << "ferry-insert-eval needs @" << var << ", the "
                         << (scalar ? "" : "stacked ")
                         << "input of @train_step: run ferry-insert-optimizer "
                            "first";
      return signalPassFailure();
    }
    if (cast<RankedTensorType>(type).getRank() != 0)
      accumulation = decl.getTensorType().getShape().front();
  }
  if (accumulation < 1) {
    forward.emitOpError() << "has no tensor inputs; nothing to evaluate";
    return signalPassFailure();
  }

  llvm::StringMap<func::FuncOp> copies;
  func::FuncOp forwardEval = cloneWithoutDropout(forward, symbols, copies);
  markEntry(forwardEval, Entry::ForwardEval);

  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  Location loc = forward.getLoc();
  auto f32Scalar = RankedTensorType::get({}, b.getF32Type());
  // Per result: its variable, and whether it is an output stored per
  // micro-batch (@output.eval.<name>, [accumulation, ...]) rather than a
  // metric summed (@metric.eval.<name>).
  SmallVector<std::pair<StringRef, bool>> metrics;
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(*module.getOps<func::FuncOp>().begin());
    for (unsigned k = 0; k < forward.getNumResults(); ++k) {
      auto type = cast<RankedTensorType>(forward.getResultTypes()[k]);
      bool output = type != f32Scalar;
      std::string name = named ? ((output ? "output.eval." : "metric.eval.") +
                                  forward
                                      .getResultAttrOfType<StringAttr>(
                                          k, ferry::graph::attrs::kOutput)
                                      .getValue())
                                     .str()
                               : std::string(kEvalMetrics[k]);
      RankedTensorType varType = type;
      if (output) {
        SmallVector<int64_t> shape = {accumulation};
        shape.append(type.getShape().begin(), type.getShape().end());
        varType = RankedTensorType::get(shape, type.getElementType());
      }
      auto var = VariableOp::create(b, loc, name, varType, InitKind::zeros,
                                    FloatAttr(), output ? name + ".{}" : name,
                                    output, false);
      symbols.insert(var);
      metrics.push_back({var.getSymName(), output});
    }
  }

  b.setInsertionPointToEnd(module.getBody());
  auto step =
      func::FuncOp::create(b, loc, "eval_step", b.getFunctionType({}, {}));
  markEntry(step, Entry::EvalStep);
  symbols.insert(step);
  b.setInsertionPointToStart(step.addEntryBlock());
  Value zero = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(f32Scalar, b.getF32FloatAttr(0.0f)));
  for (auto [metric, output] : metrics)
    if (!output)
      ferry::graph::StoreOp::create(b, loc, zero, metric, Value());

  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value cGA = arith::ConstantIndexOp::create(b, loc, accumulation);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ForOp::create(b, loc, c0, cGA, c1);
  b.setInsertionPoint(loop.getBody()->getTerminator());
  Value mb = loop.getInductionVar();
  SmallVector<Value> callArgs;
  for (auto [name, type] : args) {
    std::string var = ("input." + name).str();
    if (name == "seed") {
      // No dropout remains, so the seed and offset reach nothing.
      callArgs.push_back(
          arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(0)));
    } else if (name == "sample_offset") {
      callArgs.push_back(c0);
    } else if (isa<RankedTensorType>(type) &&
               cast<RankedTensorType>(type).getRank() == 0) {
      // mlm_count, nsp_count: one value for the whole evaluation batch.
      callArgs.push_back(ParameterRefOp::create(b, loc, type, var));
    } else if (isa<RankedTensorType>(type)) {
      callArgs.push_back(ParameterSliceOp::create(b, loc, type, var, mb));
    } else {
      forward.emitOpError() << "input '" << name
                            << "' is neither a tensor nor a known scalar "
                               "(seed, sample_offset)";
      return signalPassFailure();
    }
  }
  auto call = func::CallOp::create(b, loc, forwardEval, callArgs);
  for (auto [k, metric] : llvm::enumerate(metrics)) {
    if (metric.second)
      ferry::graph::StoreOp::create(b, loc, call.getResult(k), metric.first,
                                    mb);
    else
      AccumulateOp::create(b, loc, call.getResult(k), metric.first, Value());
  }
  b.setInsertionPointToEnd(&step.getBody().front());
  func::ReturnOp::create(b, loc);
}

} // namespace
