//===- Pipelines.cpp - ferry's pass pipelines, in one place ---------------===//
//
// Every pipeline ferry runs is assembled here, each pass with the reason it
// sits where it does.
//
//===----------------------------------------------------------------------===//

#include "passes/Pipelines.h"
#include "passes/Passes.h"

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

void ferry::buildTrainingPipeline(mlir::OpPassManager &pm,
                                  const TrainingPipelineOptions &options) {
  // Reverse mode over @forward: @forward_grad, the block functions split into
  // _fwd/_bwd, stacked stash variables for the layer loop.
  // training.precision: fp16 seeds the backward with @input.loss_scale (the
  // runtime's dynamic loss scale) instead of 1.
  pm.addPass(createAutodiffPass("forward",
                                options.lossScaling ? "input.loss_scale" : ""));
  // execution.recompute: layer. Right after autodiff, while the stash is
  // still per layer: the backward re-runs each layer's forward from its
  // stored input, so only layer inputs stay stashed.
  if (options.recompute)
    pm.addPass(createRecomputePass());
  // @train_step: accumulation over micro-batches, global norm, schedule,
  // LAMB/AdamW. Needs @forward_grad.
  pm.addPass(createInsertOptimizerPass());
  // @eval_step: the forward without dropout over the same inputs, for
  // `ferry eval` and evaluation during training. Needs @train_step's inputs.
  pm.addPass(createInsertEvalPass());
  // execution.mode: phased. Each block loops over the micro-batches itself
  // (weights read once per block, used GA times); needs @train_step's
  // micro-batch loop, so after the optimizer, and after @eval_step copied
  // @forward (it is not serialised: evaluation reads no stash).
  // The forward's activation stays in the one carry row when that row can
  // stay on the device (at most a third of the budget: the placement keeps
  // activation rows first); larger, it flows through its rows, stored once
  // per layer.
  if (options.batchSerialise)
    pm.addPass(createBatchSerialisePass(
        options.deviceMemoryLimit > 0 ? options.deviceMemoryLimit / 3 : -1));
  // execution.mode: phased. The phase schedule on the serialised blocks:
  // what the runtime streams between, with the tied gradient in its own
  // buffer, per-phase gradient norms and one optimizer phase per layer.
  if (options.phased)
    pm.addPass(createPhasedExecutionPass());
  // Autodiff leaves duplicate constants and zero-gradient seeds; merge and
  // fold them before the memory plan sees them.
  pm.addPass(mlir::createCSEPass());
  pm.addPass(mlir::createCanonicalizerPass());
}

void ferry::buildLoweringPipeline(mlir::OpPassManager &pm,
                                  const LoweringPipelineOptions &options) {
  // execution.fusion. Last on graph IR: the training passes match and
  // rewrite graph.matmul, and fusing earlier would hide it from them. A
  // bias add, a scale or a bias gradient next to a matmul becomes that
  // GEMM's epilogue, so the plan below never sees their temporaries.
  if (options.fusion)
    pm.addPass(createFuseEpiloguesPass(
        /*foldOperandScales=*/options.matmulInputs != 2));
  // execution.fusion. The attention probabilities with their dropout, and
  // their gradient through it: one pass over the largest activation each
  // way instead of two.
  if (options.fusion)
    pm.addPass(createFuseSoftmaxDropoutPass());
  // execution.fusion. The end of each sublayer (dropout, residual add,
  // layer norm): one pass over [tokens, hidden] instead of three. After
  // ferry-fuse-softmax-dropout, which takes only the attention
  // probabilities' dropout.
  if (options.fusion)
    pm.addPass(createFuseResidualNormPass());
  // graph -> rt: kernels, liveness, the device arena, phased placement and
  // prefetch. Last: it needs every op final.
  pm.addPass(createLowerToRtPass(options.programs, options.deviceMemoryLimit,
                                 options.prefetch, options.matmulInputs,
                                 options.gemmWorkspace));
}

void ferry::registerFerryPasses() {
  mlir::registerPass([] { return createAutodiffPass(); });
  mlir::registerPass([] { return createInsertOptimizerPass(); });
  mlir::registerPass([] { return createInsertEvalPass(); });
  mlir::registerPass([] { return createRecomputePass(); });
  mlir::registerPass([] { return createBatchSerialisePass(); });
  mlir::registerPass([] { return createPhasedExecutionPass(); });
  mlir::registerPass([] { return createFuseEpiloguesPass(); });
  mlir::registerPass([] { return createFuseSoftmaxDropoutPass(); });
  mlir::registerPass([] { return createFuseResidualNormPass(); });
  mlir::registerPass([] { return createLowerToRtPass(); });
}

void ferry::registerFerryPipelines() {
  registerFerryPasses();
  mlir::PassPipelineRegistration<>(
      "ferry-training",
      "autodiff + optimizer and evaluation insertion + clean-up, as `ferry "
      "compile` runs "
      "them after the builder",
      [](mlir::OpPassManager &pm) { buildTrainingPipeline(pm); });
  mlir::PassPipelineRegistration<>(
      "ferry-graph-cleanup",
      "CSE and canonicalisation of graph IR, as `ferry compile` runs them "
      "after the BERT builder",
      buildGraphCleanupPipeline);
}
