//===- Autodiff.cpp - reverse-mode differentiation of graph IR ------------===//
//
// ferry-autodiff turns the model's entry function (result 0 = the loss) into
// @<entry>_grad: the same forward, then the backward, adding the gradient of
// every graph.parameter into a @grad.<name> variable.
//
// * Straight-line graph ops are differentiated through GradientOpInterface
//   (dialects/graph/GraphGradients.cpp).
// * Each called block function (embeddings, encoder layer, heads) is split
//   into @<block>_fwd, returning its results plus the forward values its
//   backward needs (the stash), and @<block>_bwd(args, stash, result grads)
//   returning the gradients of its arguments.
// * An scf.for over layers is reversed: the forward loop stores each
//   iteration's stash into stacked @stash.* variables at the layer index, the
//   backward loop runs from the last layer to the first, reloading it.
//   Parameter slices and index arithmetic are recomputed, not stored.
// * Gradients of a value used several times are summed; a parameter read
//   used several times gets one accumulate per use instead. So the tied word
//   embedding's gradient is the sum of the embedding gather's and the MLM
//   decoder's, both added into @grad.embeddings.word.
//
// Only values that depend on a parameter (active) and feed the loss (useful)
// get gradients.
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
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

namespace ferry {
#define GEN_PASS_DEF_AUTODIFFPASS
#include "passes/Passes.h.inc"
} // namespace ferry

using namespace mlir;
using namespace ferry::graph;

namespace {

bool isFloatTensor(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  return t && isa<FloatType>(t.getElementType());
}

Value zerosLike(OpBuilder &b, Location loc, Type type) {
  auto t = cast<RankedTensorType>(type);
  return arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(t, b.getFloatAttr(t.getElementType(), 0)));
}

// Values whose gradients accumulate: a use adds to what other uses gave.
// A parameter read keeps its contributions apart instead: each is added into
// the parameter's gradient variable on its own (the tied word embedding's
// gather and decoder gradients), which the lowering turns into kernels that
// add straight into the accumulator, with no temporary for their sum.
class GradMap {
public:
  void add(OpBuilder &b, Location loc, Value of, Value grad) {
    if (of.getDefiningOp<ParameterRefOp>() ||
        of.getDefiningOp<ParameterSliceOp>()) {
      parts[of].push_back(grad);
      return;
    }
    auto [it, inserted] = grads.try_emplace(of, grad);
    if (!inserted)
      it->second = AddOp::create(b, loc, it->second, grad);
  }
  Value lookup(Value v) const { return grads.lookup(v); }
  // The contributions to a parameter read's gradient.
  ArrayRef<Value> partsOf(Value v) const {
    auto it = parts.find(v);
    return it == parts.end() ? ArrayRef<Value>() : ArrayRef<Value>(it->second);
  }
  // The whole gradient of any value, summing a read's contributions.
  Value total(OpBuilder &b, Location loc, Value v) const {
    Value sum = grads.lookup(v);
    for (Value part : partsOf(v))
      sum = sum ? AddOp::create(b, loc, sum, part).getResult() : part;
    return sum;
  }

private:
  DenseMap<Value, Value> grads;
  DenseMap<Value, SmallVector<Value, 2>> parts;
};

// Active = depends on a graph.parameter; useful = the loss depends on it.
class Analysis {
public:
  explicit Analysis(SymbolTable &symbols) : symbols(symbols) {}

  bool needsGrad(Value v) const {
    return active.contains(v) && useful.contains(v) &&
           isFloatTensor(v.getType());
  }
  bool isActive(Value v) const { return active.contains(v); }

  void markActive(Value v) {
    if (isFloatTensor(v.getType()))
      active.insert(v);
  }

