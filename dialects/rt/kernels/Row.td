//===- Row.td - the Row kernels ----------------------------*- tablegen -*-===//
//
// One record per kernel of the Row family (RtKernelBase.td says what a
// record holds). The number after the mnemonic is the kernel's index in the
// executable: append-only across all families.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_DIALECTS_RT_KERNELS_ROW_TD
#define FERRY_DIALECTS_RT_KERNELS_ROW_TD

include "dialects/rt/kernels/RtKernelBase.td"

def Rt_LayerNormOp : RtKernel<"layer_norm", 22, "Row"> {
  let kernelEnum = "LayerNorm";
  let doc = "out = (x - mean) / sqrt(var + eps) * scale + bias over each row (biased variance, as PyTorch)";
  let ints = [
    RtInt<"rows", "rows">,
    RtInt<"cols", "elements normalised together">];
  let floats = [
    RtFloat<"eps", "added to the variance">];
  let buffers = [
    RtBuffer<"x", RtIn, RtF32, "rows * cols", "input">,
    RtBuffer<"scale", RtIn, RtF32, "cols", "gamma">,
    RtBuffer<"bias", RtIn, RtF32, "cols", "beta">,
    RtBuffer<"out", RtOut, RtF32, "rows * cols", "result">];
  let bf16 = [
    RtBf16<"x", "true">,
    RtBf16<"out", "true">];
}

def Rt_LayerNormGradOp : RtKernel<"layer_norm_grad", 23, "Row"> {
  let kernelEnum = "LayerNormGrad";
  let doc = "dx from (x, scale, dy), recomputing the statistics; dscale = sum over rows of dy * xhat, dbias = sum over rows of dy (both overwritten)";
  let ints = [
    RtInt<"rows", "rows">,
    RtInt<"cols", "elements normalised together">];
  let floats = [
    RtFloat<"eps", "added to the variance">];
  let buffers = [
    RtBuffer<"x", RtIn, RtF32, "rows * cols", "the forward input">,
    RtBuffer<"scale", RtIn, RtF32, "cols", "gamma">,
    RtBuffer<"dy", RtIn, RtF32, "rows * cols", "gradient of the output">,
    RtBuffer<"dx", RtOut, RtF32, "rows * cols", "gradient of the input">,
    RtBuffer<"dscale", RtOut, RtF32, "cols", "gradient of gamma">,
    RtBuffer<"dbias", RtOut, RtF32, "cols", "gradient of beta">,
    RtBuffer<"workspace", RtOut, RtF32, "2 * rows", "the CUDA backend's per-row mean and reciprocal deviation for the column sums (the CPU backend recomputes them)", RtOptional>];
  let disjoint = [
    RtDisjoint<"dx", "x">,
    RtDisjoint<"dx", "scale">,
    RtDisjoint<"dx", "dy">,
    RtDisjoint<"dscale", "x">,
    RtDisjoint<"dscale", "dy">,
    RtDisjoint<"dbias", "x">,
    RtDisjoint<"dbias", "dy">];
  let bf16 = [
    RtBf16<"x", "true">,
    RtBf16<"dy", "true">,
    RtBf16<"dx", "true">];
}

def Rt_SoftmaxOp : RtKernel<"softmax", 24, "Row"> {
  let kernelEnum = "Softmax";
  let doc = "out = softmax(x + mask[b]) over the last dimension of x viewed as [batch, rows, cols]";
  let ints = [
    RtInt<"batch", "samples (one mask row each)">,
    RtInt<"rows", "rows per sample">,
    RtInt<"cols", "the normalised dimension">];
  let buffers = [
    RtBuffer<"x", RtIn, RtF32, "batch * rows * cols", "scores">,
    RtBuffer<"mask", RtIn, RtF32, "batch * cols", "additive mask [batch, cols]">,
    RtBuffer<"out", RtOut, RtF32, "batch * rows * cols", "probabilities">,
    RtBuffer<"sequence_ids", RtIn, RtI32, "batch * cols", "packed rows: each token's sequence [batch, cols]; x is [batch, ..., cols queries, cols keys] and a query's row gives keys of other sequences probability 0 (absent: one sequence a row)", RtOptional>];
  let bf16 = [
    RtBf16<"x", "true">,
    RtBf16<"out", "true">];
}

