// RUN: ferry-opt %s --ferry-plan-bf16-storage | FileCheck %s
// RUN: ferry-opt %s --ferry-plan-bf16-storage=storage=fp32 | FileCheck %s --check-prefix=FP32

// Tests ferry-plan-bf16-storage alone, on calls over virtual buffers
// (states @x, @w, @s, @loss and temporaries %b4-%b8):
// * temporary %b4, gelu's output and a bf16 GEMM's a, becomes bf16 (64 bytes
//   of 2x8 floats: 32), as does the stash @s its same-sized scale writes
//   (a bf16 tensor of 32 bytes), through the copy from temporary %b5: a copy
//   joins its ends and its length halves;
// * the GEMM's c (temporary %b6) stays fp32: softmax writes it too, and a
//   GEMM without a workspace cannot round its result into bf16;
// * temporary %b7 and the loss-sized temporary %b8 stay fp32: %b7 is also
//   softmax's additive mask, which stays fp32, and %b8, a scalar, feeds no
//   matmul;
// * the input @x and the parameter @w stay fp32 whatever reads them.
// The masks (bf16 attribute, bit b = b-th buffer operand): gelu's out
// (bit 1), the GEMM's a (bit 0), scale's x and out.

// CHECK: rt.state @s : tensor<2x8xbf16> role "stash" at 0 size 32
// CHECK: rt.program @f
// CHECK-NEXT: %x = rt.state_ref @x
// CHECK-NEXT: %w = rt.state_ref @w
// CHECK-NEXT: %s = rt.state_ref @s
// CHECK-NEXT: %loss = rt.state_ref @loss
// CHECK-NEXT: %[[B4:.*]] = rt.alloc size 32 {bf16}
// CHECK-NEXT: %[[B5:.*]] = rt.alloc size 32 {bf16}
// CHECK-NEXT: %[[B6:.*]] = rt.alloc size 64{{$}}
// CHECK-NEXT: %[[B7:.*]] = rt.alloc size 64{{$}}
// CHECK-NEXT: %[[B8:.*]] = rt.alloc size 4{{$}}
// CHECK-NEXT: %[[GX:.*]] = rt.slice %x [0] size 64
// CHECK-NEXT: %[[GO:.*]] = rt.slice %[[B4]] [0] size 32
// CHECK-NEXT: rt.gelu x(%[[GX]]) out(%[[GO]]) {bf16 = 2 : i64, count = array<i64: 16>}{{$}}
// CHECK-NEXT: %[[MA:.*]] = rt.slice %[[B4]] [0] size 32
// CHECK-NEXT: %[[MB:.*]] = rt.slice %w [0] size 256
// CHECK-NEXT: %[[MC:.*]] = rt.slice %[[B6]] [0] size 64
// CHECK-NEXT: rt.gemm a(%[[MA]]) b(%[[MB]]) c(%[[MC]]) {{\{.*, bf16 = 1 : i64, .*\}$}}
// CHECK-NEXT: %[[SX:.*]] = rt.slice %[[B4]] [0] size 32
// CHECK-NEXT: %[[SO:.*]] = rt.slice %[[B5]] [0] size 32
// CHECK-NEXT: rt.scale x(%[[SX]]) out(%[[SO]]) {bf16 = 3 : i64, count = array<i64: 16>, factor = 5.000000e-01 : f64}{{$}}
// CHECK-NEXT: %[[CS:.*]] = rt.slice %[[B5]] [0] size 32
// CHECK-NEXT: %[[CD:.*]] = rt.slice %s [0] size 32
// CHECK-NEXT: rt.copy src(%[[CS]]) dst(%[[CD]]) {bytes = array<i64: 32>}{{$}}
// CHECK-NEXT: %[[TX:.*]] = rt.slice %[[B6]] [0] size 64
// CHECK-NEXT: %[[TO:.*]] = rt.slice %[[B7]] [0] size 64
// CHECK-NEXT: rt.tanh x(%[[TX]]) out(%[[TO]]) {count = array<i64: 16>}{{$}}
// CHECK-NEXT: %[[XX:.*]] = rt.slice %[[B7]] [0] size 64
// CHECK-NEXT: %[[XM:.*]] = rt.slice %[[B7]] [0] size 64
// CHECK-NEXT: %[[XO:.*]] = rt.slice %[[B6]] [0] size 64
// CHECK-NEXT: rt.softmax x(%[[XX]]) mask(%[[XM]]) out(%[[XO]])
// CHECK-NEXT: %[[LX:.*]] = rt.slice %loss [0] size 4
// CHECK-NEXT: %[[LO:.*]] = rt.slice %[[B8]] [0] size 4
// CHECK-NEXT: rt.scale x(%[[LX]]) out(%[[LO]]) {count = array<i64: 1>, factor = 2.000000e+00 : f64}{{$}}
// CHECK-NEXT: %[[AS:.*]] = rt.slice %[[B8]] [0] size 4
// CHECK-NEXT: %[[AD:.*]] = rt.slice %loss [0] size 4
// CHECK-NEXT: rt.accumulate src(%[[AS]]) dst(%[[AD]]) {count = array<i64: 1>}{{$}}