  // Forward propagation in program order; loops iterate to a fixpoint.
  void propagateActive(Block &block) {
    for (Operation &op : block) {
      if (isParameterRead(&op)) {
        markActive(op.getResult(0));
        continue;
      }
      if (auto loop = dyn_cast<scf::ForOp>(op)) {
        bool changed = true;
        while (changed) {
          size_t before = active.size();
          for (auto [init, arg] :
               llvm::zip(loop.getInitArgs(), loop.getRegionIterArgs()))
            if (active.contains(init))
              markActive(arg);
          propagateActive(*loop.getBody());
          auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
          for (auto [value, arg] :
               llvm::zip(yield.getOperands(), loop.getRegionIterArgs()))
            if (active.contains(value))
              markActive(arg);
          changed = active.size() != before;
        }
        for (auto [arg, result] :
             llvm::zip(loop.getRegionIterArgs(), loop.getResults()))
          if (active.contains(arg))
            markActive(result);
        continue;
      }
      if (llvm::any_of(op.getOperands(),
                       [&](Value v) { return active.contains(v); }))
        for (Value r : op.getResults())
          markActive(r);
    }
  }

  // Backward propagation from the values in `seeds`.
  void propagateUseful(Block &block) {
    for (Operation &op : llvm::reverse(block)) {
      if (auto loop = dyn_cast<scf::ForOp>(op)) {
        auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
        bool changed = true;
        while (changed) {
          size_t before = useful.size();
          for (auto [result, value] :
               llvm::zip(loop.getResults(), yield.getOperands()))
            if (useful.contains(result))
              useful.insert(value);
          for (auto [arg, value] :
               llvm::zip(loop.getRegionIterArgs(), yield.getOperands()))
            if (useful.contains(arg))
              useful.insert(value);
          propagateUseful(*loop.getBody());
          changed = useful.size() != before;
        }
        for (auto [arg, init] :
             llvm::zip(loop.getRegionIterArgs(), loop.getInitArgs()))
          if (useful.contains(arg))
            useful.insert(init);
        continue;
      }
      if (llvm::any_of(op.getResults(),
                       [&](Value v) { return useful.contains(v); }))
        for (Value operand : op.getOperands())
          useful.insert(operand);
    }
  }

  bool isParameterRead(Operation *op) const {
    FlatSymbolRefAttr name;
    if (auto ref = dyn_cast<ParameterRefOp>(op))
      name = ref.getNameAttr();
    else if (auto slice = dyn_cast<ParameterSliceOp>(op))
      name = slice.getNameAttr();
    else
      return false;
    return isa_and_nonnull<ParameterOp>(symbols.lookup(name.getValue()));
  }

  DenseSet<Value> active, useful;
  SymbolTable &symbols;
};

// The split of one block function.
struct BlockGrad {
  func::FuncOp fwd, bwd;
  unsigned numResults = 0, numStash = 0;
  SmallVector<bool> argNeedsGrad, resultHasGrad;
};

class Autodiff {
public:
  Autodiff(ModuleOp module, StringRef entryName, StringRef lossScale = "")
      : module(module), symbols(module), entryName(entryName),
        lossScale(lossScale), b(module.getContext()) {}

  LogicalResult run();

private:
  // Reverse sweep over straight-line ops (no calls, no loops) in `ops`,
  // building at the builder's insertion point. `analysis` says which operands
  // get gradients.
  LogicalResult sweepOps(ArrayRef<Operation *> ops, GradMap &grads,
                         const Analysis &analysis);
  FailureOr<BlockGrad *> splitBlock(func::CallOp call,
                                    ArrayRef<bool> argNeedsGrad,
                                    ArrayRef<bool> resultHasGrad);
  VariableOp declareVariable(StringRef name, RankedTensorType type,
                             StringRef hf, bool stacked);
  VariableOp gradVariable(ParameterOp param);
  LogicalResult accumulateParameterGrad(Operation *read, Value grad,
                                        Value layer);

  ModuleOp module;
  SymbolTable symbols;
  std::string entryName;
  std::string lossScale; // a variable seeding the backward; "" = 1
  OpBuilder b;
  llvm::StringMap<BlockGrad> blocks;
  unsigned stashCount = 0;
};

VariableOp Autodiff::declareVariable(StringRef name, RankedTensorType type,
                                     StringRef hf, bool stacked) {
  if (auto existing = symbols.lookup<VariableOp>(name))
    return existing;
  OpBuilder::InsertionGuard guard(b);
  // Declarations go before the first function, after the parameters.
  auto firstFunc = *module.getOps<func::FuncOp>().begin();
  b.setInsertionPoint(firstFunc);
  auto var = VariableOp::create(b, module.getLoc(), name, type, InitKind::zeros,
                                FloatAttr(), hf, stacked,
                                /*no_weight_decay=*/false);
  symbols.insert(var);
  return var;
}

