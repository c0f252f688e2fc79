// RUN: ferry-opt %s --ferry-lower-to-rt='programs=f' | FileCheck %s
// RUN: ferry-opt %s --ferry-lower-to-rt='programs=f matmul-precision=bf16 gemm-workspace=1024' | FileCheck %s --check-prefix=BF16
// RUN: ferry-opt %s --ferry-lower-to-rt='programs=g' | FileCheck %s --check-prefix=ALPHA

// Tests how ferry-lower-to-rt lowers graph.fused_matmul (ferry-fuse-epilogues'
// output): a bias becomes `gemm_epilogue` with epilogue 1 and the bias as
// buffer 3; a bias gradient, epilogue 2 with the gradient as buffer 3, and
// that GEMM still accumulates straight into the weight gradient; alpha alone
// is a plain `gemm` with its alpha. The 12 integers are gemm's 10, the input
// precision (0 fp32, 1 bf16) and the epilogue. With bf16 inputs and a
// cuBLASLt workspace every GEMM gets one planned buffer: 4 bytes per input
// element for the rounded copies, then the workspace bytes: (6x8 + 4x8) x 4
// + 1024 = 1344; (2x3x8 + 2x3x8) x 4 + 1024 = 1408; (6x4 + 6x8) x 4 + 1024
// = 1312.

// CHECK-LABEL: rt.program @f
// The linear layer: one GEMM of 2 x 3 rows (the shared weight folds the
// batch) from x (at 0) and @w (576) into the output (320), the bias read
// from @b (704).
// CHECK: rt.kernel "gemm_epilogue" buffers [array<i64: 192, 0>, array<i64: 128, 576>, array<i64: 96, 320>, array<i64: 16, 704>] ints [array<i64: 1>, array<i64: 6>, array<i64: 4>, array<i64: 8>, array<i64: 0>, array<i64: 1>, array<i64: 48>, array<i64: 32>, array<i64: 24>, array<i64: 0>, array<i64: 0>, array<i64: 1>] floats [1.000000e+00]
// Scores: batch 2, alpha 1/8.
// CHECK: rt.kernel "gemm" {{.*}} ints [array<i64: 2>, array<i64: 3>, array<i64: 3>, array<i64: 8>, array<i64: 0>, array<i64: 1>, array<i64: 24>, array<i64: 24>, array<i64: 9>, array<i64: 0>] floats [1.250000e-01]
// The weight gradient accumulates into @grad.w (accumulate flag 1); the
// bias gradient is written to a temporary, then accumulated into @grad.b.
// CHECK: rt.kernel "gemm_epilogue" buffers [array<i64: 96, 192>, array<i64: 192, 0>, array<i64: 128, 768>, array<i64: 16, [[DB:[0-9]+]]>] ints [array<i64: 1>, array<i64: 4>, array<i64: 8>, array<i64: 6>, array<i64: 1>, array<i64: 0>, array<i64: 24>, array<i64: 48>, array<i64: 32>, array<i64: 1>, array<i64: 0>, array<i64: 2>] floats [1.000000e+00]
// CHECK-NEXT: rt.kernel "accumulate" buffers [array<i64: 16, [[DB]]>, array<i64: 16, 896>] ints [array<i64: 4>]

// BF16: rt.kernel "gemm_epilogue" buffers [{{.*}}, {{.*}}, {{.*}}, {{.*}}, array<i64: 1344, {{[0-9]+}}>] ints [{{.*}}, array<i64: 1>, array<i64: 1>] floats [1.000000e+00]
// BF16: rt.kernel "gemm" buffers [{{.*}}, {{.*}}, {{.*}}, array<i64: 1408, {{[0-9]+}}>] ints [{{.*}}, array<i64: 1>] floats [1.250000e-01]
// BF16: rt.kernel "gemm_epilogue" buffers [{{.*}}, {{.*}}, {{.*}}, {{.*}}, array<i64: 1312, {{[0-9]+}}>] ints [{{.*}}, array<i64: 1>, array<i64: 2>] floats [1.000000e+00]
graph.parameter @w : tensor<4x8xf32> init(normal, 2.000000e-02) hf "w"
graph.parameter @b : tensor<4xf32> init(zeros) hf "b"
graph.variable @grad.w : tensor<4x8xf32> init(zeros) hf "grad.w"
graph.variable @grad.b : tensor<4xf32> init(zeros) hf "grad.b"
func.func @f(%x: tensor<2x3x8xf32> {graph.input = "x"}, %dy: tensor<6x4xf32> {graph.input = "dy"})
    -> (tensor<2x3x4xf32>, tensor<2x3x3xf32>) {
  %w = graph.parameter_ref @w : tensor<4x8xf32>
  %b = graph.parameter_ref @b : tensor<4xf32>
  %y = graph.fused_matmul %x, %w bias %b {transpose_rhs} : tensor<2x3x8xf32>, tensor<4x8xf32>, tensor<4xf32> -> tensor<2x3x4xf32>
  %s = graph.fused_matmul %x, %x {transpose_rhs, alpha = 0.125 : f64} : tensor<2x3x8xf32>, tensor<2x3x8xf32> -> tensor<2x3x3xf32>
  %xr = graph.reshape %x : tensor<2x3x8xf32> -> tensor<6x8xf32>
  %dw, %db = graph.fused_matmul %dy, %xr {transpose_lhs} : tensor<6x4xf32>, tensor<6x8xf32> -> tensor<4x8xf32>, tensor<4xf32>
  graph.accumulate %dw into @grad.w : tensor<4x8xf32>
  graph.accumulate %db into @grad.b : tensor<4xf32>
  return %y, %s : tensor<2x3x4xf32>, tensor<2x3x3xf32>
}

// A GEMM whose result is accumulated into a state takes the accumulation
// itself (beta 1) only when its alpha is a power of two: alpha * AB + D in
// one rounding equals D + (alpha * AB) only when alpha * AB is exact.
// ALPHA-LABEL: rt.program @g
// ALPHA: rt.kernel "gemm" {{.*}} array<i64: 1>] floats [5.000000e-01]
// ALPHA: rt.kernel "gemm" {{.*}} array<i64: 0>] floats [3.000000e-01]
// ALPHA-NEXT: rt.kernel "accumulate"
graph.variable @acc.a : tensor<6x8xf32> init(zeros) hf "acc.a"
graph.variable @acc.b : tensor<6x8xf32> init(zeros) hf "acc.b"
func.func @g(%x: tensor<6x4xf32> {graph.input = "x"}, %w: tensor<8x4xf32> {graph.input = "w"}) {
  %p = graph.fused_matmul %x, %w {transpose_rhs, alpha = 0.5 : f64} : tensor<6x4xf32>, tensor<8x4xf32> -> tensor<6x8xf32>
  graph.accumulate %p into @acc.a : tensor<6x8xf32>
  %q = graph.fused_matmul %x, %w {transpose_rhs, alpha = 0.3 : f64} : tensor<6x4xf32>, tensor<8x4xf32> -> tensor<6x8xf32>
  graph.accumulate %q into @acc.b : tensor<6x8xf32>
  return
}