def Rt_SoftmaxGradOp : RtKernel<"softmax_grad", 25, "Row"> {
  let kernelEnum = "SoftmaxGrad";
  let doc = "dx = y * (dy - sum(dy * y)) per row";
  let ints = [
    RtInt<"rows", "rows">,
    RtInt<"cols", "the normalised dimension">];
  let buffers = [
    RtBuffer<"y", RtIn, RtF32, "rows * cols", "the forward probabilities">,
    RtBuffer<"dy", RtIn, RtF32, "rows * cols", "gradient of the probabilities">,
    RtBuffer<"dx", RtOut, RtF32, "rows * cols", "gradient of the scores">];
  let bf16 = [
    RtBf16<"y", "true">,
    RtBf16<"dy", "true">,
    RtBf16<"dx", "true">];
}

def Rt_DropoutOp : RtKernel<"dropout", 26, "Row"> {
  let kernelEnum = "Dropout";
  let doc = "out[e] = x[e] / (1 - p) where element e of sample sample_offset + e / per_sample is kept (Philox, keyed by seed, purpose, layer, sample and element), else 0; p 0 copies";
  let ints = [
    RtInt<"count", "elements">,
    RtInt<"per_sample", "elements per sample">,
    RtInt<"seed", "training.seed">,
    RtInt<"purpose", "hash of the dropout site's name">,
    RtInt<"layer", "layer entry">,
    RtInt<"sample_offset", "global index of the first sample", RtRequired, /*perStep=*/1>,
    RtInt<"key_layout", "packed rows (with dropout_keys): 1 a sample is [key_seq tokens, per_sample / key_seq], 2 it is [heads, key_seq, key_seq] (the attention probabilities)", RtOptional>,
    RtInt<"key_seq", "packed rows: tokens a row", RtOptional>,
    RtInt<"tensor_key_stride", "tensor parallelism: x is the tensor rank's part of each sample, whose keys start at rank x this (absent: 0)", RtOptional>];
  let floats = [
    RtFloat<"p", "drop probability">];
  let buffers = [
    RtBuffer<"x", RtIn, RtF32, "count", "input">,
    RtBuffer<"out", RtOut, RtF32, "count", "result">,
    RtBuffer<"dropout_keys", RtIn, RtI32, "2 * (count / per_sample) * key_seq", "packed rows: each token's (sample key, position in its sample), [batch, key_seq, 2]; an element takes the decision of the same element of its unpacked sample (absent: sample sample_offset + e / per_sample)", RtOptional>];
  let bf16 = [
    RtBf16<"x", "true">,
    RtBf16<"out", "true">];
}

def Rt_SoftmaxDropoutOp : RtKernel<"softmax_dropout", 41, "Row"> {
  let kernelEnum = "SoftmaxDropout";
  let doc = "probs = softmax(x + mask), out = dropout(probs): the attention probabilities, fused";
  let ints = [
    RtInt<"batch", "as softmax">,
    RtInt<"rows", "as softmax">,
    RtInt<"cols", "as softmax">,
    RtInt<"count", "as dropout">,
    RtInt<"per_sample", "as dropout">,
    RtInt<"seed", "as dropout">,
    RtInt<"purpose", "as dropout">,
    RtInt<"layer", "as dropout">,
    RtInt<"sample_offset", "as dropout", RtRequired, /*perStep=*/1>,
    RtInt<"tensor_key_stride", "as dropout", RtOptional>];
  let floats = [
    RtFloat<"p", "drop probability">];
  let buffers = [
    RtBuffer<"x", RtIn, RtF32, "count", "scores">,
    RtBuffer<"mask", RtIn, RtF32, "batch * cols", "additive mask [batch, cols]">,
    RtBuffer<"probs", RtOut, RtF32, "count", "probabilities (kept for the backward)">,
    RtBuffer<"out", RtOut, RtF32, "count", "dropped-out probabilities">,
    RtBuffer<"sequence_ids", RtIn, RtI32, "batch * cols", "as softmax", RtOptional>,
    RtBuffer<"dropout_keys", RtIn, RtI32, "2 * batch * cols", "as dropout's, the probabilities' layout (needs sequence_ids)", RtOptional>];
  let checks = [
    RtCheck<"count == batch * rows * cols", "the dropout's count differs from the softmax's">];
  let bf16 = [
    RtBf16<"x", "true">,
    RtBf16<"probs", "true">,
    RtBf16<"out", "true">];
}

