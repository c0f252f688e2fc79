// RUN: ferry-opt %s --ferry-autodiff --ferry-insert-optimizer --ferry-insert-eval | FileCheck %s

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

// CHECK-LABEL: func.func @eval_step() {
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

module attributes {ferry.training = {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, clip_norm = 1.000000e+00 : f64, data_parallel = 1 : i64, epsilon = 1.000000e-06 : f64, global_batch_size = 8 : i64, lr = 1.000000e-03 : f64, lr_schedule = "poly", micro_batch_size = 2 : i64, optimizer = "lamb", power = 1.000000e+00 : f64, seed = 42 : i64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 10 : i64, weight_decay = 1.000000e-02 : f64}} {
  graph.parameter @w : tensor<4x4xf32> init(normal, 2.000000e-02) hf "w"
  func.func @block(%x: tensor<2x4xf32>, %w: tensor<4x4xf32>, %seed: i64, %offset: index) -> tensor<2x4xf32> {
    %c0 = arith.constant 0 : index
    %c1mask = arith.constant dense<0.000000e+00> : tensor<2xf32>
    %y = graph.matmul %x, %w {transpose_rhs} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %q = graph.reshape %y : tensor<2x4xf32> -> tensor<2x1x1x4xf32>
    %m = graph.reshape %c1mask : tensor<2xf32> -> tensor<2x1xf32>
    %a, %lse = graph.attention %q, %q, %q, %m, %seed, %c0, %offset {probability = 1.000000e-01 : f64, purpose = "attention.probs", scale = 5.000000e-01 : f64} : tensor<2x1x1x4xf32>, tensor<2x1xf32> -> tensor<2x1x1xf32>
    %z = graph.reshape %a : tensor<2x1x1x4xf32> -> tensor<2x4xf32>
    %d = graph.dropout %z, %seed, %c0, %offset {probability = 1.000000e-01 : f64, purpose = "out"} : tensor<2x4xf32>
    return %d : tensor<2x4xf32>
  }
  func.func @forward(%x: tensor<2x4xf32> {ferry.input = "x"}, %count: tensor<f32> {ferry.input = "mlm_count"}, %seed: i64 {ferry.input = "seed"}, %offset: index {ferry.input = "sample_offset"}) -> (tensor<f32>, tensor<f32>) {
    %c0 = arith.constant 0 : index
    %w = graph.parameter_ref @w : tensor<4x4xf32>
    %y = func.call @block(%x, %w, %seed, %offset) : (tensor<2x4xf32>, tensor<4x4xf32>, i64, index) -> tensor<2x4xf32>
    %d = graph.dropout %y, %seed, %c0, %offset {probability = 1.000000e-01 : f64, purpose = "head"} : tensor<2x4xf32>
    %s = graph.reduce sum_squares %d dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    %l = graph.div %s, %count : tensor<f32>
    return %l, %s : tensor<f32>, tensor<f32>
  }
}