VariableOp Autodiff::gradVariable(ParameterOp param) {
  VariableOp var = declareVariable(
      ("grad." + param.getSymName()).str(), param.getTensorType(),
      ("grad." + param.getHfName()).str(), param.getStacked());
  // A split parameter's gradient is split alike (tensor parallelism).
  if (ShardingAttr sharding = param.getShardingAttr())
    var.setShardingAttr(sharding);
  return var;
}

LogicalResult Autodiff::accumulateParameterGrad(Operation *read, Value grad,
                                                Value layer) {
  StringRef name = isa<ParameterRefOp>(read)
                       ? cast<ParameterRefOp>(read).getName()
                       : cast<ParameterSliceOp>(read).getName();
  VariableOp var = gradVariable(symbols.lookup<ParameterOp>(name));
  AccumulateOp::create(b, read->getLoc(), grad, var.getSymName(), layer);
  return success();
}

LogicalResult Autodiff::sweepOps(ArrayRef<Operation *> ops, GradMap &grads,
                                 const Analysis &analysis) {
  for (Operation *op : llvm::reverse(ops)) {
    SmallVector<Value> resultGrads;
    bool any = false;
    for (Value r : op->getResults()) {
      Value g = grads.lookup(r);
      any |= static_cast<bool>(g);
      resultGrads.push_back(g);
    }
    if (!any)
      continue;
    auto rule = dyn_cast<GradientOpInterface>(op);
    if (!rule)
      return op->emitOpError()
             << "has no gradient rule (GradientOpInterface), but the loss "
                "depends on its result through a parameter";
    for (auto [i, g] : llvm::enumerate(resultGrads))
      if (!g)
        resultGrads[i] = zerosLike(b, op->getLoc(), op->getResult(i).getType());
    SmallVector<Value> operandGrads;
    if (failed(rule.buildGradients(b, resultGrads, operandGrads)))
      return failure();
    for (auto [operand, g] : llvm::zip(op->getOperands(), operandGrads))
      if (g && analysis.needsGrad(operand))
        grads.add(b, op->getLoc(), operand, g);
  }
  return success();
}

