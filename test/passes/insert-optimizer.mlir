// RUN: ferry-opt %s --split-input-file --ferry-insert-optimizer | FileCheck %s

// Each input is what ferry-autodiff makes of a small model's graph.

// Tests ferry-insert-optimizer: @train_step(%step) around @forward_grad with
// the settings of the module's graph.training dictionary. Here the global
// batch is 8, the micro-batch 2 and data_parallel 1, so GA = 4 micro-batches.
// * The metrics are zeroed, then summed over the micro-batches (result k of
//   @forward_grad into loss, mlm_loss, nsp_loss, mlm_correct).
// * Tensor inputs become stacked @input.<name> variables [GA, ...] read at
//   the micro-batch index; mlm_count is the whole batch's, unstacked; seed is
//   the configured constant; sample_offset = step * global + mb * micro.
// * After the loop: the global norm over every @grad.* (whole stacked
//   variables), the learning rate at %step, one optimizer update per
//   parameter (weight decay 0 for no_weight_decay ones) with moments
//   @adam_m.* / @adam_v.* of the parameter's type, then zeroed gradients.

// CHECK-DAG: graph.variable @metric.loss : tensor<f32> init(zeros) hf "metric.loss"
// CHECK-DAG: graph.variable @metric.mlm_loss : tensor<f32> init(zeros) hf "metric.mlm_loss"
// CHECK-DAG: graph.variable @metric.nsp_loss : tensor<f32> init(zeros) hf "metric.nsp_loss"
// CHECK-DAG: graph.variable @metric.mlm_correct : tensor<f32> init(zeros) hf "metric.mlm_correct"
// CHECK-DAG: graph.variable @metric.grad_norm : tensor<f32> init(zeros) hf "metric.grad_norm"
// CHECK-DAG: graph.variable @metric.lr : tensor<f32> init(zeros) hf "metric.lr"
// CHECK-DAG: graph.variable @input.x : tensor<4x2x4xf32> init(zeros) hf "input.x.{}" stacked
// CHECK-DAG: graph.variable @input.mlm_count : tensor<f32> init(zeros) hf "input.mlm_count"
// CHECK-DAG: graph.variable @adam_m.w : tensor<4x4xf32> init(zeros) hf "optimizer.m.w"
// CHECK-DAG: graph.variable @adam_v.w : tensor<4x4xf32> init(zeros) hf "optimizer.v.w"
// CHECK-DAG: graph.variable @adam_m.layer.b : tensor<2x4xf32> init(zeros) hf "optimizer.m.layer.{}.b" stacked
// CHECK-DAG: graph.variable @adam_v.layer.b : tensor<2x4xf32> init(zeros) hf "optimizer.v.layer.{}.b" stacked

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: [[STEP:%[a-z0-9]+]]: index {graph.input = "step"}) attributes {graph.entry = "train_step"} {
// CHECK-NEXT: [[Z0:%.*]] = arith.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: graph.store [[Z0]] into @metric.loss : tensor<f32>
// CHECK-NEXT: [[Z1:%.*]] = arith.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: graph.store [[Z1]] into @metric.mlm_loss : tensor<f32>
// CHECK-NEXT: [[Z2:%.*]] = arith.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: graph.store [[Z2]] into @metric.nsp_loss : tensor<f32>
// CHECK-NEXT: [[Z3:%.*]] = arith.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: graph.store [[Z3]] into @metric.mlm_correct : tensor<f32>
// CHECK-NEXT: [[Z4:%.*]] = arith.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: graph.store [[Z4]] into @metric.nsp_correct : tensor<f32>
// CHECK-NEXT: [[C0:%.*]] = arith.constant 0 : index
// CHECK-NEXT: [[GA:%.*]] = arith.constant 4 : index
// CHECK-NEXT: [[C1:%.*]] = arith.constant 1 : index
// CHECK-NEXT: scf.for [[MB:%[a-z0-9]+]] = [[C0]] to [[GA]] step [[C1]] {
// CHECK-NEXT: [[X:%.*]] = graph.parameter_slice @input.x[[[MB]]] : tensor<2x4xf32>
// CHECK-NEXT: [[COUNT:%.*]] = graph.parameter_ref @input.mlm_count : tensor<f32>
// CHECK-NEXT: [[SEED:%.*]] = arith.constant 42 : i64
// CHECK-NEXT: [[GLOBAL:%.*]] = arith.constant 8 : index
// CHECK-NEXT: [[MICRO:%.*]] = arith.constant 2 : index
// CHECK-NEXT: [[BASE:%.*]] = arith.muli [[STEP]], [[GLOBAL]] : index
// CHECK-NEXT: [[WITHIN:%.*]] = arith.muli [[MB]], [[MICRO]] : index
// CHECK-NEXT: [[OFFSET:%.*]] = arith.addi [[BASE]], [[WITHIN]] : index
// CHECK-NEXT: [[R:%.*]]:2 = func.call @forward_grad([[X]], [[COUNT]], [[SEED]], [[OFFSET]]) : (tensor<2x4xf32>, tensor<f32>, i64, index) -> (tensor<f32>, tensor<f32>)
// CHECK-NEXT: graph.accumulate [[R]]#0 into @metric.loss : tensor<f32>
// CHECK-NEXT: graph.accumulate [[R]]#1 into @metric.mlm_loss : tensor<f32>
// CHECK-NEXT: }
// CHECK-NEXT: [[GW:%.*]] = graph.parameter_ref @grad.w : tensor<4x4xf32>
// CHECK-NEXT: [[GB:%.*]] = graph.parameter_ref @grad.layer.b : tensor<2x4xf32>
// CHECK-NEXT: [[NORM:%.*]] = graph.global_norm [[GW]], [[GB]] : tensor<4x4xf32>, tensor<2x4xf32> -> tensor<f32>
// CHECK-NEXT: graph.store [[NORM]] into @metric.grad_norm : tensor<f32>
// CHECK-NEXT: [[LR:%.*]] = graph.learning_rate [[STEP]] {kind = "poly", lr = 1.000000e-03 : f64, power = 1.000000e+00 : f64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 10 : i64} : tensor<f32>
// CHECK-NEXT: graph.store [[LR]] into @metric.lr : tensor<f32>
// CHECK-NEXT: graph.optimizer_update @w grad @grad.w moments @adam_m.w, @adam_v.w lr [[LR]] norm [[NORM]] step [[STEP]] {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, clip_norm = 1.000000e+00 : f64, epsilon = 9.9999999999999995E-7 : f64, optimizer = "lamb", weight_decay = 1.000000e-02 : f64} : tensor<f32>, tensor<f32>
// CHECK-NEXT: graph.optimizer_update @layer.b grad @grad.layer.b moments @adam_m.layer.b, @adam_v.layer.b lr [[LR]] norm [[NORM]] step [[STEP]] {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, clip_norm = 1.000000e+00 : f64, epsilon = 9.9999999999999995E-7 : f64, optimizer = "lamb", weight_decay = 0.000000e+00 : f64} : tensor<f32>, tensor<f32>
// CHECK-NEXT: [[ZW:%.*]] = arith.constant dense<0.000000e+00> : tensor<4x4xf32>
// CHECK-NEXT: graph.store [[ZW]] into @grad.w : tensor<4x4xf32>
// CHECK-NEXT: [[ZB:%.*]] = arith.constant dense<0.000000e+00> : tensor<2x4xf32>
// CHECK-NEXT: graph.store [[ZB]] into @grad.layer.b : tensor<2x4xf32>
// CHECK-NEXT: return

module attributes {graph.training = {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, clip_norm = 1.000000e+00 : f64, data_parallel = 1 : i64, epsilon = 9.9999999999999995E-7 : f64, global_batch_size = 8 : i64, lr = 1.000000e-03 : f64, lr_schedule = "poly", micro_batch_size = 2 : i64, optimizer = "lamb", power = 1.000000e+00 : f64, seed = 42 : i64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 10 : i64, weight_decay = 1.000000e-02 : f64}} {
  graph.parameter @w : tensor<4x4xf32> init(normal, 2.000000e-02) hf "w"
  graph.parameter @layer.b : tensor<2x4xf32> init(zeros) hf "layer.{}.b" stacked no_weight_decay
  graph.variable @grad.layer.b : tensor<2x4xf32> init(zeros) hf "grad.layer.{}.b" stacked
  graph.variable @grad.w : tensor<4x4xf32> init(zeros) hf "grad.w"
  func.func @forward(%arg0: tensor<2x4xf32> {graph.input = "x"}, %arg1: tensor<f32> {graph.input = "mlm_count"}, %arg2: i64 {graph.input = "seed"}, %arg3: index {graph.input = "sample_offset"}) -> (tensor<f32>, tensor<f32>) attributes {graph.entry = "forward"} {
    %c1 = arith.constant 1 : index
    %0 = graph.parameter_ref @w : tensor<4x4xf32>
    %1 = graph.parameter_slice @layer.b[%c1] : tensor<4xf32>
    %2 = graph.matmul %arg0, %0 {transpose_rhs} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %3 = graph.bias_add %2, %1 : tensor<2x4xf32>, tensor<4xf32>
    %4 = graph.dropout %3, %arg2, %c1, %arg3 {probability = 1.000000e-01 : f64, purpose = "out"} : tensor<2x4xf32>
    %5 = graph.reduce sum_squares %4 dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    %6 = graph.div %5, %arg1 : tensor<f32>
    return %6, %5 : tensor<f32>, tensor<f32>
  }
  func.func @forward_grad(%arg0: tensor<2x4xf32> {graph.input = "x"}, %arg1: tensor<f32> {graph.input = "mlm_count"}, %arg2: i64 {graph.input = "seed"}, %arg3: index {graph.input = "sample_offset"}) -> (tensor<f32>, tensor<f32>) attributes {graph.entry = "forward_grad"} {
    %c1 = arith.constant 1 : index
    %0 = graph.parameter_ref @w : tensor<4x4xf32>
    %1 = graph.parameter_slice @layer.b[%c1] : tensor<4xf32>
    %2 = graph.matmul %arg0, %0 {transpose_rhs} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %3 = graph.bias_add %2, %1 : tensor<2x4xf32>, tensor<4xf32>
    %4 = graph.dropout %3, %arg2, %c1, %arg3 {probability = 1.000000e-01 : f64, purpose = "out"} : tensor<2x4xf32>
    %5 = graph.reduce sum_squares %4 dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    %6 = graph.div %5, %arg1 : tensor<f32>
    %cst = arith.constant dense<1.000000e+00> : tensor<f32>
    %7 = graph.div %cst, %arg1 : tensor<f32>
    %8 = graph.mul %7, %6 : tensor<f32>
    %9 = graph.scale %8 by -1.000000e+00 : tensor<f32>
    %10 = graph.broadcast %7 dims [0, 1] : tensor<f32> -> tensor<2x4xf32>
    %11 = graph.scale %4 by 2.000000e+00 : tensor<2x4xf32>
    %12 = graph.mul %10, %11 : tensor<2x4xf32>
    %13 = graph.dropout %12, %arg2, %c1, %arg3 {probability = 1.000000e-01 : f64, purpose = "out"} : tensor<2x4xf32>
    %14 = graph.reduce sum %13 dims [0] : tensor<2x4xf32> -> tensor<4xf32>
    %15 = graph.matmul %13, %0 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %16 = graph.matmul %13, %arg0 {transpose_lhs} : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<4x4xf32>
    graph.accumulate %14 into @grad.layer.b[%c1] : tensor<4xf32>
    graph.accumulate %16 into @grad.w : tensor<4x4xf32>
    return %6, %5 : tensor<f32>, tensor<f32>
  }
}

// -----

// AdamW with a constant schedule; the settings are copied as given. One
// micro-batch (GA = 4 / (4 x 1) = 1); a single input and result.
// CHECK: graph.variable @input.x : tensor<1x4x4xf32> init(zeros) hf "input.x.{}" stacked
// CHECK-LABEL: func.func @train_step(
// CHECK: [[GA:%.*]] = arith.constant 1 : index
// CHECK-NEXT: [[C1:%.*]] = arith.constant 1 : index
// CHECK-NEXT: scf.for [[MB:%[a-z0-9]+]] = %{{.*}} to [[GA]] step [[C1]] {
// CHECK-NEXT: [[X:%.*]] = graph.parameter_slice @input.x[[[MB]]] : tensor<4x4xf32>
// CHECK-NEXT: [[R:%.*]] = func.call @forward_grad([[X]]) : (tensor<4x4xf32>) -> tensor<f32>
// CHECK-NEXT: graph.accumulate [[R]] into @metric.loss : tensor<f32>
// CHECK-NEXT: }
// CHECK: graph.learning_rate %{{.*}} {kind = "constant", lr = 5.000000e-04 : f64, power = 2.000000e+00 : f64, start_warmup_step = 3 : i64, total_steps = 7 : i64, warmup_steps = 5 : i64} : tensor<f32>
// CHECK: graph.optimizer_update @w grad @grad.w moments @adam_m.w, @adam_v.w lr %{{.*}} norm %{{.*}} step %{{.*}} {beta1 = 8.000000e-01 : f64, beta2 = 9.000000e-01 : f64, clip_norm = 0.000000e+00 : f64, epsilon = 1.000000e-08 : f64, optimizer = "adamw", weight_decay = 5.000000e-02 : f64}

module attributes {graph.training = {beta1 = 8.000000e-01 : f64, beta2 = 9.000000e-01 : f64, clip_norm = 0.000000e+00 : f64, data_parallel = 1 : i64, epsilon = 1.000000e-08 : f64, global_batch_size = 4 : i64, lr = 5.000000e-04 : f64, lr_schedule = "constant", micro_batch_size = 4 : i64, optimizer = "adamw", power = 2.000000e+00 : f64, seed = 7 : i64, start_warmup_step = 3 : i64, total_steps = 7 : i64, warmup_steps = 5 : i64, weight_decay = 5.000000e-02 : f64}} {
  graph.parameter @w : tensor<4xf32> init(normal, 2.000000e-02) hf "w"
  graph.variable @grad.w : tensor<4xf32> init(zeros) hf "grad.w"
  func.func @forward(%arg0: tensor<4x4xf32> {graph.input = "x"}) -> tensor<f32> attributes {graph.entry = "forward"} {
    %0 = graph.parameter_ref @w : tensor<4xf32>
    %1 = graph.bias_add %arg0, %0 : tensor<4x4xf32>, tensor<4xf32>
    %2 = graph.reduce sum_squares %1 dims [0, 1] : tensor<4x4xf32> -> tensor<f32>
    return %2 : tensor<f32>
  }
  func.func @forward_grad(%arg0: tensor<4x4xf32> {graph.input = "x"}) -> tensor<f32> attributes {graph.entry = "forward_grad"} {
    %0 = graph.parameter_ref @w : tensor<4xf32>
    %1 = graph.bias_add %arg0, %0 : tensor<4x4xf32>, tensor<4xf32>
    %2 = graph.reduce sum_squares %1 dims [0, 1] : tensor<4x4xf32> -> tensor<f32>
    %cst = arith.constant dense<1.000000e+00> : tensor<f32>
    %3 = graph.broadcast %cst dims [0, 1] : tensor<f32> -> tensor<4x4xf32>
    %4 = graph.scale %1 by 2.000000e+00 : tensor<4x4xf32>
    %5 = graph.mul %3, %4 : tensor<4x4xf32>
    %6 = graph.reduce sum %5 dims [0] : tensor<4x4xf32> -> tensor<4xf32>
    graph.accumulate %6 into @grad.w : tensor<4xf32>
    return %2 : tensor<f32>
  }
}
