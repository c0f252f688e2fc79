//===- CompleteSplitNorms.cpp - split gradients' norms over the group -----===//
//
// ferry-complete-split-norms (execution.tensor_parallel > 1). A gradient
// split over the tensor group holds only this rank's part, so a
// graph.global_norm that reads it would take the norm of the part. Each
// such norm is rewritten: the split gradients' norm on this rank, the
// tensor group's part norms all-gathered, and their norm, so every element
// counts once; the replicated gradients it reads, equal on every rank of
// the group, count once. Runs after the phase schedule (which decides
// where each gradient's norm is taken) and before the data-parallel sums,
// which then sum the split gradients where the new norm reads them.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/graph/GraphAttributes.h"
#include "dialects/graph/GraphOps.h"

#include "mlir/IR/Builders.h"

namespace ferry {
#define GEN_PASS_DEF_COMPLETESPLITNORMSPASS
#include "passes/Passes.h.inc"
} // namespace ferry

using namespace mlir;
using namespace ferry::graph;

namespace {

struct CompleteSplitNormsPass
    : public ferry::impl::CompleteSplitNormsPassBase<CompleteSplitNormsPass> {
  using CompleteSplitNormsPassBase::CompleteSplitNormsPassBase;
  StringRef getName() const override { return getArgument(); }
  void runOnOperation() override;
};

// Whether `v` reads a declaration split over the tensor group.
bool readsSplit(Value v, SymbolTable &symbols) {
  StringRef name;
  if (auto ref = v.getDefiningOp<ParameterRefOp>())
    name = ref.getName();
  else if (auto slice = v.getDefiningOp<ParameterSliceOp>())
    name = slice.getName();
  else
    return false;
  Operation *decl = symbols.lookup(name);
  ShardingAttr sharding =
      decl ? decl->getAttrOfType<ShardingAttr>("sharding") : ShardingAttr();
  return sharding && sharding.isSplit();
}

void CompleteSplitNormsPass::runOnOperation() {
  ModuleOp module = getOperation();
  MeshAttr mesh = meshOf(module);
  if (!mesh || mesh.getTensor() == 1)
    return;
  if (!mesh.getPartitioned()) {
    module.emitError() << "ferry-complete-split-norms needs a partitioned "
                          "module; run ferry-partition-tensors first";
    return signalPassFailure();
  }
  int64_t parts = mesh.getTensor();
  SymbolTable symbols(module);
  SmallVector<GlobalNormOp> norms;
  module.walk([&](GlobalNormOp n) { norms.push_back(n); });
  OpBuilder b(module.getContext());
  auto f32 = RankedTensorType::get({}, b.getF32Type());
  for (GlobalNormOp norm : norms) {
    SmallVector<Value> whole, split;
    for (Value v : norm.getOperands())
      (readsSplit(v, symbols) ? split : whole).push_back(v);
    if (split.empty())
      continue;
    b.setInsertionPoint(norm);
    Location loc = norm.getLoc();
    Value mine = GlobalNormOp::create(b, loc, f32, split);
    Value one = ReshapeOp::create(
        b, loc, RankedTensorType::get({1}, b.getF32Type()), mine);
    Value all = AllGatherOp::create(
        b, loc, RankedTensorType::get({parts}, b.getF32Type()), one,
        b.getI64IntegerAttr(parts),
        MeshAxisAttr::get(b.getContext(), MeshAxis::tensor));
    whole.push_back(GlobalNormOp::create(b, loc, f32, ValueRange{all}));
    norm.replaceAllUsesWith(
        GlobalNormOp::create(b, loc, norm.getType(), whole).getResult());
    norm.erase();
  }
}

} // namespace
