// RUN: ferry-opt %s --ferry-insert-eval | FileCheck %s

// The input is what ferry-autodiff and ferry-insert-optimizer make of a small
// model's graph.

// Tests ferry-insert-eval: @eval_step() beside @train_step.
// * @forward and every function it calls are copied as @<name>_eval with
//   each graph.dropout replaced by its input and each graph.attention's
//   dropout probability 0 (the originals keep theirs).
// * One f32 scalar variable per result of @forward, @metric.eval.<name>,
//   zeroed, then summed over the GA micro-batches of @train_step's stacked
//   inputs (GA = 8 / 2 = 4); mlm_count is read whole; seed and
//   sample_offset are constants (no dropout is left to use them).

// CHECK-DAG: graph.variable @metric.eval.loss : tensor<f32> init(zeros) hf "metric.eval.loss"
// CHECK-DAG: graph.variable @metric.eval.mlm_loss : tensor<f32> init(zeros) hf "metric.eval.mlm_loss"

// The original block keeps its dropout; the copy has none.
// CHECK-LABEL: func.func @block(
// CHECK: graph.attention {{.*}} {probability = 1.000000e-01 : f64, purpose = "attention.probs", scale = 5.000000e-01 : f64}
// CHECK: graph.dropout
// CHECK-LABEL: func.func private @block_eval(
// CHECK-NOT: graph.dropout
// CHECK: graph.attention {{.*}} {probability = 0.000000e+00 : f64, purpose = "attention.probs", scale = 5.000000e-01 : f64}
// CHECK-NOT: graph.dropout
// CHECK: return
// CHECK-LABEL: func.func private @forward_eval(
// CHECK-NOT: graph.dropout
// CHECK: call @block_eval(
// CHECK-NOT: graph.dropout
// CHECK: return

// CHECK-LABEL: func.func @eval_step() attributes {graph.entry = "eval_step"} {
// CHECK-NEXT: [[Z:%.*]] = arith.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: graph.store [[Z]] into @metric.eval.loss : tensor<f32>
// CHECK-NEXT: graph.store [[Z]] into @metric.eval.mlm_loss : tensor<f32>
// CHECK-NEXT: [[C0:%.*]] = arith.constant 0 : index
// CHECK-NEXT: [[GA:%.*]] = arith.constant 4 : index
// CHECK-NEXT: [[C1:%.*]] = arith.constant 1 : index
// CHECK-NEXT: scf.for [[MB:%[a-z0-9]+]] = [[C0]] to [[GA]] step [[C1]] {
// CHECK-NEXT: [[X:%.*]] = graph.parameter_slice @input.x[[[MB]]] : tensor<2x4xf32>
// CHECK-NEXT: [[COUNT:%.*]] = graph.parameter_ref @input.mlm_count : tensor<f32>
// CHECK-NEXT: [[SEED:%.*]] = arith.constant 0 : i64
// CHECK-NEXT: [[R:%.*]]:2 = func.call @forward_eval([[X]], [[COUNT]], [[SEED]], [[C0]])
// CHECK-NEXT: graph.accumulate [[R]]#0 into @metric.eval.loss : tensor<f32>
// CHECK-NEXT: graph.accumulate [[R]]#1 into @metric.eval.mlm_loss : tensor<f32>
// CHECK-NEXT: }
// CHECK-NEXT: return

