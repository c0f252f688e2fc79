// RUN: ferry-opt %s --ferry-autodiff --ferry-recompute | FileCheck %s

// ferry-recompute (execution.recompute: layer) on ferry-autodiff's output for
// a layer loop: the forward loop keeps storing only the layer input
// (@stash.blk.0); @blk_fwd's internal result (the bias_add that gelu_grad
// reads, @stash.blk.1) is no longer stored or declared. The backward loop
// re-runs @blk_fwd from the reloaded input and the same seed, layer index
// and sample offset (so dropout masks regenerate), and feeds its stash
// result to @blk_bwd.

// CHECK: graph.variable @stash.blk.0 : tensor<3x2x4xf32>
// CHECK-NOT: @stash.blk.1

// CHECK-LABEL: func.func @forward_grad(
// CHECK-SAME: [[SEED:%[a-z0-9]+]]: i64, [[OFF:%[a-z0-9]+]]: index
// CHECK: scf.for [[L:%[a-z0-9]+]] = {{.*}} iter_args([[X:%[a-z0-9]+]] =
// CHECK: func.call @blk_fwd([[X]], [[SEED]], [[L]], [[OFF]],
// CHECK-NEXT: graph.store [[X]] into @stash.blk.0[[[L]]]
// CHECK-NEXT: scf.yield
// CHECK: scf.for [[K:%[a-z0-9]+]] = {{.*}} iter_args([[DY:%[a-z0-9]+]] =
// CHECK: [[I:%.*]] = arith.subi {{.*}}, [[K]]
// CHECK-NEXT: [[XS:%.*]] = graph.parameter_slice @stash.blk.0[[[I]]]
// CHECK-NEXT: [[W:%.*]] = graph.parameter_slice @layer.w[[[I]]]
// CHECK-NEXT: [[B:%.*]] = graph.parameter_slice @layer.b[[[I]]]
// CHECK-NEXT: [[R:%.*]]:2 = func.call @blk_fwd([[XS]], [[SEED]], [[I]], [[OFF]], [[W]], [[B]]) {ferry.recompute}
// CHECK-NEXT: func.call @blk_bwd([[XS]], [[SEED]], [[I]], [[OFF]], [[W]], [[B]], [[R]]#1, [[DY]])
// CHECK-NOT: @stash.blk.1

graph.parameter @emb : tensor<2x4xf32> init(normal, 2.000000e-02) hf "emb"
graph.parameter @layer.w : tensor<3x4x4xf32> init(normal, 2.000000e-02) hf "layer.{}.w" stacked
graph.parameter @layer.b : tensor<3x4xf32> init(zeros) hf "layer.{}.b" stacked no_weight_decay
func.func @blk(%x: tensor<2x4xf32>, %seed: i64, %l: index, %offset: index, %w: tensor<4x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  %y = graph.matmul %x, %w {transpose_rhs} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %z = graph.bias_add %y, %b : tensor<2x4xf32>, tensor<4xf32>
  %g = graph.gelu %z : tensor<2x4xf32>
  %d = graph.dropout %g, %seed, %l, %offset {probability = 1.000000e-01 : f64, purpose = "out"} : tensor<2x4xf32>
  return %d : tensor<2x4xf32>
}
func.func @head(%h: tensor<2x4xf32>, %e: tensor<2x4xf32>) -> (tensor<f32>, tensor<f32>) {
  %m = graph.mul %h, %e : tensor<2x4xf32>
  %r = graph.reduce sum %m dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
  %q = graph.reduce sum_squares %h dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %r, %q : tensor<f32>, tensor<f32>
}
func.func @forward(%seed: i64, %offset: index) -> (tensor<f32>, tensor<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %e = graph.parameter_ref @emb : tensor<2x4xf32>
  %h = scf.for %l = %c0 to %c3 step %c1 iter_args(%x = %e) -> (tensor<2x4xf32>) {
    %w = graph.parameter_slice @layer.w[%l] : tensor<4x4xf32>
    %b = graph.parameter_slice @layer.b[%l] : tensor<4xf32>
    %y = func.call @blk(%x, %seed, %l, %offset, %w, %b) : (tensor<2x4xf32>, i64, index, index, tensor<4x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    scf.yield %y : tensor<2x4xf32>
  }
  %loss:2 = func.call @head(%h, %e) : (tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<f32>, tensor<f32>)
  return %loss#0, %loss#1 : tensor<f32>, tensor<f32>
}
