// RUN: ferry-opt %s --ferry-phased-execution --cse | FileCheck %s

// The input is what ferry-autodiff, ferry-insert-optimizer and
// ferry-batch-serialise (then CSE) make of a small model's graph.

// ferry-phased-execution on a model with an embedding (@emb, also used by the
// head: a tied parameter), a 2-layer loop and a head, GA 3. @train_step
// becomes PopXL's phase schedule:
// * one graph.phase per block (the layer loops run one phase per layer);
// * @emb's gradient from the head phase goes to @grad.tied.emb and is added
//   into @grad.emb at the end of the embedding's backward;
// * each gradient's norm is stored into @norm.parts where it is complete
//   (per layer in blk.bwd, slot 1 + layer; @grad.emb in slot 0), and the
//   global norm is the norm of @norm.parts;
// * the embedding is updated where its gradient completes; the stacked
//   weight one layer per layer.optimizer phase, reading the learning rate and
//   norm from their metrics;
// * each gradient is zeroed at the start of the phase that first
//   accumulates into it (so that phase loads nothing and the optimizer
//   phase stores nothing back), the stacked one at the layer the phase
//   runs.

// CHECK-DAG: graph.variable @grad.tied.emb : tensor<4xf32> init(zeros) hf "grad.tied.emb"
// CHECK-DAG: graph.variable @norm.parts : tensor<3xf32> init(zeros) hf "norm.parts.{}" stacked

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: [[STEP:%[a-z0-9]+]]: index
// CHECK: graph.phase "embed.fwd" {
// CHECK-NEXT: scf.for
// CHECK: func.call @embed_fwd(
// CHECK: } {graph.micro_batches}
// CHECK-NEXT: }
// CHECK: scf.for [[L:%[a-z0-9]+]] =
// CHECK-NEXT: graph.phase "blk.fwd" {
// CHECK-NEXT: scf.for
// CHECK: func.call @blk_fwd(
// CHECK: graph.phase "head.fwd_bwd" {
// CHECK-NEXT: arith.constant
// CHECK-NEXT: graph.store {{.*}} into @grad.tied.emb
// CHECK: func.call @head_bwd(
// CHECK: graph.accumulate {{.*}} into @grad.tied.emb
// CHECK: scf.for [[K:%[a-z0-9]+]] =
// CHECK-NEXT: graph.phase "blk.bwd" {
// CHECK-NEXT: [[LAYER:%.*]] = arith.subi {{.*}}, [[K]]
// CHECK-NEXT: arith.constant
// CHECK-NEXT: graph.store {{.*}} into @grad.layer.w[[[LAYER]]]
// CHECK: graph.accumulate {{.*}} into @grad.layer.w[[[LAYER]]]
// CHECK: } {graph.micro_batches}
// CHECK-NEXT: [[G:%.*]] = graph.parameter_slice @grad.layer.w[[[LAYER]]]
// CHECK-NEXT: [[SLOT:%.*]] = arith.addi [[LAYER]],
// CHECK-NEXT: [[N:%.*]] = graph.global_norm [[G]]
// CHECK-NEXT: graph.store [[N]] into @norm.parts[[[SLOT]]]
// CHECK: graph.phase "embed.bwd" {
// CHECK-NEXT: arith.constant
// CHECK-NEXT: graph.store {{.*}} into @grad.emb
// CHECK: graph.accumulate {{.*}} into @grad.emb
// CHECK: } {graph.micro_batches}
// CHECK-NEXT: [[T:%.*]] = graph.parameter_ref @grad.tied.emb
// CHECK-NEXT: graph.accumulate [[T]] into @grad.emb
// CHECK-NEXT: [[GE:%.*]] = graph.parameter_ref @grad.emb
// CHECK-NEXT: [[NE:%.*]] = graph.global_norm [[GE]]
// CHECK-NEXT: graph.store [[NE]] into @norm.parts[
// CHECK-NEXT: [[PARTS:%.*]] = graph.parameter_ref @norm.parts : tensor<3xf32>
// CHECK-NEXT: [[NORM:%.*]] = graph.global_norm [[PARTS]]
// CHECK-NEXT: graph.store [[NORM]] into @metric.grad_norm
// CHECK-NEXT: [[LR:%.*]] = graph.learning_rate [[STEP]]
// CHECK-NEXT: graph.store [[LR]] into @metric.lr
// CHECK-NEXT: graph.optimizer_update @emb grad @grad.emb {{.*}} lr [[LR]] norm [[NORM]] {{.*}}
// CHECK-NEXT: {{^ *}}}
// CHECK: scf.for [[O:%[a-z0-9]+]] =
// CHECK-NEXT: graph.phase "layer.optimizer" {
// CHECK-NEXT: [[LR2:%.*]] = graph.parameter_ref @metric.lr
// CHECK-NEXT: [[NORM2:%.*]] = graph.parameter_ref @metric.grad_norm
// CHECK-NEXT: graph.optimizer_update @layer.w[[[O]]] grad @grad.layer.w {{.*}} lr [[LR2]] norm [[NORM2]] {{.*}}
// CHECK-NEXT: {{^ *}}}
// CHECK-NEXT: {{^ *}}}
// CHECK-NEXT: return

