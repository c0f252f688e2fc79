//===- Gemm.td - the Gemm kernels --------------------------*- tablegen -*-===//
//
// One record per kernel of the Gemm family (RtKernelBase.td says what a
// record holds). The number after the mnemonic is the kernel's index in the
// executable: append-only across all families.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_DIALECTS_RT_KERNELS_GEMM_TD
#define FERRY_DIALECTS_RT_KERNELS_GEMM_TD

include "dialects/rt/kernels/RtKernelBase.td"

def Rt_GemmOp : RtKernel<"gemm", 2, "Gemm"> {
  let kernelEnum = "Gemm";
  let doc = "c[b] = alpha op(a[b]) op(b[b]) (+ c[b] when accumulating) for b < batch; op(x) is x transposed when its flag is set. c is [m, n]; a is [m, k] ([k, m] transposed), b is [k, n] ([n, k] transposed). fp32 accumulation";
  let ints = [
    RtInt<"batch", "matrices in the batch">,
    RtInt<"m", "rows of c">,
    RtInt<"n", "columns of c">,
    RtInt<"k", "the contracted dimension">,
    RtInt<"trans_a", "1: a is stored [k, m]">,
    RtInt<"trans_b", "1: b is stored [n, k]">,
    RtInt<"stride_a", "elements between batch entries of a (0 repeats one matrix)">,
    RtInt<"stride_b", "elements between batch entries of b">,
    RtInt<"stride_c", "elements between batch entries of c">,
    RtInt<"accumulate", "1: add into c instead of overwriting it">,
    RtInt<"precision", "inputs precision: 0 fp32, 1 bf16, 2 fp16 (inputs rounded in the workspace)", RtOptional>];
  let floats = [
    RtFloat<"alpha", "scale of the product">];
  let buffers = [
    RtBuffer<"a", RtIn, RtF32, "(batch - 1) * stride_a + m * k", "left operand">,
    RtBuffer<"b", RtIn, RtF32, "(batch - 1) * stride_b + k * n", "right operand">,
    RtBuffer<"c", RtOut, RtF32, "(batch - 1) * stride_c + m * n", "result">,
    RtBuffer<"workspace", RtOut, RtF32, "0", "scratch for rounded inputs (precision bf16 or fp16), then the fp32 result when c is stored as bf16, then cuBLASLt's", RtOptional>];
  let accessIf = [
    RtAccessIf<"c", "accumulate != 0", RtInOut>];
  let disjoint = [
    RtDisjoint<"c", "a">,
    RtDisjoint<"c", "b">];
  let bf16 = [
    RtBf16<"a", "precision == 1">,
    RtBf16<"b", "precision == 1">,
    RtBf16<"c", "precision == 1">];
}

def Rt_GemmEpilogueOp : RtKernel<"gemm_epilogue", 43, "Gemm"> {
  let kernelEnum = "GemmEpilogue";
  let doc = "gemm, then epilogue 1 (bias): c += vector along n; or 2 (bias gradient, a transposed and batch 1): vector[m] = sum over k of a (the unrounded a)";
  let ints = [
    RtInt<"batch", "as gemm">,
    RtInt<"m", "as gemm">,
    RtInt<"n", "as gemm">,
    RtInt<"k", "as gemm">,
    RtInt<"trans_a", "as gemm">,
    RtInt<"trans_b", "as gemm">,
    RtInt<"stride_a", "as gemm">,
    RtInt<"stride_b", "as gemm">,
    RtInt<"stride_c", "as gemm">,
    RtInt<"accumulate", "as gemm">,
    RtInt<"precision", "as gemm">,
    RtInt<"epilogue", "1: bias, 2: bias gradient">];
  let floats = [
    RtFloat<"alpha", "scale of the product">];
  let buffers = [
    RtBuffer<"a", RtIn, RtF32, "(batch - 1) * stride_a + m * k", "left operand">,
    RtBuffer<"b", RtIn, RtF32, "(batch - 1) * stride_b + k * n", "right operand">,
    RtBuffer<"c", RtOut, RtF32, "(batch - 1) * stride_c + m * n", "result">,
    RtBuffer<"vector", RtIn, RtF32, "epilogue == 2 ? m : n", "bias (epilogue 1) or bias gradient (epilogue 2)">,
    RtBuffer<"workspace", RtOut, RtF32, "0", "as gemm's", RtOptional>];
  let checks = [
    RtCheck<"epilogue != 2 || (batch == 1 && trans_a != 0)", "a bias gradient needs one transposed A (batch 1)">];
  let accessIf = [
    RtAccessIf<"c", "accumulate != 0", RtInOut>,
    RtAccessIf<"vector", "epilogue == 2", RtOut>];
  let disjoint = [
    RtDisjoint<"c", "a">,
    RtDisjoint<"c", "b">,
    RtDisjoint<"vector", "a">,
    RtDisjoint<"vector", "b">,
    RtDisjoint<"vector", "c">];
  let bf16 = [
    RtBf16<"a", "precision == 1">,
    RtBf16<"b", "precision == 1">,
    RtBf16<"c", "precision == 1">];
}

#endif // FERRY_DIALECTS_RT_KERNELS_GEMM_TD
