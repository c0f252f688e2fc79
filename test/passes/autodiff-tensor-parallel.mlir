// RUN: ferry-opt %s --ferry-autodiff | FileCheck %s

// Tests ferry-autodiff on a partitioned module (T = 2): a split parameter's
// gradient variable is split alike; f (graph.copy_to_group) before the
// column-parallel matmul becomes an all-reduce over the tensor group in the
// backward, and g (the all-reduce after the row-parallel one) the identity.
// CHECK-DAG: graph.variable @grad.up : tensor<4x8xf32> init(zeros) hf "grad.up" sharding <split = 0>
// CHECK-DAG: graph.variable @grad.down : tensor<8x4xf32> init(zeros) hf "grad.down" sharding <split = 1>
// CHECK-DAG: graph.variable @grad.e : tensor<8xf32> init(zeros) hf "grad.e"{{$}}
// CHECK-LABEL: func.func @forward_grad
// CHECK: graph.copy_to_group
// CHECK: graph.all_reduce %{{.*}} replicas 2 over tensor : tensor<3x8xf32>
// CHECK: %[[DF:.*]] = graph.all_reduce %{{.*}} replicas 2 over tensor : tensor<3x8xf32>
// CHECK-NOT: graph.all_reduce
// CHECK: graph.reduce sum %[[DF]] dims [0]
// CHECK: return
module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 1, partitioned = true>} {
  graph.parameter @up : tensor<4x8xf32> init(normal, 2.000000e-02) hf "up" sharding <split = 0>
  graph.parameter @down : tensor<8x4xf32> init(normal, 2.000000e-02) hf "down" sharding <split = 1>
  graph.parameter @e : tensor<8xf32> init(zeros) hf "e"
  func.func @forward(%x: tensor<3x8xf32> {graph.input = "x"}) -> tensor<f32> attributes {graph.entry = "forward"} {
    %up = graph.parameter_ref @up : tensor<4x8xf32>
    %down = graph.parameter_ref @down : tensor<8x4xf32>
    %e = graph.parameter_ref @e : tensor<8xf32>
    %xe = graph.bias_add %x, %e : tensor<3x8xf32>, tensor<8xf32>
    %f = graph.copy_to_group %xe replicas 2 over tensor : tensor<3x8xf32>
    %h = graph.matmul %f, %up {transpose_rhs} : tensor<3x8xf32>, tensor<4x8xf32> -> tensor<3x4xf32>
    %a = graph.gelu %h : tensor<3x4xf32>
    %p = graph.matmul %a, %down {transpose_rhs} : tensor<3x4xf32>, tensor<8x4xf32> -> tensor<3x8xf32>
    %y = graph.all_reduce %p replicas 2 over tensor : tensor<3x8xf32>
    %l = graph.reduce sum_squares %y dims [0, 1] : tensor<3x8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
