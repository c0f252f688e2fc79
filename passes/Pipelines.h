//===- Pipelines.h - ferry's pass pipelines ---------------------*- C++ -*-===//

#ifndef FERRY_PASSES_PIPELINES_H
#define FERRY_PASSES_PIPELINES_H

#include "mlir/Pass/PassManager.h"

namespace ferry {

// The graph stage's clean-up after the builder (and, later, after each
// training pass): `--ferry-graph-cleanup` in ferry-opt.
void buildGraphCleanupPipeline(mlir::OpPassManager &pm);

// graph IR -> training graph IR: autodiff, optimizer insertion, clean-up
// (`--ferry-training` in ferry-opt).
struct TrainingPipelineOptions {
  bool recompute = false;      // execution.recompute: layer
  bool batchSerialise = false; // execution.mode: phased
  bool phased = false;         // execution.mode: phased
  bool lossScaling = false;    // training.precision: fp16
};
void buildTrainingPipeline(mlir::OpPassManager &pm,
                           const TrainingPipelineOptions &options = {});

// Registers every ferry pipeline with the pass registry (for ferry-opt and
// --pass-pipeline strings).
void registerFerryPipelines();

} // namespace ferry

#endif // FERRY_PASSES_PIPELINES_H
