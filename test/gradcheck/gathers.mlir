// Finite-difference check of embedding (with repeated ids), gather_positions,
// take, reshape, transpose and softmax_cross_entropy with padded classes.
// Tolerance: per tensor ||fd - grad|| <= 1e-3 ||grad|| + 1e-5 sqrt(n), fp32,
// eps 1e-2, parameters ~N(0, 1).
// RUN: ferry-gradcheck %s --eps 1e-2 --rtol 1e-3 --atol 1e-5 --samples 16 | FileCheck %s
// CHECK: 3 of 3 parameters passed

graph.parameter @table : tensor<6x4xf32> init(normal, 1.000000e+00) hf "table"
graph.parameter @proj : tensor<8x4xf32> init(normal, 1.000000e+00) hf "proj"
graph.parameter @r : tensor<2x4xf32> init(normal, 1.000000e+00) hf "r"
func.func @forward() -> tensor<f32> {
  %table = graph.parameter_ref @table : tensor<6x4xf32>
  %proj = graph.parameter_ref @proj : tensor<8x4xf32>
  %r = graph.parameter_ref @r : tensor<2x4xf32>
  // ids 0..4 twice over [2, 5]: rows of the table are used twice.
  %ids = graph.iota dim 1 : tensor<2x5xi32>
  %e = graph.embedding %table[%ids] : tensor<6x4xf32>, tensor<2x5xi32> -> tensor<2x5x4xf32>
  // positions 0..2 of each sample.
  %pos = graph.iota dim 1 : tensor<2x3xi32>
  %g = graph.gather_positions %e[%pos] : tensor<2x5x4xf32>, tensor<2x3xi32> -> tensor<2x3x4xf32>
  %gr = graph.reshape %g : tensor<2x3x4xf32> -> tensor<6x4xf32>
  // logits over 8 classes, of which 7 count (class 7 is padding).
  %logits = graph.matmul %gr, %proj {transpose_rhs} : tensor<6x4xf32>, tensor<8x4xf32> -> tensor<6x8xf32>
  %labels = graph.iota dim 0 : tensor<6xi32>
  %ones = arith.constant dense<1.0> : tensor<6xf32>
  %ce = graph.softmax_cross_entropy %logits, %labels, %ones classes 7 : tensor<6x8xf32>, tensor<6xi32>, tensor<6xf32> -> tensor<f32>
  // token 1 of each sample, through a transpose.
  %t = graph.transpose %e [0, 2, 1] : tensor<2x5x4xf32> -> tensor<2x4x5xf32>
  %cls = graph.take %t dim 2 index 1 : tensor<2x4x5xf32> -> tensor<2x4xf32>
  %w = graph.mul %cls, %r : tensor<2x4xf32>
  %s = graph.reduce sum %w dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
  %loss = graph.add %ce, %s : tensor<f32>
  return %loss : tensor<f32>
}
