// RUN: ferry-opt %s --ferry-partition-tensors | FileCheck %s

// Tests ferry-partition-tensors on a two-layer block called from a layer
// loop, with Megatron's layout at T = 2: Q and K and the first FFN matmul
// column-parallel (output dimension and bias split), the second FFN matmul
// row-parallel (input dimension split). The split follows the reshape to
// heads and the transpose, through the batched score matmul, the scale and
// the softmax over the keys and the dropout (each element keyed by its
// place in the whole sample: this rank's heads start at rank x 16, the
// part's size), back through the transpose and reshape; the
// row-parallel result is all-reduced over the tensor group before its
// bias; the block's input enters the split region once through f. Every
// split value, argument and declaration takes this rank's shape, and the
// mesh says partitioned.

// CHECK: module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 1, partitioned = true>}
// CHECK: graph.parameter @layer.q.weight : tensor<2x4x8xf32> {{.*}} sharding <split = 1>
// CHECK: graph.parameter @layer.q.bias : tensor<2x4xf32> {{.*}} sharding <split = 1>
// CHECK: graph.parameter @layer.up.weight : tensor<2x8x8xf32> {{.*}} sharding <split = 1>
// CHECK: graph.parameter @layer.down.weight : tensor<2x8x8xf32> {{.*}} sharding <split = 2>
// CHECK: graph.parameter @layer.down.bias : tensor<2x8xf32>
// CHECK-LABEL: func.func @block(
// CHECK-SAME: %[[X:[^:]*]]: tensor<3x4x8xf32>, %{{[^:]*}}: tensor<3x4xf32>, %[[WQ:[^:]*]]: tensor<4x8xf32>, %[[BQ:[^:]*]]: tensor<4xf32>, %[[WK:[^:]*]]: tensor<4x8xf32>, %{{[^:]*}}: tensor<8x8xf32>, %{{[^:]*}}: tensor<8xf32>, %{{[^:]*}}: tensor<8x8xf32>, %{{[^:]*}}: tensor<8xf32>, {{.*}}) -> tensor<3x4x8xf32>
// CHECK: %[[F:.*]] = graph.copy_to_group %[[X]] replicas 2 over tensor : tensor<3x4x8xf32>
// CHECK: %[[Q:.*]] = graph.matmul %[[F]], %[[WQ]] {transpose_rhs} : tensor<3x4x8xf32>, tensor<4x8xf32> -> tensor<3x4x4xf32>
// CHECK: graph.bias_add %[[Q]], %[[BQ]] : tensor<3x4x4xf32>, tensor<4xf32>
// CHECK: graph.reshape %{{.*}} : tensor<3x4x4xf32> -> tensor<3x4x1x4xf32>
// CHECK: graph.transpose %{{.*}} [0, 2, 1, 3] : tensor<3x4x1x4xf32> -> tensor<3x1x4x4xf32>
// CHECK: graph.matmul %[[F]], %[[WK]] {transpose_rhs} : tensor<3x4x8xf32>, tensor<4x8xf32> -> tensor<3x4x4xf32>
// CHECK: graph.matmul %{{.*}}, %{{.*}} {transpose_rhs} : tensor<3x1x4x4xf32>, tensor<3x1x4x4xf32> -> tensor<3x1x4x4xf32>
// CHECK: graph.scale %{{.*}} by 5.000000e-01 : tensor<3x1x4x4xf32>
// CHECK: graph.softmax %{{.*}}, %{{.*}} : tensor<3x1x4x4xf32>, tensor<3x4xf32>
// CHECK: graph.dropout %{{.*}} {probability = 1.000000e-01 : f64, purpose = "probs", tensor_key_stride = 16 : i64} : tensor<3x1x4x4xf32>
// CHECK: graph.matmul %{{.*}}, %{{.*}} : tensor<3x1x4x4xf32>, tensor<3x1x4x4xf32> -> tensor<3x1x4x4xf32>
// CHECK: graph.transpose %{{.*}} [0, 2, 1, 3] : tensor<3x1x4x4xf32> -> tensor<3x4x1x4xf32>
// CHECK: %[[CTX:.*]] = graph.reshape %{{.*}} : tensor<3x4x1x4xf32> -> tensor<3x4x4xf32>
// CHECK: %[[SUM:.*]] = graph.add %[[CTX]], %{{.*}} : tensor<3x4x4xf32>
// CHECK: %[[N:.*]] = graph.layer_norm
// CHECK: %[[F2:.*]] = graph.copy_to_group %[[N]] replicas 2 over tensor : tensor<3x4x8xf32>
// CHECK: graph.matmul %[[F2]], %{{.*}} {transpose_rhs} : tensor<3x4x8xf32>, tensor<8x8xf32> -> tensor<3x4x8xf32>
// CHECK: graph.gelu %{{.*}} : tensor<3x4x8xf32>
// CHECK: %[[P:.*]] = graph.matmul %{{.*}}, %{{.*}} {transpose_rhs} : tensor<3x4x8xf32>, tensor<8x8xf32> -> tensor<3x4x8xf32>
// CHECK-NEXT: %[[G:.*]] = graph.all_reduce %[[P]] replicas 2 over tensor : tensor<3x4x8xf32>
// CHECK-NEXT: graph.bias_add %[[G]], %{{.*}} : tensor<3x4x8xf32>, tensor<8xf32>
// CHECK-LABEL: func.func @forward(
// CHECK: scf.for
// CHECK: graph.parameter_slice @layer.q.weight[%{{.*}}] : tensor<4x8xf32>
// CHECK: graph.parameter_slice @layer.down.bias[%{{.*}}] : tensor<8xf32>
// CHECK: call @block({{.*}}) : (tensor<3x4x8xf32>, tensor<3x4xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, {{.*}}) -> tensor<3x4x8xf32>
module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 1>} {
  graph.parameter @layer.q.weight : tensor<2x8x8xf32> init(normal, 2.000000e-02) hf "l.{}.q.weight" stacked sharding <split = 1>
  graph.parameter @layer.q.bias : tensor<2x8xf32> init(zeros) hf "l.{}.q.bias" stacked sharding <split = 1>
  graph.parameter @layer.k.weight : tensor<2x8x8xf32> init(normal, 2.000000e-02) hf "l.{}.k.weight" stacked sharding <split = 1>
  graph.parameter @layer.up.weight : tensor<2x16x8xf32> init(normal, 2.000000e-02) hf "l.{}.up.weight" stacked sharding <split = 1>
  graph.parameter @layer.up.bias : tensor<2x16xf32> init(zeros) hf "l.{}.up.bias" stacked sharding <split = 1>
  graph.parameter @layer.down.weight : tensor<2x8x16xf32> init(normal, 2.000000e-02) hf "l.{}.down.weight" stacked sharding <split = 2>
  graph.parameter @layer.down.bias : tensor<2x8xf32> init(zeros) hf "l.{}.down.bias" stacked
  graph.parameter @layer.ln.scale : tensor<2x8xf32> init(ones) hf "l.{}.ln.scale" stacked
  graph.parameter @layer.ln.bias : tensor<2x8xf32> init(zeros) hf "l.{}.ln.bias" stacked
  func.func @block(%x: tensor<3x4x8xf32>, %mask: tensor<3x4xf32>, %wq: tensor<8x8xf32>, %bq: tensor<8xf32>, %wk: tensor<8x8xf32>, %wu: tensor<16x8xf32>, %bu: tensor<16xf32>, %wd: tensor<8x16xf32>, %bd: tensor<8xf32>, %s: tensor<8xf32>, %b: tensor<8xf32>, %seed: i64, %l: index, %o: index) -> tensor<3x4x8xf32> {
    %q0 = graph.matmul %x, %wq {transpose_rhs} : tensor<3x4x8xf32>, tensor<8x8xf32> -> tensor<3x4x8xf32>
    %q1 = graph.bias_add %q0, %bq : tensor<3x4x8xf32>, tensor<8xf32>
    %q2 = graph.reshape %q1 : tensor<3x4x8xf32> -> tensor<3x4x2x4xf32>
    %q = graph.transpose %q2 [0, 2, 1, 3] : tensor<3x4x2x4xf32> -> tensor<3x2x4x4xf32>
    %k0 = graph.matmul %x, %wk {transpose_rhs} : tensor<3x4x8xf32>, tensor<8x8xf32> -> tensor<3x4x8xf32>
    %k1 = graph.reshape %k0 : tensor<3x4x8xf32> -> tensor<3x4x2x4xf32>
    %k = graph.transpose %k1 [0, 2, 1, 3] : tensor<3x4x2x4xf32> -> tensor<3x2x4x4xf32>
    %sc = graph.matmul %q, %k {transpose_rhs} : tensor<3x2x4x4xf32>, tensor<3x2x4x4xf32> -> tensor<3x2x4x4xf32>
    %ss = graph.scale %sc by 5.000000e-01 : tensor<3x2x4x4xf32>
    %p = graph.softmax %ss, %mask : tensor<3x2x4x4xf32>, tensor<3x4xf32>
    %pd = graph.dropout %p, %seed, %l, %o {probability = 1.000000e-01 : f64, purpose = "probs"} : tensor<3x2x4x4xf32>
    %c0 = graph.matmul %pd, %k : tensor<3x2x4x4xf32>, tensor<3x2x4x4xf32> -> tensor<3x2x4x4xf32>
    %c1 = graph.transpose %c0 [0, 2, 1, 3] : tensor<3x2x4x4xf32> -> tensor<3x4x2x4xf32>
    %c = graph.reshape %c1 : tensor<3x4x2x4xf32> -> tensor<3x4x8xf32>
    %c2 = graph.add %c, %q1 : tensor<3x4x8xf32>
    %n = graph.layer_norm %x, %s, %b eps 1.000000e-12 : tensor<3x4x8xf32>, tensor<8xf32>
    %u0 = graph.matmul %n, %wu {transpose_rhs} : tensor<3x4x8xf32>, tensor<16x8xf32> -> tensor<3x4x16xf32>
    %u1 = graph.bias_add %u0, %bu : tensor<3x4x16xf32>, tensor<16xf32>
    %u = graph.gelu %u1 : tensor<3x4x16xf32>
    %d0 = graph.matmul %u, %wd {transpose_rhs} : tensor<3x4x16xf32>, tensor<8x16xf32> -> tensor<3x4x8xf32>
    %d = graph.bias_add %d0, %bd : tensor<3x4x8xf32>, tensor<8xf32>
    return %d : tensor<3x4x8xf32>
  }
  func.func @forward(%x: tensor<3x4x8xf32> {graph.input = "x"}, %mask: tensor<3x4xf32> {graph.input = "mask"}, %seed: i64 {graph.input = "seed"}, %o: index {graph.input = "sample_offset"}) -> tensor<3x4x8xf32> attributes {graph.entry = "forward"} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %y = scf.for %l = %c0 to %c2 step %c1 iter_args(%h = %x) -> (tensor<3x4x8xf32>) {
      %wq = graph.parameter_slice @layer.q.weight[%l] : tensor<8x8xf32>
      %bq = graph.parameter_slice @layer.q.bias[%l] : tensor<8xf32>
      %wk = graph.parameter_slice @layer.k.weight[%l] : tensor<8x8xf32>
      %wu = graph.parameter_slice @layer.up.weight[%l] : tensor<16x8xf32>
      %bu = graph.parameter_slice @layer.up.bias[%l] : tensor<16xf32>
      %wd = graph.parameter_slice @layer.down.weight[%l] : tensor<8x16xf32>
      %bd = graph.parameter_slice @layer.down.bias[%l] : tensor<8xf32>
      %s = graph.parameter_slice @layer.ln.scale[%l] : tensor<8xf32>
      %b = graph.parameter_slice @layer.ln.bias[%l] : tensor<8xf32>
      %r = func.call @block(%h, %mask, %wq, %bq, %wk, %wu, %bu, %wd, %bd, %s, %b, %seed, %l, %o) : (tensor<3x4x8xf32>, tensor<3x4xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<16x8xf32>, tensor<16xf32>, tensor<8x16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, i64, index, index) -> tensor<3x4x8xf32>
      scf.yield %r : tensor<3x4x8xf32>
    }
    return %y : tensor<3x4x8xf32>
  }
}
