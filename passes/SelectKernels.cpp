//===- SelectKernels.cpp - graph IR -> rt calls on virtual buffers --------===//
//
// ferry-select-kernels, the first of the lowering's passes: each entry
// function (option `programs`) becomes an rt.program of typed kernel
// calls on virtual buffers (passes/lowering/KernelSelection.h), and every
// graph.parameter / graph.variable an rt.state, in declaration order at a
// provisional offset (ferry-layout-arena places them). Tensor arguments
// and results become input and output states. Then the graph and func ops
// are erased: the module holds only rt ops.
//
//===----------------------------------------------------------------------===//

#include "dialects/rt/RtAttributes.h"
#include "passes/Passes.h"

#include "dialects/graph/GraphAttributes.h"
#include "dialects/graph/GraphOps.h"
#include "passes/lowering/KernelPatterns.h"

#include "mlir/IR/Builders.h"

namespace ferry {
#define GEN_PASS_DEF_SELECTKERNELSPASS
#include "passes/Passes.h.inc"
} // namespace ferry

using namespace mlir;
using namespace ferry;
using namespace ferry::graph;
using namespace ferry::lowering;

namespace {

std::string roleOf(Operation *decl) {
  if (isa<ParameterOp>(decl))
    return "parameter";
  StringRef name = cast<VariableOp>(decl).getSymName();
  if (name.starts_with("grad."))
    return "gradient";
  if (name.starts_with("adam_"))
    return "optimizer_state";
  if (name.starts_with("input.") || name.starts_with("arg."))
    return "input";
  if (name.starts_with("output."))
    return "output";
  if (name.starts_with("metric."))
    return "metric";
  if (name.starts_with("stash."))
    return "stash";
  return "state";
}

// State reads lower to views of the state, read where they are used. So a
// read whose value is still used after a write to the same declaration would
// see the new contents; the training passes never emit that, and this check
// keeps any future pass from doing it silently.
LogicalResult checkReadsPrecedeWrites(func::FuncOp fn) {
  auto symbolOf = [](Operation *op) -> StringRef {
    if (auto ref = dyn_cast<ParameterRefOp>(op))
      return ref.getName();
    if (auto slice = dyn_cast<ParameterSliceOp>(op))
      return slice.getName();
    return {};
  };
  auto written = [](Operation *op) -> SmallVector<StringRef> {
    if (isa<StoreOp, AccumulateOp>(op))
      return {op->getAttrOfType<FlatSymbolRefAttr>("name").getValue()};
    if (auto up = dyn_cast<OptimizerUpdateOp>(op))
      return {up.getParam(), up.getM(), up.getV()};
    return {};
  };
  WalkResult result = fn.walk([&](Operation *write) {
    for (StringRef symbol : written(write)) {
      Block *block = write->getBlock();
      for (Operation &read : *block) {
        if (&read == write)
          break;
        if (symbolOf(&read) != symbol)
          continue;
        for (Operation *user : read.getResult(0).getUsers()) {
          Operation *inBlock = block->findAncestorOpInBlock(*user);
          if (inBlock && write->isBeforeInBlock(inBlock)) {
            write->emitOpError()
                << "writes @" << symbol
                << " while an earlier read of it is still used below; "
                   "ferry-lower-to-rt lowers reads as views, so copy the "
                   "value (or move the read after the write)";
            return WalkResult::interrupt();
          }
        }
      }
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

struct SelectKernelsPass
    : public ferry::impl::SelectKernelsPassBase<SelectKernelsPass> {
  using SelectKernelsPassBase::SelectKernelsPassBase;
  // Timing reports and crash messages name the pass by its flag.
  StringRef getName() const override { return getArgument(); }
  void runOnOperation() override;
};

} // namespace

// Every family's patterns (passes/lowering/patterns/).
void lowering::populateKernelPatterns(KernelPatterns &patterns) {
  populateElementwisePatterns(patterns);
  populateRowPatterns(patterns);
  populateGemmPatterns(patterns);
  populateAttentionPatterns(patterns);
  populateIndexedPatterns(patterns);
  populateClassSplitPatterns(patterns);
  populateLayoutPatterns(patterns);
  populateReductionPatterns(patterns);
  populateCollectivePatterns(patterns);
  populateMemoryPatterns(patterns);
}

namespace {

void SelectKernelsPass::runOnOperation() {
  ModuleOp module = getOperation();
  SymbolTable symbols(module);
  OpBuilder b(module.getContext());
  SmallVector<std::string> names(programs.begin(), programs.end());
  if (names.empty())
    names.push_back("train_step");

  for (auto fn : module.getOps<func::FuncOp>())
    if (!fn.isExternal() && failed(checkReadsPrecedeWrites(fn)))
      return signalPassFailure();

  // Input and output states of each program's tensor arguments and results.
  b.setInsertionPointToStart(module.getBody());
  for (const std::string &name : names) {
    auto fn = symbols.lookup<func::FuncOp>(name);
    if (!fn || fn.isExternal()) {
      module.emitError() << "ferry-select-kernels: no function @" << name
                         << (fn ? " with a body" : "");
      return signalPassFailure();
    }
    for (Type type : fn.getResultTypes()) {
      auto t = dyn_cast<RankedTensorType>(type);
      if (!t ||
          !(t.getElementType().isF32() || t.getElementType().isInteger(32))) {
        fn.emitOpError() << "returns " << type
                         << "; a program's results must be f32 or i32 "
                            "tensors (they become output states)";
        return signalPassFailure();
      }
    }
    for (auto [i, type] : llvm::enumerate(fn.getArgumentTypes())) {
      auto t = dyn_cast<RankedTensorType>(type);
      if (!t)
        continue;
      auto attr =
          fn.getArgAttrOfType<StringAttr>(i, ferry::graph::attrs::kInput);
      std::string arg = attr ? attr.str() : "arg" + std::to_string(i);
      std::string state = "arg." + name + "." + arg;
      VariableOp::create(b, module.getLoc(), state, t, InitKind::zeros,
                         FloatAttr(), state, false, false);
    }
    for (auto [i, type] : llvm::enumerate(fn.getResultTypes())) {
      std::string state = "output." + name + "." + std::to_string(i);
      VariableOp::create(b, module.getLoc(), state,
                         cast<RankedTensorType>(type), InitKind::zeros,
                         FloatAttr(), state, false, false);
    }
  }

  // States, in declaration order.
  struct Declared {
    std::string name, role, init, hf;
    RankedTensorType type;
    double std = 0;
    int64_t initRows = 0; // rows the init applies to (0: all); the rest are 0
    bool stacked = false, noWeightDecay = false;
    int64_t offset = 0;
    DenseI64ArrayAttr shardOf; // replicated tensor sharding: whole shape
    IntegerAttr shardReplicas; // and replicas
    int64_t splitDim = 0, splitParts = 0; // tensor parallelism's split
  };
  std::vector<Declared> declared;
  std::vector<StateInfo> states;
  int64_t offset = 0;
  for (Operation &op : module.getBody()->getOperations()) {
    auto param = dyn_cast<ParameterOp>(op);
    auto var = dyn_cast<VariableOp>(op);
    if (!param && !var)
      continue;
    Declared s;
    RankedTensorType t = param ? param.getTensorType() : var.getTensorType();
    if (!t.getElementType().isF32() && !t.getElementType().isInteger(32)) {
      op.emitOpError() << "ferry-lower-to-rt supports f32 and i32 states, "
                          "found "
                       << t.getElementType();
      return signalPassFailure();
    }
    s.name = (param ? param.getSymName() : var.getSymName()).str();
    s.type = t;
    s.role = roleOf(&op);
    InitKind init = param ? param.getInit() : var.getInit();
    s.init = stringifyInitKind(init).str();
    if (auto std = param ? param.getInitStd() : var.getInitStd())
      s.std = std->convertToDouble();
    s.hf = (param ? param.getHfName() : var.getHfName()).str();
    s.stacked = param ? param.getStacked() : var.getStacked();
    s.noWeightDecay = param ? param.getNoWeightDecay() : false;
    if (auto rows =
            op.getAttrOfType<IntegerAttr>(ferry::graph::attrs::kInitRows))
      s.initRows = rows.getInt();
    // Replicated tensor sharding (ferry-insert-collectives): the whole shape
    // and the replica count, for the runtime's initialisation and
    // checkpoints.
    s.shardOf =
        op.getAttrOfType<DenseI64ArrayAttr>(ferry::graph::attrs::kShardOf);
    s.shardReplicas =
        op.getAttrOfType<IntegerAttr>(ferry::graph::attrs::kShardReplicas);
    // Tensor parallelism (ferry-partition-tensors): this rank's part of
    // which dimension, for the runtime's initialisation and checkpoints. A
    // part may be sharded too: shard_of is then the part's shape.
    ShardingAttr sharding =
        param ? param.getShardingAttr() : var.getShardingAttr();
    if (sharding && sharding.isSplit()) {
      MeshAttr mesh = meshOf(module);
      if (!mesh || !mesh.getPartitioned()) {
        op.emitOpError() << "is split over the tensor group, but the module "
                            "is not partitioned; run ferry-partition-tensors "
                            "first";
        return signalPassFailure();
      }
      s.splitDim = sharding.getSplit();
      s.splitParts = mesh.getTensor();
    }
    s.offset = offset;
    offset = alignUp(offset + byteSize(t));
    states.push_back(StateInfo{s.name, s.role, byteSize(t), false});
    declared.push_back(s);
  }

  // What placement's budget errors suggest depends on it.
  bool recomputing = false;
  module.walk([&](func::CallOp call) {
    recomputing |= call->hasAttr(ferry::graph::attrs::kRecompute);
  });

  // The rt module: states, then programs on virtual buffers; no graph IR.
  SmallVector<Operation *> old;
  for (Operation &op : module.getBody()->getOperations())
    old.push_back(&op);
  b.setInsertionPointToEnd(module.getBody());
  for (const Declared &s : declared) {
    auto op = rt::StateOp::create(b, module.getLoc(), s.name, s.type, s.role,
                                  static_cast<uint64_t>(s.offset),
                                  static_cast<uint64_t>(byteSize(s.type)),
                                  s.init, llvm::APFloat(s.std), s.hf, s.stacked,
                                  s.noWeightDecay);
    if (s.initRows > 0)
      op->setAttr("init_rows", b.getI64IntegerAttr(s.initRows));
    if (s.shardOf && s.shardReplicas) {
      op->setAttr("shard_of", s.shardOf);
      op->setAttr("shard_replicas", s.shardReplicas);
    }
    if (s.splitParts > 0) {
      op->setAttr("split_dim", b.getI64IntegerAttr(s.splitDim));
      op->setAttr("split_parts", b.getI64IntegerAttr(s.splitParts));
    }
  }
  KernelPatterns patterns;
  populateKernelPatterns(patterns);
  for (const std::string &name : names) {
    auto fn = symbols.lookup<func::FuncOp>(name);
    b.setInsertionPointToEnd(module.getBody());
    auto program = rt::ProgramOp::create(b, module.getLoc(), name,
                                         b.getStrArrayAttr({}), 0, 0);
    b.createBlock(&program.getBody());
    KernelSelection selection(program, symbols, states, patterns);
    selection.matmulInputs = matmulPrecision;
    selection.gemmWorkspace = gemmWorkspace;
    if (failed(selection.lower(fn)))
      return signalPassFailure();
    SmallVector<StringRef> inputNames(selection.inputs.begin(),
                                      selection.inputs.end());
    program.setInputsAttr(b.getStrArrayAttr(inputNames));
  }
  for (Operation *op : old)
    op->erase();
  if (recomputing)
    module->setAttr(rt::attrs::kRecompute, b.getUnitAttr());
}

} // namespace
