// Finite-difference check of the elementwise rules: add, sub, mul, div,
// scale, gelu, tanh (and the sum reduction that forms the loss).
// Tolerance: per tensor ||fd - grad|| <= 1e-3 ||grad|| + 1e-5 sqrt(n), fp32,
// eps 1e-2, parameters ~N(0, 1).
// RUN: ferry-gradcheck %s --eps 1e-2 --rtol 1e-3 --atol 1e-5 --samples 15 | FileCheck %s
// CHECK-COUNT-3: ok
// CHECK: 3 of 3 parameters passed

graph.parameter @a : tensor<3x5xf32> init(normal, 1.000000e+00) hf "a"
graph.parameter @b : tensor<3x5xf32> init(normal, 1.000000e+00) hf "b"
graph.parameter @r : tensor<3x5xf32> init(normal, 1.000000e+00) hf "r"
func.func @forward() -> tensor<f32> {
  %a = graph.parameter_ref @a : tensor<3x5xf32>
  %b = graph.parameter_ref @b : tensor<3x5xf32>
  %r = graph.parameter_ref @r : tensor<3x5xf32>
  %one = arith.constant dense<1.0> : tensor<3x5xf32>
  %g = graph.gelu %a : tensor<3x5xf32>
  %t = graph.tanh %b : tensor<3x5xf32>
  %p = graph.mul %g, %t : tensor<3x5xf32>
  %bb = graph.mul %b, %b : tensor<3x5xf32>
  %den = graph.add %bb, %one : tensor<3x5xf32>
  %q = graph.div %a, %den : tensor<3x5xf32>
  %d = graph.sub %p, %q : tensor<3x5xf32>
  %s = graph.scale %d by 1.500000e+00 : tensor<3x5xf32>
  %w = graph.mul %s, %r : tensor<3x5xf32>
  %loss = graph.reduce sum %w dims [0, 1] : tensor<3x5xf32> -> tensor<f32>
  return %loss : tensor<f32>
}
