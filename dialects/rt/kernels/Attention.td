//===- Attention.td - the Attention kernels ----------------*- tablegen -*-===//
//
// One record per kernel of the Attention family (RtKernelBase.td says what a
// record holds). The number after the mnemonic is the kernel's index in the
// executable: append-only across all families.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_DIALECTS_RT_KERNELS_ATTENTION_TD
#define FERRY_DIALECTS_RT_KERNELS_ATTENTION_TD

include "dialects/rt/kernels/RtKernelBase.td"

def Rt_AttentionOp : RtKernel<"attention", 51, "Attention"> {
  let kernelEnum = "Attention";
  let doc = "out = dropout(softmax(scale q kᵀ + mask[b])) v for each sample and head, without the [seq, seq] probabilities in memory (FlashAttention: key tiles with a running maximum and sum); lse = each query row's logsumexp of scale q kᵀ + mask, for the backward. The dropout is dropout's over [batch, heads, seq, seq] (same seed, purpose, layer and sample offset: the same mask)";
  let ints = [
    RtInt<"batch", "samples">,
    RtInt<"heads", "attention heads">,
    RtInt<"seq", "tokens per sample (queries and keys)">,
    RtInt<"head_dim", "elements of a query, key or value vector (at most 64)">,
    RtInt<"seed", "as dropout">,
    RtInt<"purpose", "as dropout">,
    RtInt<"layer", "as dropout">,
    RtInt<"sample_offset", "as dropout", RtRequired, /*perStep=*/1>,
    RtInt<"precision", "the products' inputs: 0 fp32, 1 bf16 (rounded; tensor cores on the GPU)">,
    RtInt<"sequence_major", "1: q, k, v and out are [batch, seq, heads, head_dim] (lse stays [batch, heads, seq])", RtOptional>,
    RtInt<"tensor_key_stride", "as dropout: heads are the tensor rank's, the probabilities' keys start at rank x this", RtOptional>];
  let floats = [
    RtFloat<"scale", "factor of q kᵀ (1 / sqrt(head_dim))">,
    RtFloat<"p", "the probabilities' drop probability">];
  let buffers = [
    RtBuffer<"q", RtIn, RtF32, "batch * heads * seq * head_dim", "queries [batch, heads, seq, head_dim] (or sequence-major)">,
    RtBuffer<"k", RtIn, RtF32, "batch * heads * seq * head_dim", "keys">,
    RtBuffer<"v", RtIn, RtF32, "batch * heads * seq * head_dim", "values">,
    RtBuffer<"mask", RtIn, RtF32, "batch * seq", "additive mask over the keys [batch, seq]">,
    RtBuffer<"out", RtOut, RtF32, "batch * heads * seq * head_dim", "the attention output">,
    RtBuffer<"lse", RtOut, RtF32, "batch * heads * seq", "each query row's logsumexp">,
    RtBuffer<"sequence_ids", RtIn, RtI32, "batch * seq", "packed rows: each token's sequence; a query sees only its own sequence's keys (absent: one sequence a row)", RtOptional>,
    RtBuffer<"dropout_keys", RtIn, RtI32, "2 * batch * seq", "packed rows: as dropout's, the probabilities' layout (needs sequence_ids)", RtOptional>];
  let checks = [
    RtCheck<"head_dim >= 1 && head_dim <= 64", "head_dim must be in [1, 64]">,
    RtCheck<"precision == 0 || precision == 1", "precision must be 0 (fp32) or 1 (bf16)">];
  let disjoint = [
    RtDisjoint<"out", "q">,
    RtDisjoint<"out", "k">,
    RtDisjoint<"out", "v">,
    RtDisjoint<"lse", "q">,
    RtDisjoint<"lse", "k">,
    RtDisjoint<"lse", "v">,
    RtDisjoint<"lse", "out">];
  let bf16 = [
    RtBf16<"q", "true">,
    RtBf16<"k", "true">,
    RtBf16<"v", "true">,
    RtBf16<"out", "true">];
}