module attributes {graph.training = {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, clip_norm = 1.000000e+00 : f64, data_parallel = 1 : i64, epsilon = 9.9999999999999995E-7 : f64, global_batch_size = 8 : i64, lr = 1.000000e-03 : f64, lr_schedule = "poly", micro_batch_size = 2 : i64, optimizer = "lamb", power = 1.000000e+00 : f64, seed = 42 : i64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 10 : i64, weight_decay = 1.000000e-02 : f64}} {
  graph.parameter @w : tensor<4x4xf32> init(normal, 2.000000e-02) hf "w"
  graph.variable @grad.w : tensor<4x4xf32> init(zeros) hf "grad.w"
  graph.variable @metric.loss : tensor<f32> init(zeros) hf "metric.loss"
  graph.variable @metric.mlm_loss : tensor<f32> init(zeros) hf "metric.mlm_loss"
  graph.variable @metric.nsp_loss : tensor<f32> init(zeros) hf "metric.nsp_loss"
  graph.variable @metric.mlm_correct : tensor<f32> init(zeros) hf "metric.mlm_correct"
  graph.variable @metric.nsp_correct : tensor<f32> init(zeros) hf "metric.nsp_correct"
  graph.variable @metric.grad_norm : tensor<f32> init(zeros) hf "metric.grad_norm"
  graph.variable @metric.lr : tensor<f32> init(zeros) hf "metric.lr"
  graph.variable @input.x : tensor<4x2x4xf32> init(zeros) hf "input.x.{}" stacked
  graph.variable @input.mlm_count : tensor<f32> init(zeros) hf "input.mlm_count"
  graph.variable @adam_m.w : tensor<4x4xf32> init(zeros) hf "optimizer.m.w"
  graph.variable @adam_v.w : tensor<4x4xf32> init(zeros) hf "optimizer.v.w"
  func.func @block(%arg0: tensor<2x4xf32>, %arg1: tensor<4x4xf32>, %arg2: i64, %arg3: index) -> tensor<2x4xf32> {
    %c0 = arith.constant 0 : index
    %cst = arith.constant dense<0.000000e+00> : tensor<2xf32>
    %0 = graph.matmul %arg0, %arg1 {transpose_rhs} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %1 = graph.reshape %0 : tensor<2x4xf32> -> tensor<2x1x1x4xf32>
    %2 = graph.reshape %cst : tensor<2xf32> -> tensor<2x1xf32>
    %result, %row_logsumexp = graph.attention %1, %1, %1, %2, %arg2, %c0, %arg3 {probability = 1.000000e-01 : f64, purpose = "attention.probs", scale = 5.000000e-01 : f64} : tensor<2x1x1x4xf32>, tensor<2x1xf32> -> tensor<2x1x1xf32>
    %3 = graph.reshape %result : tensor<2x1x1x4xf32> -> tensor<2x4xf32>
    %4 = graph.dropout %3, %arg2, %c0, %arg3 {probability = 1.000000e-01 : f64, purpose = "out"} : tensor<2x4xf32>
    return %4 : tensor<2x4xf32>
  }
  func.func @block_fwd(%arg0: tensor<2x4xf32>, %arg1: tensor<4x4xf32>, %arg2: i64, %arg3: index) -> (tensor<2x4xf32>, tensor<2x1x1x4xf32>, tensor<2x1xf32>, tensor<2x1x1x4xf32>, tensor<2x1x1xf32>) {
    %c0 = arith.constant 0 : index
    %cst = arith.constant dense<0.000000e+00> : tensor<2xf32>
    %0 = graph.matmul %arg0, %arg1 {transpose_rhs} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %1 = graph.reshape %0 : tensor<2x4xf32> -> tensor<2x1x1x4xf32>
    %2 = graph.reshape %cst : tensor<2xf32> -> tensor<2x1xf32>
    %result, %row_logsumexp = graph.attention %1, %1, %1, %2, %arg2, %c0, %arg3 {probability = 1.000000e-01 : f64, purpose = "attention.probs", scale = 5.000000e-01 : f64} : tensor<2x1x1x4xf32>, tensor<2x1xf32> -> tensor<2x1x1xf32>
    %3 = graph.reshape %result : tensor<2x1x1x4xf32> -> tensor<2x4xf32>
    %4 = graph.dropout %3, %arg2, %c0, %arg3 {probability = 1.000000e-01 : f64, purpose = "out"} : tensor<2x4xf32>
    return %4, %1, %2, %result, %row_logsumexp : tensor<2x4xf32>, tensor<2x1x1x4xf32>, tensor<2x1xf32>, tensor<2x1x1x4xf32>, tensor<2x1x1xf32>
  }
  func.func @block_bwd(%arg0: tensor<2x4xf32>, %arg1: tensor<4x4xf32>, %arg2: i64, %arg3: index, %arg4: tensor<2x1x1x4xf32>, %arg5: tensor<2x1xf32>, %arg6: tensor<2x1x1x4xf32>, %arg7: tensor<2x1x1xf32>, %arg8: tensor<2x4xf32>) -> tensor<4x4xf32> {
    %c0 = arith.constant 0 : index
    %cst = arith.constant dense<0.000000e+00> : tensor<2xf32>
    %0 = graph.dropout %arg8, %arg2, %c0, %arg3 {probability = 1.000000e-01 : f64, purpose = "out"} : tensor<2x4xf32>
    %1 = graph.reshape %0 : tensor<2x4xf32> -> tensor<2x1x1x4xf32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<2x1x1xf32>
    %query_grad, %key_grad, %value_grad = graph.attention_grad %arg4, %arg4, %arg4, %arg5, %arg6, %arg7, %1, %arg2, %c0, %arg3 {probability = 1.000000e-01 : f64, purpose = "attention.probs", scale = 5.000000e-01 : f64} : tensor<2x1x1x4xf32>, tensor<2x1xf32> -> tensor<2x1x1xf32>
    %2 = graph.add %query_grad, %key_grad : tensor<2x1x1x4xf32>
    %3 = graph.add %2, %value_grad : tensor<2x1x1x4xf32>
    %4 = graph.reshape %3 : tensor<2x1x1x4xf32> -> tensor<2x4xf32>
    %5 = graph.matmul %4, %arg1 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %6 = graph.matmul %4, %arg0 {transpose_lhs} : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<4x4xf32>
    return %6 : tensor<4x4xf32>
  }
  func.func @forward(%arg0: tensor<2x4xf32> {graph.input = "x"}, %arg1: tensor<f32> {graph.input = "mlm_count"}, %arg2: i64 {graph.input = "seed"}, %arg3: index {graph.input = "sample_offset"}) -> (tensor<f32>, tensor<f32>) attributes {graph.entry = "forward"} {
    %c0 = arith.constant 0 : index
    %0 = graph.parameter_ref @w : tensor<4x4xf32>
    %1 = call @block(%arg0, %0, %arg2, %arg3) : (tensor<2x4xf32>, tensor<4x4xf32>, i64, index) -> tensor<2x4xf32>
    %2 = graph.dropout %1, %arg2, %c0, %arg3 {probability = 1.000000e-01 : f64, purpose = "head"} : tensor<2x4xf32>
    %3 = graph.reduce sum_squares %2 dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    %4 = graph.div %3, %arg1 : tensor<f32>
    return %4, %3 : tensor<f32>, tensor<f32>
  }
  func.func @forward_grad(%arg0: tensor<2x4xf32> {graph.input = "x"}, %arg1: tensor<f32> {graph.input = "mlm_count"}, %arg2: i64 {graph.input = "seed"}, %arg3: index {graph.input = "sample_offset"}) -> (tensor<f32>, tensor<f32>) attributes {graph.entry = "forward_grad"} {
    %c0 = arith.constant 0 : index
    %0 = graph.parameter_ref @w : tensor<4x4xf32>
    %1:5 = call @block_fwd(%arg0, %0, %arg2, %arg3) : (tensor<2x4xf32>, tensor<4x4xf32>, i64, index) -> (tensor<2x4xf32>, tensor<2x1x1x4xf32>, tensor<2x1xf32>, tensor<2x1x1x4xf32>, tensor<2x1x1xf32>)
    %2 = graph.dropout %1#0, %arg2, %c0, %arg3 {probability = 1.000000e-01 : f64, purpose = "head"} : tensor<2x4xf32>
    %3 = graph.reduce sum_squares %2 dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    %4 = graph.div %3, %arg1 : tensor<f32>
    %cst = arith.constant dense<1.000000e+00> : tensor<f32>
    %5 = graph.div %cst, %arg1 : tensor<f32>
    %6 = graph.mul %5, %4 : tensor<f32>
    %7 = graph.scale %6 by -1.000000e+00 : tensor<f32>
    %8 = graph.broadcast %5 dims [0, 1] : tensor<f32> -> tensor<2x4xf32>
    %9 = graph.scale %2 by 2.000000e+00 : tensor<2x4xf32>
    %10 = graph.mul %8, %9 : tensor<2x4xf32>
    %11 = graph.dropout %10, %arg2, %c0, %arg3 {probability = 1.000000e-01 : f64, purpose = "head"} : tensor<2x4xf32>
    %12 = call @block_bwd(%arg0, %0, %arg2, %arg3, %1#1, %1#2, %1#3, %1#4, %11) : (tensor<2x4xf32>, tensor<4x4xf32>, i64, index, tensor<2x1x1x4xf32>, tensor<2x1xf32>, tensor<2x1x1x4xf32>, tensor<2x1x1xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
    graph.accumulate %12 into @grad.w : tensor<4x4xf32>
    return %4, %3 : tensor<f32>, tensor<f32>
  }
  func.func @train_step(%arg0: index {graph.input = "step"}) attributes {graph.entry = "train_step"} {
    %cst = arith.constant dense<0.000000e+00> : tensor<f32>
    graph.store %cst into @metric.loss : tensor<f32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<f32>
    graph.store %cst_0 into @metric.mlm_loss : tensor<f32>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<f32>
    graph.store %cst_1 into @metric.nsp_loss : tensor<f32>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<f32>
    graph.store %cst_2 into @metric.mlm_correct : tensor<f32>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<f32>
    graph.store %cst_3 into @metric.nsp_correct : tensor<f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    scf.for %arg1 = %c0 to %c4 step %c1 {
      %3 = graph.parameter_slice @input.x[%arg1] : tensor<2x4xf32>
      %4 = graph.parameter_ref @input.mlm_count : tensor<f32>
      %c42_i64 = arith.constant 42 : i64
      %c8 = arith.constant 8 : index
      %c2 = arith.constant 2 : index
      %5 = arith.muli %arg0, %c8 : index
      %6 = arith.muli %arg1, %c2 : index
      %7 = arith.addi %5, %6 : index
      %8:2 = func.call @forward_grad(%3, %4, %c42_i64, %7) : (tensor<2x4xf32>, tensor<f32>, i64, index) -> (tensor<f32>, tensor<f32>)
      graph.accumulate %8#0 into @metric.loss : tensor<f32>
      graph.accumulate %8#1 into @metric.mlm_loss : tensor<f32>
    }
    %0 = graph.parameter_ref @grad.w : tensor<4x4xf32>
    %1 = graph.global_norm %0 : tensor<4x4xf32> -> tensor<f32>
    graph.store %1 into @metric.grad_norm : tensor<f32>
    %2 = graph.learning_rate %arg0 {kind = "poly", lr = 1.000000e-03 : f64, power = 1.000000e+00 : f64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 10 : i64} : tensor<f32>
    graph.store %2 into @metric.lr : tensor<f32>
    graph.optimizer_update @w grad @grad.w moments @adam_m.w, @adam_v.w lr %2 norm %1 step %arg0 {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, clip_norm = 1.000000e+00 : f64, epsilon = 9.9999999999999995E-7 : f64, optimizer = "lamb", weight_decay = 1.000000e-02 : f64} : tensor<f32>, tensor<f32>
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<4x4xf32>
    graph.store %cst_4 into @grad.w : tensor<4x4xf32>
    return
  }
}
