//===- Indexed.td - the Indexed kernels --------------------*- tablegen -*-===//
//
// One record per kernel of the Indexed family (RtKernelBase.td says what a
// record holds). The number after the mnemonic is the kernel's index in the
// executable: append-only across all families.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_DIALECTS_RT_KERNELS_INDEXED_TD
#define FERRY_DIALECTS_RT_KERNELS_INDEXED_TD

include "dialects/rt/kernels/RtKernelBase.td"

def Rt_EmbeddingOp : RtKernel<"embedding", 5, "Indexed"> {
  let kernelEnum = "Embedding";
  let doc = "out[r, :] = table[ids[r], :]; an id outside [0, vocab) is an error naming it";
  let ints = [
    RtInt<"rows", "ids to look up">,
    RtInt<"width", "elements of a table row">,
    RtInt<"vocab", "rows of the table">,
    RtInt<"tensor_row_stride", "tensor parallelism: the table holds the global ids from tensor rank x this on, other ids give rows of zeros, and only an id outside every rank's rows is an error (absent: 0)", RtOptional>];
  let buffers = [
    RtBuffer<"table", RtIn, RtF32, "vocab * width", "the embedding table">,
    RtBuffer<"ids", RtIn, RtI32, "rows", "row of each lookup">,
    RtBuffer<"out", RtOut, RtF32, "rows * width", "gathered rows">];
  let disjoint = [
    RtDisjoint<"out", "table">,
    RtDisjoint<"out", "ids">];
}

def Rt_EmbeddingGradOp : RtKernel<"embedding_grad", 6, "Indexed"> {
  let kernelEnum = "EmbeddingGrad";
  let doc = "dtable = 0 (unless accumulating), then dtable[ids[r], :] += dy[r, :] in row order (both backends give the same bits)";
  let ints = [
    RtInt<"rows", "ids looked up">,
    RtInt<"width", "elements of a table row">,
    RtInt<"vocab", "rows of the table">,
    RtInt<"accumulate", "1: add into dtable instead of overwriting it", RtOptional>,
    RtInt<"tensor_row_stride", "as embedding: only the ids of this rank's rows add", RtOptional>];
  let buffers = [
    RtBuffer<"ids", RtIn, RtI32, "rows", "row of each lookup">,
    RtBuffer<"dy", RtIn, RtF32, "rows * width", "gradient of the gathered rows">,
    RtBuffer<"dtable", RtOut, RtF32, "vocab * width", "gradient of the table">,
    RtBuffer<"workspace", RtOut, RtI32, "3 * rows + 256 * ((rows + 255) / 256)", "the CUDA backend's stable sort of the rows by id, for sums in row order (the CPU backend sums in row order without it)", RtOptional>];
  let accessIf = [
    RtAccessIf<"dtable", "accumulate != 0", RtInOut>];
  let disjoint = [
    RtDisjoint<"dtable", "ids">,
    RtDisjoint<"dtable", "dy">];
}

def Rt_GatherPositionsOp : RtKernel<"gather_positions", 7, "Indexed"> {
  let kernelEnum = "GatherPositions";
  let doc = "out[b, p, :] = x[b, positions[b, p], :]: the masked positions' hidden states";
  let ints = [
    RtInt<"batch", "samples">,
    RtInt<"seq", "tokens per sample">,
    RtInt<"predictions", "positions per sample">,
    RtInt<"width", "hidden width">];
  let buffers = [
    RtBuffer<"x", RtIn, RtF32, "batch * seq * width", "hidden states [batch, seq, width]">,
    RtBuffer<"positions", RtIn, RtI32, "batch * predictions", "positions in [0, seq)">,
    RtBuffer<"out", RtOut, RtF32, "batch * predictions * width", "gathered states">];
  let disjoint = [
    RtDisjoint<"out", "x">,
    RtDisjoint<"out", "positions">];
  let bf16 = [
    RtBf16<"x", "true">,
    RtBf16<"out", "true">];
}

