//===- RtBase.td - the `rt` dialect, its type and op base --*- tablegen -*-===//
//
// What the rt dialect's two op sets share: the dialect, the !rt.range type
// and the op base class. RtOps.td declares the structural ops (states,
// programs, loops, buffers and the generic calls); kernels/*.td declare one
// typed op per kernel (RtKernelBase.td), generated apart
// (dialects/rt/CMakeLists.txt) so that neither set's generated code repeats
// the other's.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_DIALECTS_RT_RTBASE_TD
#define FERRY_DIALECTS_RT_RTBASE_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/OpBase.td"

def Rt_Dialect : Dialect {
  let name = "rt";
  let cppNamespace = "::ferry::rt";
  // The rt.* attributes on the module and programs (RtAttributes.h).
  let hasOperationAttrVerify = 1;
  // !rt.buffer and !rt.range, below.
  let useDefaultTypePrinterParser = 1;
  let summary = "Kernel calls on device-arena byte ranges, as the runtime replays them.";
  let description = [{
    The last stage of ferry's pipeline. A module holds `rt.state` ops (tensors
    that live for the whole run: parameters, gradients, optimizer moments,
    inputs, metrics, stashed activations) at fixed arena offsets, and one
    `rt.program` per entry point (`train_step`, ...). A program is a list of
    typed kernel calls (`rt.gemm`, `rt.layer_norm`, ..., one op per record
    of dialects/rt/kernels) and `rt.loop`s.

    A kernel takes its buffers as `!rt.range` operands, each an `rt.slice`
    of a `!rt.buffer`. Before the arena layout (IREE's `stream.async`
    stage) the buffers are the program's temporaries (`rt.alloc`) and the
    states it uses (`rt.state_ref`); `ferry-layout-arena` places them and
    rewrites every slice onto the device arena or host memory (`rt.arena`,
    IREE's `stream.cmd` stage), which the executable encodes.

    Slice offsets and integer parameters are affine in the program's
    registers: `array<i64: c, a0, a1, ...>` means `c + a0*r0 + a1*r1 + ...`,
    where the program's inputs (e.g. `step`) come first and each loop's
    counter has its own register. So one compiled layer body serves every
    layer: its weights are at `base + layer * entry_bytes`.

    The module's attributes give the arena size (`rt.arena_bytes`), where the
    states end (`rt.state_bytes`) and the alignment of every buffer.

    Phased execution adds remote buffers: `rt.state`s with the `host`
    attribute live at their offset in a separate host memory of
    `rt.host_bytes`, which no kernel touches. `load` and `store` kernels copy
    a byte range between host memory and the arena on a copy queue; `wait`
    blocks until the copies issued with an event are done; `phase_begin` /
    `phase_end` mark a phase (its name in the program's `rt.phase_names`).
    Each program's `rt.phases` holds the compiler's plan per phase: how often
    it runs, bytes in and out over the host link, matmul FLOPs and the peak of
    device bytes.
  }];
}

class Rt_Op<string mnemonic, list<Trait> traits = []>
    : Op<Rt_Dialect, mnemonic, traits>;

// A buffer: before the arena layout, a program's temporary (rt.alloc) or a
// state (rt.state_ref); after it, the device arena or host memory
// (rt.arena). Kernels never take a buffer, only ranges of it (rt.slice).
def Rt_BufferType : TypeDef<Rt_Dialect, "Buffer"> {
  let mnemonic = "buffer";
  let summary = "memory that ranges are sliced from";
}

// A byte range of a buffer (rt.slice). The typed kernel ops take their
// buffers as ranges.
def Rt_RangeType : TypeDef<Rt_Dialect, "Range"> {
  let mnemonic = "range";
  let summary = "a byte range a kernel reads or writes";
}

// An integer parameter or offset, affine in the program's registers:
// array<i64: c, a0, a1, ...> is c + a0 * r0 + a1 * r1 + ...
def Rt_AffineAttr : ConfinedAttr<DenseI64ArrayAttr, [DenseArrayMinCt<1>]>;

#endif // FERRY_DIALECTS_RT_RTBASE_TD
