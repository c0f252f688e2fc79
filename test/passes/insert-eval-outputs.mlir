// RUN: ferry-opt %s --ferry-insert-eval | FileCheck %s

// The input is what ferry-autodiff and ferry-insert-optimizer make of a small
// model's graph.

// Tests the results @forward names with `graph.output` (the SQuAD span
// head's): @train_step keeps the scalar ones as @metric.<name> (the logits
// are not kept in training); @eval_step sums the scalar ones into
// @metric.eval.<name> and stores the logits of each micro-batch into its
// slice of @output.eval.logits [micro-batches, ...].

// CHECK-DAG: graph.variable @metric.loss : tensor<f32>
// CHECK-DAG: graph.variable @metric.correct : tensor<f32>
// CHECK-NOT: graph.variable @metric.mlm_loss
// CHECK-DAG: graph.variable @metric.eval.loss : tensor<f32> init(zeros) hf "metric.eval.loss"
// CHECK-DAG: graph.variable @metric.eval.correct : tensor<f32> init(zeros) hf "metric.eval.correct"
// CHECK-DAG: graph.variable @output.eval.logits : tensor<4x2x4xf32> init(zeros) hf "output.eval.logits.{}" stacked

// CHECK-LABEL: func.func @eval_step() attributes {graph.entry = "eval_step"} {
// CHECK: scf.for [[MB:%[a-z0-9]+]] =
// CHECK: [[R:%.*]]:3 = func.call @forward_eval(
// CHECK-NEXT: graph.accumulate [[R]]#0 into @metric.eval.loss : tensor<f32>
// CHECK-NEXT: graph.accumulate [[R]]#1 into @metric.eval.correct : tensor<f32>
// CHECK-NEXT: graph.store [[R]]#2 into @output.eval.logits[[[MB]]] : tensor<2x4xf32>

