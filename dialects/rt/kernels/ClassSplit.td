//===- ClassSplit.td - the ClassSplit kernels --------------*- tablegen -*-===//
//
// One record per kernel of the ClassSplit family (RtKernelBase.td says what
// a record holds): the softmax cross-entropy and argmax metric of logits
// split over their classes across the tensor-parallel group, from row
// maxima and sums that max and sum all-reduces (Collective.td) combine
// (graph's GraphClassSplitOps.td). Each call's logits are this rank's
// [rows, cols] part, whose first class is global class tensor rank x
// tensor_class_stride (the rank is the backend's). The number after the
// mnemonic is the kernel's index in the executable: append-only across all
// families.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_DIALECTS_RT_KERNELS_CLASSSPLIT_TD
#define FERRY_DIALECTS_RT_KERNELS_CLASSSPLIT_TD

include "dialects/rt/kernels/RtKernelBase.td"

def Rt_ClassMaxOp : RtKernel<"class_max", 53, "ClassSplit"> {
  let kernelEnum = "ClassMax";
  let doc = "out[r] = max over this rank's classes c with global index below classes of logits[r, c]; -inf where the rank has none";
  let ints = [
    RtInt<"rows", "rows">,
    RtInt<"cols", "this rank's classes (columns of a row)">,
    RtInt<"classes", "real classes of the whole row (the rest is the padded vocabulary)">,
    RtInt<"tensor_class_stride", "this rank's first class is tensor rank x this">];
  let buffers = [
    RtBuffer<"logits", RtIn, RtF32, "rows * cols", "this rank's scores">,
    RtBuffer<"out", RtOut, RtF32, "rows", "row maxima">];
  let disjoint = [
    RtDisjoint<"out", "logits">];
}

def Rt_ClassStatsOp : RtKernel<"class_stats", 54, "ClassSplit"> {
  let kernelEnum = "ClassStats";
  let doc = "out[r] = (sum of exp(logits[r, c] - row_max[r]) over this rank's real classes, logits[r, labels[r] - offset] if the label is this rank's else 0); a label outside [0, classes) is an error";
  let ints = [
    RtInt<"rows", "rows">,
    RtInt<"cols", "this rank's classes">,
    RtInt<"classes", "real classes of the whole row">,
    RtInt<"tensor_class_stride", "this rank's first class is tensor rank x this">];
  let buffers = [
    RtBuffer<"logits", RtIn, RtF32, "rows * cols", "this rank's scores">,
    RtBuffer<"labels", RtIn, RtI32, "rows", "the right class of each row (global)">,
    RtBuffer<"row_max", RtIn, RtF32, "rows", "the whole rows' maxima">,
    RtBuffer<"out", RtOut, RtF32, "rows * 2", "a partial sum and target logit a row">];
  let disjoint = [
    RtDisjoint<"out", "logits">,
    RtDisjoint<"out", "labels">,
    RtDisjoint<"out", "row_max">];
}

def Rt_ClassStatsGradOp : RtKernel<"class_stats_grad", 55, "ClassSplit"> {
  let kernelEnum = "ClassStatsGrad";
  let doc = "dlogits[r, c] = dstats[r, 0] * exp(logits[r, c] - row_max[r]) + dstats[r, 1] * [c == labels[r] - offset] over this rank's real classes, 0 for padded ones";
  let ints = [
    RtInt<"rows", "rows">,
    RtInt<"cols", "this rank's classes">,
    RtInt<"classes", "real classes of the whole row">,
    RtInt<"tensor_class_stride", "this rank's first class is tensor rank x this">];
  let buffers = [
    RtBuffer<"logits", RtIn, RtF32, "rows * cols", "this rank's scores">,
    RtBuffer<"labels", RtIn, RtI32, "rows", "the right class of each row (global)">,
    RtBuffer<"row_max", RtIn, RtF32, "rows", "the whole rows' maxima">,
    RtBuffer<"dstats", RtIn, RtF32, "rows * 2", "gradient of class_stats' result">,
    RtBuffer<"dlogits", RtOut, RtF32, "rows * cols", "gradient of the scores">];
  let disjoint = [
    RtDisjoint<"dlogits", "labels">,
    RtDisjoint<"dlogits", "row_max">,
    RtDisjoint<"dlogits", "dstats">];
}

