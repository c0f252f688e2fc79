// RUN: ferry-opt %s --split-input-file --ferry-training | FileCheck %s --check-prefix=PIPELINE

// The ferry-training pipeline with its default flags (resident, no
// recompute: ferry-autodiff, ferry-insert-optimizer, ferry-insert-eval, then
// CSE and canonicalisation) on the graph of small models: @forward_grad
// accumulates into the gradient variables, @train_step loops over the
// micro-batches, then clips and updates every parameter, and @eval_step
// runs @forward_eval. test/passes/ checks each pass's decisions in detail.
// PIPELINE-LABEL: func.func @forward_grad(
// PIPELINE: graph.accumulate %{{.*}} into @grad.w
// PIPELINE-LABEL: func.func @train_step(
// PIPELINE: scf.for
// PIPELINE: func.call @forward_grad(
// PIPELINE: graph.global_norm
// PIPELINE: graph.optimizer_update @w
// PIPELINE: graph.optimizer_update @layer.b
// PIPELINE-LABEL: func.func @eval_step() attributes {graph.entry = "eval_step"}
// PIPELINE: call @forward_eval(

module attributes {graph.training = {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, clip_norm = 1.000000e+00 : f64, data_parallel = 1 : i64, epsilon = 1.000000e-06 : f64, global_batch_size = 8 : i64, lr = 1.000000e-03 : f64, lr_schedule = "poly", micro_batch_size = 2 : i64, optimizer = "lamb", power = 1.000000e+00 : f64, seed = 42 : i64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 10 : i64, weight_decay = 1.000000e-02 : f64}} {
  graph.parameter @w : tensor<4x4xf32> init(normal, 2.000000e-02) hf "w"
  graph.parameter @layer.b : tensor<2x4xf32> init(zeros) hf "layer.{}.b" stacked no_weight_decay
  func.func @forward(%x: tensor<2x4xf32> {graph.input = "x"}, %count: tensor<f32> {graph.input = "mlm_count"}, %seed: i64 {graph.input = "seed"}, %offset: index {graph.input = "sample_offset"}) -> (tensor<f32>, tensor<f32>) {
    %c1 = arith.constant 1 : index
    %w = graph.parameter_ref @w : tensor<4x4xf32>
    %b = graph.parameter_slice @layer.b[%c1] : tensor<4xf32>
    %y = graph.matmul %x, %w {transpose_rhs} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %z = graph.bias_add %y, %b : tensor<2x4xf32>, tensor<4xf32>
    %d = graph.dropout %z, %seed, %c1, %offset {probability = 1.000000e-01 : f64, purpose = "out"} : tensor<2x4xf32>
    %s = graph.reduce sum_squares %d dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    %l = graph.div %s, %count : tensor<f32>
    return %l, %s : tensor<f32>, tensor<f32>
  }
}

// -----

// AdamW with a constant schedule; the settings are copied as given. One
// micro-batch (GA = 4 / (4 x 1) = 1); a single input and result.
// PIPELINE-LABEL: func.func @train_step(
// PIPELINE: graph.optimizer_update @w

module attributes {graph.training = {beta1 = 8.000000e-01 : f64, beta2 = 9.000000e-01 : f64, clip_norm = 0.000000e+00 : f64, data_parallel = 1 : i64, epsilon = 1.000000e-08 : f64, global_batch_size = 4 : i64, lr = 5.000000e-04 : f64, lr_schedule = "constant", micro_batch_size = 4 : i64, optimizer = "adamw", power = 2.000000e+00 : f64, seed = 7 : i64, start_warmup_step = 3 : i64, total_steps = 7 : i64, warmup_steps = 5 : i64, weight_decay = 5.000000e-02 : f64}} {
  graph.parameter @w : tensor<4xf32> init(normal, 2.000000e-02) hf "w"
  func.func @forward(%x: tensor<4x4xf32> {graph.input = "x"}) -> tensor<f32> {
    %w = graph.parameter_ref @w : tensor<4xf32>
    %y = graph.bias_add %x, %w : tensor<4x4xf32>, tensor<4xf32>
    %s = graph.reduce sum_squares %y dims [0, 1] : tensor<4x4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}
