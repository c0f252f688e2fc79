// RUN: ferry-opt %s --ferry-batch-serialise --cse | FileCheck %s
// RUN: ferry-opt %s "--ferry-batch-serialise=carry-row-budget=80" --cse | FileCheck %s --check-prefix=ROWS

// The input is what ferry-autodiff and ferry-insert-optimizer make of a small
// model's graph.

// ferry-batch-serialise on a model with an embedding block, a 2-layer loop
// and a head, GA = 3 (global batch 6, micro-batch 2). @train_step's one
// micro-batch loop around @forward_grad becomes one loop over the 3
// micro-batches per block, the layer loops outermost:
// * the value flowing through the network (the activation forward, its
//   gradient backward) lives in @stash.carry, one row of 3 entries (entry
//   = i): the embeddings write it, each layer reads and overwrites it, the
//   head turns it into the gradient, the embeddings' backward reads it;
// * every layer's input, which the backward reads again, goes to @stash.x
//   (2 x 3 entries, entry = l * 3 + i) as the layer starts;
// * the layer loop's own stash gets 3 entries per layer (index l * 3 + i),
//   except the layer input @stash.blk.0, which is @stash.x row l: the
//   backward reads @stash.x instead and the copy is neither declared nor
//   stored;
// * the sample offset (dropout masks) and input reads are recomputed per
//   block from the micro-batch index; the metric and gradient accumulations
//   stay in the block that computes them.
// @forward_grad is gone (its body was inlined).

// CHECK-DAG: graph.variable @stash.carry : tensor<3x2x4xf32> init(zeros) hf "stash.carry.{}" stacked
// CHECK-DAG: graph.variable @stash.x : tensor<6x2x4xf32> init(zeros) hf "stash.x.{}" stacked
// CHECK-DAG: graph.variable @stash.blk.1 : tensor<6x2x4xf32>
// CHECK-NOT: @stash.blk.0
// CHECK-NOT: @stash.dx
// CHECK-NOT: func.func @forward_grad

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: [[STEP:%[a-z0-9]+]]: index
// CHECK-DAG: [[C0:%.*]] = arith.constant 0 : index
// CHECK-DAG: [[C1:%.*]] = arith.constant 1 : index
// CHECK-DAG: [[GA:%.*]] = arith.constant 3 : index

// Embeddings: into the carry.
// CHECK: scf.for [[I:%[a-z0-9]+]] = [[C0]] to [[GA]] step [[C1]] {
// CHECK-NEXT: [[X:%.*]] = graph.parameter_slice @input.x[[[I]]]
// CHECK: [[E:%.*]] = func.call @embed_fwd([[X]],
// CHECK: [[R0:%.*]] = arith.muli [[C0]], [[GA]]
// CHECK-NEXT: [[AT:%.*]] = arith.addi [[R0]], [[I]]
// CHECK-NEXT: graph.store [[E]] into @stash.carry[[[AT]]]
// CHECK-NEXT: } {graph.micro_batches}

// Layers forward: for l { for i { x = carry[i]; x[l, i] = x; carry[i] = y } }.
// CHECK: [[L2:%.*]] = arith.constant 2 : index
// CHECK-NEXT: scf.for [[L:%[a-z0-9]+]] = [[C0]] to [[L2]] step [[C1]] {
// CHECK-NEXT: scf.for [[I:%[a-z0-9]+]] = [[C0]] to [[GA]] step [[C1]] {
// CHECK-NEXT: [[C0I:%.*]] = arith.muli [[C0]], [[GA]]
// CHECK-NEXT: [[CI:%.*]] = arith.addi [[C0I]], [[I]]
// CHECK-NEXT: [[XL:%.*]] = graph.parameter_slice @stash.carry[[[CI]]]
// CHECK-NEXT: [[RL:%.*]] = arith.muli [[L]], [[GA]]
// CHECK-NEXT: [[AT:%.*]] = arith.addi [[RL]], [[I]]
// CHECK-NEXT: graph.store [[XL]] into @stash.x[[[AT]]]
// CHECK-NEXT: [[W:%.*]] = graph.parameter_slice @layer.w[[[L]]]
// CHECK: [[OFF:%.*]] = arith.addi
// CHECK-NEXT: [[Y:%.*]]:2 = func.call @blk_fwd([[XL]], {{.*}}, [[L]], [[OFF]], [[W]])
// CHECK-NEXT: graph.store [[Y]]#1 into @stash.blk.1[[[AT]]]
// CHECK-NEXT: graph.store [[Y]]#0 into @stash.carry[[[CI]]]
// CHECK-NEXT: } {graph.micro_batches}
// CHECK-NEXT: }

