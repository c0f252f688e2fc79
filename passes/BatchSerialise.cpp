//===- BatchSerialise.cpp - loop over micro-batches inside each block -----===//
//
// ferry-batch-serialise turns @train_step's gradient accumulation inside out,
// as PopXL's batch serialisation does. ferry-insert-optimizer emits
//
//   scf.for %i = 0 to GA { call @forward_grad(micro-batch %i) }
//
// where @forward_grad runs, for one micro-batch, the embeddings, the layer
// loop, the heads, the backward layer loop and the embeddings' backward. This
// pass inlines @forward_grad and splits the micro-batch loop at those blocks,
// each block getting its own loop over the GA micro-batches; a layer loop
// becomes the outer loop of its block:
//
//   scf.for %i { embeddings fwd(%i) }                 // -> carry[i]
//   scf.for %l { scf.for %i { layer fwd(%l, %i) } }   // carry[i] -> x[l, i],
//                                                     //   carry[i]
//   scf.for %i { heads fwd + bwd(%i) }                // carry[i] -> carry[i]
//   scf.for %k { scf.for %i { layer bwd(%k, %i) } }   // carry[i] -> carry[i]
//   scf.for %i { embeddings bwd(%i) }                 // carry[i]
//
// So each layer's weights are read once per block and used GA times, which is
// what makes streaming them from host memory affordable (phased execution).
//
// Values crossing blocks live in variables with one entry per micro-batch:
// what the layer loops carry (the activation forward, its gradient
// backward) in `@stash.carry` (entry = i: each layer reads what the layer
// before wrote and overwrites it, so one row of GA entries, small enough to
// stay on the device under a budget); every layer's input, which the
// backward reads again, in `@stash.x` laid out rows x GA (entry = l * GA +
// i, stored by layer l as it starts; only when there is a backward). A
// carry over a third of `device-memory-limit` could not stay on the
// device: then the forward's activation flows
// through @stash.x's rows instead (x[l, i] -> x[l + 1, i], L + 1 rows) and
// only the backward uses the carry. Anything else lives in
// `@stash.mb.<n>` (entry = i). Variables the micro-batch body overwrites
// (stash) get GA entries per original entry (entry e -> e * GA + i).
// Cheap values (constants, index arithmetic, reads of parameters and inputs,
// the attention mask) are recomputed in each block instead of stored.
// Gradient and metric accumulations move next to the value they add, so
// each block adds its own gradients; per gradient, the micro-batches are
// still added in order 0 .. GA-1.
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
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

namespace ferry {
#define GEN_PASS_DEF_BATCHSERIALISEPASS
#include "passes/Passes.h.inc"
} // namespace ferry

using namespace mlir;
using namespace ferry::graph;

namespace {

struct BatchSerialisePass
    : public ferry::impl::BatchSerialisePassBase<BatchSerialisePass> {
  using BatchSerialisePassBase::BatchSerialisePassBase;
  // Timing reports and crash messages name the pass by its flag.
  StringRef getName() const override { return getArgument(); }
  void runOnOperation() override;
};

// Where a value crossing blocks is kept: entry `row * GA + i` of `var`.
struct Buffered {
  std::string var;
  int64_t row = 0;
};

int64_t constantIndex(Value v) {
  if (auto c = v.getDefiningOp<arith::ConstantIndexOp>())
    return c.value();
  if (auto c = v.getDefiningOp<arith::ConstantOp>())
    if (auto i = dyn_cast<IntegerAttr>(c.getValue()))
      return i.getInt();
  return -1;
}

bool isCountedLoop(scf::ForOp loop) {
  return constantIndex(loop.getLowerBound()) == 0 &&
         constantIndex(loop.getStep()) == 1 &&
         constantIndex(loop.getUpperBound()) > 0;
}

class Serialiser {
public:
  Serialiser(ModuleOp module, scf::ForOp loop, ferry::ByteBudget carryRowBudget)
      : module(module), symbols(module), ga(loop),
        gaCount(constantIndex(loop.getUpperBound())),
        carryRowBudget(carryRowBudget) {}

  LogicalResult run();

private:
  LogicalResult classify();
  LogicalResult declareBuffers();
  LogicalResult expandScratch();
  Value index(OpBuilder &b, Location loc, Value row, int64_t rowConst, Value i);
  Value materialise(Value v, IRMapping &map, OpBuilder &b, Value i);
  void cloneInto(Operation *op, IRMapping &map, OpBuilder &b, Value i);
  void storeResults(Operation *old, IRMapping &map, OpBuilder &b, Value i);
  void rewriteScratch(Operation *root, Value i);
  void findAliases();

public:
  // After the inlined function is gone: drops the aliased stash variables.
  void eraseUnusedAliases();