// FP32: rt.state @s : tensor<2x8xf32> role "stash" at 0 size 64
// FP32-NOT: bf16

module {
  rt.state @x : tensor<2x8xf32> role "input" at 0 size 64 {hf = "x", init = "zeros", init_std = 0.0 : f64}
  rt.state @w : tensor<8x8xf32> role "parameter" at 0 size 256 {hf = "w", init = "zeros", init_std = 0.0 : f64}
  rt.state @s : tensor<2x8xf32> role "stash" at 0 size 64 {hf = "s", init = "zeros", init_std = 0.0 : f64}
  rt.state @loss : tensor<f32> role "metric" at 0 size 4 {hf = "loss", init = "zeros", init_std = 0.0 : f64}
  rt.program @f inputs [] registers 0 transient 0 {
    %x = rt.state_ref @x
    %w = rt.state_ref @w
    %s = rt.state_ref @s
    %loss = rt.state_ref @loss
    %b4 = rt.alloc size 64
    %b5 = rt.alloc size 64
    %b6 = rt.alloc size 64
    %b7 = rt.alloc size 64
    %b8 = rt.alloc size 4
    %r0 = rt.slice %x [0] size 64
    %r1 = rt.slice %b4 [0] size 64
    rt.gelu x(%r0) out(%r1) {count = array<i64: 16>}
    %r2 = rt.slice %b4 [0] size 64
    %r3 = rt.slice %w [0] size 256
    %r4 = rt.slice %b6 [0] size 64
    rt.gemm a(%r2) b(%r3) c(%r4) {batch = array<i64: 1>, m = array<i64: 2>, n = array<i64: 8>, k = array<i64: 8>, trans_a = array<i64: 0>, trans_b = array<i64: 0>, stride_a = array<i64: 16>, stride_b = array<i64: 64>, stride_c = array<i64: 16>, accumulate = array<i64: 0>, precision = array<i64: 1>, alpha = 1.0 : f64}
    %r5 = rt.slice %b4 [0] size 64
    %r6 = rt.slice %b5 [0] size 64
    rt.scale x(%r5) out(%r6) {count = array<i64: 16>, factor = 0.5 : f64}
    %r7 = rt.slice %b5 [0] size 64
    %r8 = rt.slice %s [0] size 64
    rt.copy src(%r7) dst(%r8) {bytes = array<i64: 64>}
    %r9 = rt.slice %b6 [0] size 64
    %r10 = rt.slice %b7 [0] size 64
    rt.tanh x(%r9) out(%r10) {count = array<i64: 16>}
    %r11 = rt.slice %b7 [0] size 64
    %r12 = rt.slice %b7 [0] size 64
    %r13 = rt.slice %b6 [0] size 64
    rt.softmax x(%r11) mask(%r12) out(%r13) {batch = array<i64: 1>, rows = array<i64: 2>, cols = array<i64: 8>}
    %r14 = rt.slice %loss [0] size 4
    %r15 = rt.slice %b8 [0] size 4
    rt.scale x(%r14) out(%r15) {count = array<i64: 1>, factor = 2.0 : f64}
    %r16 = rt.slice %b8 [0] size 4
    %r17 = rt.slice %loss [0] size 4
    rt.accumulate src(%r16) dst(%r17) {count = array<i64: 1>}
  }
}