// Builds @<callee>_fwd and @<callee>_bwd for one gradient signature.
FailureOr<BlockGrad *> Autodiff::splitBlock(func::CallOp call,
                                            ArrayRef<bool> argNeedsGrad,
                                            ArrayRef<bool> resultHasGrad) {
  StringRef calleeName = call.getCallee();
  auto it = blocks.find(calleeName);
  if (it != blocks.end()) {
    if (ArrayRef<bool>(it->second.argNeedsGrad) != argNeedsGrad ||
        ArrayRef<bool>(it->second.resultHasGrad) != resultHasGrad)
      return call.emitOpError()
             << "calls @" << calleeName
             << " with a different set of differentiated arguments than an "
                "earlier call; ferry-autodiff needs one signature per block";
    return &it->second;
  }
  auto callee = symbols.lookup<func::FuncOp>(calleeName);
  if (!callee || callee.isExternal())
    return call.emitOpError()
           << "calls @" << calleeName << ", which has no body to differentiate";
  Block &body = callee.getBody().front();
  Analysis reads(symbols);
  for (Operation &op : body.without_terminator()) {
    if (op.getNumRegions() || isa<func::CallOp>(op))
      return op.emitOpError() << "inside differentiated block @" << calleeName
                              << ": blocks must be straight-line graph ops";
    // Blocks take their weights as arguments, read by the caller, which
    // accumulates their gradients (and phased execution loads them).
    if (reads.isParameterRead(&op))
      return op.emitOpError()
             << "reads a parameter inside differentiated block @" << calleeName
             << "; pass it as an argument (blocks take their "
             << "weights as arguments, read by the caller)";
  }
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  Location loc = callee.getLoc();

  // 1. A combined function: forward ops, then the reverse sweep.
  SmallVector<Type> combinedInputs(callee.getArgumentTypes());
  for (auto [i, has] : llvm::enumerate(resultHasGrad))
    if (has)
      combinedInputs.push_back(callee.getResultTypes()[i]);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointAfter(callee);
  auto combined = func::FuncOp::create(b, loc, (calleeName + "_combined").str(),
                                       b.getFunctionType(combinedInputs, {}));
  Block *entry = combined.addEntryBlock();
  b.setInsertionPointToStart(entry);
  IRMapping map;
  for (unsigned i = 0; i < callee.getNumArguments(); ++i)
    map.map(body.getArgument(i), entry->getArgument(i));
  SmallVector<Operation *> forwardOps;
  for (Operation &op : body.without_terminator())
    forwardOps.push_back(b.clone(op, map));

  Analysis analysis(symbols);
  for (unsigned i = 0; i < callee.getNumArguments(); ++i)
    if (argNeedsGrad[i])
      analysis.markActive(entry->getArgument(i));
  analysis.propagateActive(*entry);
  GradMap grads;
  unsigned dresIndex = callee.getNumArguments();
  for (auto [i, has] : llvm::enumerate(resultHasGrad)) {
    if (!has)
      continue;
    Value result = map.lookup(ret.getOperand(i));
    analysis.useful.insert(result);
    grads.add(b, loc, result, entry->getArgument(dresIndex++));
  }
  // Useful: everything the graded results depend on.
  {
    SmallVector<Operation *> worklist(forwardOps.rbegin(), forwardOps.rend());
    for (Operation *op : worklist)
      if (llvm::any_of(op->getResults(),
                       [&](Value v) { return analysis.useful.contains(v); }))
        for (Value operand : op->getOperands())
          analysis.useful.insert(operand);
  }
  if (failed(sweepOps(forwardOps, grads, analysis))) {
    combined.erase();
    return failure();
  }
  SmallVector<Value> argGrads;
  for (unsigned i = 0; i < callee.getNumArguments(); ++i) {
    if (!argNeedsGrad[i])
      continue;
    Value g = grads.lookup(entry->getArgument(i));
    argGrads.push_back(g ? g
                         : zerosLike(b, loc, entry->getArgument(i).getType()));
  }
  auto combinedRet = func::ReturnOp::create(b, loc, argGrads);

  // 2. Split: the stash is every forward result the backward reads
  // (constants are cloned instead).
  DenseSet<Operation *> isForward(forwardOps.begin(), forwardOps.end());
  llvm::SetVector<Value> stash;
  for (Operation &op : *entry) {
    if (isForward.contains(&op))
      continue;
    for (Value operand : op.getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && isForward.contains(def) && !isa<arith::ConstantOp>(def))
        stash.insert(operand);
    }
  }

  // @<callee>_fwd(args) -> (results, stash)
  SmallVector<Type> fwdResults(callee.getResultTypes());
  for (Value v : stash)
    fwdResults.push_back(v.getType());
  b.setInsertionPointAfter(callee);
  auto fwd = func::FuncOp::create(
      b, loc, (calleeName + "_fwd").str(),
      b.getFunctionType(callee.getArgumentTypes(), fwdResults));
  {
    Block *fb = fwd.addEntryBlock();
    OpBuilder fbuilder = OpBuilder::atBlockBegin(fb);
    IRMapping fmap;
    for (unsigned i = 0; i < callee.getNumArguments(); ++i)
      fmap.map(entry->getArgument(i), fb->getArgument(i));
    for (Operation *op : forwardOps)
      fbuilder.clone(*op, fmap);
    SmallVector<Value> outs;
    for (Value v : ret.getOperands())
      outs.push_back(fmap.lookup(map.lookup(v)));
    for (Value v : stash)
      outs.push_back(fmap.lookup(v));
    func::ReturnOp::create(fbuilder, loc, outs);
  }

  // @<callee>_bwd(args, stash, result grads) -> arg grads
  SmallVector<Type> bwdInputs(callee.getArgumentTypes());
  for (Value v : stash)
    bwdInputs.push_back(v.getType());
  for (auto [i, has] : llvm::enumerate(resultHasGrad))
    if (has)
      bwdInputs.push_back(callee.getResultTypes()[i]);
  b.setInsertionPointAfter(fwd);
  auto bwd = func::FuncOp::create(
      b, loc, (calleeName + "_bwd").str(),
      b.getFunctionType(bwdInputs, combinedRet.getOperandTypes()));
  {
    Block *bb = bwd.addEntryBlock();
    OpBuilder bbuilder = OpBuilder::atBlockBegin(bb);
    IRMapping bmap;
    unsigned n = callee.getNumArguments();
    for (unsigned i = 0; i < n; ++i)
      bmap.map(entry->getArgument(i), bb->getArgument(i));
    for (auto [i, v] : llvm::enumerate(stash))
      bmap.map(v, bb->getArgument(n + i));
    for (unsigned i = n; i < entry->getNumArguments(); ++i)
      bmap.map(entry->getArgument(i), bb->getArgument(stash.size() + i));
    for (Operation *op : forwardOps)
      if (isa<arith::ConstantOp>(op))
        bbuilder.clone(*op, bmap);
    for (Operation &op : *entry)
      if (!isForward.contains(&op))
        bbuilder.clone(op, bmap);
  }
  combined.erase();

  BlockGrad &record = blocks[calleeName];
  record.fwd = fwd;
  record.bwd = bwd;
  record.numResults = callee.getNumResults();
  record.numStash = stash.size();
  record.argNeedsGrad.assign(argNeedsGrad.begin(), argNeedsGrad.end());
  record.resultHasGrad.assign(resultHasGrad.begin(), resultHasGrad.end());
  symbols.insert(fwd);
  symbols.insert(bwd);
  return &record;
}

