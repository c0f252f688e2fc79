//===- Reduction.td - the Reduction kernels ----------------*- tablegen -*-===//
//
// One record per kernel of the Reduction family (RtKernelBase.td says what a
// record holds). The number after the mnemonic is the kernel's index in the
// executable: append-only across all families.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_DIALECTS_RT_KERNELS_REDUCTION_TD
#define FERRY_DIALECTS_RT_KERNELS_REDUCTION_TD

include "dialects/rt/kernels/RtKernelBase.td"

def Rt_ReduceOp : RtKernel<"reduce", 28, "Reduction"> {
  let kernelEnum = "Reduce";
  let doc = "out[o, i] = reduction over r of x[o, r, i], for x viewed as [outer, size, inner]";
  let ints = [
    RtInt<"kind", "0 sum, 1 mean, 2 max, 3 sum of squares">,
    RtInt<"outer", "outer extent">,
    RtInt<"size", "the reduced dimension">,
    RtInt<"inner", "inner extent">];
  let buffers = [
    RtBuffer<"x", RtIn, RtF32, "outer * size * inner", "input">,
    RtBuffer<"out", RtOut, RtF32, "outer * inner", "result">];
  let disjoint = [
    RtDisjoint<"out", "x">];
}

def Rt_GlobalNormOp : RtKernel<"global_norm", 33, "Reduction"> {
  let kernelEnum = "GlobalNorm";
  let doc = "out[0] = sqrt of the sum of squares of every element of every tensor, accumulated in double";
  let ints = [
    RtInt<"counts", "elements of each tensor", RtRest>];
  let buffers = [
    RtBuffer<"tensors", RtIn, RtF32, "counts[i]", "the tensors, one per count", RtRest>,
    RtBuffer<"out", RtOut, RtF32, "1", "the norm">];
}

def Rt_LearningRateOp : RtKernel<"learning_rate", 34, "Reduction"> {
  let kernelEnum = "LearningRate";
  let doc = "out[0] = the learning rate after `step` updates (ARCHITECTURE.md, \"Learning rate\")";
  let ints = [
    RtInt<"kind", "0 poly, 1 constant">,
    RtInt<"warmup_steps", "linear warm-up length">,
    RtInt<"start_warmup_step", "update at which the warm-up starts">,
    RtInt<"total_steps", "updates of the schedule">,
    RtInt<"step", "updates applied", RtRequired, /*perStep=*/1>];
  let floats = [
    RtFloat<"lr", "peak rate">,
    RtFloat<"power", "polynomial decay power">];
  let buffers = [
    RtBuffer<"out", RtOut, RtF32, "1", "the rate">];
}

def Rt_OptimizerUpdateOp : RtKernel<"optimizer_update", 35, "Reduction"> {
  let kernelEnum = "OptimizerUpdate";
  let doc = "one AdamW or LAMB update of `segments` tensors of `count` elements (LAMB's trust ratio per segment), the gradient first scaled by min(1, clip_norm / norm); formulas in ARCHITECTURE.md, \"Optimizers\"";
  let ints = [
    RtInt<"count", "elements of a segment">,
    RtInt<"segments", "segments (a stacked parameter has one per layer)">,
    RtInt<"step", "updates applied before this one", RtRequired, /*perStep=*/1>,
    RtInt<"lamb", "1: LAMB, 0: AdamW">];
  let floats = [
    RtFloat<"beta1", "first-moment decay">,
    RtFloat<"beta2", "second-moment decay">,
    RtFloat<"epsilon", "added to the root of the second moment">,
    RtFloat<"weight_decay", "decoupled weight decay (0: none)">,
    RtFloat<"clip_norm", "gradient clipping norm (0: none)">];
  let buffers = [
    RtBuffer<"w", RtInOut, RtF32, "count * segments", "the parameter">,
    RtBuffer<"g", RtIn, RtF32, "count * segments", "its gradient">,
    RtBuffer<"m", RtInOut, RtF32, "count * segments", "first moment">,
    RtBuffer<"v", RtInOut, RtF32, "count * segments", "second moment">,
    RtBuffer<"lr", RtIn, RtF32, "1", "learning rate">,
    RtBuffer<"norm", RtIn, RtF32, "1", "global gradient norm">,
    RtBuffer<"loss_scale", RtIn, RtF32, "0", "fp16 loss scale: the gradient is divided by it, and a non-finite norm skips the update", RtOptional>];
}

