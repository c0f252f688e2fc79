//===- Pipelines.cpp - ferry's pass pipelines, in one place ---------------===//
//
// Every pipeline ferry runs is assembled here, each pass with the reason it
// sits where it does.
//
//===----------------------------------------------------------------------===//

#include "passes/Pipelines.h"
#include "passes/DeviceBudget.h"
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
                                  const PipelineOptions &options) {
  // execution.tensor_parallel > 1. First: the mesh and the parameters'
  // splits (Megatron's layout, then execution.tensor_sharding), then every
  // split value at this rank's shape with f and g where shardings meet, on
  // the model as the builder wrote it, so autodiff derives the backward's
  // collectives and recomputation reissues the forward's.
  if (options.tensorParallel > 1) {
    ShardParametersPassOptions shard;
    shard.tensorParallel = options.tensorParallel;
    shard.dataParallel = options.replicas;
    shard.shardings.assign(options.tensorSharding.begin(),
                           options.tensorSharding.end());
    pm.addPass(createShardParametersPass(shard));
    PartitionTensorsPassOptions partition;
    partition.sequenceParallel = options.sequenceParallel;
    pm.addPass(createPartitionTensorsPass(partition));
  }
  // execution.fusion (bf16 or fp32 products). First, before autodiff:
  // graph.attention's own gradient recomputes the probabilities from each
  // row's logsumexp, so neither direction stores [batch, heads, seq, seq]
  // (after autodiff the probabilities would already be stashed). fp16
  // keeps the unfused chain: the fused kernels take fp32 or bf16 products.
  if (options.fuseAttention)
    pm.addPass(createFuseAttentionPass());
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
  // @forward (it is not serialised: evaluation reads no stash). The budget
  // decides whether the forward's activation can stay in one carry row
  // (what ferry-place-buffers, which owns the budget, says fits).
  if (options.phased) {
    BatchSerialisePassOptions serialise;
    serialise.carryRowBudget = carryRowBudget(options.deviceBudget);
    pm.addPass(createBatchSerialisePass(serialise));
  }
  // execution.mode: phased. The phase schedule on the serialised blocks:
  // what the runtime streams between, with the tied gradient in its own
  // buffer, per-phase gradient norms and one optimizer phase per layer.
  if (options.phased)
    pm.addPass(createPhasedExecutionPass());
  // execution.tensor_parallel > 1. Split gradients' norms over the tensor
  // group, where the phase schedule takes them; before the data-parallel
  // sums, which then sum those gradients where the new norms read them.
  if (options.tensorParallel > 1)
    pm.addPass(createCompleteSplitNormsPass());
  // execution.data_parallel > 1. Last: it sums each gradient where its norm
  // is taken, which the phase schedule decides, and the metrics at the end
  // of the entry functions the passes above built.
  if (options.replicas > 1) {
    InsertCollectivesPassOptions collectives;
    collectives.replicas = options.replicas;
    collectives.rts = options.rts;
    collectives.rtsMinElements = options.rtsMinElements;
    pm.addPass(createInsertCollectivesPass(collectives));
  }
  // Autodiff leaves duplicate constants and zero-gradient seeds; merge and
  // fold them before the memory plan sees them.
  pm.addPass(mlir::createCSEPass());
  pm.addPass(mlir::createCanonicalizerPass());
}

