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
  // decides whether the forward's activation can stay in one carry row.
  if (options.batchSerialise) {
    BatchSerialisePassOptions serialise;
    serialise.deviceMemoryLimit = options.deviceMemoryLimit;
    pm.addPass(createBatchSerialisePass(serialise));
  }
  // execution.mode: phased. The phase schedule on the serialised blocks:
  // what the runtime streams between, with the tied gradient in its own
  // buffer, per-phase gradient norms and one optimizer phase per layer.
  if (options.phased)
    pm.addPass(createPhasedExecutionPass());
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
                                  const LoweringPipelineOptions &options) {
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
                                   const LoweringPipelineOptions &options) {
  // graph -> rt calls on virtual buffers: the kernel for each op, loops with
  // registers, states and temporaries. First: every later pass works on the
  // calls and the access each kernel declares (Kernels.def).
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
  // execution.device_memory_limit and execution.prefetch: which states live
  // in host memory and what is double-buffered. It judges each candidate by
  // the plan the two passes below make, so it runs them on a copy.
  PlaceBuffersPassOptions place;
  place.deviceMemoryLimit = options.deviceMemoryLimit;
  place.prefetch = options.prefetch;
  pm.addPass(createPlaceBuffersPass(place));
  // Remote buffers staged through device buffers, phase by phase, with the
  // placement's prefetch levels. Adds temporaries, so before the layout.
  pm.addPass(createStageRemoteBuffersPass());
  // Addresses: states packed, temporaries by live range; rt.kernel calls.
  // Last: it needs every buffer and call final.
  pm.addPass(createLayoutArenaPass());
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
  Option<int64_t> replicas{*this, "replicas",
                           llvm::cl::desc("execution.data_parallel"),
                           llvm::cl::init(1)};
  Option<bool> rts{*this, "rts",
                   llvm::cl::desc("execution.replicated_tensor_sharding"),
                   llvm::cl::init(false)};
  Option<int64_t> rtsMinElements{
      *this, "rts-min-elements",
      llvm::cl::desc("execution.rts_min_elements"), llvm::cl::init(1024)};
  Option<bool> fuseAttention{
      *this, "fuse-attention",
      llvm::cl::desc("execution.fusion (not with fp16): graph.attention"),
      llvm::cl::init(false)};
};

// ferry-lower-to-rt's options; ferry-lowering adds `fusion`.
template <typename Flags>
struct LowerToRtFlagsBase : public mlir::PassPipelineOptions<Flags> {
  template <typename T>
  using Option = typename mlir::PassPipelineOptions<Flags>::template Option<T>;
  template <typename T>
  using ListOption =
      typename mlir::PassPipelineOptions<Flags>::template ListOption<T>;
  ListOption<std::string> programs{
      *this, "programs",
      llvm::cl::desc("entry functions to lower (default: train_step)")};
  Option<int64_t> deviceMemoryLimit{
      *this, "device-memory-limit",
      llvm::cl::desc("execution.device_memory_limit in bytes (0: none)"),
      llvm::cl::init(0)};
  Option<bool> prefetch{*this, "prefetch", llvm::cl::desc("execution.prefetch"),
                        llvm::cl::init(true)};
  Option<ferry::MatmulPrecision> matmulPrecision{
      *this, "matmul-precision",
      llvm::cl::desc("training.precision: how GEMMs round their inputs"),
      llvm::cl::init(ferry::MatmulPrecision::fp32),
      llvm::cl::values(
          clEnumValN(ferry::MatmulPrecision::fp32, "fp32", "fp32"),
          clEnumValN(ferry::MatmulPrecision::bf16, "bf16", "bf16"),
          clEnumValN(ferry::MatmulPrecision::fp16, "fp16", "fp16"))};
  Option<int64_t> gemmWorkspace{
      *this, "gemm-workspace",
      llvm::cl::desc("cuBLASLt scratch per GEMM in bytes (cuda)"),
      llvm::cl::init(0)};
  Option<bool> bf16Activations{
      *this, "bf16-activations",
      llvm::cl::desc("with matmul-precision=bf16: store activations as bf16 "
                     "(training.bf16_activations)"),
      llvm::cl::init(true)};
  Option<bool> bf16WeightCopies{
      *this, "bf16-weight-copies",
      llvm::cl::desc("with matmul-precision=bf16: GEMMs read a bf16 copy of "
                     "each weight (training.bf16_weight_copies)"),
      llvm::cl::init(true)};

  ferry::LoweringPipelineOptions toOptions() const {
    ferry::LoweringPipelineOptions o;
    o.programs.assign(programs.begin(), programs.end());
    o.deviceMemoryLimit = deviceMemoryLimit;
    o.prefetch = prefetch;
    o.matmulPrecision = matmulPrecision;
    o.gemmWorkspace = gemmWorkspace;
    o.bf16Activations = bf16Activations;
    o.bf16WeightCopies = bf16WeightCopies;
    return o;
  }
};

struct LowerToRtFlags : public LowerToRtFlagsBase<LowerToRtFlags> {};

struct LoweringPipelineFlags
    : public LowerToRtFlagsBase<LoweringPipelineFlags> {
  Option<bool> fusion{*this, "fusion", llvm::cl::desc("execution.fusion"),
                      llvm::cl::init(true)};
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
        options.replicas = flags.replicas;
        options.rts = flags.rts;
        options.rtsMinElements = flags.rtsMinElements;
        options.fuseAttention = flags.fuseAttention;
        buildTrainingPipeline(pm, options);
      });
  mlir::PassPipelineRegistration<LoweringPipelineFlags>(
      "ferry-lowering",
      "fusion and the lowering to rt programs: what `ferry compile` runs "
      "after the training pipeline",
      [](mlir::OpPassManager &pm, const LoweringPipelineFlags &flags) {
        ferry::LoweringPipelineOptions options = flags.toOptions();
        options.fusion = flags.fusion;
        buildLoweringPipeline(pm, options);
      });
  mlir::PassPipelineRegistration<LowerToRtFlags>(
      "ferry-lower-to-rt",
      "graph -> rt: ferry-select-kernels, ferry-forward-buffers, "
      "ferry-place-buffers, ferry-stage-remote-buffers, ferry-layout-arena "
      "(ferry-lowering without fusion)",
      [](mlir::OpPassManager &pm, const LowerToRtFlags &flags) {
        buildLowerToRtPipeline(pm, flags.toOptions());
      });
  mlir::PassPipelineRegistration<>(
      "ferry-graph-cleanup",
      "CSE and canonicalisation of graph IR, as `ferry compile` runs them "
      "after the BERT builder",
      buildGraphCleanupPipeline);
}