def Rt_GatherPositionsGradOp : RtKernel<"gather_positions_grad", 8, "Indexed"> {
  let kernelEnum = "GatherPositionsGrad";
  let doc = "dx = 0, then dx[b, positions[b, p], :] += dy[b, p, :] in order of p (both backends give the same bits)";
  let ints = [
    RtInt<"batch", "samples">,
    RtInt<"seq", "tokens per sample">,
    RtInt<"predictions", "positions per sample">,
    RtInt<"width", "hidden width">];
  let buffers = [
    RtBuffer<"positions", RtIn, RtI32, "batch * predictions", "positions in [0, seq)">,
    RtBuffer<"dy", RtIn, RtF32, "batch * predictions * width", "gradient of the gathered states">,
    RtBuffer<"dx", RtOut, RtF32, "batch * seq * width", "gradient of the hidden states">];
  let disjoint = [
    RtDisjoint<"dx", "positions">,
    RtDisjoint<"dx", "dy">];
}

def Rt_SoftmaxCrossEntropyOp : RtKernel<"softmax_cross_entropy", 30, "Indexed"> {
  let kernelEnum = "SoftmaxCrossEntropy";
  let doc = "out[0] = sum over rows with weights[r] != 0 of weights[r] * (logsumexp(logits[r, :classes]) - logits[r, labels[r]]); columns from classes on (the padded vocabulary) take no part; a label outside [0, classes) is an error";
  let ints = [
    RtInt<"rows", "rows">,
    RtInt<"cols", "entries of a logits row">,
    RtInt<"classes", "real classes (at most cols)">];
  let buffers = [
    RtBuffer<"logits", RtIn, RtF32, "rows * cols", "scores">,
    RtBuffer<"labels", RtIn, RtI32, "rows", "the right class of each row">,
    RtBuffer<"weights", RtIn, RtF32, "rows", "weight of each row (0: not counted)">,
    RtBuffer<"out", RtOut, RtF32, "1", "the weighted loss sum">,
    RtBuffer<"workspace", RtOut, RtF32, "2 * rows", "the CUDA backend's per-row losses (doubles), summed in a fixed order", RtOptional>];
}

def Rt_SoftmaxCrossEntropyGradOp : RtKernel<"softmax_cross_entropy_grad", 31, "Indexed"> {
  let kernelEnum = "SoftmaxCrossEntropyGrad";
  let doc = "dlogits[r, c] = dloss[0] * weights[r] * (softmax(r)[c] - [c == labels[r]]) for c < classes, 0 for padded columns";
  let ints = [
    RtInt<"rows", "rows">,
    RtInt<"cols", "entries of a logits row">,
    RtInt<"classes", "real classes (at most cols)">];
  let buffers = [
    RtBuffer<"logits", RtIn, RtF32, "rows * cols", "scores">,
    RtBuffer<"labels", RtIn, RtI32, "rows", "the right class of each row">,
    RtBuffer<"weights", RtIn, RtF32, "rows", "weight of each row">,
    RtBuffer<"dloss", RtIn, RtF32, "1", "gradient of the loss sum">,
    RtBuffer<"dlogits", RtOut, RtF32, "rows * cols", "gradient of the scores">];
}

def Rt_ArgmaxCorrectOp : RtKernel<"argmax_correct", 32, "Indexed"> {
  let kernelEnum = "ArgmaxCorrect";
  let doc = "out[0] = sum over rows of weights[r] * [argmax over c < classes of logits[r, c] == labels[r]] (ties: the lowest index)";
  let ints = [
    RtInt<"rows", "rows">,
    RtInt<"cols", "entries of a logits row">,
    RtInt<"classes", "real classes (at most cols)">];
  let buffers = [
    RtBuffer<"logits", RtIn, RtF32, "rows * cols", "scores">,
    RtBuffer<"labels", RtIn, RtI32, "rows", "the right class of each row">,
    RtBuffer<"weights", RtIn, RtF32, "rows", "weight of each row">,
    RtBuffer<"out", RtOut, RtF32, "1", "the weighted count of right answers">,
    RtBuffer<"workspace", RtOut, RtF32, "2 * rows", "the CUDA backend's per-row counts (doubles), summed in a fixed order", RtOptional>];
}

#endif // FERRY_DIALECTS_RT_KERNELS_INDEXED_TD
