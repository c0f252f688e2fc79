// RUN: ferry-opt %s --split-input-file | FileCheck %s
// RUN: ferry-opt %s --split-input-file | ferry-opt --split-input-file | FileCheck %s

// Tests that every declaration form round-trips.
// CHECK-LABEL: module @declarations
// CHECK: graph.parameter @word : tensor<1024x64xf32> init(normal, 2.000000e-02) hf "bert.embeddings.word_embeddings.weight"
// CHECK: graph.parameter @layer.bias : tensor<2x64xbf16> init(zeros) hf "bert.encoder.layer.{}.output.dense.bias" stacked no_weight_decay
// CHECK: graph.parameter @layer.ln.scale : tensor<2x64xf16> init(ones) hf "bert.encoder.layer.{}.output.LayerNorm.weight" stacked no_weight_decay
// CHECK: graph.variable @step : tensor<i64> init(zeros) hf "optimizer.step"
// CHECK: graph.variable @moment : tensor<2x64xf32> init(zeros) hf "optimizer.m.bert.encoder.layer.{}.output.dense.bias" stacked
// CHECK: graph.parameter_ref @word : tensor<1024x64xf32>
// CHECK: graph.parameter_slice @layer.bias[%{{.*}}] : tensor<64xbf16>
// CHECK: graph.parameter_ref @step : tensor<i64>
// CHECK: graph.parameter_slice @moment[%{{.*}}] : tensor<64xf32>
module @declarations {
  graph.parameter @word : tensor<1024x64xf32> init(normal, 2.000000e-02) hf "bert.embeddings.word_embeddings.weight"
  graph.parameter @layer.bias : tensor<2x64xbf16> init(zeros) hf "bert.encoder.layer.{}.output.dense.bias" stacked no_weight_decay
  graph.parameter @layer.ln.scale : tensor<2x64xf16> init(ones) hf "bert.encoder.layer.{}.output.LayerNorm.weight" stacked no_weight_decay
  graph.variable @step : tensor<i64> init(zeros) hf "optimizer.step"
  graph.variable @moment : tensor<2x64xf32> init(zeros) hf "optimizer.m.bert.encoder.layer.{}.output.dense.bias" stacked
  func.func @reads(%l: index) -> (tensor<1024x64xf32>, tensor<64xbf16>, tensor<i64>, tensor<64xf32>) {
    %w = graph.parameter_ref @word : tensor<1024x64xf32>
    %b = graph.parameter_slice @layer.bias[%l] : tensor<64xbf16>
    %s = graph.parameter_ref @step : tensor<i64>
    %m = graph.parameter_slice @moment[%l] : tensor<64xf32>
    return %w, %b, %s, %m : tensor<1024x64xf32>, tensor<64xbf16>, tensor<i64>, tensor<64xf32>
  }
}

// -----

// Tests the embedding ops: iota, embedding gather, attention mask.
// CHECK-LABEL: func.func @embedding_ops
// CHECK: %[[POS:.*]] = graph.iota dim 1 : tensor<4x16xi32>
// CHECK: graph.embedding %{{.*}}[%[[POS]]] : tensor<32x8xf32>, tensor<4x16xi32> -> tensor<4x16x8xf32>
// CHECK: graph.attention_mask %{{.*}} fill -1.000000e+04 : tensor<4x16xi32> -> tensor<4x16xf32>
func.func @embedding_ops(%table: tensor<32x8xf32>, %mask: tensor<4x16xi32>) -> (tensor<4x16x8xf32>, tensor<4x16xf32>) {
  %pos = graph.iota dim 1 : tensor<4x16xi32>
  %e = graph.embedding %table[%pos] : tensor<32x8xf32>, tensor<4x16xi32> -> tensor<4x16x8xf32>
  %m = graph.attention_mask %mask fill -1.000000e+04 : tensor<4x16xi32> -> tensor<4x16xf32>
  return %e, %m : tensor<4x16x8xf32>, tensor<4x16xf32>
}

// -----

