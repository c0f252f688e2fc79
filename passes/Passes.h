//===- Passes.h - ferry's passes --------------------------------*- C++ -*-===//
//
// One pass per file in passes/; each has its lit test in test/passes/.
// Pipelines that combine them live in Pipelines.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_PASSES_PASSES_H
#define FERRY_PASSES_PASSES_H

#include "mlir/Pass/Pass.h"
#include "llvm/ADT/ArrayRef.h"

#include <memory>
#include <string>

namespace ferry {

// ferry-autodiff: reverse-mode differentiation of the entry function (default
// @forward, its result 0 is the loss) with respect to every graph.parameter.
// Emits @<entry>_grad, which computes the same results and adds each
// parameter's gradient into a @grad.<name> variable; each called block
// function is split into @<block>_fwd (results + stash) and @<block>_bwd.
// With `lossScale` (a variable name), the backward is seeded with that
// variable's value instead of 1 (fp16 loss scaling).
std::unique_ptr<mlir::Pass> createAutodiffPass(std::string entry = "forward",
                                               std::string lossScale = "");

// ferry-insert-optimizer: builds @train_step(%step) around @forward_grad:
// gradient accumulation over the micro-batches of one update, the global
// gradient norm, the learning-rate schedule and one LAMB or AdamW update per
// parameter, from the module's ferry.training attributes.
std::unique_ptr<mlir::Pass> createInsertOptimizerPass();

// ferry-insert-eval: builds @eval_step() beside @train_step: the forward
// pass without dropout over the micro-batches of @train_step's inputs,
// summing the MLM and NSP losses and hits into @metric.eval.*.
std::unique_ptr<mlir::Pass> createInsertEvalPass();

// ferry-recompute: keeps only each layer's input for the backward and
// re-runs @<block>_fwd inside the backward loop right before @<block>_bwd
// (execution.recompute: layer). Run after ferry-autodiff.
std::unique_ptr<mlir::Pass> createRecomputePass();

// ferry-batch-serialise: inlines @forward_grad into @train_step's
// micro-batch loop and splits it so each block (embeddings, layer loop,
// heads, backward layer loop, embeddings' backward) loops over the GA
// micro-batches itself; layer activations live in rows x GA variables
// (@stash.x, @stash.dx). Run after ferry-insert-optimizer.
// `carryForwardMaxBytes`: the forward's activation flows through the one
// carry row when it has at most this many bytes (-1: always), else through
// its rows (where the carry cannot stay on the device).
std::unique_ptr<mlir::Pass>
createBatchSerialisePass(int64_t carryForwardMaxBytes = -1);

// ferry-phased-execution: cuts the serialised @train_step (and @eval_step)
// into graph.phase regions, PopXL's phase schedule: tied gradients in their
// own variables, each gradient's norm taken in the phase that completes it,
// the optimizer one layer per phase. Run after ferry-batch-serialise.
std::unique_ptr<mlir::Pass> createPhasedExecutionPass();

// ferry-fuse-epilogues: folds the op next to a graph.matmul that the same
// GEMM call can compute (a bias add, a scale, a linear layer's bias
// gradient) into graph.fused_matmul. Run right before ferry-lower-to-rt.
std::unique_ptr<mlir::Pass>
createFuseEpiloguesPass(bool foldOperandScales = true);
// ferry-fuse-softmax-dropout: dropout(softmax(x)) -> graph.softmax_dropout,
// softmax_grad(y, dropout(dy)) -> graph.dropout_softmax_grad (the attention
// probabilities in one pass each way). Run right before ferry-lower-to-rt.
std::unique_ptr<mlir::Pass> createFuseSoftmaxDropoutPass();
// ferry-fuse-residual-norm: layer_norm(add(dropout(y), residual)) ->
// graph.residual_layer_norm (the end of a BERT sublayer in one pass). Run
// right before ferry-lower-to-rt.
std::unique_ptr<mlir::Pass> createFuseResidualNormPass();
// ferry-lower-to-rt: graph IR -> rt programs (one per named entry function)
// and rt.state ops, with a liveness-based plan of the device arena.
// With phases (ferry-phased-execution), states only phases touch may live in
// host memory: they stay on the device while `deviceMemoryLimit` (bytes, 0:
// unlimited) allows, and each phase stages the rest through device buffers,
// double-buffered over loops when `prefetch` (execution.prefetch).
std::unique_ptr<mlir::Pass>
// matmulInputs: 0 fp32, 1 rounded to bf16, 2 rounded to fp16 (fp32
// accumulation either way). gemmWorkspace: bytes of scratch every GEMM gets
// in the plan (the CUDA backend's cuBLASLt workspace; 0 on the CPU).
createLowerToRtPass(llvm::ArrayRef<std::string> programs = {},
                    int64_t deviceMemoryLimit = 0, bool prefetch = true,
                    int matmulInputs = 0, int64_t gemmWorkspace = 0);

void registerFerryPasses();

} // namespace ferry

#endif // FERRY_PASSES_PASSES_H