def Rt_CrossEntropyOfStatsOp : RtKernel<"cross_entropy_of_stats", 56, "ClassSplit"> {
  let kernelEnum = "CrossEntropyOfStats";
  let doc = "out[0] = sum over rows with weights[r] != 0 of weights[r] * (log(stats[r, 0]) + row_max[r] - stats[r, 1]), in row order";
  let ints = [
    RtInt<"rows", "rows">];
  let buffers = [
    RtBuffer<"stats", RtIn, RtF32, "rows * 2", "the group's sums of class_stats">,
    RtBuffer<"row_max", RtIn, RtF32, "rows", "the whole rows' maxima">,
    RtBuffer<"weights", RtIn, RtF32, "rows", "weight of each row (0: not counted)">,
    RtBuffer<"out", RtOut, RtF32, "1", "the weighted loss sum">];
}

def Rt_CrossEntropyOfStatsGradOp : RtKernel<"cross_entropy_of_stats_grad", 57, "ClassSplit"> {
  let kernelEnum = "CrossEntropyOfStatsGrad";
  let doc = "dstats[r] = (dloss[0] * weights[r] / stats[r, 0], -dloss[0] * weights[r]), 0 for rows of weight 0";
  let ints = [
    RtInt<"rows", "rows">];
  let buffers = [
    RtBuffer<"stats", RtIn, RtF32, "rows * 2", "the group's sums of class_stats">,
    RtBuffer<"weights", RtIn, RtF32, "rows", "weight of each row">,
    RtBuffer<"dloss", RtIn, RtF32, "1", "gradient of the loss sum">,
    RtBuffer<"dstats", RtOut, RtF32, "rows * 2", "gradient of the stats">];
  let disjoint = [
    RtDisjoint<"dstats", "stats">,
    RtDisjoint<"dstats", "weights">,
    RtDisjoint<"dstats", "dloss">];
}

def Rt_ClassArgmaxOp : RtKernel<"class_argmax", 58, "ClassSplit"> {
  let kernelEnum = "ClassArgmax";
  let doc = "out[r] = -c for this rank's first real class c (global index) whose logit equals row_max[r] or is NaN; -inf where the rank has none";
  let ints = [
    RtInt<"rows", "rows">,
    RtInt<"cols", "this rank's classes">,
    RtInt<"classes", "real classes of the whole row">,
    RtInt<"tensor_class_stride", "this rank's first class is tensor rank x this">];
  let buffers = [
    RtBuffer<"logits", RtIn, RtF32, "rows * cols", "this rank's scores">,
    RtBuffer<"row_max", RtIn, RtF32, "rows", "the whole rows' maxima">,
    RtBuffer<"out", RtOut, RtF32, "rows", "minus the first class holding the maximum">];
  let disjoint = [
    RtDisjoint<"out", "logits">,
    RtDisjoint<"out", "row_max">];
}

def Rt_IndexCorrectOp : RtKernel<"index_correct", 59, "ClassSplit"> {
  let kernelEnum = "IndexCorrect";
  let doc = "out[0] = sum over rows of weights[r] * [-negated_index[r] == labels[r]], in row order; a label outside [0, classes) is an error";
  let ints = [
    RtInt<"rows", "rows">,
    RtInt<"classes", "real classes of the whole row">];
  let buffers = [
    RtBuffer<"negated_index", RtIn, RtF32, "rows", "minus the chosen class of each row">,
    RtBuffer<"labels", RtIn, RtI32, "rows", "the right class of each row">,
    RtBuffer<"weights", RtIn, RtF32, "rows", "weight of each row">,
    RtBuffer<"out", RtOut, RtF32, "1", "the weighted count of right answers">];
}

#endif // FERRY_DIALECTS_RT_KERNELS_CLASSSPLIT_TD