module attributes {graph.training = {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, clip_norm = 1.000000e+00 : f64, data_parallel = 1 : i64, epsilon = 9.9999999999999995E-7 : f64, global_batch_size = 6 : i64, lr = 1.000000e-03 : f64, lr_schedule = "constant", micro_batch_size = 2 : i64, optimizer = "adamw", power = 1.000000e+00 : f64, seed = 42 : i64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 0 : i64, weight_decay = 1.000000e-02 : f64}} {
  graph.variable @stash.carry : tensor<3x2x4xf32> init(zeros) hf "stash.carry.{}" stacked
  graph.variable @stash.x : tensor<6x2x4xf32> init(zeros) hf "stash.x.{}" stacked
  graph.parameter @emb : tensor<4xf32> init(normal, 2.000000e-02) hf "emb"
  graph.parameter @layer.w : tensor<2x4x4xf32> init(normal, 2.000000e-02) hf "layer.{}.w" stacked
  graph.variable @stash.blk.1 : tensor<6x2x4xf32> init(zeros) hf "stash.blk.1.{}" stacked
  graph.variable @grad.layer.w : tensor<2x4x4xf32> init(zeros) hf "grad.layer.{}.w" stacked
  graph.variable @grad.emb : tensor<4xf32> init(zeros) hf "grad.emb"
  graph.variable @metric.loss : tensor<f32> init(zeros) hf "metric.loss"
  graph.variable @metric.mlm_loss : tensor<f32> init(zeros) hf "metric.mlm_loss"
  graph.variable @metric.nsp_loss : tensor<f32> init(zeros) hf "metric.nsp_loss"
  graph.variable @metric.mlm_correct : tensor<f32> init(zeros) hf "metric.mlm_correct"
  graph.variable @metric.nsp_correct : tensor<f32> init(zeros) hf "metric.nsp_correct"
  graph.variable @metric.grad_norm : tensor<f32> init(zeros) hf "metric.grad_norm"
  graph.variable @metric.lr : tensor<f32> init(zeros) hf "metric.lr"
  graph.variable @input.x : tensor<3x2x4xf32> init(zeros) hf "input.x.{}" stacked
  graph.variable @input.mlm_count : tensor<f32> init(zeros) hf "input.mlm_count"
  graph.variable @adam_m.emb : tensor<4xf32> init(zeros) hf "optimizer.m.emb"
  graph.variable @adam_v.emb : tensor<4xf32> init(zeros) hf "optimizer.v.emb"
  graph.variable @adam_m.layer.w : tensor<2x4x4xf32> init(zeros) hf "optimizer.m.layer.{}.w" stacked
  graph.variable @adam_v.layer.w : tensor<2x4x4xf32> init(zeros) hf "optimizer.v.layer.{}.w" stacked
  func.func @embed(%arg0: tensor<2x4xf32>, %arg1: tensor<4xf32>) -> tensor<2x4xf32> {
    %0 = graph.bias_add %arg0, %arg1 : tensor<2x4xf32>, tensor<4xf32>
    return %0 : tensor<2x4xf32>
  }
  func.func @embed_fwd(%arg0: tensor<2x4xf32>, %arg1: tensor<4xf32>) -> tensor<2x4xf32> {
    %0 = graph.bias_add %arg0, %arg1 : tensor<2x4xf32>, tensor<4xf32>
    return %0 : tensor<2x4xf32>
  }
  func.func @embed_bwd(%arg0: tensor<2x4xf32>, %arg1: tensor<4xf32>, %arg2: tensor<2x4xf32>) -> tensor<4xf32> {
    %0 = graph.reduce sum %arg2 dims [0] : tensor<2x4xf32> -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  func.func @blk(%arg0: tensor<2x4xf32>, %arg1: i64, %arg2: index, %arg3: index, %arg4: tensor<4x4xf32>) -> tensor<2x4xf32> {
    %0 = graph.matmul %arg0, %arg4 {transpose_rhs} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %1 = graph.gelu %0 : tensor<2x4xf32>
    %2 = graph.dropout %1, %arg1, %arg2, %arg3 {probability = 1.000000e-01 : f64, purpose = "out"} : tensor<2x4xf32>
    return %2 : tensor<2x4xf32>
  }
  func.func @blk_fwd(%arg0: tensor<2x4xf32>, %arg1: i64, %arg2: index, %arg3: index, %arg4: tensor<4x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
    %0 = graph.matmul %arg0, %arg4 {transpose_rhs} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %1 = graph.gelu %0 : tensor<2x4xf32>
    %2 = graph.dropout %1, %arg1, %arg2, %arg3 {probability = 1.000000e-01 : f64, purpose = "out"} : tensor<2x4xf32>
    return %2, %0 : tensor<2x4xf32>, tensor<2x4xf32>
  }
  func.func @blk_bwd(%arg0: tensor<2x4xf32>, %arg1: i64, %arg2: index, %arg3: index, %arg4: tensor<4x4xf32>, %arg5: tensor<2x4xf32>, %arg6: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4x4xf32>) {
    %0 = graph.dropout %arg6, %arg1, %arg2, %arg3 {probability = 1.000000e-01 : f64, purpose = "out"} : tensor<2x4xf32>
    %1 = graph.gelu_grad %arg5, %0 : tensor<2x4xf32>
    %2 = graph.matmul %1, %arg4 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %3 = graph.matmul %1, %arg0 {transpose_lhs} : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<4x4xf32>
    return %2, %3 : tensor<2x4xf32>, tensor<4x4xf32>
  }
  func.func @head(%arg0: tensor<2x4xf32>, %arg1: tensor<f32>, %arg2: tensor<4xf32>) -> tensor<f32> {
    %0 = graph.bias_add %arg0, %arg2 : tensor<2x4xf32>, tensor<4xf32>
    %1 = graph.reduce sum_squares %0 dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    %2 = graph.div %1, %arg1 : tensor<f32>
    return %2 : tensor<f32>
  }
  func.func @head_fwd(%arg0: tensor<2x4xf32>, %arg1: tensor<f32>, %arg2: tensor<4xf32>) -> (tensor<f32>, tensor<f32>, tensor<2x4xf32>) {
    %0 = graph.bias_add %arg0, %arg2 : tensor<2x4xf32>, tensor<4xf32>
    %1 = graph.reduce sum_squares %0 dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    %2 = graph.div %1, %arg1 : tensor<f32>
    return %2, %2, %0 : tensor<f32>, tensor<f32>, tensor<2x4xf32>
  }
  func.func @head_bwd(%arg0: tensor<2x4xf32>, %arg1: tensor<f32>, %arg2: tensor<4xf32>, %arg3: tensor<f32>, %arg4: tensor<2x4xf32>, %arg5: tensor<f32>) -> (tensor<2x4xf32>, tensor<4xf32>) {
    %0 = graph.div %arg5, %arg1 : tensor<f32>
    %1 = graph.mul %0, %arg3 : tensor<f32>
    %2 = graph.broadcast %0 dims [0, 1] : tensor<f32> -> tensor<2x4xf32>
    %3 = graph.scale %arg4 by 2.000000e+00 : tensor<2x4xf32>
    %4 = graph.mul %2, %3 : tensor<2x4xf32>
    %5 = graph.reduce sum %4 dims [0] : tensor<2x4xf32> -> tensor<4xf32>
    return %4, %5 : tensor<2x4xf32>, tensor<4xf32>
  }
  func.func @forward(%arg0: tensor<2x4xf32> {graph.input = "x"}, %arg1: tensor<f32> {graph.input = "mlm_count"}, %arg2: i64 {graph.input = "seed"}, %arg3: index {graph.input = "sample_offset"}) -> tensor<f32> attributes {graph.entry = "forward"} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %0 = graph.parameter_ref @emb : tensor<4xf32>
    %1 = call @embed(%arg0, %0) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    %2 = scf.for %arg4 = %c0 to %c2 step %c1 iter_args(%arg5 = %1) -> (tensor<2x4xf32>) {
      %4 = graph.parameter_slice @layer.w[%arg4] : tensor<4x4xf32>
      %5 = func.call @blk(%arg5, %arg2, %arg4, %arg3, %4) : (tensor<2x4xf32>, i64, index, index, tensor<4x4xf32>) -> tensor<2x4xf32>
      scf.yield %5 : tensor<2x4xf32>
    }
    %3 = call @head(%2, %arg1, %0) : (tensor<2x4xf32>, tensor<f32>, tensor<4xf32>) -> tensor<f32>
    return %3 : tensor<f32>
  }
  func.func @train_step(%arg0: index {graph.input = "step"}) attributes {graph.entry = "train_step"} {
    %cst = arith.constant dense<0.000000e+00> : tensor<f32>
    graph.store %cst into @metric.loss : tensor<f32>
    graph.store %cst into @metric.mlm_loss : tensor<f32>
    graph.store %cst into @metric.nsp_loss : tensor<f32>
    graph.store %cst into @metric.mlm_correct : tensor<f32>
    graph.store %cst into @metric.nsp_correct : tensor<f32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    scf.for %arg1 = %c0 to %c3 step %c1 {
      %4 = graph.parameter_slice @input.x[%arg1] : tensor<2x4xf32>
      %5 = graph.parameter_ref @emb : tensor<4xf32>
      %6 = func.call @embed_fwd(%4, %5) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
      %7 = arith.muli %c0, %c3 : index
      %8 = arith.addi %7, %arg1 : index
      graph.store %6 into @stash.carry[%8] : tensor<2x4xf32>
    } {graph.micro_batches}
    %c2 = arith.constant 2 : index
    scf.for %arg1 = %c0 to %c2 step %c1 {
      scf.for %arg2 = %c0 to %c3 step %c1 {
        %4 = arith.muli %c0, %c3 : index
        %5 = arith.addi %4, %arg2 : index
        %6 = graph.parameter_slice @stash.carry[%5] : tensor<2x4xf32>
        %7 = arith.muli %arg1, %c3 : index
        %8 = arith.addi %7, %arg2 : index
        graph.store %6 into @stash.x[%8] : tensor<2x4xf32>
        %9 = graph.parameter_slice @layer.w[%arg1] : tensor<4x4xf32>
        %c42_i64 = arith.constant 42 : i64
        %c6 = arith.constant 6 : index
        %10 = arith.muli %arg0, %c6 : index
        %11 = arith.muli %arg2, %c2 : index
        %12 = arith.addi %10, %11 : index
        %13:2 = func.call @blk_fwd(%6, %c42_i64, %arg1, %12, %9) : (tensor<2x4xf32>, i64, index, index, tensor<4x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
        graph.store %13#1 into @stash.blk.1[%8] : tensor<2x4xf32>
        graph.store %13#0 into @stash.carry[%5] : tensor<2x4xf32>
      } {graph.micro_batches}
    }
    scf.for %arg1 = %c0 to %c3 step %c1 {
      %4 = arith.muli %c0, %c3 : index
      %5 = arith.addi %4, %arg1 : index
      %6 = graph.parameter_slice @stash.carry[%5] : tensor<2x4xf32>
      %7 = graph.parameter_ref @input.mlm_count : tensor<f32>
      %8 = graph.parameter_ref @emb : tensor<4xf32>
      %9:3 = func.call @head_fwd(%6, %7, %8) : (tensor<2x4xf32>, tensor<f32>, tensor<4xf32>) -> (tensor<f32>, tensor<f32>, tensor<2x4xf32>)
      graph.accumulate %9#0 into @metric.loss : tensor<f32>
      %cst_2 = arith.constant dense<1.000000e+00> : tensor<f32>
      %10:2 = func.call @head_bwd(%6, %7, %8, %9#1, %9#2, %cst_2) : (tensor<2x4xf32>, tensor<f32>, tensor<4xf32>, tensor<f32>, tensor<2x4xf32>, tensor<f32>) -> (tensor<2x4xf32>, tensor<4xf32>)
      graph.store %10#0 into @stash.carry[%5] : tensor<2x4xf32>
      graph.accumulate %10#1 into @grad.emb : tensor<4xf32>
    } {graph.micro_batches}
    scf.for %arg1 = %c0 to %c2 step %c1 {
      scf.for %arg2 = %c0 to %c3 step %c1 {
        %4 = arith.muli %c0, %c3 : index
        %5 = arith.addi %4, %arg2 : index
        %6 = graph.parameter_slice @stash.carry[%5] : tensor<2x4xf32>
        %7 = arith.subi %c1, %arg1 : index
        %8 = arith.muli %7, %c3 : index
        %9 = arith.addi %8, %arg2 : index
        %10 = graph.parameter_slice @stash.x[%9] : tensor<2x4xf32>
        %11 = graph.parameter_slice @stash.blk.1[%9] : tensor<2x4xf32>
        %12 = graph.parameter_slice @layer.w[%7] : tensor<4x4xf32>
        %c42_i64 = arith.constant 42 : i64
        %c6 = arith.constant 6 : index
        %13 = arith.muli %arg0, %c6 : index
        %14 = arith.muli %arg2, %c2 : index
        %15 = arith.addi %13, %14 : index
        %16:2 = func.call @blk_bwd(%10, %c42_i64, %7, %15, %12, %11, %6) : (tensor<2x4xf32>, i64, index, index, tensor<4x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4x4xf32>)
        graph.accumulate %16#1 into @grad.layer.w[%7] : tensor<4x4xf32>
        graph.store %16#0 into @stash.carry[%5] : tensor<2x4xf32>
      } {graph.micro_batches}
    }
    scf.for %arg1 = %c0 to %c3 step %c1 {
      %4 = graph.parameter_slice @input.x[%arg1] : tensor<2x4xf32>
      %5 = graph.parameter_ref @emb : tensor<4xf32>
      %6 = arith.muli %c0, %c3 : index
      %7 = arith.addi %6, %arg1 : index
      %8 = graph.parameter_slice @stash.carry[%7] : tensor<2x4xf32>
      %9 = func.call @embed_bwd(%4, %5, %8) : (tensor<2x4xf32>, tensor<4xf32>, tensor<2x4xf32>) -> tensor<4xf32>
      graph.accumulate %9 into @grad.emb : tensor<4xf32>
    } {graph.micro_batches}
    %0 = graph.parameter_ref @grad.emb : tensor<4xf32>
    %1 = graph.parameter_ref @grad.layer.w : tensor<2x4x4xf32>
    %2 = graph.global_norm %0, %1 : tensor<4xf32>, tensor<2x4x4xf32> -> tensor<f32>
    graph.store %2 into @metric.grad_norm : tensor<f32>
    %3 = graph.learning_rate %arg0 {kind = "constant", lr = 1.000000e-03 : f64, power = 1.000000e+00 : f64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 0 : i64} : tensor<f32>
    graph.store %3 into @metric.lr : tensor<f32>
    graph.optimizer_update @emb grad @grad.emb moments @adam_m.emb, @adam_v.emb lr %3 norm %2 step %arg0 {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, clip_norm = 1.000000e+00 : f64, epsilon = 9.9999999999999995E-7 : f64, optimizer = "adamw", weight_decay = 1.000000e-02 : f64} : tensor<f32>, tensor<f32>
    graph.optimizer_update @layer.w grad @grad.layer.w moments @adam_m.layer.w, @adam_v.layer.w lr %3 norm %2 step %arg0 {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, clip_norm = 1.000000e+00 : f64, epsilon = 9.9999999999999995E-7 : f64, optimizer = "adamw", weight_decay = 1.000000e-02 : f64} : tensor<f32>, tensor<f32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<4xf32>
    graph.store %cst_0 into @grad.emb : tensor<4xf32>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<2x4x4xf32>
    graph.store %cst_1 into @grad.layer.w : tensor<2x4x4xf32>
    return
  }
}