// Head forward + backward: the carry in, loss into the metric, its
// gradient back into the carry.
// CHECK: scf.for [[I:%[a-z0-9]+]] = [[C0]] to [[GA]] step [[C1]] {
// CHECK-NEXT: [[RL:%.*]] = arith.muli [[C0]], [[GA]]
// CHECK-NEXT: [[AT:%.*]] = arith.addi [[RL]], [[I]]
// CHECK-NEXT: [[H:%.*]] = graph.parameter_slice @stash.carry[[[AT]]]
// CHECK: [[LOSS:%.*]]:2 = func.call @head_fwd([[H]],
// CHECK-NEXT: graph.accumulate [[LOSS]]#0 into @metric.loss
// CHECK: [[DH:%.*]] = func.call @head_bwd([[H]],
// CHECK-NEXT: graph.store [[DH]] into @stash.carry[[[AT]]]
// CHECK-NEXT: } {graph.micro_batches}

// Layers backward: carry[i] -> carry[i] in place, layer L-1-k's input and
// stash entries.
// CHECK: scf.for [[K:%[a-z0-9]+]] = [[C0]] to [[L2]] step [[C1]] {
// CHECK-NEXT: scf.for [[I:%[a-z0-9]+]] = [[C0]] to [[GA]] step [[C1]] {
// CHECK-NEXT: [[D0:%.*]] = arith.muli [[C0]], [[GA]]
// CHECK-NEXT: [[DAT:%.*]] = arith.addi [[D0]], [[I]]
// CHECK-NEXT: [[DY:%.*]] = graph.parameter_slice @stash.carry[[[DAT]]]
// CHECK-NEXT: [[LAYER:%.*]] = arith.subi [[C1]], [[K]]
// CHECK-NEXT: [[RS:%.*]] = arith.muli [[LAYER]], [[GA]]
// CHECK-NEXT: [[S:%.*]] = arith.addi [[RS]], [[I]]
// CHECK-NEXT: graph.parameter_slice @stash.x[[[S]]]
// CHECK-NEXT: graph.parameter_slice @stash.blk.1[[[S]]]
// CHECK: [[G:%.*]]:2 = func.call @blk_bwd(
// CHECK-NEXT: graph.accumulate [[G]]#1 into @grad.layer.w[[[LAYER]]]
// CHECK-NEXT: graph.store [[G]]#0 into @stash.carry[[[DAT]]]
// CHECK-NEXT: } {graph.micro_batches}
// CHECK-NEXT: }

// Embeddings backward: the carry.
// CHECK: scf.for [[I:%[a-z0-9]+]] = [[C0]] to [[GA]] step [[C1]] {
// CHECK: [[DE:%.*]] = graph.parameter_slice @stash.carry[
// CHECK-NEXT: [[GE:%.*]] = func.call @embed_bwd({{.*}}, [[DE]])
// CHECK-NEXT: graph.accumulate [[GE]] into @grad.emb
// CHECK-NEXT: } {graph.micro_batches}
// CHECK: graph.global_norm

// With a carry (96 bytes) larger than carry-row-budget (80 bytes, what a
// 240-byte device budget allows: a carry that cannot stay on the device), the
// forward's activation flows through @stash.x's rows instead (L + 1 rows:
// x[l, i] -> x[l + 1, i], one store per layer), the head reads row L; the
// backward still uses @stash.carry.
// ROWS-DAG: graph.variable @stash.x : tensor<9x2x4xf32>
// ROWS-DAG: graph.variable @stash.carry : tensor<3x2x4xf32>
// ROWS-LABEL: func.func @train_step(
// ROWS: graph.store %{{.*}} into @stash.x[
// ROWS: scf.for [[L:%[a-z0-9]+]] =
// ROWS-NEXT: scf.for [[I:%[a-z0-9]+]] =
// ROWS-NEXT: [[RL:%.*]] = arith.muli [[L]],
// ROWS-NEXT: [[AT:%.*]] = arith.addi [[RL]], [[I]]
// ROWS-NEXT: graph.parameter_slice @stash.x[[[AT]]]
// ROWS: [[NEXT:%.*]] = arith.addi [[L]], %c1
// ROWS-NEXT: [[RN:%.*]] = arith.muli [[NEXT]],
// ROWS-NEXT: [[ATN:%.*]] = arith.addi [[RN]], [[I]]
// ROWS-NEXT: graph.store %{{.*}} into @stash.x[[[ATN]]]
// ROWS: graph.parameter_slice @stash.x[
// ROWS: func.call @head_fwd(
// ROWS: graph.store %{{.*}} into @stash.carry[

