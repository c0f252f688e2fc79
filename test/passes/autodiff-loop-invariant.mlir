// RUN: ferry-opt %s --ferry-autodiff | FileCheck %s

// Tests that a value defined before the layer loop and used by the block in
// every iteration (here an unstacked, shared parameter) gets the sum of its
// gradients over the iterations. The backward loop carries their sum as an extra iter_arg.

// CHECK: graph.variable @grad.shared : tensor<4xf32> init(zeros) hf "grad.shared"
// CHECK-LABEL: func.func @forward_grad(
// CHECK: func.call @blk_bwd(
// CHECK: graph.accumulate %{{.*}} into @grad.shared : tensor<4xf32>
graph.parameter @shared : tensor<4xf32> init(normal, 2.000000e-02) hf "shared"
graph.parameter @layer.w : tensor<3x4xf32> init(normal, 2.000000e-02) hf "layer.{}.w" stacked
func.func @blk(%x: tensor<4xf32>, %w: tensor<4xf32>, %s: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.mul %x, %w : tensor<4xf32>
  %z = graph.mul %y, %s : tensor<4xf32>
  return %z : tensor<4xf32>
}
func.func @forward(%x: tensor<4xf32>) -> tensor<f32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %s = graph.parameter_ref @shared : tensor<4xf32>
  %h = scf.for %l = %c0 to %c3 step %c1 iter_args(%a = %x) -> (tensor<4xf32>) {
    %w = graph.parameter_slice @layer.w[%l] : tensor<4xf32>
    %y = func.call @blk(%a, %w, %s) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    scf.yield %y : tensor<4xf32>
  }
  %r = graph.reduce sum %h dims [0] : tensor<4xf32> -> tensor<f32>
  return %r : tensor<f32>
}
