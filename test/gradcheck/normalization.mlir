// Finite-difference check of layer_norm (input, scale, bias), softmax with an
// additive mask (from graph.attention_mask), dropout (the mask is keyed, so
// it is the same at w +- eps) and reduce mean.
// Tolerance: per tensor ||fd - grad|| <= 1e-3 ||grad|| + 1e-5 sqrt(n), fp32,
// eps 1e-2, parameters ~N(0, 1).
// RUN: ferry-gradcheck %s --eps 1e-2 --rtol 1e-3 --atol 1e-5 --samples 16 | FileCheck %s
// CHECK: 5 of 5 parameters passed

graph.parameter @x : tensor<2x3x8xf32> init(normal, 1.000000e+00) hf "x"
graph.parameter @gamma : tensor<8xf32> init(normal, 1.000000e+00) hf "gamma"
graph.parameter @beta : tensor<8xf32> init(normal, 1.000000e+00) hf "beta"
graph.parameter @s : tensor<2x3x8xf32> init(normal, 1.000000e+00) hf "s"
graph.parameter @r : tensor<2x3x8xf32> init(normal, 1.000000e+00) hf "r"
func.func @forward() -> tensor<f32> {
  %x = graph.parameter_ref @x : tensor<2x3x8xf32>
  %gamma = graph.parameter_ref @gamma : tensor<8xf32>
  %beta = graph.parameter_ref @beta : tensor<8xf32>
  %s = graph.parameter_ref @s : tensor<2x3x8xf32>
  %r = graph.parameter_ref @r : tensor<2x3x8xf32>
  %seed = arith.constant 9 : i64
  %layer = arith.constant 1 : index
  %offset = arith.constant 4 : index
  // keys 0..7; iota along dim 1 < 6 are kept, 6 and 7 masked.
  %iota = graph.iota dim 1 : tensor<2x8xi32>
  %mask = graph.attention_mask %iota fill -1.000000e+04 : tensor<2x8xi32> -> tensor<2x8xf32>
  %ln = graph.layer_norm %x, %gamma, %beta eps 1.000000e-05 : tensor<2x3x8xf32>, tensor<8xf32>
  %p = graph.softmax %s, %mask : tensor<2x3x8xf32>, tensor<2x8xf32>
  %d = graph.dropout %p, %seed, %layer, %offset {probability = 3.000000e-01 : f64, purpose = "test"} : tensor<2x3x8xf32>
  %y = graph.mul %ln, %d : tensor<2x3x8xf32>
  %w = graph.mul %y, %r : tensor<2x3x8xf32>
  %m = graph.reduce mean %w dims [2] : tensor<2x3x8xf32> -> tensor<2x3xf32>
  %loss = graph.reduce sum %m dims [0, 1] : tensor<2x3xf32> -> tensor<f32>
  return %loss : tensor<f32>
}
