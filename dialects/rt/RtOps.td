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
}

def Rt_LoopOp : Rt_Op<"loop", [SingleBlock, NoTerminator]> {
  let summary = "runs its body `count` times, counting in a register";
  let description = [{
    With `parity`, a second register holds `counter & 1`: phased
    execution's double buffers alternate on it (the next iteration's data is
    loaded into the other half while this one computes).

    ```mlir
    rt.loop r1 count 12 { rt.kernel "gemm" ... }
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

def Rt_KernelOp : Rt_Op<"kernel"> {
  let summary = "one kernel call on arena byte ranges";
  let description = [{
    `kernel` names an entry of dialects/rt/kernels/*.td, which says
    what each buffer and integer is. Buffers are `array<i64: bytes, c, a...>`,
    integers `array<i64: c, a...>` (affine in the registers).

    ```mlir
    rt.kernel "layer_norm" buffers [array<i64: 65536, 1048576>, ...] ints [array<i64: 128>, array<i64: 128>] floats array<f64: 1.0e-12>
    ```
    An optional `bf16` integer is the mask of the buffers stored as bf16 (bit
    b for buffer b; 2 bytes an element, `training.bf16_activations`): only
    buffers its kernel record declares `RtBf16` (checked here; the condition
    it states is checked by the runtime).
    ```mlir
    rt.kernel "gelu" buffers [array<i64: 4096, 1024>, array<i64: 2048, 8192>] ints [array<i64: 1024>] floats [] {bf16 = 2 : i64}
    ```
  }];
  let arguments = (ins StrAttr:$kernel, ArrayAttr:$buffers, ArrayAttr:$ints,
                       DenseF64ArrayAttr:$floats);
  let assemblyFormat = [{
    $kernel `buffers` $buffers `ints` $ints `floats` $floats attr-dict
  }];
  let hasVerifier = 1;
}

def Rt_BufferOp : Rt_Op<"buffer", [HasParent<"::ferry::rt::ProgramOp">]> {
  let summary = "a program's temporary before the arena layout: a virtual buffer";
  let description = [{
    Between `ferry-select-kernels` and `ferry-layout-arena`, programs call
    kernels on virtual buffers (`rt.call`). A buffer id below the module's
    count of `rt.state` ops names that state (in declaration order); above
    it, the `rt.buffer` with that id: a temporary of `size` bytes that
    `ferry-layout-arena` places in the arena by its live range. `label` says
    what it holds, for budget errors (`bf16 matmul workspace`,
    `@layer.w (staged)`). A GEMM's workspace ends with `scratch` bytes for
    cuBLASLt, which `ferry-place-buffers` may shrink under a budget.

    ```mlir
    rt.buffer 41 size 65536
    rt.buffer 42 size 131072 {label = "@layer.w (staged)"}
    rt.buffer 43 size 33554432 {label = "gemm workspace", scratch = 33554432 : i64}
    ```
    `bf16` marks a temporary that `ferry-plan-bf16-storage` stores as bf16
    (its size is already halved; the calls' `bf16` masks say so to the
    kernels).
  }];
  let arguments = (ins I64Attr:$id, I64Attr:$bytes, OptionalAttr<StrAttr>:$label,
                       OptionalAttr<I64Attr>:$scratch);
  let assemblyFormat = [{
    $id `size` $bytes attr-dict
  }];
  let hasVerifier = 1;
}

def Rt_CallOp : Rt_Op<"call"> {
  let summary = "one kernel call on virtual buffers (before the arena layout)";
  let description = [{
    As `rt.kernel`, but each buffer is `array<i64: id, bytes, c, a...>`:
    `bytes` bytes at offset `c + a0*r0 + ...` of buffer `id` (a state or an
    `rt.buffer`, see there). `ferry-layout-arena` turns every `rt.call`
    into an `rt.kernel` on arena addresses. Its optional `bf16` mask is
    `rt.kernel`'s.

    ```mlir
    rt.call "layer_norm" buffers [array<i64: 40, 4096, 0>, array<i64: 2, 512, 0>, array<i64: 3, 512, 0>, array<i64: 41, 4096, 0>] ints [array<i64: 8>, array<i64: 128>] floats array<f64: 1.0e-12>
    ```
  }];
  let arguments = (ins StrAttr:$kernel, ArrayAttr:$buffers, ArrayAttr:$ints,
                       DenseF64ArrayAttr:$floats);
  let assemblyFormat = [{
    $kernel `buffers` $buffers `ints` $ints `floats` $floats attr-dict
  }];
  let hasVerifier = 1;
}

#endif // FERRY_DIALECTS_RT_RTOPS_TD