  ModuleOp module;
  SymbolTable symbols;
  scf::ForOp ga;
  int64_t gaCount;
  Block *body = nullptr;
  llvm::DenseSet<Operation *> cheap;
  std::vector<SmallVector<Operation *>> segments;
  DenseMap<Operation *, int> segmentOf;
  DenseMap<Value, Buffered> buffers;
  llvm::StringSet<> scratch; // variables the micro-batch body overwrites
  // Stash variables that only ever hold a layer loop's input: the rows
  // variable already has it (row l = layer l's input), so they alias it.
  llvm::StringMap<std::string> aliases;
  llvm::DenseSet<Operation *> aliasStores;
  // Forward layer loops -> the rows variable holding every layer's input.
  DenseMap<Operation *, std::string> layerInputs;
  // Forward layer loops whose activation flows through rows x GA (x[l, i]
  // -> x[l + 1, i]) instead of the carry: where the carry is too large to
  // stay on the device, storing it and the layer inputs would move the
  // activation over the host link twice.
  ferry::ByteBudget carryRowBudget;
  llvm::DenseSet<Operation *> rowLoops;
};

// Top-level op of the micro-batch body that contains `op` (or null).
Operation *topLevel(Block *body, Operation *op) {
  return body->findAncestorOpInBlock(*op);
}

LogicalResult Serialiser::classify() {
  body = ga.getBody();
  // Declarations written in the body: reads of them are not free, and the
  // ones overwritten (graph.store) hold per-micro-batch data.
  llvm::StringSet<> written;
  body->walk([&](Operation *op) {
    if (auto s = dyn_cast<StoreOp>(op)) {
      written.insert(s.getName());
      scratch.insert(s.getName());
    } else if (auto a = dyn_cast<AccumulateOp>(op)) {
      written.insert(a.getName());
    }
  });
  for (Operation &op : body->without_terminator()) {
    bool kind = isa<arith::ConstantOp, arith::AddIOp, arith::SubIOp,
                    arith::MulIOp, arith::IndexCastOp, AttentionMaskOp>(op);
    if (auto ref = dyn_cast<ParameterRefOp>(op))
      kind = !written.contains(ref.getName());
    if (auto slice = dyn_cast<ParameterSliceOp>(op))
      kind = !written.contains(slice.getName());
    bool operandsFree = llvm::all_of(op.getOperands(), [&](Value v) {
      Operation *def = v.getDefiningOp();
      return v == ga.getInductionVar() ||
             (def ? (def->getBlock() != body || cheap.contains(def))
                  : cast<BlockArgument>(v).getOwner() != body);
    });
    if (kind && operandsFree && op.getNumRegions() == 0)
      cheap.insert(&op);
  }
  // Blocks: each layer loop alone, the ops between loops together.
  for (Operation &op : body->without_terminator()) {
    if (cheap.contains(&op))
      continue;
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      if (!isCountedLoop(loop) || loop.getNumRegionIterArgs() != 1)
        return loop.emitOpError()
               << "ferry-batch-serialise: a layer loop must count from 0 "
                  "with step 1 to a constant and carry one value";
      // A loop is a block of its own: the ops after it start a new one.
      segments.push_back({&op});
      segments.emplace_back();
      continue;
    }
    if (segments.empty())
      segments.emplace_back();
    segments.back().push_back(&op);
  }
  llvm::erase_if(segments, [](auto &s) { return s.empty(); });
  segmentOf.clear();
  for (auto [k, seg] : llvm::enumerate(segments))
    for (Operation *op : seg)
      segmentOf[op] = static_cast<int>(k);
  return success();
}

