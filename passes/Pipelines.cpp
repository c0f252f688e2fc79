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
  AutodiffPassOptions autodiff;
  autodiff.lossScale = options.lossScaling ? "input.loss_scale" : "";
  pm.addPass(createAutodiffPass(autodiff));
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
  if (options.batchSerialise) {
    BatchSerialisePassOptions serialise;
    serialise.carryForwardMaxBytes =
        options.deviceMemoryLimit > 0 ? options.deviceMemoryLimit / 3 : -1;
    pm.addPass(createBatchSerialisePass(serialise));
  }
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
  if (options.fusion) {
    FuseEpiloguesPassOptions epilogues;
    epilogues.foldOperandScales = options.matmulInputs != 2;
    pm.addPass(createFuseEpiloguesPass(epilogues));
  }
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
  LowerToRtPassOptions lower;
  lower.programs.assign(options.programs.begin(), options.programs.end());
  lower.deviceMemoryLimit = options.deviceMemoryLimit;
  lower.prefetch = options.prefetch;
  lower.matmulInputs = options.matmulInputs;
  lower.gemmWorkspace = options.gemmWorkspace;
  pm.addPass(createLowerToRtPass(lower));
}

namespace {

// The pipelines' options on the command line, so `ferry-opt
// --ferry-training=recompute=true ...` and `--ferry-lowering=...` replay what
// `ferry compile` runs (its --dump-ir manifest gives the options).
struct TrainingPipelineFlags
    : public mlir::PassPipelineOptions<TrainingPipelineFlags> {
  Option<bool> recompute{*this, "recompute",
                         llvm::cl::desc("execution.recompute: layer"),
                         llvm::cl::init(false)};
  Option<bool> phased{*this, "phased",
                      llvm::cl::desc("execution.mode: phased (batch "
                                     "serialisation and the phase schedule)"),
                      llvm::cl::init(false)};
  Option<bool> lossScaling{*this, "loss-scaling",
                           llvm::cl::desc("training.precision: fp16"),
                           llvm::cl::init(false)};
  Option<int64_t> deviceMemoryLimit{
      *this, "device-memory-limit",
      llvm::cl::desc("execution.device_memory_limit in bytes (0: none)"),
      llvm::cl::init(0)};
};

struct LoweringPipelineFlags
    : public mlir::PassPipelineOptions<LoweringPipelineFlags> {
  ListOption<std::string> programs{
      *this, "programs",
      llvm::cl::desc("entry functions to lower (default: train_step)")};
  Option<int64_t> deviceMemoryLimit{
      *this, "device-memory-limit",
      llvm::cl::desc("execution.device_memory_limit in bytes (0: none)"),
      llvm::cl::init(0)};
  Option<bool> prefetch{*this, "prefetch", llvm::cl::desc("execution.prefetch"),
                        llvm::cl::init(true)};
  Option<int> matmulInputs{
      *this, "matmul-inputs",
      llvm::cl::desc("training.precision: 0 fp32, 1 bf16, 2 fp16"),
      llvm::cl::init(0)};
  Option<bool> fusion{*this, "fusion", llvm::cl::desc("execution.fusion"),
                      llvm::cl::init(true)};
  Option<int64_t> gemmWorkspace{
      *this, "gemm-workspace",
      llvm::cl::desc("cuBLASLt scratch per GEMM in bytes (cuda)"),
      llvm::cl::init(0)};
};

} // namespace

void ferry::registerFerryPipelines() {
  registerFerryPasses();
  mlir::PassPipelineRegistration<TrainingPipelineFlags>(
      "ferry-training",
      "autodiff, recomputation, optimizer and evaluation insertion, batch "
      "serialisation and phases, clean-up: what `ferry compile` runs after "
      "the builder",
      [](mlir::OpPassManager &pm, const TrainingPipelineFlags &flags) {
        TrainingPipelineOptions options;
        options.recompute = flags.recompute;
        options.batchSerialise = options.phased = flags.phased;
        options.lossScaling = flags.lossScaling;
        options.deviceMemoryLimit = flags.deviceMemoryLimit;
        buildTrainingPipeline(pm, options);
      });
  mlir::PassPipelineRegistration<LoweringPipelineFlags>(
      "ferry-lowering",
      "fusion and the lowering to rt programs: what `ferry compile` runs "
      "after the training pipeline",
      [](mlir::OpPassManager &pm, const LoweringPipelineFlags &flags) {
        LoweringPipelineOptions options;
        options.programs.assign(flags.programs.begin(), flags.programs.end());
        options.deviceMemoryLimit = flags.deviceMemoryLimit;
        options.prefetch = flags.prefetch;
        options.matmulInputs = flags.matmulInputs;
        options.fusion = flags.fusion;
        options.gemmWorkspace = flags.gemmWorkspace;
        buildLoweringPipeline(pm, options);
      });
  mlir::PassPipelineRegistration<>(
      "ferry-graph-cleanup",
      "CSE and canonicalisation of graph IR, as `ferry compile` runs them "
      "after the BERT builder",
      buildGraphCleanupPipeline);
}
