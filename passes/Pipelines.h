//===- Pipelines.h - ferry's pass pipelines ---------------------*- C++ -*-===//

#ifndef FERRY_PASSES_PIPELINES_H
#define FERRY_PASSES_PIPELINES_H

#include "passes/PassOptions.h"

#include "mlir/Pass/PassManager.h"

#include <string>
#include <vector>

namespace ferry {

// The graph stage's clean-up after the builder (and, later, after each
// training pass): `--ferry-graph-cleanup` in ferry-opt.
void buildGraphCleanupPipeline(mlir::OpPassManager &pm);

// graph IR -> training graph IR: autodiff, optimizer insertion, clean-up
// (`--ferry-training` in ferry-opt).
struct TrainingPipelineOptions {
  bool recompute = false;        // execution.recompute: layer
  bool batchSerialise = false;   // execution.mode: phased
  bool phased = false;           // execution.mode: phased
  bool lossScaling = false;      // training.precision: fp16
  int64_t deviceMemoryLimit = 0; // execution.device_memory_limit (0: none)
  int64_t replicas = 1;          // execution.data_parallel
  bool rts = false;              // execution.replicated_tensor_sharding
  int64_t rtsMinElements = 1024; // execution.rts_min_elements
  bool fuseAttention = false;    // execution.fusion (not with fp16)
};
void buildTrainingPipeline(mlir::OpPassManager &pm,
                           const TrainingPipelineOptions &options = {});

// training graph IR -> rt programs and the memory plan (what `ferry
// compile` runs after the training pipeline).
struct LoweringPipelineOptions {
  std::vector<std::string> programs; // entry functions (empty: train_step)
  int64_t deviceMemoryLimit = 0;     // execution.device_memory_limit (0: none)
  bool prefetch = true;              // execution.prefetch
  MatmulPrecision matmulPrecision = MatmulPrecision::fp32; // training.precision
  bool bf16Activations = true; // with bf16: training.bf16_activations
  bool bf16WeightCopies = true; // with bf16: training.bf16_weight_copies
  bool fusion = true;        // execution.fusion
  int64_t gemmWorkspace = 0; // cuBLASLt scratch per GEMM (cuda)
};
void buildLoweringPipeline(mlir::OpPassManager &pm,
                           const LoweringPipelineOptions &options);
// The lowering's chain of passes without fusion (`--ferry-lower-to-rt`):
// kernel selection, forwarding, placement, staging, arena layout.
void buildLowerToRtPipeline(mlir::OpPassManager &pm,
                            const LoweringPipelineOptions &options);

// Registers every ferry pipeline with the pass registry (for ferry-opt and
// --pass-pipeline strings).
void registerFerryPipelines();

} // namespace ferry

#endif // FERRY_PASSES_PIPELINES_H
