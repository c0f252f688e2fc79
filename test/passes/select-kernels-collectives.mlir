// RUN: ferry-opt %s --split-input-file --ferry-select-kernels='programs=forward' | FileCheck %s

// Tests ferry-select-kernels on the collectives: Megatron's f
// (graph.copy_to_group) is a view of its input's buffer and emits no kernel
// (gelu reads the input state itself); an all-reduce over the data group by
// sum is the all_reduce kernel with its element count and group size (no
// group or reduction: the data group's encoding is what it was before
// tensor parallelism).
// CHECK-LABEL: rt.program @forward
// CHECK: %[[X:.*]] = rt.state_ref @arg.forward.x
// CHECK-NOT: rt.copy
// CHECK: %[[R:.*]] = rt.slice %[[X]] [0] size 16
// CHECK-NEXT: %[[G:.*]] = rt.slice %[[T:.*]] [0] size 16
// CHECK-NEXT: rt.gelu x(%[[R]]) out(%[[G]])
// CHECK: rt.all_reduce x(%{{.*}}) out(%{{.*}}) {count = array<i64: 4>, replicas = array<i64: 2>}
func.func @forward(%x: tensor<4xf32> {graph.input = "x"}) -> (tensor<4xf32> {graph.output = "y"}) {
  %f = graph.copy_to_group %x replicas 2 : tensor<4xf32>
  %g = graph.gelu %f : tensor<4xf32>
  %s = graph.all_reduce %g replicas 2 : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// Tests the tensor group's collectives: group 1, and an all-reduce's
// maximum as reduction 1; a part of a replicated tensor is the
// part_of_group kernel with its part's element count.
// CHECK-LABEL: rt.program @forward
// CHECK: rt.all_reduce x(%{{.*}}) out(%{{.*}}) {count = array<i64: 4>, group = array<i64: 1>, replicas = array<i64: 2>}
// CHECK: rt.all_reduce x(%{{.*}}) out(%{{.*}}) {count = array<i64: 4>, group = array<i64: 1>, reduction = array<i64: 1>, replicas = array<i64: 2>}
// CHECK: rt.all_gather x(%{{.*}}) out(%{{.*}}) {count = array<i64: 8>, group = array<i64: 1>, replicas = array<i64: 2>, shard = array<i64: 4>}
// CHECK: rt.reduce_scatter x(%{{.*}}) out(%{{.*}}) {count = array<i64: 8>, group = array<i64: 1>, replicas = array<i64: 2>, shard = array<i64: 4>}
// CHECK: rt.part_of_group x(%{{.*}}) out(%{{.*}}) {count = array<i64: 2>, group = array<i64: 1>, replicas = array<i64: 2>}
func.func @forward(%x: tensor<4xf32> {graph.input = "x"}) -> (tensor<2xf32> {graph.output = "y"}) {
  %s = graph.all_reduce %x replicas 2 over tensor : tensor<4xf32>
  %m = graph.all_reduce %s replicas 2 over tensor reduction max : tensor<4xf32>
  %g = graph.all_gather %m replicas 2 over tensor {replicated_gradient} : tensor<4xf32> -> tensor<8xf32>
  %r = graph.reduce_scatter %g replicas 2 over tensor : tensor<8xf32> -> tensor<4xf32>
  %p = graph.part_of_group %r replicas 2 over tensor : tensor<4xf32> -> tensor<2xf32>
  return %p : tensor<2xf32>
}
