//===- Elementwise.td - the Elementwise kernels ------------*- tablegen -*-===//
//
// One record per kernel of the Elementwise family (RtKernelBase.td says what a
// record holds). The number after the mnemonic is the kernel's index in the
// executable: append-only across all families.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_DIALECTS_RT_KERNELS_ELEMENTWISE_TD
#define FERRY_DIALECTS_RT_KERNELS_ELEMENTWISE_TD

include "dialects/rt/kernels/RtKernelBase.td"

def Rt_AttentionMaskOp : RtKernel<"attention_mask", 4, "Elementwise"> {
  let kernelEnum = "AttentionMask";
  let doc = "out[e] = 0 where mask[e] != 0, else fill: the additive attention mask";
  let ints = [
    RtInt<"count", "elements">];
  let floats = [
    RtFloat<"fill", "the value of masked slots (a large negative number)">];
  let buffers = [
    RtBuffer<"mask", RtIn, RtI32, "count", "input mask, non-zero where a token is real">,
    RtBuffer<"out", RtOut, RtF32, "count", "additive mask">];
}

def Rt_BiasAddOp : RtKernel<"bias_add", 11, "Elementwise"> {
  let kernelEnum = "BiasAdd";
  let doc = "out[r, c] = x[r, c] + bias[c]";
  let ints = [
    RtInt<"rows", "rows">,
    RtInt<"cols", "columns">];
  let buffers = [
    RtBuffer<"x", RtIn, RtF32, "rows * cols", "input">,
    RtBuffer<"bias", RtIn, RtF32, "cols", "bias">,
    RtBuffer<"out", RtOut, RtF32, "rows * cols", "result (may be x)">];
  let bf16 = [
    RtBf16<"x", "true">,
    RtBf16<"out", "true">];
}

def Rt_AddOp : RtKernel<"add", 12, "Elementwise"> {
  let kernelEnum = "Add";
  let doc = "out = a + b, element-wise";
  let ints = [
    RtInt<"count", "elements">];
  let buffers = [
    RtBuffer<"a", RtIn, RtF32, "count", "left">,
    RtBuffer<"b", RtIn, RtF32, "count", "right">,
    RtBuffer<"out", RtOut, RtF32, "count", "result">];
  let bf16 = [
    RtBf16<"a", "true">,
    RtBf16<"b", "true">,
    RtBf16<"out", "true">];
}

def Rt_SubOp : RtKernel<"sub", 13, "Elementwise"> {
  let kernelEnum = "Sub";
  let doc = "out = a - b, element-wise";
  let ints = [
    RtInt<"count", "elements">];
  let buffers = [
    RtBuffer<"a", RtIn, RtF32, "count", "left">,
    RtBuffer<"b", RtIn, RtF32, "count", "right">,
    RtBuffer<"out", RtOut, RtF32, "count", "result">];
  let bf16 = [
    RtBf16<"a", "true">,
    RtBf16<"b", "true">,
    RtBf16<"out", "true">];
}

def Rt_MulOp : RtKernel<"mul", 14, "Elementwise"> {
  let kernelEnum = "Mul";
  let doc = "out = a * b, element-wise";
  let ints = [
    RtInt<"count", "elements">];
  let buffers = [
    RtBuffer<"a", RtIn, RtF32, "count", "left">,
    RtBuffer<"b", RtIn, RtF32, "count", "right">,
    RtBuffer<"out", RtOut, RtF32, "count", "result">];
  let bf16 = [
    RtBf16<"a", "true">,
    RtBf16<"b", "true">,
    RtBf16<"out", "true">];
}

