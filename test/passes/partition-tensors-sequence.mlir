// RUN: ferry-opt %s --ferry-partition-tensors="sequence-parallel=true" | FileCheck %s

// Tests sequence parallelism at T = 2 on [batch 2, seq 4, hidden 8]: the
// activations between the matmuls are split along the sequence (dimension
// 1), each rank holding [2, 2, 8]. The vocabulary-parallel embedding's
// partial sum and the row-parallel matmul's are reduce-scattered into this
// rank's part (through [T, batch, seq / T, hidden], where a part is one
// block); the replicated input added to it is cut to this rank's part
// (graph.part_of_group); the layer loop carries the part and the block
// takes and returns it; the column-parallel matmul all-gathers the sequence
// in place of f; the bias add, the dropout (keyed from this rank's first
// element of each sample: 2 x 8) and the layer norm run on the part, their
// replicated parameters through f; the position gather and the entry's
// result take the whole sequence, gathered once with a replicated
// gradient.

// CHECK-LABEL: func.func @block(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x2x8xf32>, %[[WU:[^:]*]]: tensor<8x8xf32>, %[[BU:[^:]*]]: tensor<8xf32>, %[[WD:[^:]*]]: tensor<8x8xf32>, %[[BD:[^:]*]]: tensor<8xf32>, %[[S:[^:]*]]: tensor<8xf32>, %[[B:[^:]*]]: tensor<8xf32>, {{.*}}) -> tensor<2x2x8xf32>
// CHECK-DAG: %[[FB:.*]] = graph.copy_to_group %[[B]] replicas 2 over tensor : tensor<8xf32>
// CHECK-DAG: %[[FS:.*]] = graph.copy_to_group %[[S]] replicas 2 over tensor : tensor<8xf32>
// CHECK-DAG: %[[FBD:.*]] = graph.copy_to_group %[[BD]] replicas 2 over tensor : tensor<8xf32>
// CHECK: %[[XF:.*]] = graph.reshape %[[X]] : tensor<2x2x8xf32> -> tensor<32xf32>
// CHECK-NEXT: %[[XG:.*]] = graph.all_gather %[[XF]] replicas 2 over tensor : tensor<32xf32> -> tensor<2x2x2x8xf32>
// CHECK-NEXT: %[[XT:.*]] = graph.transpose %[[XG]] [1, 0, 2, 3] : tensor<2x2x2x8xf32> -> tensor<2x2x2x8xf32>
// CHECK-NEXT: %[[XW:.*]] = graph.reshape %[[XT]] : tensor<2x2x2x8xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT: graph.matmul %[[XW]], %[[WU]] {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
// CHECK: %[[P:.*]] = graph.matmul %{{.*}}, %[[WD]] {transpose_rhs} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[PR:.*]] = graph.reshape %[[P]] : tensor<2x4x8xf32> -> tensor<2x2x2x8xf32>
// CHECK-NEXT: %[[PT:.*]] = graph.transpose %[[PR]] [1, 0, 2, 3] : tensor<2x2x2x8xf32> -> tensor<2x2x2x8xf32>
// CHECK-NEXT: %[[RS:.*]] = graph.reduce_scatter %[[PT]] replicas 2 over tensor : tensor<2x2x2x8xf32> -> tensor<32xf32>
// CHECK-NEXT: %[[PART:.*]] = graph.reshape %[[RS]] : tensor<32xf32> -> tensor<2x2x8xf32>
// CHECK-NEXT: %[[BIASED:.*]] = graph.bias_add %[[PART]], %[[FBD]] : tensor<2x2x8xf32>, tensor<8xf32>
// CHECK-NEXT: %[[D:.*]] = graph.dropout %[[BIASED]], {{.*}} tensor_key_stride = 16 : i64} : tensor<2x2x8xf32>
// CHECK-NEXT: %[[R:.*]] = graph.add %[[D]], %[[X]] : tensor<2x2x8xf32>
// CHECK-NEXT: %[[N:.*]] = graph.layer_norm %[[R]], %[[FS]], %[[FB]] {{.*}} : tensor<2x2x8xf32>, tensor<8xf32>
// CHECK-NEXT: return %[[N]] : tensor<2x2x8xf32>
// CHECK-LABEL: func.func @forward(
// CHECK: %[[POS:.*]] = graph.reshape %{{.*}} : tensor<2x4x8xf32> -> tensor<2x2x2x8xf32>
// CHECK-NEXT: %[[POST:.*]] = graph.transpose %[[POS]] [1, 0, 2, 3]
// CHECK-NEXT: %[[CUT:.*]] = graph.part_of_group %[[POST]] replicas 2 over tensor : tensor<2x2x2x8xf32> -> tensor<2x2x8xf32>
// CHECK: %[[E:.*]] = graph.embedding %{{.*}} {tensor_row_stride = 8 : i64} : tensor<8x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
// CHECK-NEXT: graph.reshape %[[E]]
// CHECK-NEXT: graph.transpose
// CHECK-NEXT: graph.reduce_scatter {{.*}} replicas 2 over tensor : tensor<2x2x2x8xf32> -> tensor<32xf32>
// CHECK-NEXT: %[[EP:.*]] = graph.reshape {{.*}} : tensor<32xf32> -> tensor<2x2x8xf32>
// CHECK-NEXT: %[[H0:.*]] = graph.add %[[EP]], %[[CUT]] : tensor<2x2x8xf32>
// CHECK-NEXT: %[[Y:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %[[H0]]) -> (tensor<2x2x8xf32>)
// CHECK: func.call @block({{.*}}) : (tensor<2x2x8xf32>, {{.*}}) -> tensor<2x2x8xf32>
// CHECK: %[[YF:.*]] = graph.reshape %[[Y]] : tensor<2x2x8xf32> -> tensor<32xf32>
// CHECK-NEXT: graph.all_gather %[[YF]] replicas 2 over tensor {replicated_gradient} : tensor<32xf32> -> tensor<2x2x2x8xf32>
// CHECK-NEXT: graph.transpose
// CHECK-NEXT: %[[YW:.*]] = graph.reshape {{.*}} : tensor<2x2x2x8xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[G:.*]] = graph.gather_positions %[[YW]][%{{.*}}] : tensor<2x4x8xf32>, tensor<2x2xi32> -> tensor<2x2x8xf32>
// CHECK-NEXT: return %[[G]], %[[YW]] : tensor<2x2x8xf32>, tensor<2x4x8xf32>
module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 1>} {
  graph.parameter @word : tensor<16x8xf32> init(normal, 2.000000e-02) hf "word" sharding <split = 0>
  graph.parameter @layer.up.weight : tensor<2x16x8xf32> init(normal, 2.000000e-02) hf "l.{}.up.weight" stacked sharding <split = 1>
  graph.parameter @layer.up.bias : tensor<2x16xf32> init(zeros) hf "l.{}.up.bias" stacked sharding <split = 1>
  graph.parameter @layer.down.weight : tensor<2x8x16xf32> init(normal, 2.000000e-02) hf "l.{}.down.weight" stacked sharding <split = 2>
  graph.parameter @layer.down.bias : tensor<2x8xf32> init(zeros) hf "l.{}.down.bias" stacked
  graph.parameter @layer.ln.scale : tensor<2x8xf32> init(ones) hf "l.{}.ln.scale" stacked
  graph.parameter @layer.ln.bias : tensor<2x8xf32> init(zeros) hf "l.{}.ln.bias" stacked
  func.func @block(%x: tensor<2x4x8xf32>, %wu: tensor<16x8xf32>, %bu: tensor<16xf32>, %wd: tensor<8x16xf32>, %bd: tensor<8xf32>, %s: tensor<8xf32>, %b: tensor<8xf32>, %seed: i64, %l: index, %o: index) -> tensor<2x4x8xf32> {
    %u0 = graph.matmul %x, %wu {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %u1 = graph.bias_add %u0, %bu : tensor<2x4x16xf32>, tensor<16xf32>
    %u = graph.gelu %u1 : tensor<2x4x16xf32>
    %d0 = graph.matmul %u, %wd {transpose_rhs} : tensor<2x4x16xf32>, tensor<8x16xf32> -> tensor<2x4x8xf32>
    %d1 = graph.bias_add %d0, %bd : tensor<2x4x8xf32>, tensor<8xf32>
    %d = graph.dropout %d1, %seed, %l, %o {probability = 1.000000e-01 : f64, purpose = "out"} : tensor<2x4x8xf32>
    %r = graph.add %d, %x : tensor<2x4x8xf32>
    %n = graph.layer_norm %r, %s, %b eps 1.000000e-12 : tensor<2x4x8xf32>, tensor<8xf32>
    return %n : tensor<2x4x8xf32>
  }
  func.func @forward(%ids: tensor<2x4xi32> {graph.input = "ids"}, %pos: tensor<2x4x8xf32> {graph.input = "pos"}, %at: tensor<2x2xi32> {graph.input = "at"}, %seed: i64 {graph.input = "seed"}, %o: index {graph.input = "sample_offset"}) -> (tensor<2x2x8xf32>, tensor<2x4x8xf32>) attributes {graph.entry = "forward"} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %word = graph.parameter_ref @word : tensor<16x8xf32>
    %e = graph.embedding %word[%ids] : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %x = graph.add %e, %pos : tensor<2x4x8xf32>
    %y = scf.for %l = %c0 to %c2 step %c1 iter_args(%h = %x) -> (tensor<2x4x8xf32>) {
      %wu = graph.parameter_slice @layer.up.weight[%l] : tensor<16x8xf32>
      %bu = graph.parameter_slice @layer.up.bias[%l] : tensor<16xf32>
      %wd = graph.parameter_slice @layer.down.weight[%l] : tensor<8x16xf32>
      %bd = graph.parameter_slice @layer.down.bias[%l] : tensor<8xf32>
      %s = graph.parameter_slice @layer.ln.scale[%l] : tensor<8xf32>
      %b = graph.parameter_slice @layer.ln.bias[%l] : tensor<8xf32>
      %r = func.call @block(%h, %wu, %bu, %wd, %bd, %s, %b, %seed, %l, %o) : (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<16xf32>, tensor<8x16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, i64, index, index) -> tensor<2x4x8xf32>
      scf.yield %r : tensor<2x4x8xf32>
    }
    %g = graph.gather_positions %y[%at] : tensor<2x4x8xf32>, tensor<2x2xi32> -> tensor<2x2x8xf32>
    return %g, %y : tensor<2x2x8xf32>, tensor<2x4x8xf32>
  }
}