LogicalResult Serialiser::declareBuffers() {
  OpBuilder b(module.getBody(), module.getBody()->begin());
  // Declares a stacked variable, renamed with a suffix if the name is taken
  // (@eval_step's rows beside @train_step's); returns the name it got.
  auto declare = [&](const std::string &name, RankedTensorType entry,
                     int64_t entries) -> std::string {
    SmallVector<int64_t> shape = {entries};
    shape.append(entry.getShape().begin(), entry.getShape().end());
    auto type = RankedTensorType::get(shape, entry.getElementType());
    auto var = VariableOp::create(b, module.getLoc(), name, type,
                                  InitKind::zeros, FloatAttr(), name + ".{}",
                                  /*stacked=*/true, /*no_weight_decay=*/false);
    symbols.insert(var);
    var.setHfName((var.getSymName() + ".{}").str());
    return var.getSymName().str();
  };
  // Layer loops: the value they carry flows through one row of GA entries,
  // @stash.carry, each micro-batch's entry read and overwritten in place by
  // every layer (forward: the activation; backward: its gradient), small
  // enough to stay on the device under a budget. The backward also needs
  // every layer's input: the forward stores them in @stash.x, rows x GA.
  bool hasBackward = false;
  for (auto &seg : segments)
    if (auto loop = dyn_cast<scf::ForOp>(seg.front()))
      loop.walk([&](func::CallOp call) {
        hasBackward |= call.getCallee().ends_with("_bwd");
      });
  std::string carry;
  Type carryType;
  for (auto &seg : segments) {
    auto loop = dyn_cast<scf::ForOp>(seg.front());
    if (!loop)
      continue;
    bool backward = false;
    loop.walk([&](func::CallOp call) {
      backward |= call.getCallee().ends_with("_bwd");
    });
    auto type = dyn_cast<RankedTensorType>(loop.getInitArgs()[0].getType());
    if (!type)
      return loop.emitOpError() << "ferry-batch-serialise: a layer loop must "
                                   "carry a tensor";
    int64_t rows = constantIndex(loop.getUpperBound());
    Value init = loop.getInitArgs()[0];
    Operation *initDef = init.getDefiningOp();
    if (!initDef || initDef->getBlock() != body || cheap.contains(initDef))
      return loop.emitOpError()
             << "ferry-batch-serialise: a layer loop's initial value must be "
                "computed by the micro-batch body";
    int64_t carryBytes =
        gaCount * type.getNumElements() *
        std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
    if (!backward && hasBackward && carryRowBudget &&
        static_cast<uint64_t>(carryBytes) > *carryRowBudget) {
      std::string name = declare("stash.x", type, (rows + 1) * gaCount);
      buffers[init] = {name, 0};
      buffers[loop.getResult(0)] = {name, rows};
      rowLoops.insert(loop);
      continue;
    }
    if (carry.empty() || carryType != type) {
      // One carry for every program (@train_step and @eval_step never run
      // at once, and each writes its carry before reading it).
      auto existing = symbols.lookup<VariableOp>("stash.carry");
      RankedTensorType want = RankedTensorType::get(
          [&] {
            SmallVector<int64_t> shape = {gaCount};
            shape.append(type.getShape().begin(), type.getShape().end());
            return shape;
          }(),
          type.getElementType());
      carry = existing && existing.getTensorType() == want
                  ? existing.getSymName().str()
                  : declare("stash.carry", type, gaCount);
      carryType = type;
    }
    buffers[init] = {carry, 0};
    buffers[loop.getResult(0)] = {carry, 0};
    if (!backward && hasBackward)
      layerInputs[loop] = declare("stash.x", type, rows * gaCount);
  }
  // Any other value used in a later block: one entry per micro-batch.
  for (auto [k, seg] : llvm::enumerate(segments))
    for (Operation *op : seg)
      for (Value result : op->getResults()) {
        if (buffers.count(result))
          continue;
        bool crosses = llvm::any_of(result.getUsers(), [&](Operation *user) {
          Operation *top = topLevel(body, user);
          return top && !cheap.contains(top) &&
                 segmentOf.lookup(top) != static_cast<int>(k);
        });
        if (!crosses)
          continue;
        auto type = dyn_cast<RankedTensorType>(result.getType());
        if (!type)
          return op->emitOpError()
                 << "ferry-batch-serialise: a non-tensor value crosses "
                    "blocks";
        std::string name = declare("stash.mb", type, gaCount);
        buffers[result] = {name, 0};
      }
  return success();
}

