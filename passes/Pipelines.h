//===- Pipelines.h - ferry's pass pipelines ---------------------*- C++ -*-===//

#ifndef FERRY_PASSES_PIPELINES_H
#define FERRY_PASSES_PIPELINES_H

#include "passes/PassOptions.h"

#include "mlir/Pass/PassManager.h"

namespace ferry {

// The graph stage's clean-up after the builder (and, later, after each
// training pass): `--ferry-graph-cleanup` in ferry-opt.
void buildGraphCleanupPipeline(mlir::OpPassManager &pm);

// graph IR -> training graph IR: autodiff, optimizer insertion, clean-up
// (`--ferry-training` in ferry-opt). Reads the training pipeline's options
// and the device budget.
void buildTrainingPipeline(mlir::OpPassManager &pm,
                           const PipelineOptions &options = {});

// training graph IR -> rt programs and the memory plan (what `ferry
// compile` runs after the training pipeline; `--ferry-lowering`).
void buildLoweringPipeline(mlir::OpPassManager &pm,
                           const PipelineOptions &options);
// The lowering's chain of passes without fusion (`--ferry-lower-to-rt`):
// kernel selection, forwarding, placement, staging, arena layout.
void buildLowerToRtPipeline(mlir::OpPassManager &pm,
                            const PipelineOptions &options);

// Both, as `ferry compile` runs them after the builder's clean-up
// (`--ferry-compile` in ferry-opt).
void buildCompilePipeline(mlir::OpPassManager &pm,
                          const PipelineOptions &options);

// Registers every ferry pipeline with the pass registry (for ferry-opt and
// --pass-pipeline strings).
void registerFerryPipelines();

} // namespace ferry

#endif // FERRY_PASSES_PIPELINES_H