module attributes {graph.training = {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, clip_norm = 1.000000e+00 : f64, data_parallel = 1 : i64, epsilon = 9.9999999999999995E-7 : f64, global_batch_size = 6 : i64, lr = 1.000000e-03 : f64, lr_schedule = "constant", micro_batch_size = 2 : i64, optimizer = "adamw", power = 1.000000e+00 : f64, seed = 42 : i64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 0 : i64, weight_decay = 1.000000e-02 : f64}} {
  graph.parameter @emb : tensor<4xf32> init(normal, 2.000000e-02) hf "emb"
  graph.parameter @layer.w : tensor<2x4x4xf32> init(normal, 2.000000e-02) hf "layer.{}.w" stacked
  graph.variable @stash.blk.0 : tensor<2x2x4xf32> init(zeros) hf "stash.blk.0.{}" stacked
  graph.variable @stash.blk.1 : tensor<2x2x4xf32> init(zeros) hf "stash.blk.1.{}" stacked
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
  func.func @head(%arg0: tensor<2x4xf32>, %arg1: tensor<f32>) -> tensor<f32> {
    %0 = graph.reduce sum_squares %arg0 dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    %1 = graph.div %0, %arg1 : tensor<f32>
    return %1 : tensor<f32>
  }
  func.func @head_fwd(%arg0: tensor<2x4xf32>, %arg1: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
    %0 = graph.reduce sum_squares %arg0 dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    %1 = graph.div %0, %arg1 : tensor<f32>
    return %1, %1 : tensor<f32>, tensor<f32>
  }
  func.func @head_bwd(%arg0: tensor<2x4xf32>, %arg1: tensor<f32>, %arg2: tensor<f32>, %arg3: tensor<f32>) -> tensor<2x4xf32> {
    %0 = graph.div %arg3, %arg1 : tensor<f32>
    %1 = graph.mul %0, %arg2 : tensor<f32>
    %2 = graph.scale %1 by -1.000000e+00 : tensor<f32>
    %3 = graph.broadcast %0 dims [0, 1] : tensor<f32> -> tensor<2x4xf32>
    %4 = graph.scale %arg0 by 2.000000e+00 : tensor<2x4xf32>
    %5 = graph.mul %3, %4 : tensor<2x4xf32>
    return %5 : tensor<2x4xf32>
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
    %3 = call @head(%2, %arg1) : (tensor<2x4xf32>, tensor<f32>) -> tensor<f32>
    return %3 : tensor<f32>
  }
  func.func @forward_grad(%arg0: tensor<2x4xf32> {graph.input = "x"}, %arg1: tensor<f32> {graph.input = "mlm_count"}, %arg2: i64 {graph.input = "seed"}, %arg3: index {graph.input = "sample_offset"}) -> tensor<f32> attributes {graph.entry = "forward_grad"} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %0 = graph.parameter_ref @emb : tensor<4xf32>
    %1 = call @embed_fwd(%arg0, %0) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    %2 = scf.for %arg4 = %c0 to %c2 step %c1 iter_args(%arg5 = %1) -> (tensor<2x4xf32>) {
      %7 = graph.parameter_slice @layer.w[%arg4] : tensor<4x4xf32>
      %8:2 = func.call @blk_fwd(%arg5, %arg2, %arg4, %arg3, %7) : (tensor<2x4xf32>, i64, index, index, tensor<4x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
      graph.store %arg5 into @stash.blk.0[%arg4] : tensor<2x4xf32>
      graph.store %8#1 into @stash.blk.1[%arg4] : tensor<2x4xf32>
      scf.yield %8#0 : tensor<2x4xf32>
    }
    %3:2 = call @head_fwd(%2, %arg1) : (tensor<2x4xf32>, tensor<f32>) -> (tensor<f32>, tensor<f32>)
    %cst = arith.constant dense<1.000000e+00> : tensor<f32>
    %4 = call @head_bwd(%2, %arg1, %3#1, %cst) : (tensor<2x4xf32>, tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<2x4xf32>
    %c0_0 = arith.constant 0 : index
    %c2_1 = arith.constant 2 : index
    %c1_2 = arith.constant 1 : index
    %5 = scf.for %arg4 = %c0_0 to %c2_1 step %c1_2 iter_args(%arg5 = %4) -> (tensor<2x4xf32>) {
      %c1_3 = arith.constant 1 : index
      %7 = arith.subi %c1_3, %arg4 : index
      %8 = graph.parameter_slice @stash.blk.0[%7] : tensor<2x4xf32>
      %9 = graph.parameter_slice @stash.blk.1[%7] : tensor<2x4xf32>
      %10 = graph.parameter_slice @layer.w[%7] : tensor<4x4xf32>
      %11:2 = func.call @blk_bwd(%8, %arg2, %7, %arg3, %10, %9, %arg5) : (tensor<2x4xf32>, i64, index, index, tensor<4x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4x4xf32>)
      graph.accumulate %11#1 into @grad.layer.w[%7] : tensor<4x4xf32>
      scf.yield %11#0 : tensor<2x4xf32>
    }
    %6 = call @embed_bwd(%arg0, %0, %5) : (tensor<2x4xf32>, tensor<4xf32>, tensor<2x4xf32>) -> tensor<4xf32>
    graph.accumulate %6 into @grad.emb : tensor<4xf32>
    return %3#0 : tensor<f32>
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
    %c3 = arith.constant 3 : index
    %c1 = arith.constant 1 : index
    scf.for %arg1 = %c0 to %c3 step %c1 {
      %4 = graph.parameter_slice @input.x[%arg1] : tensor<2x4xf32>
      %5 = graph.parameter_ref @input.mlm_count : tensor<f32>
      %c42_i64 = arith.constant 42 : i64
      %c6 = arith.constant 6 : index
      %c2 = arith.constant 2 : index
      %6 = arith.muli %arg0, %c6 : index
      %7 = arith.muli %arg1, %c2 : index
      %8 = arith.addi %6, %7 : index
      %9 = func.call @forward_grad(%4, %5, %c42_i64, %8) : (tensor<2x4xf32>, tensor<f32>, i64, index) -> tensor<f32>
      graph.accumulate %9 into @metric.loss : tensor<f32>
    }
    %0 = graph.parameter_ref @grad.emb : tensor<4xf32>
    %1 = graph.parameter_ref @grad.layer.w : tensor<2x4x4xf32>
    %2 = graph.global_norm %0, %1 : tensor<4xf32>, tensor<2x4x4xf32> -> tensor<f32>
    graph.store %2 into @metric.grad_norm : tensor<f32>
    %3 = graph.learning_rate %arg0 {kind = "constant", lr = 1.000000e-03 : f64, power = 1.000000e+00 : f64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 0 : i64} : tensor<f32>
    graph.store %3 into @metric.lr : tensor<f32>
    graph.optimizer_update @emb grad @grad.emb moments @adam_m.emb, @adam_v.emb lr %3 norm %2 step %arg0 {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, clip_norm = 1.000000e+00 : f64, epsilon = 9.9999999999999995E-7 : f64, optimizer = "adamw", weight_decay = 1.000000e-02 : f64} : tensor<f32>, tensor<f32>
    graph.optimizer_update @layer.w grad @grad.layer.w moments @adam_m.layer.w, @adam_v.layer.w lr %3 norm %2 step %arg0 {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, clip_norm = 1.000000e+00 : f64, epsilon = 9.9999999999999995E-7 : f64, optimizer = "adamw", weight_decay = 1.000000e-02 : f64} : tensor<f32>, tensor<f32>
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<4xf32>
    graph.store %cst_4 into @grad.emb : tensor<4xf32>
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<2x4x4xf32>
    graph.store %cst_5 into @grad.layer.w : tensor<2x4x4xf32>
    return
  }
}