// Variables the body overwrites get GA entries per entry.
LogicalResult Serialiser::expandScratch() {
  for (const auto &entry : scratch) {
    auto var = symbols.lookup<VariableOp>(entry.getKey());
    if (!var)
      return ga.emitOpError() << "ferry-batch-serialise: @" << entry.getKey()
                              << " is written per micro-batch but is not a "
                                 "graph.variable";
    // It must not be touched outside the micro-batch body.
    auto uses = SymbolTable::getSymbolUses(var, module);
    for (const SymbolTable::SymbolUse &use : *uses) {
      Operation *user = use.getUser();
      auto fn = user->getParentOfType<func::FuncOp>();
      if (!ga->isAncestor(user) && fn &&
          fn != ga->getParentOfType<func::FuncOp>())
        continue; // the inlined @forward_grad, erased afterwards
      if (!ga->isAncestor(user))
        return user->emitOpError()
               << "ferry-batch-serialise: @" << entry.getKey()
               << " is written per micro-batch and read outside the "
                  "micro-batch loop";
    }
    RankedTensorType t = var.getTensorType();
    SmallVector<int64_t> shape(t.getShape());
    if (var.getStacked())
      shape[0] *= gaCount;
    else
      shape.insert(shape.begin(), gaCount);
    var.setTypeAttr(
        TypeAttr::get(RankedTensorType::get(shape, t.getElementType())));
    var.setStacked(true);
  }
  return success();
}

// row * GA + i, with `row` a value (or null and `rowConst`).
Value Serialiser::index(OpBuilder &b, Location loc, Value row, int64_t rowConst,
                        Value i) {
  Value gaValue = arith::ConstantIndexOp::create(b, loc, gaCount);
  if (!row)
    row = arith::ConstantIndexOp::create(b, loc, rowConst);
  Value base = arith::MulIOp::create(b, loc, row, gaValue);
  return arith::AddIOp::create(b, loc, base, i);
}

Value Serialiser::materialise(Value v, IRMapping &map, OpBuilder &b, Value i) {
  if (v == ga.getInductionVar())
    map.map(v, i);
  if (Value mapped = map.lookupOrNull(v))
    return mapped;
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != body)
    return v; // defined above the micro-batch loop
  if (cheap.contains(def)) {
    for (Value operand : def->getOperands())
      materialise(operand, map, b, i);
    Operation *copy = b.clone(*def, map);
    rewriteScratch(copy, i);
    return map.lookup(v);
  }
  const Buffered &buf = buffers.lookup(v);
  assert(!buf.var.empty() && "a value crossing blocks has a buffer");
  Value at = index(b, v.getLoc(), Value(), buf.row, i);
  Value loaded =
      ParameterSliceOp::create(b, v.getLoc(), v.getType(), buf.var, at);
  map.map(v, loaded);
  return loaded;
}

// Clones `op` with every value it uses from the micro-batch body available.
void Serialiser::cloneInto(Operation *op, IRMapping &map, OpBuilder &b,
                           Value i) {
  llvm::SetVector<Value> used;
  for (Value v : op->getOperands())
    used.insert(v);
  getUsedValuesDefinedAbove(op->getRegions(), used);
  for (Value v : used)
    materialise(v, map, b, i);
  Operation *copy = b.clone(*op, map);
  rewriteScratch(copy, i);
}

void Serialiser::storeResults(Operation *old, IRMapping &map, OpBuilder &b,
                              Value i) {
  for (Value result : old->getResults()) {
    auto it = buffers.find(result);
    if (it == buffers.end())
      continue;
    Value at = index(b, old->getLoc(), Value(), it->second.row, i);
    StoreOp::create(b, old->getLoc(), map.lookup(result), it->second.var, at);
  }
}

// Accesses of per-micro-batch variables: entry e -> e * GA + i.
void Serialiser::rewriteScratch(Operation *root, Value i) {
  SmallVector<Operation *> accesses;
  root->walk([&](Operation *op) {
    if (auto s = dyn_cast<StoreOp>(op); s && scratch.contains(s.getName()))
      accesses.push_back(op);
    if (auto s = dyn_cast<ParameterSliceOp>(op);
        s && scratch.contains(s.getName()))
      accesses.push_back(op);
    if (auto r = dyn_cast<ParameterRefOp>(op);
        r && scratch.contains(r.getName()))
      accesses.push_back(op);
  });
  for (Operation *op : accesses) {
    OpBuilder b(op);
    Location loc = op->getLoc();
    if (auto s = dyn_cast<StoreOp>(op)) {
      Value at = index(b, loc, s.getLayer(), 0, i);
      s.getLayerMutable().assign(at);
    } else if (auto s = dyn_cast<ParameterSliceOp>(op)) {
      s.getLayerMutable().assign(index(b, loc, s.getLayer(), 0, i));
      if (auto it = aliases.find(s.getName()); it != aliases.end())
        s.setNameAttr(FlatSymbolRefAttr::get(s.getContext(), it->second));
    } else if (auto r = dyn_cast<ParameterRefOp>(op)) {
      Value slice =
          ParameterSliceOp::create(b, loc, r.getType(), r.getName(), i);
      r.getResult().replaceAllUsesWith(slice);
      r.erase();
    }
  }
}

