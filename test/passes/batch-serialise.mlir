// RUN: ferry-opt %s --ferry-autodiff --ferry-insert-optimizer --ferry-batch-serialise --cse | FileCheck %s
// RUN: ferry-opt %s --ferry-autodiff --ferry-insert-optimizer "--ferry-batch-serialise=carry-row-budget=80" --cse | FileCheck %s --check-prefix=ROWS

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
// CHECK-NEXT: } {ferry.micro_batches}

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
// CHECK-NEXT: } {ferry.micro_batches}
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
// CHECK-NEXT: } {ferry.micro_batches}

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
// CHECK-NEXT: } {ferry.micro_batches}
// CHECK-NEXT: }

// Embeddings backward: the carry.
// CHECK: scf.for [[I:%[a-z0-9]+]] = [[C0]] to [[GA]] step [[C1]] {
// CHECK: [[DE:%.*]] = graph.parameter_slice @stash.carry[
// CHECK-NEXT: [[GE:%.*]] = func.call @embed_bwd({{.*}}, [[DE]])
// CHECK-NEXT: graph.accumulate [[GE]] into @grad.emb
// CHECK-NEXT: } {ferry.micro_batches}
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
  func.func @head(%h: tensor<2x4xf32>, %count: tensor<f32>) -> tensor<f32> {
    %s = graph.reduce sum_squares %h dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
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
    %loss = func.call @head(%h, %count) : (tensor<2x4xf32>, tensor<f32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
