//===- RtOps.td - the `rt` dialect -------------------------*- tablegen -*-===//
//
// The runtime stage: what the runtime replays, with every decision made.
// Tensors have become byte ranges of one device arena; ops are kernel calls
// with their shapes as integer parameters; loops carry a register the
// addresses and parameters may depend on. Serialised 1:1 into the executable
// (runtime/executable/Executable.fbs).
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_DIALECTS_RT_RTOPS_TD
#define FERRY_DIALECTS_RT_RTOPS_TD

include "dialects/rt/RtBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Rt_StateOp : Rt_Op<"state", [Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "a tensor at a fixed arena offset for the whole run";
  let description = [{
    `role` is one of parameter, gradient, optimizer_state, input, output,
    metric, stash. With `host`, it is a remote buffer in host memory (phased
    execution) and `at` is its offset there. `init` says how the runtime initialises it (normal with
    `init_std`, zeros, ones); `hf` is the name in checkpoints.

    ```mlir
    rt.state @embeddings.word : tensor<1024x128xf32> role "parameter" at 0 size 524288
        {hf = "bert.embeddings.word_embeddings.weight", init = "normal", init_std = 2.0e-02 : f64}
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, TypeAttr:$type, StrAttr:$role,
                       I64Attr:$offset, I64Attr:$bytes, StrAttr:$init,
                       F64Attr:$init_std, StrAttr:$hf, UnitAttr:$stacked,
                       UnitAttr:$no_weight_decay);
  let assemblyFormat = [{
    $sym_name `:` $type `role` $role `at` $offset `size` $bytes attr-dict
  }];
}

def Rt_ProgramOp : Rt_Op<"program", [Symbol, SingleBlock, NoTerminator,
    HasParent<"::mlir::ModuleOp">]> {
  let summary = "an entry point: kernel calls and loops";
  let description = [{
    `inputs` names the registers the caller sets (in order); `registers`
    counts them plus one per loop; `transient` is the peak of the program's
    temporaries, planned above the states.

    ```mlir
    rt.program @train_step inputs ["step"] registers 3 transient 1048576 {
      rt.loop r1 count 2 { ... }
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrArrayAttr:$inputs,
                       I64Attr:$registers, I64Attr:$transient);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `inputs` $inputs `registers` $registers `transient` $transient attr-dict-with-keyword $body
  }];
  // Every phase marker's phase is a constant index of rt.phase_names.
  let hasRegionVerifier = 1;
}

def Rt_LoopOp : Rt_Op<"loop", [SingleBlock, NoTerminator]> {
  let summary = "runs its body `count` times, counting in a register";
  let description = [{
    With `parity`, a second register holds `counter & 1`: phased
    execution's double buffers alternate on it (the next iteration's data is
    loaded into the other half while this one computes).

    ```mlir
    rt.loop r1 count 12 { rt.gemm ... }
    rt.loop r2 count 24 parity r9 { ... }
    ```
  }];
  let arguments = (ins I64Attr:$register_index, I64Attr:$count,
                       OptionalAttr<I64Attr>:$parity_register);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `r` $register_index `count` $count (`parity` `r` $parity_register^)? attr-dict-with-keyword $body
  }];
}

def Rt_AllocOp : Rt_Op<"alloc", [HasParent<"::ferry::rt::ProgramOp">,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "a program's temporary before the arena layout";
  let description = [{
    Between `ferry-select-kernels` and `ferry-layout-arena`, a program's
    temporaries are `rt.alloc`s at the top of its body: `size` bytes that
    `ferry-layout-arena` places in the arena by their live range (the first
    and last kernel that uses a range of it). `label` says what it holds,
    for budget errors (`bf16 matmul workspace`, `@layer.w (staged)`). A
    GEMM's workspace ends with `scratch` bytes for cuBLASLt, which
    `ferry-place-buffers` may shrink under a budget. `bf16` marks a
    temporary that `ferry-plan-bf16-storage` stores as bf16 (its size is
    already halved; the calls' `bf16` masks say so to the kernels).

    ```mlir
    %t = rt.alloc size 65536
    %t_0 = rt.alloc size 131072 {label = "@layer.w (staged)"}
    %t_1 = rt.alloc size 33554432 {label = "gemm workspace", scratch = 33554432 : i64}
    ```
  }];
  let arguments = (ins I64Attr:$bytes, OptionalAttr<StrAttr>:$label,
                       OptionalAttr<I64Attr>:$scratch, UnitAttr:$bf16);
  let results = (outs Rt_BufferType:$result);
  let assemblyFormat = "`size` $bytes attr-dict";
  let hasVerifier = 1;
}

def Rt_StateRefOp : Rt_Op<"state_ref", [HasParent<"::ferry::rt::ProgramOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "an rt.state as a buffer, before the arena layout";
  let description = [{
    The buffer of a state, for the program's kernels to slice. One per
    state a program uses, at the top of its body (named after the state).

    ```mlir
    %layer.w = rt.state_ref @layer.w
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$state);
  let results = (outs Rt_BufferType:$result);
  let assemblyFormat = "$state attr-dict";
}

def Rt_ArenaOp : Rt_Op<"arena", [HasParent<"::ferry::rt::ProgramOp">,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "the device arena (or, with `host`, host memory), after the layout";
  let description = [{
    After `ferry-layout-arena`, every range is a slice of the device arena
    (states at their offsets, temporaries above them) or, for the host
    side of a `load` or `store`, of host memory. The writer encodes each
    slice's offset and size.

    ```mlir
    %arena = rt.arena
    %host = rt.arena host
    ```
  }];
  let arguments = (ins UnitAttr:$host);
  let results = (outs Rt_BufferType:$result);
  let assemblyFormat = "(`host` $host^)? attr-dict";
}

def Rt_SliceOp : Rt_Op<"slice", [Pure,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "a byte range of a buffer, at a register-affine offset";
  let description = [{
    `size` bytes of `source` from `offset`, which is affine in the
    program's registers (`[c, a0, a1, ...]`: c + a0 * r0 + a1 * r1 + ...),
    so one compiled layer body addresses every layer's weights. The
    lowering puts each slice right before the kernel that takes it.

    ```mlir
    %r = rt.slice %layer.w [0, 65536] size 65536
    rt.layer_norm x(%r) ...
    ```
  }];
  let arguments = (ins Rt_BufferType:$source, Rt_AffineAttr:$offset,
                       I64Attr:$bytes);
  let results = (outs Rt_RangeType:$result);
  let assemblyFormat = "$source $offset `size` $bytes attr-dict";
  let hasVerifier = 1;
}

#endif // FERRY_DIALECTS_RT_RTOPS_TD
