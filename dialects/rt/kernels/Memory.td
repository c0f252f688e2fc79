//===- Memory.td - the Memory kernels ----------------------*- tablegen -*-===//
//
// One record per kernel of the Memory family (RtKernelBase.td says what a
// record holds). The number after the mnemonic is the kernel's index in the
// executable: append-only across all families.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_DIALECTS_RT_KERNELS_MEMORY_TD
#define FERRY_DIALECTS_RT_KERNELS_MEMORY_TD

include "dialects/rt/kernels/RtKernelBase.td"

def Rt_CopyOp : RtKernel<"copy", 0, "Memory"> {
  let kernelEnum = "Copy";
  let doc = "dst = src, byte for byte (overlapping ranges allowed)";
  let ints = [
    RtInt<"bytes", "bytes to copy">];
  let buffers = [
    RtBuffer<"src", RtIn, RtBytes, "bytes", "source">,
    RtBuffer<"dst", RtOut, RtBytes, "bytes", "destination">];
}

def Rt_FillOp : RtKernel<"fill", 1, "Memory"> {
  let kernelEnum = "Fill";
  let doc = "dst[e] = value";
  let ints = [
    RtInt<"count", "elements">];
  let floats = [
    RtFloat<"value", "the value">];
  let buffers = [
    RtBuffer<"dst", RtOut, RtF32, "count", "filled">];
}

def Rt_IotaOp : RtKernel<"iota", 3, "Memory"> {
  let kernelEnum = "Iota";
  let doc = "out[o, d, i] = d, for out viewed as [outer, size, inner]";
  let ints = [
    RtInt<"outer", "outer extent">,
    RtInt<"size", "the counted dimension">,
    RtInt<"inner", "inner extent">];
  let buffers = [
    RtBuffer<"out", RtOut, RtI32, "outer * size * inner", "positions">];
}

def Rt_FillI32Op : RtKernel<"fill_i32", 45, "Memory"> {
  let kernelEnum = "FillI32";
  let doc = "dst[e] = value, as 32-bit integers: a splat integer constant (positions, masks, labels)";
  let ints = [
    RtInt<"count", "elements">,
    RtInt<"value", "the value">];
  let buffers = [
    RtBuffer<"dst", RtOut, RtI32, "count", "filled">];
  let checks = [
    RtCheck<"value >= -2147483648L && value <= 2147483647L", "a value outside the int32 range">];
}

#endif // FERRY_DIALECTS_RT_KERNELS_MEMORY_TD
