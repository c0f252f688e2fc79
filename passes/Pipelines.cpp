//===- Pipelines.cpp - ferry's pass pipelines, in one place ---------------===//
//
// Every pipeline ferry runs is assembled here, each pass with the reason it
// sits where it does.
//
//===----------------------------------------------------------------------===//

#include "passes/Pipelines.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

void ferry::buildGraphCleanupPipeline(mlir::OpPassManager &pm) {
  // The builder materialises an index constant wherever it needs one and the
  // same parameter reads in several places; CSE merges them so dumps read
  // cleanly and later passes see each value once.
  pm.addPass(mlir::createCSEPass());
  // Folds what CSE exposed (constant loop bounds, identity reshapes later on);
  // graph ops have no side effects, so nothing the model computes is lost.
  pm.addPass(mlir::createCanonicalizerPass());
}

void ferry::registerFerryPipelines() {
  mlir::PassPipelineRegistration<>(
      "ferry-graph-cleanup",
      "CSE and canonicalisation of graph IR, as `ferry compile` runs them "
      "after the BERT builder",
      buildGraphCleanupPipeline);
}
