//===- Layout.td - the Layout kernels ----------------------*- tablegen -*-===//
//
// One record per kernel of the Layout family (RtKernelBase.td says what a
// record holds). The number after the mnemonic is the kernel's index in the
// executable: append-only across all families.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_DIALECTS_RT_KERNELS_LAYOUT_TD
#define FERRY_DIALECTS_RT_KERNELS_LAYOUT_TD

include "dialects/rt/kernels/RtKernelBase.td"

def Rt_TakeOp : RtKernel<"take", 9, "Layout"> {
  let kernelEnum = "Take";
  let doc = "out[o, i] = x[o, index, i], for x viewed as [outer, size, inner]";
  let ints = [
    RtInt<"outer", "outer extent">,
    RtInt<"size", "the indexed dimension">,
    RtInt<"inner", "inner extent">,
    RtInt<"index", "the entry taken">];
  let buffers = [
    RtBuffer<"x", RtIn, RtF32, "outer * size * inner", "input">,
    RtBuffer<"out", RtOut, RtF32, "outer * inner", "the slice">];
  let bf16 = [
    RtBf16<"x", "true">,
    RtBf16<"out", "true">];
}

def Rt_TakeGradOp : RtKernel<"take_grad", 10, "Layout"> {
  let kernelEnum = "TakeGrad";
  let doc = "dx = 0 except dx[o, index, i] = dy[o, i]";
  let ints = [
    RtInt<"outer", "outer extent">,
    RtInt<"size", "the indexed dimension">,
    RtInt<"inner", "inner extent">,
    RtInt<"index", "the entry taken">];
  let buffers = [
    RtBuffer<"dy", RtIn, RtF32, "outer * inner", "gradient of the slice">,
    RtBuffer<"dx", RtOut, RtF32, "outer * size * inner", "gradient of the input">];
  let disjoint = [
    RtDisjoint<"dx", "dy">];
}

def Rt_TransposeOp : RtKernel<"transpose", 27, "Layout"> {
  let kernelEnum = "Transpose";
  let doc = "out dimension d is x dimension perm[d] (rank at most 6)";
  let ints = [
    RtInt<"rank", "dimensions">,
    RtInt<"shape", "the rank dimensions of x, then the rank entries of perm", RtRest>];
  let buffers = [
    RtBuffer<"x", RtIn, RtF32, "productOf(shape, 0, rank)", "input">,
    RtBuffer<"out", RtOut, RtF32, "productOf(shape, 0, rank)", "result">];
  let checks = [
    RtCheck<"rank >= 1 && rank <= 6 && shape.size() >= 2 * rank", "malformed shape">,
    RtCheck<"isPermutation(shape, rank, rank)", "a permutation that is not one">];
  let disjoint = [
    RtDisjoint<"out", "x">];
  let bf16 = [
    RtBf16<"x", "true">,
    RtBf16<"out", "true">];
}

def Rt_BroadcastOp : RtKernel<"broadcast", 29, "Layout"> {
  let kernelEnum = "Broadcast";
  let doc = "out[o, r, i] = x[o, i]: the inverse shape of reduce";
  let ints = [
    RtInt<"outer", "outer extent">,
    RtInt<"size", "the broadcast dimension">,
    RtInt<"inner", "inner extent">];
  let buffers = [
    RtBuffer<"x", RtIn, RtF32, "outer * inner", "input">,
    RtBuffer<"out", RtOut, RtF32, "outer * size * inner", "result">];
  let disjoint = [
    RtDisjoint<"out", "x">];
}

#endif // FERRY_DIALECTS_RT_KERNELS_LAYOUT_TD
