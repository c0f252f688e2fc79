// RUN: ferry-opt %s --ferry-recompute | FileCheck %s

// The input is what ferry-autodiff makes of a small model with a layer loop.

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
// CHECK-NEXT: [[R:%.*]]:2 = func.call @blk_fwd([[XS]], [[SEED]], [[I]], [[OFF]], [[W]], [[B]]) {graph.recompute}
// CHECK-NEXT: func.call @blk_bwd([[XS]], [[SEED]], [[I]], [[OFF]], [[W]], [[B]], [[R]]#1, [[DY]])
// CHECK-NOT: @stash.blk.1

module {
  graph.parameter @emb : tensor<2x4xf32> init(normal, 2.000000e-02) hf "emb"
  graph.parameter @layer.w : tensor<3x4x4xf32> init(normal, 2.000000e-02) hf "layer.{}.w" stacked
  graph.parameter @layer.b : tensor<3x4xf32> init(zeros) hf "layer.{}.b" stacked no_weight_decay
  graph.variable @stash.blk.0 : tensor<3x2x4xf32> init(zeros) hf "stash.blk.0.{}" stacked
  graph.variable @stash.blk.1 : tensor<3x2x4xf32> init(zeros) hf "stash.blk.1.{}" stacked
  graph.variable @grad.layer.b : tensor<3x4xf32> init(zeros) hf "grad.layer.{}.b" stacked
  graph.variable @grad.layer.w : tensor<3x4x4xf32> init(zeros) hf "grad.layer.{}.w" stacked
  graph.variable @grad.emb : tensor<2x4xf32> init(zeros) hf "grad.emb"
  func.func @blk(%arg0: tensor<2x4xf32>, %arg1: i64, %arg2: index, %arg3: index, %arg4: tensor<4x4xf32>, %arg5: tensor<4xf32>) -> tensor<2x4xf32> {
    %0 = graph.matmul %arg0, %arg4 {transpose_rhs} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %1 = graph.bias_add %0, %arg5 : tensor<2x4xf32>, tensor<4xf32>
    %2 = graph.gelu %1 : tensor<2x4xf32>
    %3 = graph.dropout %2, %arg1, %arg2, %arg3 {probability = 1.000000e-01 : f64, purpose = "out"} : tensor<2x4xf32>
    return %3 : tensor<2x4xf32>
  }
  func.func @blk_fwd(%arg0: tensor<2x4xf32>, %arg1: i64, %arg2: index, %arg3: index, %arg4: tensor<4x4xf32>, %arg5: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
    %0 = graph.matmul %arg0, %arg4 {transpose_rhs} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %1 = graph.bias_add %0, %arg5 : tensor<2x4xf32>, tensor<4xf32>
    %2 = graph.gelu %1 : tensor<2x4xf32>
    %3 = graph.dropout %2, %arg1, %arg2, %arg3 {probability = 1.000000e-01 : f64, purpose = "out"} : tensor<2x4xf32>
    return %3, %1 : tensor<2x4xf32>, tensor<2x4xf32>
  }
  func.func @blk_bwd(%arg0: tensor<2x4xf32>, %arg1: i64, %arg2: index, %arg3: index, %arg4: tensor<4x4xf32>, %arg5: tensor<4xf32>, %arg6: tensor<2x4xf32>, %arg7: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4x4xf32>, tensor<4xf32>) {
    %0 = graph.dropout %arg7, %arg1, %arg2, %arg3 {probability = 1.000000e-01 : f64, purpose = "out"} : tensor<2x4xf32>
    %1 = graph.gelu_grad %arg6, %0 : tensor<2x4xf32>
    %2 = graph.reduce sum %1 dims [0] : tensor<2x4xf32> -> tensor<4xf32>
    %3 = graph.matmul %1, %arg4 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %4 = graph.matmul %1, %arg0 {transpose_lhs} : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<4x4xf32>
    return %3, %4, %2 : tensor<2x4xf32>, tensor<4x4xf32>, tensor<4xf32>
  }
  func.func @head(%arg0: tensor<2x4xf32>, %arg1: tensor<2x4xf32>) -> (tensor<f32>, tensor<f32>) {
    %0 = graph.mul %arg0, %arg1 : tensor<2x4xf32>
    %1 = graph.reduce sum %0 dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    %2 = graph.reduce sum_squares %arg0 dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %1, %2 : tensor<f32>, tensor<f32>
  }
  func.func @head_fwd(%arg0: tensor<2x4xf32>, %arg1: tensor<2x4xf32>) -> (tensor<f32>, tensor<f32>) {
    %0 = graph.mul %arg0, %arg1 : tensor<2x4xf32>
    %1 = graph.reduce sum %0 dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    %2 = graph.reduce sum_squares %arg0 dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %1, %2 : tensor<f32>, tensor<f32>
  }
  func.func @head_bwd(%arg0: tensor<2x4xf32>, %arg1: tensor<2x4xf32>, %arg2: tensor<f32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
    %0 = graph.broadcast %arg2 dims [0, 1] : tensor<f32> -> tensor<2x4xf32>
    %1 = graph.mul %0, %arg1 : tensor<2x4xf32>
    %2 = graph.mul %0, %arg0 : tensor<2x4xf32>
    return %1, %2 : tensor<2x4xf32>, tensor<2x4xf32>
  }
  func.func @forward(%arg0: i64, %arg1: index) -> (tensor<f32>, tensor<f32>) attributes {graph.entry = "forward"} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %0 = graph.parameter_ref @emb : tensor<2x4xf32>
    %1 = scf.for %arg2 = %c0 to %c3 step %c1 iter_args(%arg3 = %0) -> (tensor<2x4xf32>) {
      %3 = graph.parameter_slice @layer.w[%arg2] : tensor<4x4xf32>
      %4 = graph.parameter_slice @layer.b[%arg2] : tensor<4xf32>
      %5 = func.call @blk(%arg3, %arg0, %arg2, %arg1, %3, %4) : (tensor<2x4xf32>, i64, index, index, tensor<4x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
      scf.yield %5 : tensor<2x4xf32>
    }
    %2:2 = call @head(%1, %0) : (tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<f32>, tensor<f32>)
    return %2#0, %2#1 : tensor<f32>, tensor<f32>
  }
  func.func @forward_grad(%arg0: i64, %arg1: index) -> (tensor<f32>, tensor<f32>) attributes {graph.entry = "forward_grad"} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %0 = graph.parameter_ref @emb : tensor<2x4xf32>
    %1 = scf.for %arg2 = %c0 to %c3 step %c1 iter_args(%arg3 = %0) -> (tensor<2x4xf32>) {
      %5 = graph.parameter_slice @layer.w[%arg2] : tensor<4x4xf32>
      %6 = graph.parameter_slice @layer.b[%arg2] : tensor<4xf32>
      %7:2 = func.call @blk_fwd(%arg3, %arg0, %arg2, %arg1, %5, %6) : (tensor<2x4xf32>, i64, index, index, tensor<4x4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
      graph.store %arg3 into @stash.blk.0[%arg2] : tensor<2x4xf32>
      graph.store %7#1 into @stash.blk.1[%arg2] : tensor<2x4xf32>
      scf.yield %7#0 : tensor<2x4xf32>
    }
    %2:2 = call @head_fwd(%1, %0) : (tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<f32>, tensor<f32>)
    %cst = arith.constant dense<1.000000e+00> : tensor<f32>
    %3:2 = call @head_bwd(%1, %0, %cst) : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<f32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
    %c0_0 = arith.constant 0 : index
    %c3_1 = arith.constant 3 : index
    %c1_2 = arith.constant 1 : index
    %4 = scf.for %arg2 = %c0_0 to %c3_1 step %c1_2 iter_args(%arg3 = %3#0) -> (tensor<2x4xf32>) {
      %c2 = arith.constant 2 : index
      %5 = arith.subi %c2, %arg2 : index
      %6 = graph.parameter_slice @stash.blk.0[%5] : tensor<2x4xf32>
      %7 = graph.parameter_slice @stash.blk.1[%5] : tensor<2x4xf32>
      %8 = graph.parameter_slice @layer.w[%5] : tensor<4x4xf32>
      %9 = graph.parameter_slice @layer.b[%5] : tensor<4xf32>
      %10:3 = func.call @blk_bwd(%6, %arg0, %5, %arg1, %8, %9, %7, %arg3) : (tensor<2x4xf32>, i64, index, index, tensor<4x4xf32>, tensor<4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4x4xf32>, tensor<4xf32>)
      graph.accumulate %10#2 into @grad.layer.b[%5] : tensor<4xf32>
      graph.accumulate %10#1 into @grad.layer.w[%5] : tensor<4x4xf32>
      scf.yield %10#0 : tensor<2x4xf32>
    }
    graph.accumulate %3#1 into @grad.emb : tensor<2x4xf32>
    graph.accumulate %4 into @grad.emb : tensor<2x4xf32>
    return %2#0, %2#1 : tensor<f32>, tensor<f32>
  }
}
