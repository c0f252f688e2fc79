// RUN: ferry-opt %s --ferry-select-kernels='programs=forward matmul-precision=bf16' | FileCheck %s
// RUN: ferry-opt %s --ferry-select-kernels='programs=forward' | FileCheck %s --check-prefix=FP32
// RUN: ferry-opt %s --ferry-select-kernels='programs=forward matmul-precision=bf16 gemm-workspace=4096' | FileCheck %s --check-prefix=SCRATCH

// Tests ferry-select-kernels alone: graph IR -> rt.call on virtual buffers.
// * States come first, in declaration order after the program's input and
//   output states (buffer ids 0-3); temporaries are rt.buffers 4 and up.
// * The integer argument is the input register r0; the loop gets r1 and the
//   parameter slice @layer.w[%l] is buffer 2 at 64 * r1.
// * Storing a splat is a fill of the destination; the carried value lives
//   in buffer 4, copied in before the loop and at the end of each body.
// * With matmul-precision=bf16 each GEMM gets a workspace for its rounded
//   inputs (4 bytes per element: 2x4 + 4x4 = 96 bytes) and the precision
//   flag 1; fp32 GEMMs get neither. gemm-workspace adds the backend's
//   cuBLASLt scratch after the rounded inputs, marked as `scratch` (which
//   ferry-place-buffers may shrink under a budget).
// * Nothing is forwarded yet: the copies stay (ferry-forward-buffers).

// CHECK: rt.state @arg.forward.x : tensor<2x4xf32> role "input" at 0 size 32
// CHECK: rt.state @output.forward.0 : tensor<2x4xf32> role "output" at 64 size 32
// CHECK: rt.state @layer.w : tensor<2x4x4xf32> role "parameter" at 128 size 128
// CHECK: rt.state @out : tensor<2x4xf32> role "state" at 256 size 32
// CHECK: rt.program @forward inputs ["step"] registers 2 transient 0 {
// CHECK-NEXT: rt.buffer 4 size 32
// CHECK-NEXT: rt.buffer 5 size 32
// CHECK-NEXT: rt.buffer 6 size 96 {label = "bf16 matmul workspace"}
// CHECK-NEXT: rt.buffer 7 size 32
// CHECK-NEXT: rt.call "fill" buffers [array<i64: 3, 32, 0>] ints [array<i64: 8>] floats [0.000000e+00]
// CHECK-NEXT: rt.call "copy" buffers [array<i64: 0, 32, 0>, array<i64: 4, 32, 0>] ints [array<i64: 32>] floats []
// CHECK-NEXT: rt.loop r 1 count 2 {
// CHECK-NEXT: rt.call "gemm" buffers [array<i64: 4, 32, 0>, array<i64: 2, 64, 0, 0, 64>, array<i64: 5, 32, 0>, array<i64: 6, 96, 0>] ints [array<i64: 1>, array<i64: 2>, array<i64: 4>, array<i64: 4>, array<i64: 0>, array<i64: 1>, array<i64: 8>, array<i64: 16>, array<i64: 8>, array<i64: 0>, array<i64: 1>] floats [1.000000e+00]
// CHECK-NEXT: rt.call "tanh" buffers [array<i64: 5, 32, 0>, array<i64: 7, 32, 0>] ints [array<i64: 8>] floats []
// CHECK-NEXT: rt.call "copy" buffers [array<i64: 7, 32, 0>, array<i64: 4, 32, 0>] ints [array<i64: 32>] floats []
// CHECK-NEXT: }
// CHECK-NEXT: rt.call "copy" buffers [array<i64: 4, 32, 0>, array<i64: 3, 32, 0>] ints [array<i64: 32>] floats []
// CHECK-NEXT: rt.call "copy" buffers [array<i64: 4, 32, 0>, array<i64: 1, 32, 0>] ints [array<i64: 32>] floats []
// CHECK-NEXT: }
// CHECK-NOT: graph.
// CHECK-NOT: func.func

// FP32-NOT: workspace
// FP32: rt.call "gemm" buffers [array<i64: 4, 32, 0>, array<i64: 2, 64, 0, 0, 64>, array<i64: 5, 32, 0>] ints [array<i64: 1>, array<i64: 2>, array<i64: 4>, array<i64: 4>, array<i64: 0>, array<i64: 1>, array<i64: 8>, array<i64: 16>, array<i64: 8>, array<i64: 0>] floats [1.000000e+00]

// SCRATCH: rt.buffer 6 size 4192 {label = "bf16 matmul workspace", scratch = 4096 : i64}
// SCRATCH: rt.call "gemm" buffers [{{.*}}, array<i64: 6, 4192, 0>] ints [{{.*}}, array<i64: 1>] floats

module {
  graph.parameter @layer.w : tensor<2x4x4xf32> init(normal, 2.000000e-02) hf "layer.{}.w" stacked
  graph.variable @out : tensor<2x4xf32> init(zeros) hf "out"
  func.func @forward(%x: tensor<2x4xf32> {graph.input = "x"}, %step: index {graph.input = "step"}) -> tensor<2x4xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %zero = arith.constant dense<0.0> : tensor<2x4xf32>
    graph.store %zero into @out : tensor<2x4xf32>
    %h = scf.for %l = %c0 to %c2 step %c1 iter_args(%xl = %x) -> (tensor<2x4xf32>) {
      %w = graph.parameter_slice @layer.w[%l] : tensor<4x4xf32>
      %y = graph.matmul %xl, %w {transpose_rhs} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
      %t = graph.tanh %y : tensor<2x4xf32>
      scf.yield %t : tensor<2x4xf32>
    }
    graph.store %h into @out : tensor<2x4xf32>
    return %h : tensor<2x4xf32>
  }
}
