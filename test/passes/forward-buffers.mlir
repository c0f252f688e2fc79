// RUN: ferry-opt %s --ferry-forward-buffers | FileCheck %s

// Tests ferry-forward-buffers alone, on calls over virtual buffers (states
// @a, @w, @y, @grad.u, @grad.v are buffers 0-4):
// * tanh into temporary 5, only copied into @y: tanh writes @y itself and
//   the copy and the temporary's declaration go;
// * a GEMM (alpha 1) into temporary 6, only accumulated into @grad.u: the
//   GEMM adds into @grad.u (its accumulate flag, int 9, becomes 1);
// * the same with alpha 0.3 is kept: alpha * AB + D in one rounding is not
//   D + (alpha * AB) unless alpha is a power of two;
// * temporary 8, written outside the loop and copied inside it, is kept:
//   every use must sit in the same loop body.

// CHECK: rt.program @f inputs [] registers 1 transient 0 {
// CHECK-NEXT: rt.buffer 7 size 32
// CHECK-NEXT: rt.buffer 8 size 32
// CHECK-NEXT: rt.call "tanh" buffers [array<i64: 0, 32, 0>, array<i64: 2, 32, 0>]
// CHECK-NEXT: rt.call "gemm" buffers [array<i64: 0, 32, 0>, array<i64: 1, 64, 0>, array<i64: 3, 32, 0>] ints [array<i64: 1>, array<i64: 2>, array<i64: 4>, array<i64: 4>, array<i64: 0>, array<i64: 1>, array<i64: 8>, array<i64: 16>, array<i64: 8>, array<i64: 1>] floats [1.000000e+00]
// CHECK-NEXT: rt.call "gemm" buffers [array<i64: 0, 32, 0>, array<i64: 1, 64, 0>, array<i64: 7, 32, 0>] ints [{{.*}}, array<i64: 0>] floats [3.000000e-01]
// CHECK-NEXT: rt.call "accumulate" buffers [array<i64: 7, 32, 0>, array<i64: 4, 32, 0>]
// CHECK-NEXT: rt.call "tanh" buffers [array<i64: 0, 32, 0>, array<i64: 8, 32, 0>]
// CHECK-NEXT: rt.loop r 0 count 2 {
// CHECK-NEXT: rt.call "copy" buffers [array<i64: 8, 32, 0>, array<i64: 2, 32, 0>]
// CHECK-NEXT: }
// CHECK-NEXT: }

module {
  rt.state @a : tensor<2x4xf32> role "input" at 0 size 32 {hf = "a", init = "zeros", init_std = 0.0 : f64}
  rt.state @w : tensor<4x4xf32> role "parameter" at 64 size 64 {hf = "w", init = "zeros", init_std = 0.0 : f64}
  rt.state @y : tensor<2x4xf32> role "state" at 128 size 32 {hf = "y", init = "zeros", init_std = 0.0 : f64}
  rt.state @grad.u : tensor<2x4xf32> role "gradient" at 192 size 32 {hf = "grad.u", init = "zeros", init_std = 0.0 : f64}
  rt.state @grad.v : tensor<2x4xf32> role "gradient" at 256 size 32 {hf = "grad.v", init = "zeros", init_std = 0.0 : f64}
  rt.program @f inputs [] registers 1 transient 0 {
    rt.buffer 5 size 32
    rt.buffer 6 size 32
    rt.buffer 7 size 32
    rt.buffer 8 size 32
    rt.call "tanh" buffers [array<i64: 0, 32, 0>, array<i64: 5, 32, 0>] ints [array<i64: 8>] floats []
    rt.call "copy" buffers [array<i64: 5, 32, 0>, array<i64: 2, 32, 0>] ints [array<i64: 32>] floats []
    rt.call "gemm" buffers [array<i64: 0, 32, 0>, array<i64: 1, 64, 0>, array<i64: 6, 32, 0>] ints [array<i64: 1>, array<i64: 2>, array<i64: 4>, array<i64: 4>, array<i64: 0>, array<i64: 1>, array<i64: 8>, array<i64: 16>, array<i64: 8>, array<i64: 0>] floats [1.0]
    rt.call "accumulate" buffers [array<i64: 6, 32, 0>, array<i64: 3, 32, 0>] ints [array<i64: 8>] floats []
    rt.call "gemm" buffers [array<i64: 0, 32, 0>, array<i64: 1, 64, 0>, array<i64: 7, 32, 0>] ints [array<i64: 1>, array<i64: 2>, array<i64: 4>, array<i64: 4>, array<i64: 0>, array<i64: 1>, array<i64: 8>, array<i64: 16>, array<i64: 8>, array<i64: 0>] floats [0.3]
    rt.call "accumulate" buffers [array<i64: 7, 32, 0>, array<i64: 4, 32, 0>] ints [array<i64: 8>] floats []
    rt.call "tanh" buffers [array<i64: 0, 32, 0>, array<i64: 8, 32, 0>] ints [array<i64: 8>] floats []
    rt.loop r 0 count 2 {
      rt.call "copy" buffers [array<i64: 8, 32, 0>, array<i64: 2, 32, 0>] ints [array<i64: 32>] floats []
    }
  }
}
