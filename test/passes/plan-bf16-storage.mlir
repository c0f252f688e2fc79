// RUN: ferry-opt %s --ferry-plan-bf16-storage | FileCheck %s
// RUN: ferry-opt %s --ferry-plan-bf16-storage=storage=fp32 | FileCheck %s --check-prefix=FP32

// Tests ferry-plan-bf16-storage alone, on calls over virtual buffers
// (states @x, @w, @s, @loss are buffers 0-3):
// * temporary 4, gelu's output and a bf16 GEMM's a, becomes bf16 (64 bytes
//   of 2x8 floats: 32), as does the stash @s its same-sized scale writes
//   (a bf16 tensor of 32 bytes), through the copy from temporary 5: a copy
//   joins its ends and its length halves;
// * the GEMM's c (temporary 6) stays fp32: softmax writes it too, and a
//   GEMM without a workspace cannot round its result into bf16;
// * temporary 7 and the loss-sized temporary 8 stay fp32: 7 is also
//   softmax's additive mask, which stays fp32, and 8, a scalar, feeds no
//   matmul;
// * the input @x and the parameter @w stay fp32 whatever reads them.
// The masks: gelu's out (bit 1), the GEMM's a (bit 0), scale's x and out.

// CHECK: rt.state @s : tensor<2x8xbf16> role "stash" at 0 size 32
// CHECK: rt.program @f
// CHECK-NEXT: rt.buffer 4 size 32 {bf16}
// CHECK-NEXT: rt.buffer 5 size 32 {bf16}
// CHECK-NEXT: rt.buffer 6 size 64{{$}}
// CHECK-NEXT: rt.buffer 7 size 64{{$}}
// CHECK-NEXT: rt.buffer 8 size 4{{$}}
// CHECK-NEXT: rt.call "gelu" buffers [array<i64: 0, 64, 0>, array<i64: 4, 32, 0>] ints [array<i64: 16>] floats [] {bf16 = 2 : i64}
// CHECK-NEXT: rt.call "gemm" buffers [array<i64: 4, 32, 0>, array<i64: 1, 256, 0>, array<i64: 6, 64, 0>] {{.*}} {bf16 = 1 : i64}
// CHECK-NEXT: rt.call "scale" buffers [array<i64: 4, 32, 0>, array<i64: 5, 32, 0>] ints [array<i64: 16>] floats [5.000000e-01] {bf16 = 3 : i64}
// CHECK-NEXT: rt.call "copy" buffers [array<i64: 5, 32, 0>, array<i64: 2, 32, 0>] ints [array<i64: 32>] floats []{{$}}
// CHECK-NEXT: rt.call "tanh" buffers [array<i64: 6, 64, 0>, array<i64: 7, 64, 0>] ints [array<i64: 16>] floats []{{$}}
// CHECK-NEXT: rt.call "softmax" buffers [array<i64: 7, 64, 0>, array<i64: 7, 64, 0>, array<i64: 6, 64, 0>]
// CHECK-NEXT: rt.call "scale" buffers [array<i64: 3, 4, 0>, array<i64: 8, 4, 0>] ints [array<i64: 1>] floats [2.000000e+00]{{$}}
// CHECK-NEXT: rt.call "accumulate" buffers [array<i64: 8, 4, 0>, array<i64: 3, 4, 0>] ints [array<i64: 1>] floats []{{$}}

// FP32: rt.state @s : tensor<2x8xf32> role "stash" at 0 size 64
// FP32-NOT: bf16

module {
  rt.state @x : tensor<2x8xf32> role "input" at 0 size 64 {hf = "x", init = "zeros", init_std = 0.0 : f64}
  rt.state @w : tensor<8x8xf32> role "parameter" at 0 size 256 {hf = "w", init = "zeros", init_std = 0.0 : f64}
  rt.state @s : tensor<2x8xf32> role "stash" at 0 size 64 {hf = "s", init = "zeros", init_std = 0.0 : f64}
  rt.state @loss : tensor<f32> role "metric" at 0 size 4 {hf = "loss", init = "zeros", init_std = 0.0 : f64}
  rt.program @f inputs [] registers 0 transient 0 {
    rt.buffer 4 size 64
    rt.buffer 5 size 64
    rt.buffer 6 size 64
    rt.buffer 7 size 64
    rt.buffer 8 size 4
    rt.call "gelu" buffers [array<i64: 0, 64, 0>, array<i64: 4, 64, 0>] ints [array<i64: 16>] floats []
    rt.call "gemm" buffers [array<i64: 4, 64, 0>, array<i64: 1, 256, 0>, array<i64: 6, 64, 0>] ints [array<i64: 1>, array<i64: 2>, array<i64: 8>, array<i64: 8>, array<i64: 0>, array<i64: 0>, array<i64: 16>, array<i64: 64>, array<i64: 16>, array<i64: 0>, array<i64: 1>] floats [1.0]
    rt.call "scale" buffers [array<i64: 4, 64, 0>, array<i64: 5, 64, 0>] ints [array<i64: 16>] floats [0.5]
    rt.call "copy" buffers [array<i64: 5, 64, 0>, array<i64: 2, 64, 0>] ints [array<i64: 64>] floats []
    rt.call "tanh" buffers [array<i64: 6, 64, 0>, array<i64: 7, 64, 0>] ints [array<i64: 16>] floats []
    rt.call "softmax" buffers [array<i64: 7, 64, 0>, array<i64: 7, 64, 0>, array<i64: 6, 64, 0>] ints [array<i64: 1>, array<i64: 2>, array<i64: 8>] floats []
    rt.call "scale" buffers [array<i64: 3, 4, 0>, array<i64: 8, 4, 0>] ints [array<i64: 1>] floats [2.0]
    rt.call "accumulate" buffers [array<i64: 8, 4, 0>, array<i64: 3, 4, 0>] ints [array<i64: 1>] floats []
  }
}
