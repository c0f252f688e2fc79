// RUN: ferry-opt %s --ferry-autodiff --ferry-insert-optimizer --ferry-batch-serialise --ferry-phased-execution --cse | FileCheck %s

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
// CHECK: } {ferry.micro_batches}
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
// CHECK: } {ferry.micro_batches}
// CHECK-NEXT: [[G:%.*]] = graph.parameter_slice @grad.layer.w[[[LAYER]]]
// CHECK-NEXT: [[SLOT:%.*]] = arith.addi [[LAYER]],
// CHECK-NEXT: [[N:%.*]] = graph.global_norm [[G]]
// CHECK-NEXT: graph.store [[N]] into @norm.parts[[[SLOT]]]
// CHECK: graph.phase "embed.bwd" {
// CHECK-NEXT: arith.constant
// CHECK-NEXT: graph.store {{.*}} into @grad.emb
// CHECK: graph.accumulate {{.*}} into @grad.emb
// CHECK: } {ferry.micro_batches}
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

module attributes {ferry.training = {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, clip_norm = 1.000000e+00 : f64, data_parallel = 1 : i64, epsilon = 1.000000e-06 : f64, global_batch_size = 6 : i64, lr = 1.000000e-03 : f64, lr_schedule = "constant", micro_batch_size = 2 : i64, optimizer = "adamw", power = 1.000000e+00 : f64, seed = 42 : i64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 0 : i64, weight_decay = 1.000000e-02 : f64}} {
  graph.parameter @emb : tensor<4xf32> init(normal, 2.000000e-02) hf "emb"
  graph.parameter @layer.w : tensor<2x4x4xf32> init(normal, 2.000000e-02) hf "layer.{}.w" stacked
  func.func @embed(%x: tensor<2x4xf32>, %e: tensor<4xf32>) -> tensor<2x4xf32> {
    %y = graph.bias_add %x, %e : tensor<2x4xf32>, tensor<4xf32>
    return %y : tensor<2x4xf32>
  }
  func.func @blk(%x: tensor<2x4xf32>, %seed: i64, %l: index, %offset: index, %w: tensor<4x4xf32>) -> tensor<2x4xf32> {
    %y = graph.matmul %x, %w {transpose_rhs} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %g = graph.gelu %y : tensor<2x4xf32>
    %d = graph.dropout %g, %seed, %l, %offset {probability = 1.000000e-01 : f64, purpose = "out"} : tensor<2x4xf32>
    return %d : tensor<2x4xf32>
  }
  func.func @head(%h: tensor<2x4xf32>, %count: tensor<f32>, %e: tensor<4xf32>) -> tensor<f32> {
    %t = graph.bias_add %h, %e : tensor<2x4xf32>, tensor<4xf32>
    %s = graph.reduce sum_squares %t dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    %l = graph.div %s, %count : tensor<f32>
    return %l : tensor<f32>
  }
  func.func @forward(%x: tensor<2x4xf32> {ferry.input = "x"}, %count: tensor<f32> {ferry.input = "mlm_count"}, %seed: i64 {ferry.input = "seed"}, %offset: index {ferry.input = "sample_offset"}) -> tensor<f32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %e = graph.parameter_ref @emb : tensor<4xf32>
    %x0 = func.call @embed(%x, %e) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    %h = scf.for %l = %c0 to %c2 step %c1 iter_args(%xl = %x0) -> (tensor<2x4xf32>) {
      %w = graph.parameter_slice @layer.w[%l] : tensor<4x4xf32>
      %y = func.call @blk(%xl, %seed, %l, %offset, %w) : (tensor<2x4xf32>, i64, index, index, tensor<4x4xf32>) -> tensor<2x4xf32>
      scf.yield %y : tensor<2x4xf32>
    }
    %loss = func.call @head(%h, %count, %e) : (tensor<2x4xf32>, tensor<f32>, tensor<4xf32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
