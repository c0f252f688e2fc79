// RUN: ferry-opt %s | FileCheck %s
// RUN: ferry-opt %s | ferry-opt | FileCheck %s

// Tests that the rt ops round-trip: states with their role, offset, size and
// init attributes; a program with inputs, registers and transient bytes; a
// loop with its register; kernels whose buffers and integers are affine in
// the registers; and the virtual form between the lowering's passes:
// rt.buffer temporaries, rt.call on buffer ids, a loop with a parity register.

// CHECK-LABEL: module attributes {rt.alignment = 64 : i64, rt.arena_bytes = 1024 : i64, rt.state_bytes = 512 : i64}
// CHECK: rt.state @w : tensor<4x8xf32> role "parameter" at 0 size 128 {hf = "w", init = "normal", init_std = 2.000000e-02 : f64}
// CHECK: rt.state @layer.b : tensor<3x8xf32> role "parameter" at 128 size 96 {hf = "layer.{}.b", init = "zeros", init_std = 0.000000e+00 : f64, no_weight_decay, stacked}
// CHECK: rt.state @metric.loss : tensor<f32> role "metric" at 256 size 4 {hf = "metric.loss", init = "zeros", init_std = 0.000000e+00 : f64}
// CHECK: rt.program @train_step inputs ["step"] registers 2 transient 512 attributes {rt.max_live_bytes = 448 : i64} {
// CHECK-NEXT: rt.kernel "fill" buffers [array<i64: 4, 256>] ints [array<i64: 1>] floats [0.000000e+00]
// CHECK-NEXT: rt.loop r 1 count 3 {
// CHECK-NEXT: rt.kernel "bias_add" buffers [array<i64: 128, 512>, array<i64: 32, 128, 0, 32>, array<i64: 128, 640>] ints [array<i64: 4>, array<i64: 8>] floats []
// CHECK-NEXT: rt.kernel "dropout" buffers [array<i64: 128, 640>, array<i64: 128, 512>] ints [array<i64: 32>, array<i64: 8>, array<i64: 42>, array<i64: 7>, array<i64: 0, 0, 1>, array<i64: 0, 16>] floats [1.000000e-01]
// CHECK-NEXT: }
// CHECK-NEXT: rt.kernel "gemm" buffers [array<i64: 128, 512>, array<i64: 128, 0>, array<i64: 64, 768>] ints [array<i64: 1>, array<i64: 4>, array<i64: 4>, array<i64: 8>, array<i64: 0>, array<i64: 1>, array<i64: 32>, array<i64: 0>, array<i64: 16>, array<i64: 0>] floats [1.000000e+00]
// CHECK-NEXT: }
// CHECK-NEXT: rt.program @virtual inputs [] registers 1 transient 0 {
// CHECK-NEXT: rt.buffer 3 size 128
// CHECK-NEXT: rt.buffer 4 size 256 {label = "@w (staged)"}
// CHECK-NEXT: rt.loop r 0 count 2 parity r 1 {
// CHECK-NEXT: rt.call "copy" buffers [array<i64: 0, 128, 0>, array<i64: 3, 128, 0>] ints [array<i64: 128>] floats []
// CHECK-NEXT: rt.call "fill" buffers [array<i64: 4, 128, 0, 0, 128>] ints [array<i64: 32>] floats [1.000000e+00]
// CHECK-NEXT: }
// CHECK-NEXT: }
module attributes {rt.alignment = 64 : i64, rt.arena_bytes = 1024 : i64, rt.state_bytes = 512 : i64} {
  rt.state @w : tensor<4x8xf32> role "parameter" at 0 size 128 {hf = "w", init = "normal", init_std = 2.000000e-02 : f64}
  rt.state @layer.b : tensor<3x8xf32> role "parameter" at 128 size 96 {hf = "layer.{}.b", init = "zeros", init_std = 0.000000e+00 : f64, no_weight_decay, stacked}
  rt.state @metric.loss : tensor<f32> role "metric" at 256 size 4 {hf = "metric.loss", init = "zeros", init_std = 0.000000e+00 : f64}
  rt.program @train_step inputs ["step"] registers 2 transient 512 attributes {rt.max_live_bytes = 448 : i64} {
    rt.kernel "fill" buffers [array<i64: 4, 256>] ints [array<i64: 1>] floats [0.0]
    rt.loop r 1 count 3 {
      rt.kernel "bias_add" buffers [array<i64: 128, 512>, array<i64: 32, 128, 0, 32>, array<i64: 128, 640>] ints [array<i64: 4>, array<i64: 8>] floats []
      rt.kernel "dropout" buffers [array<i64: 128, 640>, array<i64: 128, 512>] ints [array<i64: 32>, array<i64: 8>, array<i64: 42>, array<i64: 7>, array<i64: 0, 0, 1>, array<i64: 0, 16>] floats [0.1]
    }
    rt.kernel "gemm" buffers [array<i64: 128, 512>, array<i64: 128, 0>, array<i64: 64, 768>] ints [array<i64: 1>, array<i64: 4>, array<i64: 4>, array<i64: 8>, array<i64: 0>, array<i64: 1>, array<i64: 32>, array<i64: 0>, array<i64: 16>, array<i64: 0>] floats [1.0]
  }
  rt.program @virtual inputs [] registers 1 transient 0 {
    rt.buffer 3 size 128
    rt.buffer 4 size 256 {label = "@w (staged)"}
    rt.loop r 0 count 2 parity r 1 {
      rt.call "copy" buffers [array<i64: 0, 128, 0>, array<i64: 3, 128, 0>] ints [array<i64: 128>] floats []
      rt.call "fill" buffers [array<i64: 4, 128, 0, 0, 128>] ints [array<i64: 32>] floats [1.0]
    }
  }
}