// Tests matmul in its three uses (linear layer, batched, transposed lhs) and bias_add.
// CHECK-LABEL: func.func @matmuls
// CHECK: graph.matmul %{{.*}}, %{{.*}} {transpose_rhs} : tensor<4x16x8xf32>, tensor<32x8xf32> -> tensor<4x16x32xf32>
// CHECK: graph.bias_add %{{.*}}, %{{.*}} : tensor<4x16x32xf32>, tensor<32xf32>
// CHECK: graph.matmul %{{.*}}, %{{.*}} : tensor<4x2x16x4xf32>, tensor<4x2x4x16xf32> -> tensor<4x2x16x16xf32>
// CHECK: graph.matmul %{{.*}}, %{{.*}} {transpose_lhs} : tensor<16x8xbf16>, tensor<16x32xbf16> -> tensor<8x32xbf16>
func.func @matmuls(%x: tensor<4x16x8xf32>, %w: tensor<32x8xf32>, %b: tensor<32xf32>,
                   %q: tensor<4x2x16x4xf32>, %k: tensor<4x2x4x16xf32>,
                   %a: tensor<16x8xbf16>, %c: tensor<16x32xbf16>)
    -> (tensor<4x16x32xf32>, tensor<4x2x16x16xf32>, tensor<8x32xbf16>) {
  %y = graph.matmul %x, %w {transpose_rhs} : tensor<4x16x8xf32>, tensor<32x8xf32> -> tensor<4x16x32xf32>
  %yb = graph.bias_add %y, %b : tensor<4x16x32xf32>, tensor<32xf32>
  %s = graph.matmul %q, %k : tensor<4x2x16x4xf32>, tensor<4x2x4x16xf32> -> tensor<4x2x16x16xf32>
  %g = graph.matmul %a, %c {transpose_lhs} : tensor<16x8xbf16>, tensor<16x32xbf16> -> tensor<8x32xbf16>
  return %yb, %s, %g : tensor<4x16x32xf32>, tensor<4x2x16x16xf32>, tensor<8x32xbf16>
}

// -----

// Tests the elementwise ops.
// CHECK-LABEL: func.func @elementwise
// CHECK: graph.add %{{.*}}, %{{.*}} : tensor<4x8xf32>
// CHECK: graph.sub %{{.*}}, %{{.*}} : tensor<4x8xf32>
// CHECK: graph.mul %{{.*}}, %{{.*}} : tensor<4x8xf32>
// CHECK: graph.div %{{.*}}, %{{.*}} : tensor<4x8xf32>
// CHECK: graph.gelu %{{.*}} : tensor<4x8xf32>
// CHECK: graph.tanh %{{.*}} : tensor<4x8xf32>
// CHECK: graph.scale %{{.*}} by 1.250000e-01 : tensor<4x8xf32>
func.func @elementwise(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = graph.add %a, %b : tensor<4x8xf32>
  %1 = graph.sub %0, %b : tensor<4x8xf32>
  %2 = graph.mul %1, %b : tensor<4x8xf32>
  %3 = graph.div %2, %b : tensor<4x8xf32>
  %4 = graph.gelu %3 : tensor<4x8xf32>
  %5 = graph.tanh %4 : tensor<4x8xf32>
  %6 = graph.scale %5 by 1.250000e-01 : tensor<4x8xf32>
  return %6 : tensor<4x8xf32>
}

// -----

// Tests layer_norm, softmax with an additive mask, and dropout.
// CHECK-LABEL: func.func @normalisation
// CHECK: graph.layer_norm %{{.*}}, %{{.*}}, %{{.*}} eps 9.9999999999999998E-13 : tensor<4x16x8xf16>, tensor<8xf16>
// CHECK: graph.softmax %{{.*}}, %{{.*}} : tensor<4x2x16x16xf32>, tensor<4x16xf32>
// CHECK: graph.dropout %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {probability = 1.000000e-01 : f64, purpose = "attention.probs"} : tensor<4x2x16x16xf32>
func.func @normalisation(%x: tensor<4x16x8xf16>, %g: tensor<8xf16>, %b: tensor<8xf16>,
                         %s: tensor<4x2x16x16xf32>, %m: tensor<4x16xf32>,
                         %seed: i64, %l: index, %off: index) -> (tensor<4x16x8xf16>, tensor<4x2x16x16xf32>) {
  %y = graph.layer_norm %x, %g, %b eps 9.9999999999999998E-13 : tensor<4x16x8xf16>, tensor<8xf16>
  %p = graph.softmax %s, %m : tensor<4x2x16x16xf32>, tensor<4x16xf32>
  %d = graph.dropout %p, %seed, %l, %off {probability = 1.000000e-01 : f64, purpose = "attention.probs"} : tensor<4x2x16x16xf32>
  return %y, %d : tensor<4x16x8xf16>, tensor<4x2x16x16xf32>
}

