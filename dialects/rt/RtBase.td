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
  // !rt.range, below.
  let useDefaultTypePrinterParser = 1;
  let summary = "Kernel calls on device-arena byte ranges, as the runtime replays them.";
  let description = [{
    The last stage of ferry's pipeline. A module holds `rt.state` ops (tensors
    that live for the whole run: parameters, gradients, optimizer moments,
    inputs, metrics, stashed activations) at fixed arena offsets, and one
    `rt.program` per entry point (`train_step`, ...). A program is a list of
    `rt.kernel` calls and `rt.loop`s.

    Addresses and integer parameters are affine in the program's registers:
    `array<i64: c, a0, a1, ...>` means `c + a0*r0 + a1*r1 + ...`, where the
    program's inputs (e.g. `step`) come first and each loop's counter has its
    own register. A buffer is `array<i64: bytes, c, a0, ...>`: `bytes` bytes
    at that arena offset. So one compiled layer body serves every layer: its
    weights are at `base + layer * entry_bytes`.

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

// A byte range: of the arena, or of host memory for load and store. The
// typed kernel ops take their buffers as ranges.
def Rt_RangeType : TypeDef<Rt_Dialect, "Range"> {
  let mnemonic = "range";
  let summary = "a byte range a kernel reads or writes";
}

#endif // FERRY_DIALECTS_RT_RTBASE_TD
