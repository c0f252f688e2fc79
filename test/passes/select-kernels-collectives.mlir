// RUN: ferry-opt %s --ferry-select-kernels='programs=forward' | FileCheck %s

// Tests ferry-select-kernels on the collectives: Megatron's f
// (graph.copy_to_group) is a view of its input's buffer and emits no kernel
// (gelu reads the input state itself); an all-reduce over the data group by
// sum is the all_reduce kernel with its element count and group size.
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
