//===- Transfer.td - the Transfer kernels ------------------*- tablegen -*-===//
//
// One record per kernel of the Transfer family (RtKernelBase.td says what a
// record holds). The number after the mnemonic is the kernel's index in the
// executable: append-only across all families.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_DIALECTS_RT_KERNELS_TRANSFER_TD
#define FERRY_DIALECTS_RT_KERNELS_TRANSFER_TD

include "dialects/rt/kernels/RtKernelBase.td"

def Rt_LoadOp : RtKernel<"load", 36, "Transfer"> {
  let kernelEnum = "Load";
  let backendOwned = 1;
  let doc = "queues a copy from host memory to the device on the copy queue (only while guard < limit, when they are given); `wait event` blocks until it is done";
  let ints = [
    RtInt<"bytes", "bytes to copy">,
    RtInt<"event", "event the copy signals">,
    RtInt<"guard", "a prefetch is issued only while guard < limit", RtOptional>,
    RtInt<"limit", "see guard", RtOptional>];
  let buffers = [
    RtBuffer<"src", RtIn, RtBytes, "0", "host memory (checked when copied)">,
    RtBuffer<"dst", RtOut, RtBytes, "0", "device memory (checked when copied)">];
}

def Rt_StoreOp : RtKernel<"store", 37, "Transfer"> {
  let kernelEnum = "Store";
  let backendOwned = 1;
  let doc = "queues a copy from the device to host memory on the copy queue";
  let ints = [
    RtInt<"bytes", "bytes to copy">,
    RtInt<"event", "event the copy signals">];
  let buffers = [
    RtBuffer<"src", RtIn, RtBytes, "0", "device memory (checked when copied)">,
    RtBuffer<"dst", RtOut, RtBytes, "0", "host memory (checked when copied)">];
}

def Rt_WaitOp : RtKernel<"wait", 38, "Transfer"> {
  let kernelEnum = "Wait";
  let backendOwned = 1;
  let doc = "blocks until the last load or store issued with this event has finished";
  let ints = [
    RtInt<"event", "the event">];
  // Not read by the backends: the ranges the awaited copies use, which the
  // layout keeps live until here (a double buffer's both halves across its
  // loop).
  let buffers = [
    RtBuffer<"pending", RtIn, RtBytes, "0", "ranges the awaited copies use, kept live until the wait", RtRest>];
}

def Rt_PhaseBeginOp : RtKernel<"phase_begin", 39, "Transfer"> {
  let kernelEnum = "PhaseBegin";
  let backendOwned = 1;
  let doc = "a phase starts (timed by --profile; an NVTX range on the GPU)";
  let ints = [
    RtInt<"phase", "index into the program's phase names">];
}

def Rt_PhaseEndOp : RtKernel<"phase_end", 40, "Transfer"> {
  let kernelEnum = "PhaseEnd";
  let backendOwned = 1;
  let doc = "the phase ends";
  let ints = [
    RtInt<"phase", "index into the program's phase names">];
}

#endif // FERRY_DIALECTS_RT_KERNELS_TRANSFER_TD
