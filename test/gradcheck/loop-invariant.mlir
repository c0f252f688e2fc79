// Finite-difference check through a differentiated layer loop: a stacked
// parameter sliced per layer, and a parameter read once before the loop and
// used by every layer (its gradient is summed over the layers).
// Tolerance: per tensor ||fd - grad|| <= 1e-3 ||grad|| + 1e-5 sqrt(n), fp32,
// eps 1e-2, parameters ~N(0, 1).
// RUN: ferry-gradcheck %s --eps 1e-2 --rtol 1e-3 --atol 1e-5 --samples 12 | FileCheck %s
// CHECK: 3 of 3 parameters passed

graph.parameter @shared : tensor<4xf32> init(normal, 1.000000e+00) hf "shared"
graph.parameter @layer.w : tensor<3x4xf32> init(normal, 1.000000e+00) hf "layer.{}.w" stacked
graph.parameter @x0 : tensor<4xf32> init(normal, 1.000000e+00) hf "x0"
func.func @blk(%x: tensor<4xf32>, %w: tensor<4xf32>, %s: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.mul %x, %w : tensor<4xf32>
  %t = graph.tanh %y : tensor<4xf32>
  %z = graph.add %t, %s : tensor<4xf32>
  return %z : tensor<4xf32>
}
func.func @forward() -> tensor<f32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %x = graph.parameter_ref @x0 : tensor<4xf32>
  %s = graph.parameter_ref @shared : tensor<4xf32>
  %h = scf.for %l = %c0 to %c3 step %c1 iter_args(%a = %x) -> (tensor<4xf32>) {
    %w = graph.parameter_slice @layer.w[%l] : tensor<4xf32>
    %y = func.call @blk(%a, %w, %s) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    scf.yield %y : tensor<4xf32>
  }
  %r = graph.reduce sum_squares %h dims [0] : tensor<4xf32> -> tensor<f32>
  return %r : tensor<f32>
}