// -----

// Tests the shape ops: reshape, transpose, take.
// CHECK-LABEL: func.func @shapes
// CHECK: graph.reshape %{{.*}} : tensor<4x16x8xf32> -> tensor<4x16x2x4xf32>
// CHECK: graph.transpose %{{.*}} [0, 2, 1, 3] : tensor<4x16x2x4xf32> -> tensor<4x2x16x4xf32>
// CHECK: graph.take %{{.*}} dim 1 index 0 : tensor<4x16x8xf32> -> tensor<4x8xf32>
// CHECK: graph.reshape %{{.*}} : tensor<4x16xi32> -> tensor<64xi32>
func.func @shapes(%x: tensor<4x16x8xf32>, %ids: tensor<4x16xi32>) -> (tensor<4x2x16x4xf32>, tensor<4x8xf32>, tensor<64xi32>) {
  %r = graph.reshape %x : tensor<4x16x8xf32> -> tensor<4x16x2x4xf32>
  %t = graph.transpose %r [0, 2, 1, 3] : tensor<4x16x2x4xf32> -> tensor<4x2x16x4xf32>
  %c = graph.take %x dim 1 index 0 : tensor<4x16x8xf32> -> tensor<4x8xf32>
  %f = graph.reshape %ids : tensor<4x16xi32> -> tensor<64xi32>
  return %t, %c, %f : tensor<4x2x16x4xf32>, tensor<4x8xf32>, tensor<64xi32>
}

// -----