// Whether a value inside a differentiated loop body can be rebuilt in the
// backward loop instead of being stored: parameter reads, constants and index
// arithmetic.
bool isRecomputable(Operation *op) {
  return isa<ParameterSliceOp, ParameterRefOp, arith::ConstantOp, arith::AddIOp,
             arith::SubIOp, arith::MulIOp>(op);
}

LogicalResult Autodiff::run() {
  auto entry = symbols.lookup<func::FuncOp>(entryName);
  if (!entry || entry.isExternal())
    return module.emitError() << "ferry-autodiff: no function @" << entryName
                              << " to differentiate";
  auto lossType = entry.getNumResults() < 1
                      ? RankedTensorType()
                      : dyn_cast<RankedTensorType>(entry.getResultTypes()[0]);
  if (!lossType || lossType.getRank() != 0 ||
      !isa<FloatType>(lossType.getElementType()))
    return entry.emitOpError()
           << "result 0 must be the scalar loss to differentiate";

  // The passes after this one find the forward and its gradient by their
  // marks: one of each in a module.
  using ferry::graph::Entry;
  if (auto done = ferry::graph::lookupEntry(module, Entry::ForwardGrad))
    return module.emitError()
           << "ferry-autodiff runs once: @" << done.getSymName()
           << " is already marked graph.entry = \"forward_grad\"";
  if (auto marked = ferry::graph::lookupEntry(module, Entry::Forward);
      marked && marked != entry)
    return entry.emitOpError()
           << "is not the function marked graph.entry = \"forward\" (@"
           << marked.getSymName() << " is); differentiate that one";

  // @<entry>_grad starts as a copy of the entry.
  func::FuncOp grad = entry.clone();
  grad.setSymName((entryName + "_grad"));
  ferry::graph::markEntry(entry, Entry::Forward);
  ferry::graph::markEntry(grad, Entry::ForwardGrad);
  module.insert(std::next(Block::iterator(entry)), grad);
  symbols.insert(grad);
  Block &body = grad.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());

  Analysis analysis(symbols);
  analysis.propagateActive(body);
  analysis.useful.insert(ret.getOperand(0));
  analysis.propagateUseful(body);

  auto callMasks = [&](func::CallOp call, SmallVector<bool> &args,
                       SmallVector<bool> &results) {
    for (Value v : call.getOperands())
      args.push_back(analysis.needsGrad(v));
    for (Value v : call.getResults())
      results.push_back(analysis.needsGrad(v));
  };

  // Forward: calls to differentiated blocks become calls to their _fwd.
  // Records map each new call to its block and stash values.
  struct CallRecord {
    func::CallOp call;
    BlockGrad *block;
  };
  DenseMap<Operation *, CallRecord> records; // keyed by the new call
  auto rewriteCall = [&](func::CallOp call) -> FailureOr<func::CallOp> {
    SmallVector<bool> args, results;
    callMasks(call, args, results);
    if (!llvm::is_contained(results, true))
      return call; // nothing to differentiate through
    FailureOr<BlockGrad *> block = splitBlock(call, args, results);
    if (failed(block))
      return failure();
    b.setInsertionPoint(call);
    auto fwdCall = func::CallOp::create(b, call.getLoc(), (*block)->fwd,
                                        call.getOperands());
    for (unsigned i = 0; i < call.getNumResults(); ++i)
      call.getResult(i).replaceAllUsesWith(fwdCall.getResult(i));
    // Keep the analysis facts on the new results.
    for (unsigned i = 0; i < call.getNumResults(); ++i) {
      if (analysis.active.contains(call.getResult(i)))
        analysis.active.insert(fwdCall.getResult(i));
      if (analysis.useful.contains(call.getResult(i)))
        analysis.useful.insert(fwdCall.getResult(i));
    }
    records[fwdCall] = {fwdCall, *block};
    call.erase();
    return fwdCall;
  };

  SmallVector<Operation *> topOps;
  for (Operation &op : body.without_terminator())
    topOps.push_back(&op);
  // Per loop: the values its backward reloads, with their stash variables.
  DenseMap<Operation *, SmallVector<std::pair<Value, StringRef>>> loopStash;
  for (Operation *&op : topOps) {
    if (auto call = dyn_cast<func::CallOp>(op)) {
      FailureOr<func::CallOp> fwdCall = rewriteCall(call);
      if (failed(fwdCall))
        return failure();
      op = *fwdCall;
      continue;
    }
    auto loop = dyn_cast<scf::ForOp>(op);
    if (!loop)
      continue;
    std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound());
    std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound());
    std::optional<int64_t> st = getConstantIntValue(loop.getStep());
    if (!lb || !ub || !st || *lb != 0 || *st != 1)
      return loop.emitOpError() << "ferry-autodiff reverses loops from 0 with "
                                   "step 1 and a constant bound only";
    SmallVector<Operation *> inner;
    for (Operation &o : loop.getBody()->without_terminator())
      inner.push_back(&o);
    auto &stored = loopStash[loop];
    DenseSet<Value> storedSet;
    for (Operation *o : inner) {
      if (auto call = dyn_cast<func::CallOp>(o)) {
        FailureOr<func::CallOp> fwdCall = rewriteCall(call);
        if (failed(fwdCall))
          return failure();
        if (!records.count(*fwdCall))
          continue;
        // Store what the backward needs and cannot rebuild.
        b.setInsertionPointAfter(*fwdCall);
        SmallVector<Value> needed(fwdCall->getOperands());
        for (unsigned i = records[*fwdCall].block->numResults;
             i < fwdCall->getNumResults(); ++i)
          needed.push_back(fwdCall->getResult(i));
        for (Value v : needed) {
          if (storedSet.contains(v) || v == loop.getInductionVar() ||
              v.getParentRegion() != &loop.getRegion())
            continue;
          Operation *def = v.getDefiningOp();
          if (def && isRecomputable(def))
            continue;
          if (!isa<RankedTensorType>(v.getType()))
            return fwdCall->emitOpError()
                   << "passes a non-tensor value computed in the loop; "
                      "ferry-autodiff cannot store it for the backward";
          auto t = cast<RankedTensorType>(v.getType());
          SmallVector<int64_t> shape = {*ub};
          shape.append(t.getShape().begin(), t.getShape().end());
          StringRef block = fwdCall->getCallee();
          block.consume_back("_fwd");
          std::string name =
              ("stash." + block + "." + Twine(stashCount++)).str();
          VariableOp var = declareVariable(
              name, RankedTensorType::get(shape, t.getElementType()),
              name + ".{}", /*stacked=*/true);
          StoreOp::create(b, loop.getLoc(), v, var.getSymName(),
                          loop.getInductionVar());
          storedSet.insert(v);
          stored.push_back({v, var.getSymName()});
        }
        continue;
      }
      if (isRecomputable(o) || isa<ParameterSliceOp>(o))
        continue;
      if (llvm::any_of(o->getResults(),
                       [&](Value v) { return analysis.needsGrad(v); }))
        return o->emitOpError()
               << "in a differentiated loop body: put the loop body's "
                  "computation in a function (only calls, parameter reads and "
                  "index arithmetic may appear there)";
    }
  }

  // Backward, before the return.
  b.setInsertionPoint(ret);
  Location loc = grad.getLoc();
  GradMap grads;
  Value seed;
  if (!lossScale.empty()) {
    // fp16 loss scaling: the backward starts from the loss scale s, a
    // variable the runtime sets each step, so every gradient holds s times
    // its value (ferry-insert-optimizer divides it out).
    if (!symbols.lookup(lossScale)) {
      OpBuilder top(module.getBody(), module.getBody()->begin());
      VariableOp::create(top, loc, lossScale, lossType, InitKind::ones,
                         FloatAttr(), lossScale, false, false);
    }
    seed = ParameterRefOp::create(b, loc, lossType, lossScale);
  } else {
    seed = arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(lossType,
                               b.getFloatAttr(lossType.getElementType(), 1.0)));
  }
  grads.add(b, loc, ret.getOperand(0), seed);

  // Backward of a rewritten call: @<block>_bwd, its grads added to `into`.
  // Backward of a rewritten call: @<block>_bwd on the call's operands and
  // stash (through `remap`, which rebuilds them inside a backward loop) and
  // the gradients of its results; adds the argument gradients to `grads`.
  auto callBackward = [&](func::CallOp call, function_ref<Value(Value)> remap,
                          GradMap &grads) {
    BlockGrad *block = records[call].block;
    SmallVector<Value> args;
    for (Value v : call.getOperands())
      args.push_back(remap(v));
    for (unsigned i = block->numResults; i < call.getNumResults(); ++i)
      args.push_back(remap(call.getResult(i)));
    for (unsigned i = 0; i < block->numResults; ++i) {
      if (!block->resultHasGrad[i])
        continue;
      Value g = grads.lookup(call.getResult(i));
      args.push_back(
          g ? g : zerosLike(b, call.getLoc(), call.getResult(i).getType()));
    }
    auto bcall = func::CallOp::create(b, call.getLoc(), block->bwd, args);
    unsigned k = 0;
    for (unsigned i = 0; i < block->argNeedsGrad.size(); ++i)
      if (block->argNeedsGrad[i])
        grads.add(b, call.getLoc(), call.getOperand(i), bcall.getResult(k++));
  };

  for (Operation *op : llvm::reverse(topOps)) {
    if (auto call = dyn_cast<func::CallOp>(op)) {
      if (records.count(call))
        callBackward(
            call, [](Value v) { return v; }, grads);
      continue;
    }
    if (analysis.isParameterRead(op)) {
      Value layer;
      if (auto slice = dyn_cast<ParameterSliceOp>(op))
        layer = slice.getLayer();
      for (Value g : grads.partsOf(op->getResult(0)))
        if (failed(accumulateParameterGrad(op, g, layer)))
          return failure();
      continue;
    }
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      int64_t n = *getConstantIntValue(loop.getUpperBound());
      // Carried gradients: one per iter arg that needs one.
      SmallVector<unsigned> carried;
      SmallVector<Value> inits;
      for (unsigned i = 0; i < loop.getNumRegionIterArgs(); ++i) {
        if (!analysis.needsGrad(loop.getRegionIterArgs()[i]) &&
            !analysis.needsGrad(loop.getResult(i)))
          continue;
        carried.push_back(i);
        Value g = grads.lookup(loop.getResult(i));
        inits.push_back(g ? g : zerosLike(b, loc, loop.getResult(i).getType()));
      }
      // Values defined before the loop that the body uses and that need
      // gradients (e.g. a parameter read once and used by every layer): their
      // gradients are summed over the iterations in extra carried values.
      llvm::SetVector<Value> invariant;
      for (Operation &o : loop.getBody()->without_terminator())
        for (Value v : o.getOperands())
          if (v.getParentRegion() != &loop.getRegion() && analysis.needsGrad(v))
            invariant.insert(v);
      for (Value v : invariant)
        inits.push_back(zerosLike(b, loc, v.getType()));
      Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
      Value cn = arith::ConstantIndexOp::create(b, loc, n);
      Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
      auto back = scf::ForOp::create(b, loop.getLoc(), c0, cn, c1, inits);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(back.getBody());
        Value last = arith::ConstantIndexOp::create(b, loc, n - 1);
        Value layer =
            arith::SubIOp::create(b, loc, last, back.getInductionVar());
        // Rebuild forward values for this layer.
        IRMapping remat;
        remat.map(loop.getInductionVar(), layer);
        for (auto &[value, var] : loopStash[loop])
          remat.map(value, ParameterSliceOp::create(b, loc, value.getType(),
                                                    var, layer)
                               .getResult());
        std::function<Value(Value)> materialize = [&](Value v) -> Value {
          if (v.getParentRegion() != &loop.getRegion())
            return v; // defined outside the loop
          if (Value m = remat.lookupOrNull(v))
            return m;
          Operation *def = v.getDefiningOp();
          // Region iter args that were not stored have no gradient use.
          assert(def && isRecomputable(def) &&
                 "value neither stored nor "
                 "recomputable");
          for (Value operand : def->getOperands())
            materialize(operand);
          Operation *clone = b.clone(*def, remat);
          return clone->getResult(cast<OpResult>(v).getResultNumber());
        };
        GradMap inner;
        auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
        for (auto [k, i] : llvm::enumerate(carried))
          inner.add(b, loc, yield.getOperand(i), back.getRegionIterArgs()[k]);
        SmallVector<Operation *> innerOps;
        for (Operation &o : loop.getBody()->without_terminator())
          innerOps.push_back(&o);
        for (Operation *o : llvm::reverse(innerOps)) {
          if (auto call = dyn_cast<func::CallOp>(o)) {
            // Operands and stash are rebuilt or reloaded for this layer.
            if (records.count(call))
              callBackward(call, materialize, inner);
            continue;
          }
          if (analysis.isParameterRead(o)) {
            ArrayRef<Value> parts = inner.partsOf(o->getResult(0));
            Value idx;
            if (auto slice = dyn_cast<ParameterSliceOp>(o);
                slice && !parts.empty())
              idx = materialize(slice.getLayer());
            for (Value g : parts)
              if (failed(accumulateParameterGrad(o, g, idx)))
                return failure();
          }
        }
        SmallVector<Value> yields;
        for (unsigned i : carried) {
          Value arg = loop.getRegionIterArgs()[i];
          Value g = inner.lookup(arg);
          yields.push_back(g ? g : zerosLike(b, loc, arg.getType()));
        }
        for (auto [k, v] : llvm::enumerate(invariant)) {
          Value sum = back.getRegionIterArgs()[carried.size() + k];
          if (Value g = inner.total(b, loc, v))
            sum = AddOp::create(b, loc, sum, g);
          yields.push_back(sum);
        }
        scf::YieldOp::create(b, loc, yields);
      }
      for (auto [k, i] : llvm::enumerate(carried))
        if (analysis.needsGrad(loop.getInitArgs()[i]))
          grads.add(b, loc, loop.getInitArgs()[i], back.getResult(k));
      for (auto [k, v] : llvm::enumerate(invariant))
        grads.add(b, loc, v, back.getResult(carried.size() + k));
      continue;
    }
    // A straight-line graph op at the top level.
    if (failed(sweepOps({op}, grads, analysis)))
      return failure();
  }
  return success();
}

struct AutodiffPass : public ferry::impl::AutodiffPassBase<AutodiffPass> {
  using AutodiffPassBase::AutodiffPassBase;
  // Timing reports and crash messages name the pass by its flag.
  StringRef getName() const override { return getArgument(); }
  void runOnOperation() override {
    if (failed(Autodiff(getOperation(), entry, lossScale).run()))
      signalPassFailure();
  }
};

} // namespace