def Rt_AttentionGradOp : RtKernel<"attention_grad", 52, "Attention"> {
  let kernelEnum = "AttentionGrad";
  let doc = "dq, dk, dv of attention from q, k, v, the mask, the forward's out and lse and dout: the probabilities recomputed from lse, the dropout mask regenerated; dk and dv summed over queries and dq over keys in a fixed order (deterministic)";
  let ints = [
    RtInt<"batch", "as attention">,
    RtInt<"heads", "as attention">,
    RtInt<"seq", "as attention">,
    RtInt<"head_dim", "as attention">,
    RtInt<"seed", "as attention">,
    RtInt<"purpose", "as attention">,
    RtInt<"layer", "as attention">,
    RtInt<"sample_offset", "as attention", RtRequired, /*perStep=*/1>,
    RtInt<"precision", "as attention">,
    RtInt<"sequence_major", "as attention (dq, dk, dv too)", RtOptional>,
    RtInt<"tensor_key_stride", "as attention", RtOptional>];
  let floats = [
    RtFloat<"scale", "as attention">,
    RtFloat<"p", "as attention">];
  let buffers = [
    RtBuffer<"q", RtIn, RtF32, "batch * heads * seq * head_dim", "queries">,
    RtBuffer<"k", RtIn, RtF32, "batch * heads * seq * head_dim", "keys">,
    RtBuffer<"v", RtIn, RtF32, "batch * heads * seq * head_dim", "values">,
    RtBuffer<"mask", RtIn, RtF32, "batch * seq", "additive mask over the keys">,
    RtBuffer<"out", RtIn, RtF32, "batch * heads * seq * head_dim", "the forward's output">,
    RtBuffer<"lse", RtIn, RtF32, "batch * heads * seq", "the forward's row logsumexp">,
    RtBuffer<"dout", RtIn, RtF32, "batch * heads * seq * head_dim", "gradient of the output">,
    RtBuffer<"dq", RtOut, RtF32, "batch * heads * seq * head_dim", "gradient of the queries">,
    RtBuffer<"dk", RtOut, RtF32, "batch * heads * seq * head_dim", "gradient of the keys">,
    RtBuffer<"dv", RtOut, RtF32, "batch * heads * seq * head_dim", "gradient of the values">,
    RtBuffer<"workspace", RtOut, RtF32, "batch * heads * seq", "each query row's dout . out">,
    RtBuffer<"sequence_ids", RtIn, RtI32, "batch * seq", "as attention", RtOptional>,
    RtBuffer<"dropout_keys", RtIn, RtI32, "2 * batch * seq", "as attention", RtOptional>];
  let checks = [
    RtCheck<"head_dim >= 1 && head_dim <= 64", "head_dim must be in [1, 64]">,
    RtCheck<"precision == 0 || precision == 1", "precision must be 0 (fp32) or 1 (bf16)">];
  let disjoint = [
    RtDisjoint<"dq", "dk">,
    RtDisjoint<"dq", "dv">,
    RtDisjoint<"dk", "dv">,
    RtDisjoint<"dq", "q">,
    RtDisjoint<"dq", "k">,
    RtDisjoint<"dk", "q">,
    RtDisjoint<"dk", "k">,
    RtDisjoint<"dv", "v">,
    RtDisjoint<"dq", "dout">,
    RtDisjoint<"dk", "dout">,
    RtDisjoint<"dv", "dout">,
    RtDisjoint<"dq", "v">,
    RtDisjoint<"dk", "v">,
    RtDisjoint<"dv", "q">,
    RtDisjoint<"dv", "k">,
    RtDisjoint<"workspace", "out">,
    RtDisjoint<"workspace", "dout">,
    RtDisjoint<"workspace", "q">,
    RtDisjoint<"workspace", "k">,
    RtDisjoint<"workspace", "v">,
    RtDisjoint<"workspace", "lse">,
    RtDisjoint<"dq", "lse">,
    RtDisjoint<"dk", "lse">,
    RtDisjoint<"dv", "lse">,
    RtDisjoint<"dq", "out">,
    RtDisjoint<"dk", "out">,
    RtDisjoint<"dv", "out">];
  let bf16 = [
    RtBf16<"q", "true">,
    RtBf16<"k", "true">,
    RtBf16<"v", "true">,
    RtBf16<"out", "true">,
    RtBf16<"dout", "true">,
    RtBf16<"dq", "true">,
    RtBf16<"dk", "true">,
    RtBf16<"dv", "true">];
}

#endif // FERRY_DIALECTS_RT_KERNELS_ATTENTION_TD
