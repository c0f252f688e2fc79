// RUN: ferry-opt %s --ferry-lower-to-rt='programs=f' | FileCheck %s
// RUN: ferry-opt %s --ferry-lower-to-rt='programs=f matmul-precision=bf16 gemm-workspace=1024' | FileCheck %s --check-prefix=BF16
// RUN: ferry-opt %s --ferry-lower-to-rt='programs=g' | FileCheck %s --check-prefix=ALPHA

// Tests how ferry-lower-to-rt lowers graph.fused_matmul (ferry-fuse-epilogues'
// output): a bias becomes `gemm_epilogue` with epilogue 1 and the bias as
// its vector operand; a bias gradient, epilogue 2 with the gradient as the
// vector, and that GEMM still accumulates straight into the weight gradient;
// alpha alone is a plain `gemm` with its alpha. The integers are gemm's 10,
// the input precision (0 fp32, 1 bf16) and the epilogue. With bf16 inputs
// and a cuBLASLt workspace every GEMM gets one planned buffer: 4 bytes per
// input element for the rounded copies, then the workspace bytes: (6x8 +
// 4x8) x 4 + 1024 = 1344; (2x3x8 + 2x3x8) x 4 + 1024 = 1408; (6x4 + 6x8) x 4
// + 1024 = 1312.

// CHECK-LABEL: rt.program @f
// The linear layer: one GEMM of 2 x 3 rows (the shared weight folds the
// batch) from x (at 0) and @w (576) into the output (320), the bias read
// from @b (704).
// CHECK: %[[A:.*]] = rt.slice %arena [0] size 192
// CHECK-NEXT: %[[B:.*]] = rt.slice %arena [576] size 128
// CHECK-NEXT: %[[C:.*]] = rt.slice %arena [320] size 96
// CHECK-NEXT: %[[V:.*]] = rt.slice %arena [704] size 16
// CHECK-NEXT: rt.gemm_epilogue a(%[[A]]) b(%[[B]]) c(%[[C]]) vector(%[[V]]) {accumulate = array<i64: 0>, alpha = 1.000000e+00 : f64, batch = array<i64: 1>, epilogue = array<i64: 1>, k = array<i64: 8>, m = array<i64: 6>, n = array<i64: 4>, precision = array<i64: 0>, stride_a = array<i64: 48>, stride_b = array<i64: 32>, stride_c = array<i64: 24>, trans_a = array<i64: 0>, trans_b = array<i64: 1>}
// Scores: batch 2, alpha 1/8.
// CHECK: rt.gemm {{.*}} {accumulate = array<i64: 0>, alpha = 1.250000e-01 : f64, batch = array<i64: 2>, k = array<i64: 8>, m = array<i64: 3>, n = array<i64: 3>, stride_a = array<i64: 24>, stride_b = array<i64: 24>, stride_c = array<i64: 9>, trans_a = array<i64: 0>, trans_b = array<i64: 1>}
// The weight gradient accumulates into @grad.w (accumulate flag 1); the
// bias gradient is written to a temporary, then accumulated into @grad.b.
// CHECK: %[[A:.*]] = rt.slice %arena [192] size 96
// CHECK-NEXT: %[[B:.*]] = rt.slice %arena [0] size 192
// CHECK-NEXT: %[[C:.*]] = rt.slice %arena [768] size 128
// CHECK-NEXT: %[[V:.*]] = rt.slice %arena {{\[}}[[DB:[0-9]+]]] size 16
// CHECK-NEXT: rt.gemm_epilogue a(%[[A]]) b(%[[B]]) c(%[[C]]) vector(%[[V]]) {accumulate = array<i64: 1>, alpha = 1.000000e+00 : f64, batch = array<i64: 1>, epilogue = array<i64: 2>, k = array<i64: 6>, m = array<i64: 4>, n = array<i64: 8>, precision = array<i64: 0>, stride_a = array<i64: 24>, stride_b = array<i64: 48>, stride_c = array<i64: 32>, trans_a = array<i64: 1>, trans_b = array<i64: 0>}
// CHECK-NEXT: %[[S:.*]] = rt.slice %arena {{\[}}[[DB]]] size 16
// CHECK-NEXT: %[[D:.*]] = rt.slice %arena [896] size 16
// CHECK-NEXT: rt.accumulate src(%[[S]]) dst(%[[D]]) {count = array<i64: 4>}

// BF16: %[[W:.*]] = rt.slice %arena [{{[0-9]+}}] size 1344
// BF16-NEXT: rt.gemm_epilogue a({{.*}}) b({{.*}}) c({{.*}}) vector({{.*}}) workspace(%[[W]]) {{.*}}, alpha = 1.000000e+00 : f64, {{.*}}, epilogue = array<i64: 1>, {{.*}}, precision = array<i64: 1>,
// BF16: %[[W:.*]] = rt.slice %arena [{{[0-9]+}}] size 1408
// BF16-NEXT: rt.gemm a({{.*}}) b({{.*}}) c({{.*}}) workspace(%[[W]]) {{.*}}, alpha = 1.250000e-01 : f64, {{.*}}, precision = array<i64: 1>,
// BF16: %[[W:.*]] = rt.slice %arena [{{[0-9]+}}] size 1312
// BF16-NEXT: rt.gemm_epilogue a({{.*}}) b({{.*}}) c({{.*}}) vector({{.*}}) workspace(%[[W]]) {{.*}}, alpha = 1.000000e+00 : f64, {{.*}}, epilogue = array<i64: 2>, {{.*}}, precision = array<i64: 1>,
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
// ALPHA: rt.gemm {{.*}} {accumulate = array<i64: 1>, alpha = 5.000000e-01 : f64,
// ALPHA: rt.gemm {{.*}} {accumulate = array<i64: 0>, alpha = 3.000000e-01 : f64,
// ALPHA-NEXT: rt.slice
// ALPHA-NEXT: rt.slice
// ALPHA-NEXT: rt.accumulate
graph.variable @acc.a : tensor<6x8xf32> init(zeros) hf "acc.a"
graph.variable @acc.b : tensor<6x8xf32> init(zeros) hf "acc.b"
func.func @g(%x: tensor<6x4xf32> {graph.input = "x"}, %w: tensor<8x4xf32> {graph.input = "w"}) {
  %p = graph.fused_matmul %x, %w {transpose_rhs, alpha = 0.5 : f64} : tensor<6x4xf32>, tensor<8x4xf32> -> tensor<6x8xf32>
  graph.accumulate %p into @acc.a : tensor<6x8xf32>
  %q = graph.fused_matmul %x, %w {transpose_rhs, alpha = 0.3 : f64} : tensor<6x4xf32>, tensor<8x4xf32> -> tensor<6x8xf32>
  graph.accumulate %q into @acc.b : tensor<6x8xf32>
  return
}