// A stash stored only with the layer loop's carried input at the loop's own
// index holds exactly rows 0..L-1 of the loop's rows variable: reads of it
// read the rows instead, and the copy is not stored again.
void Serialiser::findAliases() {
  llvm::StringMap<int> stores;
  body->walk([&](StoreOp st) { ++stores[st.getName()]; });
  for (auto &seg : segments) {
    auto layers = dyn_cast<scf::ForOp>(seg.front());
    if (!layers)
      continue;
    std::string rowsVar = rowLoops.contains(layers)
                              ? buffers.lookup(layers.getResult(0)).var
                              : layerInputs.lookup(layers);
    if (rowsVar.empty())
      continue;
    for (Operation &op : layers.getBody()->without_terminator()) {
      auto st = dyn_cast<StoreOp>(op);
      if (!st || st.getValue() != layers.getRegionIterArgs()[0] ||
          st.getLayer() != layers.getInductionVar() ||
          stores.lookup(st.getName()) != 1 || !scratch.contains(st.getName()))
        continue;
      aliases[st.getName()] = rowsVar;
      aliasStores.insert(st);
    }
  }
}

LogicalResult Serialiser::run() {
  if (failed(classify()) || failed(declareBuffers()) || failed(expandScratch()))
    return failure();
  findAliases();
  OpBuilder b(ga);
  Location loc = ga.getLoc();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value gaValue = arith::ConstantIndexOp::create(b, loc, gaCount);
  for (auto &seg : segments) {
    auto layers = dyn_cast<scf::ForOp>(seg.front());
    if (!layers) {
      auto loop = scf::ForOp::create(b, loc, zero, gaValue, one);
      loop->setAttr(ferry::graph::attrs::kMicroBatches, b.getUnitAttr());
      OpBuilder inner = OpBuilder::atBlockBegin(loop.getBody());
      IRMapping map;
      Value i = loop.getInductionVar();
      for (Operation *op : seg) {
        cloneInto(op, map, inner, i);
        storeResults(op, map, inner, i);
      }
      continue;
    }
    // scf.for %l { scf.for %i { x = carry[i]; rows[l, i] = x (forward);
    //                            body; carry[i] = y } }
    Value upper = arith::ConstantIndexOp::create(
        b, loc, constantIndex(layers.getUpperBound()));
    auto outer = scf::ForOp::create(b, loc, zero, upper, one);
    outer->setDiscardableAttrs(layers->getDiscardableAttrDictionary());
    OpBuilder ob = OpBuilder::atBlockBegin(outer.getBody());
    auto loop = scf::ForOp::create(ob, loc, zero, gaValue, one);
    loop->setAttr(ferry::graph::attrs::kMicroBatches, b.getUnitAttr());
    OpBuilder ib = OpBuilder::atBlockBegin(loop.getBody());
    Value l = outer.getInductionVar(), i = loop.getInductionVar();
    const Buffered &flow = buffers.lookup(layers.getResult(0));
    bool rowsFlow = rowLoops.contains(layers); // x[l, i] -> x[l + 1, i]
    IRMapping map;
    map.map(layers.getInductionVar(), l);
    Value x = ParameterSliceOp::create(
        ib, loc, layers.getRegionIterArgs()[0].getType(), flow.var,
        rowsFlow ? index(ib, loc, l, 0, i) : index(ib, loc, Value(), 0, i));
    map.map(layers.getRegionIterArgs()[0], x);
    if (auto rows = layerInputs.find(layers); rows != layerInputs.end())
      StoreOp::create(ib, loc, x, rows->second, index(ib, loc, l, 0, i));
    for (Operation &op : layers.getBody()->without_terminator())
      if (!aliasStores.contains(&op))
        cloneInto(&op, map, ib, i);
    auto yield = cast<scf::YieldOp>(layers.getBody()->getTerminator());
    Value y = materialise(yield.getOperand(0), map, ib, i);
    Value next =
        rowsFlow ? Value(arith::AddIOp::create(ib, loc, l, one)) : Value();
    StoreOp::create(ib, loc, y, flow.var, index(ib, loc, next, 0, i));
  }
  ga.erase();
  return success();
}

