// RUN: ferry-opt %s --ferry-insert-optimizer | FileCheck %s

// Tests that ferry-insert-optimizer works on a module that holds no graph op
// yet (no parameters: nothing to update). A regression test: this was once wrong.

// CHECK: graph.variable @metric.loss : tensor<f32> init(zeros) hf "metric.loss"
// CHECK-LABEL: func.func @train_step(
// CHECK: func.call @forward_grad(
// CHECK: graph.accumulate %{{.*}} into @metric.loss : tensor<f32>
module attributes {graph.training = {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, clip_norm = 1.000000e+00 : f64, data_parallel = 1 : i64, epsilon = 1.000000e-06 : f64, global_batch_size = 8 : i64, lr = 1.000000e-03 : f64, lr_schedule = "poly", micro_batch_size = 2 : i64, optimizer = "lamb", power = 1.000000e+00 : f64, seed = 42 : i64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 10 : i64, weight_decay = 1.000000e-02 : f64}} {
  func.func @forward_grad(%x: tensor<2x4xf32> {graph.input = "x"}) -> tensor<f32> attributes {graph.entry = "forward_grad"} {
    %c = arith.constant dense<0.0> : tensor<f32>
    return %c : tensor<f32>
  }
}