void ferry::buildLoweringPipeline(mlir::OpPassManager &pm,
                                  const PipelineOptions &options) {
  // execution.fusion. Last on graph IR: the training passes match and
  // rewrite graph.matmul, and fusing earlier would hide it from them. A
  // bias add, a scale or a bias gradient next to a matmul becomes that
  // GEMM's epilogue, so the plan below never sees their temporaries.
  if (options.fusion) {
    FuseEpiloguesPassOptions epilogues;
    epilogues.foldOperandScales =
        options.matmulPrecision != ferry::MatmulPrecision::fp16;
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
  buildLowerToRtPipeline(pm, options);
}

void ferry::buildLowerToRtPipeline(mlir::OpPassManager &pm,
                                   const PipelineOptions &options) {
  // graph -> rt calls on virtual buffers: the kernel for each op, loops with
  // registers, states and temporaries. First: every later pass works on the
  // calls and the access each kernel declares (its kernel record).
  SelectKernelsPassOptions select;
  select.programs.assign(options.programs.begin(), options.programs.end());
  select.matmulPrecision = options.matmulPrecision;
  select.gemmWorkspace = options.gemmWorkspace;
  pm.addPass(createSelectKernelsPass(select));
  // Results computed where they are copied or accumulated to. Before any
  // planning: the temporaries it frees must not count against the budget.
  pm.addPass(createForwardBuffersPass());
  // training.precision: bf16 (and training.bf16_activations): activations
  // whose every kernel can take bf16 are stored so, half the bytes. After
  // forwarding (its copies are gone), before anything sizes the plan.
  if (options.bf16Activations &&
      options.matmulPrecision == MatmulPrecision::bf16)
    pm.addPass(createPlanBf16StoragePass());
  // training.precision: bf16 (and training.bf16_weight_copies): each GEMM
  // reads a bf16 copy of its weight, made once where the weight is
  // unchanged, instead of rounding it in every call. Adds temporaries, so
  // before anything sizes the plan.
  if (options.bf16WeightCopies &&
      options.matmulPrecision == MatmulPrecision::bf16)
    pm.addPass(createPlanBf16WeightCopiesPass());
  // The device budget and execution.prefetch: which states live in host
  // memory and what is double-buffered. It judges each candidate by the
  // plan the two passes below make, so it runs them on a copy; a budget no
  // plan meets, resident or phased, is refused here.
  PlaceBuffersPassOptions place;
  place.deviceBudget = options.deviceBudget;
  place.budgetSource = options.budgetSource;
  place.prefetch = options.prefetch;
  pm.addPass(createPlaceBuffersPass(place));
  // Remote buffers staged through device buffers, phase by phase, with the
  // placement's prefetch levels. Adds temporaries, so before the layout.
  pm.addPass(createStageRemoteBuffersPass());
  // Addresses: states packed, temporaries by live range; slices of rt.arena.
  // Last: it needs every buffer and call final.
  pm.addPass(createLayoutArenaPass());
}

void ferry::buildCompilePipeline(mlir::OpPassManager &pm,
                                 const PipelineOptions &options) {
  buildTrainingPipeline(pm, options);
  buildLoweringPipeline(pm, options);
}

namespace {

// The pipelines' options on the command line, made from the one list
// (PipelineOptions.def), so `ferry-opt --pass-pipeline=
// 'builtin.module(ferry-compile{...})'` replays what `ferry compile` runs
// (its --dump-ir manifest gives the options).
struct PipelineFlags : public mlir::PassPipelineOptions<PipelineFlags> {
#define FERRY_PIPELINE_OPTION(TYPE, FIELD, FLAG, DEFAULT, DESCRIPTION, ...)    \
  Option<TYPE> FIELD{*this, FLAG, llvm::cl::desc(DESCRIPTION),                 \
                     llvm::cl::init(DEFAULT), ##__VA_ARGS__};
#define FERRY_PIPELINE_LIST_OPTION(FIELD, FLAG, DESCRIPTION)                   \
  ListOption<std::string> FIELD{*this, FLAG, llvm::cl::desc(DESCRIPTION)};
#include "passes/PipelineOptions.def"

  ferry::PipelineOptions options() const {
    ferry::PipelineOptions o;
#define FERRY_PIPELINE_OPTION(TYPE, FIELD, ...) o.FIELD = FIELD;
#define FERRY_PIPELINE_LIST_OPTION(FIELD, FLAG, DESCRIPTION)                   \
  o.FIELD.assign(FIELD.begin(), FIELD.end());
#include "passes/PipelineOptions.def"
    return o;
  }
};

} // namespace

void ferry::registerFerryPipelines() {
  registerFerryPasses();
  mlir::PassPipelineRegistration<PipelineFlags>(
      "ferry-compile",
      "the training pipeline, then the lowering: everything `ferry compile` "
      "runs after the builder's clean-up",
      [](mlir::OpPassManager &pm, const PipelineFlags &flags) {
        buildCompilePipeline(pm, flags.options());
      });
  mlir::PassPipelineRegistration<PipelineFlags>(
      "ferry-training",
      "autodiff, recomputation, optimizer and evaluation insertion, batch "
      "serialisation and phases, clean-up: what `ferry compile` runs after "
      "the builder",
      [](mlir::OpPassManager &pm, const PipelineFlags &flags) {
        buildTrainingPipeline(pm, flags.options());
      });
  mlir::PassPipelineRegistration<PipelineFlags>(
      "ferry-lowering",
      "fusion and the lowering to rt programs: what `ferry compile` runs "
      "after the training pipeline",
      [](mlir::OpPassManager &pm, const PipelineFlags &flags) {
        buildLoweringPipeline(pm, flags.options());
      });
  mlir::PassPipelineRegistration<PipelineFlags>(
      "ferry-lower-to-rt",
      "graph -> rt: ferry-select-kernels, ferry-forward-buffers, "
      "ferry-plan-bf16-storage and ferry-plan-bf16-weight-copies (bf16 "
      "matmuls only), ferry-place-buffers, ferry-stage-remote-buffers, "
      "ferry-layout-arena (ferry-lowering without fusion)",
      [](mlir::OpPassManager &pm, const PipelineFlags &flags) {
        buildLowerToRtPipeline(pm, flags.options());
      });
  mlir::PassPipelineRegistration<>(
      "ferry-graph-cleanup",
      "CSE and canonicalisation of graph IR, as `ferry compile` runs them "
      "after the BERT builder",
      buildGraphCleanupPipeline);
}