def Rt_DropoutSoftmaxGradOp : RtKernel<"dropout_softmax_grad", 42, "Row"> {
  let kernelEnum = "DropoutSoftmaxGrad";
  let doc = "dx = softmax_grad(y, dropout(dy)): the backward of softmax_dropout";
  let ints = [
    RtInt<"rows", "as softmax_grad">,
    RtInt<"cols", "as softmax_grad">,
    RtInt<"count", "as dropout">,
    RtInt<"per_sample", "as dropout">,
    RtInt<"seed", "as dropout">,
    RtInt<"purpose", "as dropout">,
    RtInt<"layer", "as dropout">,
    RtInt<"sample_offset", "as dropout", RtRequired, /*perStep=*/1>,
    RtInt<"tensor_key_stride", "as dropout", RtOptional>];
  let floats = [
    RtFloat<"p", "drop probability">];
  let buffers = [
    RtBuffer<"y", RtIn, RtF32, "count", "the forward probabilities">,
    RtBuffer<"dy", RtIn, RtF32, "count", "gradient of the dropped-out probabilities">,
    RtBuffer<"dx", RtOut, RtF32, "count", "gradient of the scores">,
    RtBuffer<"dropout_keys", RtIn, RtI32, "2 * (count / per_sample) * cols", "as softmax_dropout's", RtOptional>];
  let checks = [
    RtCheck<"count == rows * cols", "the dropout's count differs from the softmax's">];
  let bf16 = [
    RtBf16<"y", "true">,
    RtBf16<"dy", "true">,
    RtBf16<"dx", "true">];
}

def Rt_ResidualLayerNormOp : RtKernel<"residual_layer_norm", 44, "Row"> {
  let kernelEnum = "ResidualLayerNorm";
  let doc = "sum = dropout(input) + residual (p 0: input + residual), out = layer_norm(sum): the end of a transformer sub-block, fused";
  let ints = [
    RtInt<"rows", "as layer_norm">,
    RtInt<"cols", "as layer_norm">,
    RtInt<"count", "as dropout">,
    RtInt<"per_sample", "as dropout">,
    RtInt<"seed", "as dropout">,
    RtInt<"purpose", "as dropout">,
    RtInt<"layer", "as dropout">,
    RtInt<"sample_offset", "as dropout", RtRequired, /*perStep=*/1>];
  let floats = [
    RtFloat<"eps", "as layer_norm">,
    RtFloat<"p", "drop probability">];
  let buffers = [
    RtBuffer<"input", RtIn, RtF32, "count", "the sub-block's output">,
    RtBuffer<"residual", RtIn, RtF32, "count", "the sub-block's input">,
    RtBuffer<"scale", RtIn, RtF32, "cols", "gamma">,
    RtBuffer<"bias", RtIn, RtF32, "cols", "beta">,
    RtBuffer<"sum", RtOut, RtF32, "count", "the residual sum (kept for the backward)">,
    RtBuffer<"out", RtOut, RtF32, "count", "normalised">,
    RtBuffer<"dropout_keys", RtIn, RtI32, "2 * rows", "as dropout's, a token a row", RtOptional>];
  let checks = [
    RtCheck<"count == rows * cols", "the dropout's count differs from the rows">];
  let bf16 = [
    RtBf16<"input", "true">,
    RtBf16<"residual", "true">,
    RtBf16<"sum", "true">,
    RtBf16<"out", "true">];
}

#endif // FERRY_DIALECTS_RT_KERNELS_ROW_TD
