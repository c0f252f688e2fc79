// RUN: ferry-opt %s --split-input-file --ferry-complete-split-norms | FileCheck %s

// Tests ferry-complete-split-norms on a partitioned module (T = 2): the
// global norm reading a split gradient (@grad.w) and a replicated one
// (@grad.b) becomes the split one's norm on this rank, the tensor group's
// part norms all-gathered and their norm, then the norm of that with the
// replicated gradient's, so every element counts once.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[GW:.*]] = graph.parameter_ref @grad.w : tensor<2x4xf32>
// CHECK: %[[GB:.*]] = graph.parameter_ref @grad.b : tensor<4xf32>
// CHECK: %[[MINE:.*]] = graph.global_norm %[[GW]] : tensor<2x4xf32> -> tensor<f32>
// CHECK: %[[ONE:.*]] = graph.reshape %[[MINE]] : tensor<f32> -> tensor<1xf32>
// CHECK: %[[ALL:.*]] = graph.all_gather %[[ONE]] replicas 2 over tensor : tensor<1xf32> -> tensor<2xf32>
// CHECK: %[[SPLIT:.*]] = graph.global_norm %[[ALL]] : tensor<2xf32> -> tensor<f32>
// CHECK: %[[NORM:.*]] = graph.global_norm %[[GB]], %[[SPLIT]] : tensor<4xf32>, tensor<f32> -> tensor<f32>
// CHECK: graph.store %[[NORM]] into @metric.grad_norm
module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 1, partitioned = true>} {
  graph.parameter @w : tensor<2x4xf32> init(normal, 2.000000e-02) hf "w" sharding <split = 0>
  graph.parameter @b : tensor<4xf32> init(zeros) hf "b"
  graph.variable @grad.w : tensor<2x4xf32> init(zeros) hf "grad.w" sharding <split = 0>
  graph.variable @grad.b : tensor<4xf32> init(zeros) hf "grad.b"
  graph.variable @metric.grad_norm : tensor<f32> init(zeros) hf "metric.grad_norm"
  func.func @train_step() attributes {graph.entry = "train_step"} {
    %gw = graph.parameter_ref @grad.w : tensor<2x4xf32>
    %gb = graph.parameter_ref @grad.b : tensor<4xf32>
    %n = graph.global_norm %gw, %gb : tensor<2x4xf32>, tensor<4xf32> -> tensor<f32>
    graph.store %n into @metric.grad_norm : tensor<f32>
    return
  }
}

// -----

// A phase's norm of one layer's entry of split stacked gradients, and a
// norm of replicated gradients only, which stays as it is.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[E:.*]] = graph.parameter_slice @grad.layer.w[%{{.*}}] : tensor<4x2xf32>
// CHECK: %[[MINE:.*]] = graph.global_norm %[[E]] : tensor<4x2xf32> -> tensor<f32>
// CHECK: graph.all_gather %{{.*}} replicas 2 over tensor : tensor<1xf32> -> tensor<2xf32>
// CHECK: %[[G:.*]] = graph.parameter_ref @grad.b : tensor<4xf32>
// CHECK-NEXT: graph.global_norm %[[G]] : tensor<4xf32> -> tensor<f32>
// CHECK-NOT: graph.all_gather
module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 1, partitioned = true>} {
  graph.parameter @layer.w : tensor<3x4x2xf32> init(normal, 2.000000e-02) hf "l.{}.w" stacked sharding <split = 2>
  graph.parameter @b : tensor<4xf32> init(zeros) hf "b"
  graph.variable @grad.layer.w : tensor<3x4x2xf32> init(zeros) hf "grad.l.{}.w" stacked sharding <split = 2>
  graph.variable @grad.b : tensor<4xf32> init(zeros) hf "grad.b"
  graph.variable @norms : tensor<2xf32> init(zeros) hf "norms"
  func.func @train_step() attributes {graph.entry = "train_step"} {
    %c1 = arith.constant 1 : index
    %e = graph.parameter_slice @grad.layer.w[%c1] : tensor<4x2xf32>
    %n = graph.global_norm %e : tensor<4x2xf32> -> tensor<f32>
    %g = graph.parameter_ref @grad.b : tensor<4xf32>
    %m = graph.global_norm %g : tensor<4xf32> -> tensor<f32>
    %s = graph.add %n, %m : tensor<f32>
    return
  }
}