def Rt_DivOp : RtKernel<"div", 15, "Elementwise"> {
  let kernelEnum = "Div";
  let doc = "out = a / b, element-wise";
  let ints = [
    RtInt<"count", "elements">];
  let buffers = [
    RtBuffer<"a", RtIn, RtF32, "count", "left">,
    RtBuffer<"b", RtIn, RtF32, "count", "right">,
    RtBuffer<"out", RtOut, RtF32, "count", "result">];
  let bf16 = [
    RtBf16<"a", "true">,
    RtBf16<"b", "true">,
    RtBf16<"out", "true">];
}

def Rt_AccumulateOp : RtKernel<"accumulate", 16, "Elementwise"> {
  let kernelEnum = "Accumulate";
  let doc = "dst += src";
  let ints = [
    RtInt<"count", "elements">];
  let buffers = [
    RtBuffer<"src", RtIn, RtF32, "count", "added">,
    RtBuffer<"dst", RtInOut, RtF32, "count", "accumulator">];
  let bf16 = [
    RtBf16<"src", "true">,
    RtBf16<"dst", "true">];
}

def Rt_ScaleOp : RtKernel<"scale", 17, "Elementwise"> {
  let kernelEnum = "Scale";
  let doc = "out = factor * x";
  let ints = [
    RtInt<"count", "elements">];
  let floats = [
    RtFloat<"factor", "the factor">];
  let buffers = [
    RtBuffer<"x", RtIn, RtF32, "count", "input">,
    RtBuffer<"out", RtOut, RtF32, "count", "result">];
  let bf16 = [
    RtBf16<"x", "true">,
    RtBf16<"out", "true">];
}

def Rt_GeluOp : RtKernel<"gelu", 18, "Elementwise"> {
  let kernelEnum = "Gelu";
  let doc = "out = x * (1 + erf(x / sqrt 2)) / 2 (exact GELU)";
  let ints = [
    RtInt<"count", "elements">];
  let buffers = [
    RtBuffer<"x", RtIn, RtF32, "count", "input">,
    RtBuffer<"out", RtOut, RtF32, "count", "result">];
  let bf16 = [
    RtBf16<"x", "true">,
    RtBf16<"out", "true">];
}

def Rt_GeluGradOp : RtKernel<"gelu_grad", 19, "Elementwise"> {
  let kernelEnum = "GeluGrad";
  let doc = "dx = dy * gelu'(x)";
  let ints = [
    RtInt<"count", "elements">];
  let buffers = [
    RtBuffer<"x", RtIn, RtF32, "count", "the forward input">,
    RtBuffer<"dy", RtIn, RtF32, "count", "gradient of the output">,
    RtBuffer<"dx", RtOut, RtF32, "count", "gradient of the input">];
  let bf16 = [
    RtBf16<"x", "true">,
    RtBf16<"dy", "true">,
    RtBf16<"dx", "true">];
}

def Rt_TanhOp : RtKernel<"tanh", 20, "Elementwise"> {
  let kernelEnum = "Tanh";
  let doc = "out = tanh(x)";
  let ints = [
    RtInt<"count", "elements">];
  let buffers = [
    RtBuffer<"x", RtIn, RtF32, "count", "input">,
    RtBuffer<"out", RtOut, RtF32, "count", "result">];
  let bf16 = [
    RtBf16<"x", "true">,
    RtBf16<"out", "true">];
}

def Rt_TanhGradOp : RtKernel<"tanh_grad", 21, "Elementwise"> {
  let kernelEnum = "TanhGrad";
  let doc = "dx = dy * (1 - y^2), from the forward output y";
  let ints = [
    RtInt<"count", "elements">];
  let buffers = [
    RtBuffer<"y", RtIn, RtF32, "count", "the forward output">,
    RtBuffer<"dy", RtIn, RtF32, "count", "gradient of the output">,
    RtBuffer<"dx", RtOut, RtF32, "count", "gradient of the input">];
  let bf16 = [
    RtBf16<"y", "true">,
    RtBf16<"dy", "true">,
    RtBf16<"dx", "true">];
}

#endif // FERRY_DIALECTS_RT_KERNELS_ELEMENTWISE_TD