void Serialiser::eraseUnusedAliases() {
  for (auto &alias : aliases)
    if (Operation *decl = symbols.lookup(alias.getKey()))
      if (SymbolTable::symbolKnownUseEmpty(decl, module))
        decl->erase();
}

// Inlines the call to @forward_grad in the micro-batch loop and moves each
// accumulation next to the value it adds.
LogicalResult inlineForwardGrad(scf::ForOp loop, func::CallOp call,
                                func::FuncOp callee) {
  IRMapping map;
  Block &entry = callee.getBody().front();
  for (auto [arg, operand] :
       llvm::zip(entry.getArguments(), call.getOperands()))
    map.map(arg, operand);
  OpBuilder b(call);
  for (Operation &op : entry.without_terminator())
    b.clone(op, map);
  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  for (auto [result, value] : llvm::zip(call.getResults(), ret.getOperands()))
    result.replaceAllUsesWith(map.lookupOrDefault(value));
  call.erase();

  Block *body = loop.getBody();
  DenseMap<Operation *, Operation *> lastMoved;
  SmallVector<AccumulateOp> accumulates;
  for (Operation &op : *body)
    if (auto acc = dyn_cast<AccumulateOp>(op))
      accumulates.push_back(acc);
  for (AccumulateOp acc : accumulates) {
    Operation *def = acc.getValue().getDefiningOp();
    Operation *anchor = def ? body->findAncestorOpInBlock(*def) : nullptr;
    if (!anchor || acc.getLayer())
      continue;
    Operation *after = lastMoved.lookup(anchor);
    acc->moveAfter(after ? after : anchor);
    lastMoved[anchor] = acc;
  }
  return success();
}

// Serialises the micro-batch loop of `entry` around its call to `callee`.
LogicalResult serialise(ModuleOp module, func::FuncOp entry,
                        func::FuncOp callee, ferry::ByteBudget carryRowBudget) {
  func::CallOp call;
  entry.walk([&](func::CallOp c) {
    if (c.getCallee() == callee.getSymName())
      call = c;
  });
  auto loop = call ? dyn_cast<scf::ForOp>(call->getParentOp()) : nullptr;
  if (!loop || !isCountedLoop(loop))
    return entry.emitOpError()
           << "ferry-batch-serialise: @" << entry.getSymName() << " must call @"
           << callee.getSymName()
           << " directly inside its micro-batch loop (from 0, step 1, to a "
              "constant)";
  if (failed(inlineForwardGrad(loop, call, callee)))
    return failure();
  Serialiser serialiser(module, loop, carryRowBudget);
  if (failed(serialiser.run()))
    return failure();
  // The callee's stash accesses no longer match the expanded variables;
  // nothing calls it any more.
  if (SymbolTable::symbolKnownUseEmpty(callee, module))
    callee.erase();
  serialiser.eraseUnusedAliases();
  return success();
}

void BatchSerialisePass::runOnOperation() {
  ModuleOp module = getOperation();
  auto step = lookupEntry(module, Entry::TrainStep);
  auto grad = lookupEntry(module, Entry::ForwardGrad);
  if (!step || step.isExternal() || !grad || grad.isExternal()) {
    module.emitError() << "ferry-batch-serialise needs functions with bodies "
                          "marked graph.entry = \"train_step\" and "
                          "\"forward_grad\": run ferry-autodiff and "
                          "ferry-insert-optimizer first";
    return signalPassFailure();
  }
  // The forward's activation stays in the one carry row when that row can
  // stay on the device (`carry-row-budget`, which the pipeline derives from
  // the device budget). Larger, it flows through its rows, stored once per
  // layer.
  if (failed(serialise(module, step, grad, carryRowBudget)))
    return signalPassFailure();
  // Evaluation streams the same way (ferry-insert-eval's @eval_step).
  auto eval = lookupEntry(module, Entry::EvalStep);
  auto forwardEval = lookupEntry(module, Entry::ForwardEval);
  if (eval && !eval.isExternal() && forwardEval && !forwardEval.isExternal() &&
      failed(serialise(module, eval, forwardEval, carryRowBudget)))
    return signalPassFailure();
}

} // namespace