module attributes {graph.training = {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, clip_norm = 1.000000e+00 : f64, data_parallel = 1 : i64, epsilon = 9.9999999999999995E-7 : f64, global_batch_size = 8 : i64, lr = 1.000000e-03 : f64, lr_schedule = "poly", micro_batch_size = 2 : i64, optimizer = "adamw", power = 1.000000e+00 : f64, seed = 42 : i64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 10 : i64, weight_decay = 1.000000e-02 : f64}} {
  graph.parameter @w : tensor<4x4xf32> init(normal, 2.000000e-02) hf "w"
  graph.variable @grad.w : tensor<4x4xf32> init(zeros) hf "grad.w"
  graph.variable @metric.loss : tensor<f32> init(zeros) hf "metric.loss"
  graph.variable @metric.correct : tensor<f32> init(zeros) hf "metric.correct"
  graph.variable @metric.grad_norm : tensor<f32> init(zeros) hf "metric.grad_norm"
  graph.variable @metric.lr : tensor<f32> init(zeros) hf "metric.lr"
  graph.variable @input.x : tensor<4x2x4xf32> init(zeros) hf "input.x.{}" stacked
  graph.variable @input.span_count : tensor<f32> init(zeros) hf "input.span_count"
  graph.variable @adam_m.w : tensor<4x4xf32> init(zeros) hf "optimizer.m.w"
  graph.variable @adam_v.w : tensor<4x4xf32> init(zeros) hf "optimizer.v.w"
  func.func @forward(%arg0: tensor<2x4xf32> {graph.input = "x"}, %arg1: tensor<f32> {graph.input = "span_count"}, %arg2: i64 {graph.input = "seed"}, %arg3: index {graph.input = "sample_offset"}) -> (tensor<f32> {graph.output = "loss"}, tensor<f32> {graph.output = "correct"}, tensor<2x4xf32> {graph.output = "logits"}) attributes {graph.entry = "forward"} {
    %0 = graph.parameter_ref @w : tensor<4x4xf32>
    %1 = graph.matmul %arg0, %0 {transpose_rhs} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %2 = graph.reduce sum_squares %1 dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    %3 = graph.div %2, %arg1 : tensor<f32>
    return %3, %2, %1 : tensor<f32>, tensor<f32>, tensor<2x4xf32>
  }
  func.func @forward_grad(%arg0: tensor<2x4xf32> {graph.input = "x"}, %arg1: tensor<f32> {graph.input = "span_count"}, %arg2: i64 {graph.input = "seed"}, %arg3: index {graph.input = "sample_offset"}) -> (tensor<f32> {graph.output = "loss"}, tensor<f32> {graph.output = "correct"}, tensor<2x4xf32> {graph.output = "logits"}) attributes {graph.entry = "forward_grad"} {
    %0 = graph.parameter_ref @w : tensor<4x4xf32>
    %1 = graph.matmul %arg0, %0 {transpose_rhs} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %2 = graph.reduce sum_squares %1 dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    %3 = graph.div %2, %arg1 : tensor<f32>
    %cst = arith.constant dense<1.000000e+00> : tensor<f32>
    %4 = graph.div %cst, %arg1 : tensor<f32>
    %5 = graph.mul %4, %3 : tensor<f32>
    %6 = graph.scale %5 by -1.000000e+00 : tensor<f32>
    %7 = graph.broadcast %4 dims [0, 1] : tensor<f32> -> tensor<2x4xf32>
    %8 = graph.scale %1 by 2.000000e+00 : tensor<2x4xf32>
    %9 = graph.mul %7, %8 : tensor<2x4xf32>
    %10 = graph.matmul %9, %0 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %11 = graph.matmul %9, %arg0 {transpose_lhs} : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<4x4xf32>
    graph.accumulate %11 into @grad.w : tensor<4x4xf32>
    return %3, %2, %1 : tensor<f32>, tensor<f32>, tensor<2x4xf32>
  }
  func.func @train_step(%arg0: index {graph.input = "step"}) attributes {graph.entry = "train_step"} {
    %cst = arith.constant dense<0.000000e+00> : tensor<f32>
    graph.store %cst into @metric.loss : tensor<f32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<f32>
    graph.store %cst_0 into @metric.correct : tensor<f32>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    scf.for %arg1 = %c0 to %c4 step %c1 {
      %3 = graph.parameter_slice @input.x[%arg1] : tensor<2x4xf32>
      %4 = graph.parameter_ref @input.span_count : tensor<f32>
      %c42_i64 = arith.constant 42 : i64
      %c8 = arith.constant 8 : index
      %c2 = arith.constant 2 : index
      %5 = arith.muli %arg0, %c8 : index
      %6 = arith.muli %arg1, %c2 : index
      %7 = arith.addi %5, %6 : index
      %8:3 = func.call @forward_grad(%3, %4, %c42_i64, %7) : (tensor<2x4xf32>, tensor<f32>, i64, index) -> (tensor<f32>, tensor<f32>, tensor<2x4xf32>)
      graph.accumulate %8#0 into @metric.loss : tensor<f32>
      graph.accumulate %8#1 into @metric.correct : tensor<f32>
    }
    %0 = graph.parameter_ref @grad.w : tensor<4x4xf32>
    %1 = graph.global_norm %0 : tensor<4x4xf32> -> tensor<f32>
    graph.store %1 into @metric.grad_norm : tensor<f32>
    %2 = graph.learning_rate %arg0 {kind = "poly", lr = 1.000000e-03 : f64, power = 1.000000e+00 : f64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 10 : i64} : tensor<f32>
    graph.store %2 into @metric.lr : tensor<f32>
    graph.optimizer_update @w grad @grad.w moments @adam_m.w, @adam_v.w lr %2 norm %1 step %arg0 {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, clip_norm = 1.000000e+00 : f64, epsilon = 9.9999999999999995E-7 : f64, optimizer = "adamw", weight_decay = 1.000000e-02 : f64} : tensor<f32>, tensor<f32>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<4x4xf32>
    graph.store %cst_1 into @grad.w : tensor<4x4xf32>
    return
  }
}
