// RUN: ferry-opt %s --split-input-file --ferry-autodiff --verify-diagnostics | FileCheck %s

// Tests ferry-autodiff's rules for the collectives, Megatron's conjugate
// pairs: f (graph.copy_to_group) is the identity forward and an all-reduce
// over its group backward; g (graph.all_reduce sum) is an all-reduce
// forward and the identity backward; an all-gather's gradient is a
// reduce-scatter over the same group, and back; with a replicated gradient
// it is this rank's part of it; a part's gradient is an all-gather.

// A column-parallel then row-parallel pair, as Megatron splits a layer's
// MLP: x enters the split region through f, the split weights make partial
// sums, g sums them. The backward: g's gradient passes dC through; the
// weights' gradients need no collective; f's gradient sums dX's partials
// over the tensor group.
// CHECK-LABEL: func.func @forward_grad() -> tensor<f32>
// CHECK-NEXT: [[X:%.*]] = graph.parameter_ref @x : tensor<2x4xf32>
// CHECK-NEXT: [[A:%.*]] = graph.parameter_ref @a : tensor<4x3xf32>
// CHECK-NEXT: [[B:%.*]] = graph.parameter_ref @b : tensor<3x4xf32>
// CHECK-NEXT: [[F:%.*]] = graph.copy_to_group [[X]] replicas 2 over tensor : tensor<2x4xf32>
// CHECK-NEXT: [[H:%.*]] = graph.matmul [[F]], [[A]]
// CHECK-NEXT: [[P:%.*]] = graph.matmul [[H]], [[B]]
// CHECK-NEXT: graph.all_reduce [[P]] replicas 2 over tensor : tensor<2x4xf32>
// CHECK-NEXT: graph.reduce sum
// CHECK-NEXT: [[ONE:%.*]] = arith.constant
// CHECK-NEXT: [[DC:%.*]] = graph.broadcast [[ONE]]
// CHECK-NEXT: [[DH:%.*]] = graph.matmul [[DC]], [[B]] {transpose_rhs}
// CHECK-NEXT: [[DB:%.*]] = graph.matmul [[H]], [[DC]] {transpose_lhs}
// CHECK-NEXT: [[DF:%.*]] = graph.matmul [[DH]], [[A]] {transpose_rhs}
// CHECK-NEXT: [[DA:%.*]] = graph.matmul [[F]], [[DH]] {transpose_lhs}
// CHECK-NEXT: [[DX:%.*]] = graph.all_reduce [[DF]] replicas 2 over tensor : tensor<2x4xf32>
// CHECK-DAG: graph.accumulate [[DX]] into @grad.x
// CHECK-DAG: graph.accumulate [[DA]] into @grad.a
// CHECK-DAG: graph.accumulate [[DB]] into @grad.b
// CHECK: return
graph.parameter @x : tensor<2x4xf32> init(normal, 2.000000e-02) hf "x"
graph.parameter @a : tensor<4x3xf32> init(normal, 2.000000e-02) hf "a"
graph.parameter @b : tensor<3x4xf32> init(normal, 2.000000e-02) hf "b"
func.func @forward() -> tensor<f32> {
  %x = graph.parameter_ref @x : tensor<2x4xf32>
  %a = graph.parameter_ref @a : tensor<4x3xf32>
  %b = graph.parameter_ref @b : tensor<3x4xf32>
  %f = graph.copy_to_group %x replicas 2 over tensor : tensor<2x4xf32>
  %h = graph.matmul %f, %a : tensor<2x4xf32>, tensor<4x3xf32> -> tensor<2x3xf32>
  %p = graph.matmul %h, %b : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %g = graph.all_reduce %p replicas 2 over tensor : tensor<2x4xf32>
  %r = graph.reduce sum %g dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// Sequence parallelism's pair: an all-gather's gradient is the
// reduce-scatter of the result's, over the same group.
// CHECK-LABEL: func.func @forward_grad() -> tensor<f32>
// CHECK: [[S:%.*]] = graph.parameter_ref @s : tensor<4xf32>
// CHECK: graph.all_gather [[S]] replicas 2 over tensor : tensor<4xf32> -> tensor<2x4xf32>
// CHECK: [[DW:%.*]] = graph.broadcast
// CHECK-NEXT: [[DS:%.*]] = graph.reduce_scatter [[DW]] replicas 2 over tensor : tensor<2x4xf32> -> tensor<4xf32>
// CHECK-NEXT: graph.accumulate [[DS]] into @grad.s
graph.parameter @s : tensor<4xf32> init(normal, 2.000000e-02) hf "s"
func.func @forward() -> tensor<f32> {
  %s = graph.parameter_ref @s : tensor<4xf32>
  %w = graph.all_gather %s replicas 2 over tensor : tensor<4xf32> -> tensor<2x4xf32>
  %r = graph.reduce sum %w dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// And back: a reduce-scatter's gradient is the all-gather of the result's.
// CHECK-LABEL: func.func @forward_grad() -> tensor<f32>
// CHECK: [[W:%.*]] = graph.parameter_ref @w : tensor<2x4xf32>
// CHECK: graph.reduce_scatter [[W]] replicas 2 over tensor : tensor<2x4xf32> -> tensor<4xf32>
// CHECK: [[DS:%.*]] = graph.broadcast
// CHECK-NEXT: [[DW:%.*]] = graph.all_gather [[DS]] replicas 2 over tensor : tensor<4xf32> -> tensor<2x4xf32>
// CHECK-NEXT: graph.accumulate [[DW]] into @grad.w
graph.parameter @w : tensor<2x4xf32> init(normal, 2.000000e-02) hf "w"
func.func @forward() -> tensor<f32> {
  %w = graph.parameter_ref @w : tensor<2x4xf32>
  %s = graph.reduce_scatter %w replicas 2 over tensor : tensor<2x4xf32> -> tensor<4xf32>
  %r = graph.reduce sum %s dims [0] : tensor<4xf32> -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// Sequence parallelism's gather before the heads: its users compute the
// same whole gradient on every rank, so its gradient is this rank's part
// (no collective), in the input's shape.
// CHECK-LABEL: func.func @forward_grad() -> tensor<f32>
// CHECK: [[S:%.*]] = graph.parameter_ref @s : tensor<4xf32>
// CHECK: graph.all_gather [[S]] replicas 2 over tensor {replicated_gradient} : tensor<4xf32> -> tensor<2x4xf32>
// CHECK: [[DW:%.*]] = graph.broadcast
// CHECK-NEXT: [[DS:%.*]] = graph.part_of_group [[DW]] replicas 2 over tensor : tensor<2x4xf32> -> tensor<4xf32>
// CHECK-NEXT: graph.accumulate [[DS]] into @grad.s
graph.parameter @s : tensor<4xf32> init(normal, 2.000000e-02) hf "s"
func.func @forward() -> tensor<f32> {
  %s = graph.parameter_ref @s : tensor<4xf32>
  %w = graph.all_gather %s replicas 2 over tensor {replicated_gradient} : tensor<4xf32> -> tensor<2x4xf32>
  %r = graph.reduce sum %w dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// A part of a replicated tensor: its gradient is the whole one, gathered
// from every rank's part (flattened for the gather, in the input's shape).
// CHECK-LABEL: func.func @forward_grad() -> tensor<f32>
// CHECK: [[X:%.*]] = graph.parameter_ref @x : tensor<2x2x4xf32>
// CHECK: graph.part_of_group [[X]] replicas 2 over tensor : tensor<2x2x4xf32> -> tensor<2x4xf32>
// CHECK: [[DP:%.*]] = graph.broadcast
// CHECK-NEXT: [[FLAT:%.*]] = graph.reshape [[DP]] : tensor<2x4xf32> -> tensor<8xf32>
// CHECK-NEXT: [[DX:%.*]] = graph.all_gather [[FLAT]] replicas 2 over tensor : tensor<8xf32> -> tensor<2x2x4xf32>
// CHECK-NEXT: graph.accumulate [[DX]] into @grad.x
graph.parameter @x : tensor<2x2x4xf32> init(normal, 2.000000e-02) hf "x"
func.func @forward() -> tensor<f32> {
  %x = graph.parameter_ref @x : tensor<2x2x4xf32>
  %p = graph.part_of_group %x replicas 2 over tensor : tensor<2x2x4xf32> -> tensor<2x4xf32>
  %r = graph.reduce sum %p dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// A data-parallel sum has no gradient rule: each replica's loss differs,
// and those sums come after autodiff.
graph.parameter @d : tensor<4xf32> init(normal, 2.000000e-02) hf "d"
func.func @forward() -> tensor<f32> {
  %d = graph.parameter_ref @d : tensor<4xf32>
  // expected-error @+1 {{over the data group has no gradient rule}}
  %x = graph.all_reduce %d replicas 2 : tensor<4xf32>
  %r = graph.reduce sum %x dims [0] : tensor<4xf32> -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// A maximum over the group has no gradient: on a loss path it is an error.
graph.parameter @m : tensor<4xf32> init(normal, 2.000000e-02) hf "m"
func.func @forward() -> tensor<f32> {
  %m = graph.parameter_ref @m : tensor<4xf32>
  // expected-error @+1 {{has no gradient rule for reduction max}}
  %x = graph.all_reduce %m replicas 2 over tensor reduction max : tensor<4xf32>
  %r = graph.reduce sum %x dims [0] : tensor<4xf32> -> tensor<f32>
  return %r : tensor<f32>
}
