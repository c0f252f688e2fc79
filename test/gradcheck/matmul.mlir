// Finite-difference check of matmul in every transpose combination, batched
// and with a shared rank-2 rhs (a linear layer), and of bias_add.
// Tolerance: per tensor ||fd - grad|| <= 1e-3 ||grad|| + 1e-5 sqrt(n), fp32,
// eps 1e-2, parameters ~N(0, 1).
// RUN: ferry-gradcheck %s --eps 1e-2 --rtol 1e-3 --atol 1e-5 --samples 12 | FileCheck %s
// CHECK: 7 of 7 parameters passed

graph.parameter @x : tensor<2x3x4xf32> init(normal, 1.000000e+00) hf "x"
graph.parameter @w : tensor<5x4xf32> init(normal, 1.000000e+00) hf "w"
graph.parameter @bias : tensor<5xf32> init(normal, 1.000000e+00) hf "bias"
graph.parameter @k : tensor<2x4x3xf32> init(normal, 1.000000e+00) hf "k"
graph.parameter @m : tensor<2x4x5xf32> init(normal, 1.000000e+00) hf "m"
graph.parameter @n : tensor<2x3x5xf32> init(normal, 1.000000e+00) hf "n"
graph.parameter @r : tensor<2x3x5xf32> init(normal, 1.000000e+00) hf "r"
func.func @forward() -> tensor<f32> {
  %x = graph.parameter_ref @x : tensor<2x3x4xf32>
  %w = graph.parameter_ref @w : tensor<5x4xf32>
  %bias = graph.parameter_ref @bias : tensor<5xf32>
  %k = graph.parameter_ref @k : tensor<2x4x3xf32>
  %m = graph.parameter_ref @m : tensor<2x4x5xf32>
  %n = graph.parameter_ref @n : tensor<2x3x5xf32>
  %r = graph.parameter_ref @r : tensor<2x3x5xf32>
  // x W^T + b, shared rank-2 rhs
  %lin = graph.matmul %x, %w {transpose_rhs} : tensor<2x3x4xf32>, tensor<5x4xf32> -> tensor<2x3x5xf32>
  %y1 = graph.bias_add %lin, %bias : tensor<2x3x5xf32>, tensor<5xf32>
  // k^T m: transposed lhs, batched
  %y2 = graph.matmul %k, %m {transpose_lhs} : tensor<2x4x3xf32>, tensor<2x4x5xf32> -> tensor<2x3x5xf32>
  // x m: plain batched
  %y3 = graph.matmul %x, %m : tensor<2x3x4xf32>, tensor<2x4x5xf32> -> tensor<2x3x5xf32>
  // k^T n... both transposed: (n^T)^T... n^T is [2,5,3]; k^T [3x4]: k^T x (n... ) use n as lhs with transpose and k as rhs with transpose:
  // n^T [2,5,3] x k^T [2,3,4] -> [2,5,4]
  %y4 = graph.matmul %n, %k {transpose_lhs, transpose_rhs} : tensor<2x3x5xf32>, tensor<2x4x3xf32> -> tensor<2x5x4xf32>
  %s12 = graph.add %y1, %y2 : tensor<2x3x5xf32>
  %s123 = graph.mul %s12, %y3 : tensor<2x3x5xf32>
  %w1 = graph.mul %s123, %r : tensor<2x3x5xf32>
  %l1 = graph.reduce sum %w1 dims [0, 1, 2] : tensor<2x3x5xf32> -> tensor<f32>
  %l2 = graph.reduce sum_squares %y4 dims [0, 1, 2] : tensor<2x5x4xf32> -> tensor<f32>
  %loss = graph.add %l1, %l2 : tensor<f32>
  return %loss : tensor<f32>
}