def Rt_LambMomentsOp : RtKernel<"lamb_moments", 49, "Reduction"> {
  let kernelEnum = "LambMoments";
  let doc = "LAMB's first pass over `segments` shards of `count` elements: the moments updated as optimizer_update does, and sums[s] = sum of w^2, sums[segments + s] = sum of u^2 over segment s (u: the update direction); replicated tensor sharding all-reduces the sums, then lamb_apply";
  let ints = [
    RtInt<"count", "elements of a segment's shard">,
    RtInt<"segments", "segments (one per layer of a stacked parameter)">,
    RtInt<"step", "updates applied before this one", RtRequired, /*perStep=*/1>];
  let floats = [
    RtFloat<"beta1", "first-moment decay">,
    RtFloat<"beta2", "second-moment decay">,
    RtFloat<"epsilon", "added to the root of the second moment">,
    RtFloat<"weight_decay", "decoupled weight decay (0: none)">,
    RtFloat<"clip_norm", "gradient clipping norm (0: none)">];
  let buffers = [
    RtBuffer<"w", RtIn, RtF32, "count * segments", "the parameter's shard">,
    RtBuffer<"g", RtIn, RtF32, "count * segments", "its gradient's shard">,
    RtBuffer<"m", RtInOut, RtF32, "count * segments", "first moment">,
    RtBuffer<"v", RtInOut, RtF32, "count * segments", "second moment">,
    RtBuffer<"norm", RtIn, RtF32, "1", "global gradient norm">,
    RtBuffer<"sums", RtOut, RtF32, "2 * segments", "this replica's sums of w^2, then of u^2, per segment">,
    RtBuffer<"loss_scale", RtIn, RtF32, "0", "fp16 loss scale: the gradient is divided by it, and a non-finite norm skips the update", RtOptional>];
}

def Rt_LambApplyOp : RtKernel<"lamb_apply", 50, "Reduction"> {
  let kernelEnum = "LambApply";
  let doc = "LAMB's second pass: w -= lr * r_s * u with the trust ratio r_s = sqrt(sums[s]) / sqrt(sums[segments + s]) (1 when either is 0) from the summed norms";
  let ints = [
    RtInt<"count", "elements of a segment's shard">,
    RtInt<"segments", "segments (one per layer of a stacked parameter)">,
    RtInt<"step", "updates applied before this one", RtRequired, /*perStep=*/1>];
  let floats = [
    RtFloat<"beta1", "first-moment decay">,
    RtFloat<"beta2", "second-moment decay">,
    RtFloat<"epsilon", "added to the root of the second moment">,
    RtFloat<"weight_decay", "decoupled weight decay (0: none)">];
  let buffers = [
    RtBuffer<"w", RtInOut, RtF32, "count * segments", "the parameter's shard">,
    RtBuffer<"m", RtIn, RtF32, "count * segments", "first moment (updated)">,
    RtBuffer<"v", RtIn, RtF32, "count * segments", "second moment (updated)">,
    RtBuffer<"lr", RtIn, RtF32, "1", "learning rate">,
    RtBuffer<"norm", RtIn, RtF32, "1", "global gradient norm (a non-finite one skips, with a loss scale)">,
    RtBuffer<"sums", RtIn, RtF32, "2 * segments", "the sums of w^2 and u^2 over every replica's shard">,
    RtBuffer<"loss_scale", RtIn, RtF32, "0", "fp16 loss scale: present when the update may be skipped", RtOptional>];
}

#endif // FERRY_DIALECTS_RT_KERNELS_REDUCTION_TD
