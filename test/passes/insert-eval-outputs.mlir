// RUN: ferry-opt %s --ferry-autodiff --ferry-insert-optimizer --ferry-insert-eval | FileCheck %s

// Tests the results @forward names with `ferry.output` (the SQuAD span
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

// CHECK-LABEL: func.func @eval_step() {
// CHECK: scf.for [[MB:%[a-z0-9]+]] =
// CHECK: [[R:%.*]]:3 = func.call @forward_eval(
// CHECK-NEXT: graph.accumulate [[R]]#0 into @metric.eval.loss : tensor<f32>
// CHECK-NEXT: graph.accumulate [[R]]#1 into @metric.eval.correct : tensor<f32>
// CHECK-NEXT: graph.store [[R]]#2 into @output.eval.logits[[[MB]]] : tensor<2x4xf32>

module attributes {ferry.training = {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, clip_norm = 1.000000e+00 : f64, data_parallel = 1 : i64, epsilon = 1.000000e-06 : f64, global_batch_size = 8 : i64, lr = 1.000000e-03 : f64, lr_schedule = "poly", micro_batch_size = 2 : i64, optimizer = "adamw", power = 1.000000e+00 : f64, seed = 42 : i64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 10 : i64, weight_decay = 1.000000e-02 : f64}} {
  graph.parameter @w : tensor<4x4xf32> init(normal, 2.000000e-02) hf "w"
  func.func @forward(%x: tensor<2x4xf32> {ferry.input = "x"}, %count: tensor<f32> {ferry.input = "span_count"}, %seed: i64 {ferry.input = "seed"}, %offset: index {ferry.input = "sample_offset"}) -> (tensor<f32> {ferry.output = "loss"}, tensor<f32> {ferry.output = "correct"}, tensor<2x4xf32> {ferry.output = "logits"}) {
    %w = graph.parameter_ref @w : tensor<4x4xf32>
    %y = graph.matmul %x, %w {transpose_rhs} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %s = graph.reduce sum_squares %y dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    %l = graph.div %s, %count : tensor<f32>
    return %l, %s, %y : tensor<f32>, tensor<f32>, tensor<2x4xf32>
  }
}