// Tests the MLM gather, the cross-entropy over masked slots and every reduction kind.
// CHECK-LABEL: func.func @loss
// CHECK: graph.gather_positions %{{.*}}[%{{.*}}] : tensor<4x16x8xf32>, tensor<4x3xi32> -> tensor<4x3x8xf32>
// CHECK: graph.softmax_cross_entropy %{{.*}}, %{{.*}}, %{{.*}} classes 30 : tensor<4x3x32xf32>, tensor<4x3xi32>, tensor<4x3xf32> -> tensor<f32>
// CHECK: graph.reduce sum %{{.*}} dims [0, 1] : tensor<4x3xf32> -> tensor<f32>
// CHECK: graph.reduce mean %{{.*}} dims [1] : tensor<4x3xf32> -> tensor<4xf32>
// CHECK: graph.reduce max %{{.*}} dims [0] : tensor<4x3xf32> -> tensor<3xf32>
// CHECK: graph.reduce sum_squares %{{.*}} dims [0, 1, 2] : tensor<4x3x8xf32> -> tensor<f32>
func.func @loss(%h: tensor<4x16x8xf32>, %pos: tensor<4x3xi32>, %logits: tensor<4x3x32xf32>,
                %labels: tensor<4x3xi32>, %w: tensor<4x3xf32>)
    -> (tensor<4x3x8xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<3xf32>, tensor<f32>) {
  %g = graph.gather_positions %h[%pos] : tensor<4x16x8xf32>, tensor<4x3xi32> -> tensor<4x3x8xf32>
  %ce = graph.softmax_cross_entropy %logits, %labels, %w classes 30 : tensor<4x3x32xf32>, tensor<4x3xi32>, tensor<4x3xf32> -> tensor<f32>
  %s = graph.reduce sum %w dims [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %m = graph.reduce mean %w dims [1] : tensor<4x3xf32> -> tensor<4xf32>
  %x = graph.reduce max %w dims [0] : tensor<4x3xf32> -> tensor<3xf32>
  %q = graph.reduce sum_squares %g dims [0, 1, 2] : tensor<4x3x8xf32> -> tensor<f32>
  return %g, %ce, %s, %m, %x, %q : tensor<4x3x8xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<3xf32>, tensor<f32>
}

// -----

// Tests the elementwise gradient ops and layer_norm_grad's three results.
// CHECK-LABEL: func.func @gradient_ops
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[DY:.*]]: tensor<4x8xf32>, %[[G:.*]]: tensor<8xf32>)
// CHECK: graph.gelu_grad %[[X]], %[[DY]] : tensor<4x8xf32>
// CHECK: graph.tanh_grad %[[X]], %[[DY]] : tensor<4x8xf32>
// CHECK: graph.softmax_grad %[[X]], %[[DY]] : tensor<4x8xf32>
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = graph.layer_norm_grad %[[X]], %[[G]], %[[DY]] eps 9.9999999999999998E-13 : tensor<4x8xf32>, tensor<8xf32>
func.func @gradient_ops(%x: tensor<4x8xf32>, %dy: tensor<4x8xf32>, %g: tensor<8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %0 = graph.gelu_grad %x, %dy : tensor<4x8xf32>
  %1 = graph.tanh_grad %x, %dy : tensor<4x8xf32>
  %2 = graph.softmax_grad %x, %dy : tensor<4x8xf32>
  %dx, %dg, %db = graph.layer_norm_grad %x, %g, %dy eps 9.9999999999999998E-13 : tensor<4x8xf32>, tensor<8xf32>
  return %0, %1, %2, %dx, %dg, %db : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// Tests the scatter gradients of the gathers (embedding, gather_positions,
// take), broadcast, the cross-entropy gradient and the MLM accuracy count.
// CHECK-LABEL: func.func @scatter_ops
// CHECK: graph.embedding_grad %{{.*}}[%{{.*}}] : tensor<4x16x8xf32>, tensor<4x16xi32> -> tensor<32x8xf32>
// CHECK: graph.gather_positions_grad %{{.*}}[%{{.*}}] : tensor<4x3x8xf32>, tensor<4x3xi32> -> tensor<4x16x8xf32>
// CHECK: graph.take_grad %{{.*}} dim 1 index 0 : tensor<4x8xf32> -> tensor<4x16x8xf32>
// CHECK: graph.broadcast %{{.*}} dims [0, 1] : tensor<f32> -> tensor<4x3xf32>
// CHECK: graph.softmax_cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} classes 30 : tensor<4x3x32xf32>, tensor<4x3xi32>, tensor<4x3xf32>, tensor<f32>
// CHECK: graph.argmax_correct %{{.*}}, %{{.*}}, %{{.*}} classes 30 : tensor<4x3x32xf32>, tensor<4x3xi32>, tensor<4x3xf32> -> tensor<f32>
func.func @scatter_ops(%dy: tensor<4x16x8xf32>, %ids: tensor<4x16xi32>, %dm: tensor<4x3x8xf32>,
                       %pos: tensor<4x3xi32>, %dc: tensor<4x8xf32>, %s: tensor<f32>,
                       %logits: tensor<4x3x32xf32>, %labels: tensor<4x3xi32>, %w: tensor<4x3xf32>)
    -> (tensor<32x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x3xf32>, tensor<4x3x32xf32>, tensor<f32>) {
  %0 = graph.embedding_grad %dy[%ids] : tensor<4x16x8xf32>, tensor<4x16xi32> -> tensor<32x8xf32>
  %1 = graph.gather_positions_grad %dm[%pos] : tensor<4x3x8xf32>, tensor<4x3xi32> -> tensor<4x16x8xf32>
  %2 = graph.take_grad %dc dim 1 index 0 : tensor<4x8xf32> -> tensor<4x16x8xf32>
  %3 = graph.broadcast %s dims [0, 1] : tensor<f32> -> tensor<4x3xf32>
  %4 = graph.softmax_cross_entropy_grad %logits, %labels, %w, %s classes 30 : tensor<4x3x32xf32>, tensor<4x3xi32>, tensor<4x3xf32>, tensor<f32>
  %5 = graph.argmax_correct %logits, %labels, %w classes 30 : tensor<4x3x32xf32>, tensor<4x3xi32>, tensor<4x3xf32> -> tensor<f32>
  return %0, %1, %2, %3, %4, %5 : tensor<32x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x3xf32>, tensor<4x3x32xf32>, tensor<f32>
}

// -----

// Tests the state updates (store and accumulate, whole and at a layer index)
// and the optimizer ops: global norm, learning rate, optimizer update.
// CHECK-LABEL: module @state_updates
// CHECK: func.func @update(%[[L:.*]]: index, %[[STEP:.*]]: index, %[[V:.*]]: tensor<4x8xf32>, %[[E:.*]]: tensor<8xf32>)
// CHECK: graph.store %[[V]] into @w : tensor<4x8xf32>
// CHECK: graph.store %[[E]] into @stack[%[[L]]] : tensor<8xf32>
// CHECK: graph.accumulate %[[V]] into @grad.w : tensor<4x8xf32>
// CHECK: graph.accumulate %[[E]] into @grad.stack[%[[L]]] : tensor<8xf32>
// CHECK: %[[NORM:.*]] = graph.global_norm %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<2x8xf32> -> tensor<f32>
// CHECK: %[[LR:.*]] = graph.learning_rate %[[STEP]] {kind = "poly", lr = 1.000000e-03 : f64, power = 1.000000e+00 : f64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 10 : i64} : tensor<f32>
// CHECK: graph.optimizer_update @w grad @grad.w moments @m.w, @v.w lr %[[LR]] norm %[[NORM]] step %[[STEP]] {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, clip_norm = 1.000000e+00 : f64, epsilon = 9.9999999999999995E-7 : f64, optimizer = "lamb", weight_decay = 0.000000e+00 : f64} : tensor<f32>, tensor<f32>
module @state_updates {
  graph.parameter @w : tensor<4x8xf32> init(normal, 2.000000e-02) hf "w"
  graph.parameter @stack : tensor<2x8xf32> init(zeros) hf "stack.{}" stacked no_weight_decay
  graph.variable @grad.w : tensor<4x8xf32> init(zeros) hf "grad.w"
  graph.variable @grad.stack : tensor<2x8xf32> init(zeros) hf "grad.stack.{}" stacked
  graph.variable @m.w : tensor<4x8xf32> init(zeros) hf "m.w"
  graph.variable @v.w : tensor<4x8xf32> init(zeros) hf "v.w"
  func.func @update(%l: index, %step: index, %v: tensor<4x8xf32>, %e: tensor<8xf32>) {
    graph.store %v into @w : tensor<4x8xf32>
    graph.store %e into @stack[%l] : tensor<8xf32>
    graph.accumulate %v into @grad.w : tensor<4x8xf32>
    graph.accumulate %e into @grad.stack[%l] : tensor<8xf32>
    %gw = graph.parameter_ref @grad.w : tensor<4x8xf32>
    %gs = graph.parameter_ref @grad.stack : tensor<2x8xf32>
    %norm = graph.global_norm %gw, %gs : tensor<4x8xf32>, tensor<2x8xf32> -> tensor<f32>
    %lr = graph.learning_rate %step {kind = "poly", lr = 1.0e-03 : f64, warmup_steps = 10 : i64,
        start_warmup_step = 0 : i64, power = 1.0 : f64, total_steps = 100 : i64} : tensor<f32>
    graph.optimizer_update @w grad @grad.w moments @m.w, @v.w lr %lr norm %norm step %step
        {optimizer = "lamb", beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-06 : f64,
         weight_decay = 0.0 : f64, clip_norm = 1.0 : f64} : tensor<f32>, tensor<f32>
    return
  }
}

// -----

// Tests fused_matmul in its three forms (bias, alpha, bias gradient).
// CHECK-LABEL: func.func @fused
// CHECK: graph.fused_matmul %{{.*}}, %{{.*}} bias %{{.*}} {transpose_rhs} : tensor<4x16x8xf32>, tensor<32x8xf32>, tensor<32xf32> -> tensor<4x16x32xf32>
// CHECK: graph.fused_matmul %{{.*}}, %{{.*}} {alpha = 1.250000e-01 : f64, transpose_rhs} : tensor<2x3x16x8xf32>, tensor<2x3x16x8xf32> -> tensor<2x3x16x16xf32>
// CHECK: %{{.*}}, %{{.*}} = graph.fused_matmul %{{.*}}, %{{.*}} {transpose_lhs} : tensor<64x32xf32>, tensor<64x8xf32> -> tensor<32x8xf32>, tensor<32xf32>
func.func @fused(%x: tensor<4x16x8xf32>, %w: tensor<32x8xf32>, %b: tensor<32xf32>,
                 %q: tensor<2x3x16x8xf32>, %dy: tensor<64x32xf32>, %xs: tensor<64x8xf32>) {
  %0 = graph.fused_matmul %x, %w bias %b {transpose_rhs} : tensor<4x16x8xf32>, tensor<32x8xf32>, tensor<32xf32> -> tensor<4x16x32xf32>
  %1 = graph.fused_matmul %q, %q {transpose_rhs, alpha = 0.125 : f64} : tensor<2x3x16x8xf32>, tensor<2x3x16x8xf32> -> tensor<2x3x16x16xf32>
  %2, %3 = graph.fused_matmul %dy, %xs {transpose_lhs} : tensor<64x32xf32>, tensor<64x8xf32> -> tensor<32x8xf32>, tensor<32xf32>
  return
}

// -----

// Tests the fused attention ops.
// CHECK-LABEL: func.func @fused_attention
// CHECK: %{{.*}}, %{{.*}} = graph.softmax_dropout %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {probability = 1.000000e-01 : f64, purpose = "attention.probs"} : tensor<2x2x4x4xf32>, tensor<2x4xf32>
// CHECK: graph.dropout_softmax_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {probability = 1.000000e-01 : f64, purpose = "attention.probs"} : tensor<2x2x4x4xf32>
func.func @fused_attention(%s: tensor<2x2x4x4xf32>, %mask: tensor<2x4xf32>, %seed: i64, %l: index, %off: index) {
  %p, %d = graph.softmax_dropout %s, %mask, %seed, %l, %off {probability = 0.1 : f64, purpose = "attention.probs"} : tensor<2x2x4x4xf32>, tensor<2x4xf32>
  %dx = graph.dropout_softmax_grad %p, %d, %seed, %l, %off {probability = 0.1 : f64, purpose = "attention.probs"} : tensor<2x2x4x4xf32>
  return
}

// -----

// Tests the fused end of a sublayer, with and without its dropout.
// CHECK-LABEL: func.func @residual_layer_norm
// CHECK: %{{.*}}, %{{.*}} = graph.residual_layer_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} eps 9.9999999999999998E-13 dropout %{{.*}}, %{{.*}}, %{{.*}} {probability = 1.000000e-01 : f64, purpose = "ffn.output"} : tensor<2x4x8xf32>, tensor<8xf32>
// CHECK: %{{.*}}, %{{.*}} = graph.residual_layer_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} eps 9.9999999999999998E-13 : tensor<2x4x8xf32>, tensor<8xf32>
func.func @residual_layer_norm(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %seed: i64, %l: index) {
  %s, %y = graph.residual_layer_norm %x, %x, %g, %g eps 1.0e-12 dropout %seed, %l, %l {probability = 0.1 : f64, purpose = "ffn.output"} : tensor<2x4x8xf32>, tensor<8xf32>
  %s2, %y2 = graph.residual_layer_norm %x, %x, %g, %g eps 1.0e-12 : tensor<2x4x8xf32>, tensor<8xf32>
  return
}

// -----

// Tests the replica collectives, a padded shard included (ceil(10 / 4) = 3).
// CHECK-LABEL: func.func @collectives
// CHECK: %[[S:.*]] = graph.all_reduce %{{.*}} replicas 4 : tensor<2x5xf32>
// CHECK: %[[H:.*]] = graph.reduce_scatter %[[S]] replicas 4 : tensor<2x5xf32> -> tensor<3xf32>
// CHECK: graph.all_gather %[[H]] replicas 4 : tensor<3xf32> -> tensor<2x5xf32>
func.func @collectives(%g: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %s = graph.all_reduce %g replicas 4 : tensor<2x5xf32>
  %h = graph.reduce_scatter %s replicas 4 : tensor<2x5xf32> -> tensor<3xf32>
  %w = graph.all_gather %h replicas 4 : tensor<3xf32> -> tensor<2x5xf32>
  return %w : tensor<2x5xf32>
}

// -----

// Tests the tensor group's collectives and Megatron's f; the data group and
// the sum are the defaults and are not printed.
// CHECK-LABEL: func.func @tensor_group
// CHECK: %[[F:.*]] = graph.copy_to_group %{{.*}} replicas 2 over tensor : tensor<4x6xf32>
// CHECK: %[[G:.*]] = graph.all_reduce %[[F]] replicas 2 over tensor : tensor<4x6xf32>
// CHECK: %[[M:.*]] = graph.all_reduce %[[G]] replicas 2 over tensor reduction max : tensor<4x6xf32>
// CHECK: %[[D:.*]] = graph.all_reduce %[[M]] replicas 2 : tensor<4x6xf32>
// CHECK: %[[C:.*]] = graph.copy_to_group %[[D]] replicas 2 : tensor<4x6xf32>
// CHECK: %[[RS:.*]] = graph.reduce_scatter %[[C]] replicas 2 over tensor : tensor<4x6xf32> -> tensor<12xf32>
// CHECK: graph.all_gather %[[RS]] replicas 2 over tensor : tensor<12xf32> -> tensor<4x6xf32>
func.func @tensor_group(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %f = graph.copy_to_group %x replicas 2 over tensor : tensor<4x6xf32>
  %g = graph.all_reduce %f replicas 2 over tensor : tensor<4x6xf32>
  %m = graph.all_reduce %g replicas 2 over tensor reduction max : tensor<4x6xf32>
  %d = graph.all_reduce %m replicas 2 over data reduction sum : tensor<4x6xf32>
  %c = graph.copy_to_group %d replicas 2 : tensor<4x6xf32>
  %rs = graph.reduce_scatter %c replicas 2 over tensor : tensor<4x6xf32> -> tensor<12xf32>
  %ag = graph.all_gather %rs replicas 2 over tensor : tensor<12xf32> -> tensor<4x6xf32>
  return %ag : tensor<4x6xf32>
}

// -----

// Tests that the fused attention and its gradient round-trip.
// CHECK-LABEL: func.func @attention
// CHECK: %{{.*}}, %[[LSE:.*]] = graph.attention %arg0, %arg0, %arg0, %arg1, %arg2, %arg3, %arg3 {probability = 1.000000e-01 : f64, purpose = "attention.probs", scale = 1.250000e-01 : f64} : tensor<2x2x8x4xf32>, tensor<2x8xf32> -> tensor<2x2x8xf32>
// CHECK: graph.attention_grad %arg0, %arg0, %arg0, %arg1, %{{.*}}, %[[LSE]], %arg0, %arg2, %arg3, %arg3 {probability = 1.000000e-01 : f64, purpose = "attention.probs", scale = 1.250000e-01 : f64} : tensor<2x2x8x4xf32>, tensor<2x8xf32> -> tensor<2x2x8xf32>
func.func @attention(%q: tensor<2x2x8x4xf32>, %m: tensor<2x8xf32>, %s: i64, %i: index) -> tensor<2x2x8x4xf32> {
  %o, %lse = graph.attention %q, %q, %q, %m, %s, %i, %i {probability = 1.000000e-01 : f64, purpose = "attention.probs", scale = 1.250000e-01 : f64} : tensor<2x2x8x4xf32>, tensor<2x8xf32> -> tensor<2x2x8xf32>
  %dq, %dk, %dv = graph.attention_grad %q, %q, %q, %m, %o, %lse, %q, %s, %i, %i {probability = 1.000000e-01 : f64, purpose = "attention.probs", scale = 1.250000e-01 : f64} : tensor<2x2x8x4xf32>, tensor<2x8xf32> -> tensor<2x2x8xf32>
  return %dq : tensor<2x2x8x4xf32>
}

// -----

// Tests the mesh and a sharded declaration, before and after partitioning;
// the sharding attribute's three forms.
// CHECK-LABEL: module @mesh attributes {graph.mesh = #graph.mesh<tensor = 2, data = 4>}
// CHECK: graph.parameter @w : tensor<2x8x4xf32> init(normal, 2.000000e-02) hf "w.{}" stacked sharding <split = 1>
// CHECK: graph.parameter @b : tensor<8xf32> init(zeros) hf "b" no_weight_decay sharding <split = 0>
// CHECK: graph.variable @s : tensor<8xf32> init(zeros) hf "s" {partial = #graph.sharding<partial = true>, replicated = #graph.sharding<>}
module @mesh attributes {graph.mesh = #graph.mesh<tensor = 2, data = 4>} {
  graph.parameter @w : tensor<2x8x4xf32> init(normal, 2.000000e-02) hf "w.{}" stacked sharding #graph.sharding<split = 1>
  graph.parameter @b : tensor<8xf32> init(zeros) hf "b" no_weight_decay sharding #graph.sharding<split = 0>
  graph.variable @s : tensor<8xf32> init(zeros) hf "s" {replicated = #graph.sharding<>, partial = #graph.sharding<partial = true>}
}

// -----

// CHECK-LABEL: module @partitioned attributes {graph.mesh = #graph.mesh<tensor = 2, data = 1, partitioned = true>}
// CHECK: graph.parameter @w : tensor<2x3x4xf32> init(normal, 2.000000e-02) hf "w.{}" stacked sharding <split = 1>
module @partitioned attributes {graph.mesh = #graph.mesh<tensor = 2, data = 1, partitioned = true>} {
  graph.parameter @w : tensor<2x3x4xf32> init(normal, 2.000000e-02) hf "w.{}" stacked sharding #graph.sharding<split = 1>
}
