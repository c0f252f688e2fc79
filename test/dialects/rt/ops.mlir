// RUN: ferry-opt %s | FileCheck %s
// RUN: ferry-opt %s | ferry-opt | FileCheck %s

// Tests that the rt ops round-trip: states with their role, offset, size and
// init attributes; a program with inputs, registers and transient bytes; a
// loop with its register; typed kernel calls on slices of the arena whose
// offsets and integers are affine in the registers; and the form between the
// lowering's passes: rt.state_ref and rt.alloc buffers, a loop with a parity
// register.

// CHECK-LABEL: module attributes {rt.alignment = 64 : i64, rt.arena_bytes = 1024 : i64, rt.state_bytes = 512 : i64}
// CHECK: rt.state @w : tensor<4x8xf32> role "parameter" at 0 size 128 {hf = "w", init = "normal", init_std = 2.000000e-02 : f64}
// CHECK: rt.state @layer.b : tensor<3x8xf32> role "parameter" at 128 size 96 {hf = "layer.{}.b", init = "zeros", init_std = 0.000000e+00 : f64, no_weight_decay, stacked}
// CHECK: rt.state @metric.loss : tensor<f32> role "metric" at 256 size 4 {hf = "metric.loss", init = "zeros", init_std = 0.000000e+00 : f64}
// CHECK: rt.program @train_step inputs ["step"] registers 2 transient 512 attributes {rt.max_live_bytes = 448 : i64} {
// CHECK-NEXT: %[[ARENA:.*]] = rt.arena
// CHECK-NEXT: %[[F:.*]] = rt.slice %[[ARENA]] [256] size 4
// CHECK-NEXT: rt.fill dst(%[[F]]) {count = array<i64: 1>, value = 0.000000e+00 : f64}
// CHECK-NEXT: rt.loop r 1 count 3 {
// CHECK-NEXT: %[[X:.*]] = rt.slice %[[ARENA]] [512] size 128
// CHECK-NEXT: %[[B:.*]] = rt.slice %[[ARENA]] [128, 0, 32] size 32
// CHECK-NEXT: %[[O:.*]] = rt.slice %[[ARENA]] [640] size 128
// CHECK-NEXT: rt.bias_add x(%[[X]]) bias(%[[B]]) out(%[[O]]) {cols = array<i64: 8>, rows = array<i64: 4>}
// CHECK-NEXT: %[[DX:.*]] = rt.slice %[[ARENA]] [640] size 128
// CHECK-NEXT: %[[DO:.*]] = rt.slice %[[ARENA]] [512] size 128
// CHECK-NEXT: rt.dropout x(%[[DX]]) out(%[[DO]]) {count = array<i64: 32>, layer = array<i64: 0, 0, 1>, p = 1.000000e-01 : f64, per_sample = array<i64: 8>, purpose = array<i64: 7>, sample_offset = array<i64: 0, 16>, seed = array<i64: 42>}
// CHECK-NEXT: }
// CHECK-NEXT: %[[GA:.*]] = rt.slice %[[ARENA]] [512] size 128
// CHECK-NEXT: %[[GB:.*]] = rt.slice %[[ARENA]] [0] size 128
// CHECK-NEXT: %[[GC:.*]] = rt.slice %[[ARENA]] [768] size 64
// CHECK-NEXT: rt.gemm a(%[[GA]]) b(%[[GB]]) c(%[[GC]]) {accumulate = array<i64: 0>, alpha = 1.000000e+00 : f64, batch = array<i64: 1>, k = array<i64: 8>, m = array<i64: 4>, n = array<i64: 4>, stride_a = array<i64: 32>, stride_b = array<i64: 0>, stride_c = array<i64: 16>, trans_a = array<i64: 0>, trans_b = array<i64: 1>}
// CHECK-NEXT: }
// CHECK-NEXT: rt.program @virtual inputs [] registers 1 transient 0 {
// CHECK-NEXT: %[[W:.*]] = rt.state_ref @w
// CHECK-NEXT: %[[T:.*]] = rt.alloc size 128
// CHECK-NEXT: %[[S:.*]] = rt.alloc size 256 {label = "@w (staged)"}
// CHECK-NEXT: rt.loop r 0 count 2 parity r 1 {
// CHECK-NEXT: %[[CS:.*]] = rt.slice %[[W]] [0] size 128
// CHECK-NEXT: %[[CD:.*]] = rt.slice %[[T]] [0] size 128
// CHECK-NEXT: rt.copy src(%[[CS]]) dst(%[[CD]]) {bytes = array<i64: 128>}
// CHECK-NEXT: %[[H:.*]] = rt.slice %[[S]] [0, 0, 128] size 128
// CHECK-NEXT: rt.fill dst(%[[H]]) {count = array<i64: 32>, value = 1.000000e+00 : f64}
// CHECK-NEXT: }
// CHECK-NEXT: }
module attributes {rt.alignment = 64 : i64, rt.arena_bytes = 1024 : i64, rt.state_bytes = 512 : i64} {
  rt.state @w : tensor<4x8xf32> role "parameter" at 0 size 128 {hf = "w", init = "normal", init_std = 2.000000e-02 : f64}
  rt.state @layer.b : tensor<3x8xf32> role "parameter" at 128 size 96 {hf = "layer.{}.b", init = "zeros", init_std = 0.000000e+00 : f64, no_weight_decay, stacked}
  rt.state @metric.loss : tensor<f32> role "metric" at 256 size 4 {hf = "metric.loss", init = "zeros", init_std = 0.000000e+00 : f64}
  rt.program @train_step inputs ["step"] registers 2 transient 512 attributes {rt.max_live_bytes = 448 : i64} {
    %arena = rt.arena
    %r0 = rt.slice %arena [256] size 4
    rt.fill dst(%r0) {count = array<i64: 1>, value = 0.0 : f64}
    rt.loop r 1 count 3 {
      %r1 = rt.slice %arena [512] size 128
      %r2 = rt.slice %arena [128, 0, 32] size 32
      %r3 = rt.slice %arena [640] size 128
      rt.bias_add x(%r1) bias(%r2) out(%r3) {rows = array<i64: 4>, cols = array<i64: 8>}
      %r4 = rt.slice %arena [640] size 128
      %r5 = rt.slice %arena [512] size 128
      rt.dropout x(%r4) out(%r5) {count = array<i64: 32>, per_sample = array<i64: 8>, seed = array<i64: 42>, purpose = array<i64: 7>, layer = array<i64: 0, 0, 1>, sample_offset = array<i64: 0, 16>, p = 0.1 : f64}
    }
    %r6 = rt.slice %arena [512] size 128
    %r7 = rt.slice %arena [0] size 128
    %r8 = rt.slice %arena [768] size 64
    rt.gemm a(%r6) b(%r7) c(%r8) {batch = array<i64: 1>, m = array<i64: 4>, n = array<i64: 4>, k = array<i64: 8>, trans_a = array<i64: 0>, trans_b = array<i64: 1>, stride_a = array<i64: 32>, stride_b = array<i64: 0>, stride_c = array<i64: 16>, accumulate = array<i64: 0>, alpha = 1.0 : f64}
  }
  rt.program @virtual inputs [] registers 1 transient 0 {
    %w = rt.state_ref @w
    %b3 = rt.alloc size 128
    %b4 = rt.alloc size 256 {label = "@w (staged)"}
    rt.loop r 0 count 2 parity r 1 {
      %r9 = rt.slice %w [0] size 128
      %r10 = rt.slice %b3 [0] size 128
      rt.copy src(%r9) dst(%r10) {bytes = array<i64: 128>}
      %r11 = rt.slice %b4 [0, 0, 128] size 128
      rt.fill dst(%r11) {count = array<i64: 32>, value = 1.0 : f64}
    }
  }
}
