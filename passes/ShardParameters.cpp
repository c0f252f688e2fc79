//===- ShardParameters.cpp - the mesh and the parameters' shardings -------===//
//
// ferry-shard-parameters (execution.tensor_parallel > 1): the module's
// device mesh, and each parameter's split over its tensor axis from the
// config's rules (training/config/TensorSharding.h). Only annotations:
// ferry-partition-tensors then gives every sharded value this rank's shape
// and inserts the collectives.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/UserError.h"

#include "dialects/graph/GraphAttributes.h"
#include "dialects/graph/GraphOps.h"
#include "training/config/TensorSharding.h"

namespace ferry {
#define GEN_PASS_DEF_SHARDPARAMETERSPASS
#include "passes/Passes.h.inc"
} // namespace ferry

using namespace mlir;
using namespace ferry::graph;
using ferry::emitUserError;

namespace {

struct ShardParametersPass
    : public ferry::impl::ShardParametersPassBase<ShardParametersPass> {
  using ShardParametersPassBase::ShardParametersPassBase;
  StringRef getName() const override { return getArgument(); }
  void runOnOperation() override;
};

void ShardParametersPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *context = module.getContext();
  const int64_t tensorParallel = this->tensorParallel;
  const int64_t dataParallel = this->dataParallel;
  if (tensorParallel < 1 || dataParallel < 1) {
    emitUserError(module) << "ferry-shard-parameters: tensor-parallel "
                          << tensorParallel << " and data-parallel "
                          << dataParallel << " must both be at least 1";
    return signalPassFailure();
  }
  std::vector<ferry::ShardingRule> rules;
  for (const std::string &text : shardings) {
    std::string error = ferry::parseTensorSharding(text, rules);
    if (!error.empty()) {
      emitUserError(module) << error;
      return signalPassFailure();
    }
  }
  module->setAttr(attrs::kMesh,
                  MeshAttr::get(context, tensorParallel, dataParallel, false));
  std::vector<bool> used(rules.size(), false);
  for (ParameterOp decl : module.getOps<ParameterOp>()) {
    StringRef name = decl.getSymName();
    int found = -1;
    for (size_t i = 0; i < rules.size(); ++i)
      if (ferry::globMatches(rules[i].pattern, name.str())) {
        found = static_cast<int>(i);
        used[i] = true;
      }
    if (found < 0 || !rules[found].splitDim) {
      decl.removeShardingAttr();
      continue;
    }
    const ferry::ShardingRule &rule = rules[found];
    RankedTensorType type = decl.getTensorType();
    int64_t offset = decl.getStacked() ? 1 : 0;
    int64_t dim = *rule.splitDim + offset;
    int64_t entryRank = type.getRank() - offset;
    if (dim >= type.getRank()) {
      emitUserError(module)
          << "execution.tensor_sharding: '" << ferry::formatShardingRule(rule)
          << "' splits dimension " << *rule.splitDim << " of " << name
          << ", whose " << (offset ? "layer entry" : "tensor") << " has "
          << entryRank << " dimension" << (entryRank == 1 ? "" : "s")
          << "; split a dimension below " << entryRank
          << " or make it replicated";
      return signalPassFailure();
    }
    int64_t size = type.getDimSize(dim);
    if (size % tensorParallel != 0) {
      emitUserError(module)
          << "execution.tensor_sharding: '" << ferry::formatShardingRule(rule)
          << "' splits dimension " << *rule.splitDim << " of " << name
          << " (size " << size << ") over execution.tensor_parallel "
          << tensorParallel
          << ", which does not divide it; split another dimension, make it "
             "replicated, or choose a tensor_parallel that divides "
          << size;
      return signalPassFailure();
    }
    decl.setShardingAttr(ShardingAttr::get(context, dim, false));
  }
  for (size_t i = 0; i < rules.size(); ++i)
    if (!used[i]) {
      std::string names;
      for (ParameterOp decl : module.getOps<ParameterOp>())
        names += (names.empty() ? "" : ", ") + decl.getSymName().str();
      emitUserError(module)
          << "execution.tensor_sharding: the pattern '" << rules[i].pattern
          << "' matches no parameter; the parameters are " << names;
      return signalPassFailure();
    }
}

} // namespace
