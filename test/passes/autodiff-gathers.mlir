// RUN: ferry-opt %s --split-input-file --ferry-autodiff | FileCheck %s

// Tests ferry-autodiff's rules for gathers, shape ops, reductions and the
// loss: embedding -> embedding_grad, gather_positions ->
// gather_positions_grad, take -> take_grad (each scattering back with the
// forward's integer operand, which gets no gradient), reshape -> reshape
// back, transpose -> transpose by the inverse permutation, reduce sum / mean /
// sum_squares -> broadcast (scaled by 1/count, times 2x), and
// softmax_cross_entropy -> softmax_cross_entropy_grad with the scalar
// gradient of the loss.

// The MLM path: embedding, gather at the masked positions, take one slot,
// mean. The mean over 2x4 elements scales the broadcast by 1/8.
// CHECK-LABEL: func.func @forward_grad(
// CHECK-SAME: [[IDS:%[a-z0-9]+]]: tensor<2x3xi32>, [[POS:%[a-z0-9]+]]: tensor<2x2xi32>) -> tensor<f32>
// CHECK-NEXT: [[T:%.*]] = graph.parameter_ref @table : tensor<10x4xf32>
// CHECK-NEXT: [[E:%.*]] = graph.embedding [[T]][[[IDS]]] : tensor<10x4xf32>, tensor<2x3xi32> -> tensor<2x3x4xf32>
// CHECK-NEXT: [[G:%.*]] = graph.gather_positions [[E]][[[POS]]] : tensor<2x3x4xf32>, tensor<2x2xi32> -> tensor<2x2x4xf32>
// CHECK-NEXT: [[C:%.*]] = graph.take [[G]] dim 1 index 1 : tensor<2x2x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT: graph.reduce mean [[C]] dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
// CHECK-NEXT: [[ONE:%.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: [[SPREAD:%.*]] = graph.broadcast [[ONE]] dims [0, 1] : tensor<f32> -> tensor<2x4xf32>
// CHECK-NEXT: [[DC:%.*]] = graph.scale [[SPREAD]] by 1.250000e-01 : tensor<2x4xf32>
// CHECK-NEXT: [[DG:%.*]] = graph.take_grad [[DC]] dim 1 index 1 : tensor<2x4xf32> -> tensor<2x2x4xf32>
// CHECK-NEXT: [[DE:%.*]] = graph.gather_positions_grad [[DG]][[[POS]]] : tensor<2x2x4xf32>, tensor<2x2xi32> -> tensor<2x3x4xf32>
// CHECK-NEXT: [[DT:%.*]] = graph.embedding_grad [[DE]][[[IDS]]] : tensor<2x3x4xf32>, tensor<2x3xi32> -> tensor<10x4xf32>
// CHECK-NEXT: graph.accumulate [[DT]] into @grad.table : tensor<10x4xf32>
// CHECK-NEXT: return
graph.parameter @table : tensor<10x4xf32> init(normal, 2.000000e-02) hf "table"
func.func @forward(%ids: tensor<2x3xi32>, %pos: tensor<2x2xi32>) -> tensor<f32> {
  %t = graph.parameter_ref @table : tensor<10x4xf32>
  %e = graph.embedding %t[%ids] : tensor<10x4xf32>, tensor<2x3xi32> -> tensor<2x3x4xf32>
  %g = graph.gather_positions %e[%pos] : tensor<2x3x4xf32>, tensor<2x2xi32> -> tensor<2x2x4xf32>
  %c = graph.take %g dim 1 index 1 : tensor<2x2x4xf32> -> tensor<2x4xf32>
  %r = graph.reduce mean %c dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// Shape ops and reductions: the transpose [2, 0, 3, 1] is undone by its
// inverse [1, 3, 0, 2]; the inner sum over dims [1, 2] is undone by a
// broadcast along the same dims; sum_squares' gradient is g * 2x.
// CHECK-LABEL: func.func @forward_grad() -> tensor<f32>
// CHECK-NEXT: [[X:%.*]] = graph.parameter_ref @x : tensor<2x3x4xf32>
// CHECK-NEXT: [[R:%.*]] = graph.reshape [[X]] : tensor<2x3x4xf32> -> tensor<2x3x2x2xf32>
// CHECK-NEXT: [[T:%.*]] = graph.transpose [[R]] [2, 0, 3, 1] : tensor<2x3x2x2xf32> -> tensor<2x2x2x3xf32>
// CHECK-NEXT: [[S:%.*]] = graph.reduce sum [[T]] dims [1, 2] : tensor<2x2x2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT: graph.reduce sum_squares [[S]] dims [0, 1] : tensor<2x3xf32> -> tensor<f32>
// CHECK-NEXT: [[ONE:%.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: [[G:%.*]] = graph.broadcast [[ONE]] dims [0, 1] : tensor<f32> -> tensor<2x3xf32>
// CHECK-NEXT: [[TWICE:%.*]] = graph.scale [[S]] by 2.000000e+00 : tensor<2x3xf32>
// CHECK-NEXT: [[DS:%.*]] = graph.mul [[G]], [[TWICE]] : tensor<2x3xf32>
// CHECK-NEXT: [[DT:%.*]] = graph.broadcast [[DS]] dims [1, 2] : tensor<2x3xf32> -> tensor<2x2x2x3xf32>
// CHECK-NEXT: [[DR:%.*]] = graph.transpose [[DT]] [1, 3, 0, 2] : tensor<2x2x2x3xf32> -> tensor<2x3x2x2xf32>
// CHECK-NEXT: [[DX:%.*]] = graph.reshape [[DR]] : tensor<2x3x2x2xf32> -> tensor<2x3x4xf32>
// CHECK-NEXT: graph.accumulate [[DX]] into @grad.x : tensor<2x3x4xf32>
// CHECK-NEXT: return
graph.parameter @x : tensor<2x3x4xf32> init(normal, 2.000000e-02) hf "x"
func.func @forward() -> tensor<f32> {
  %x = graph.parameter_ref @x : tensor<2x3x4xf32>
  %r = graph.reshape %x : tensor<2x3x4xf32> -> tensor<2x3x2x2xf32>
  %t = graph.transpose %r [2, 0, 3, 1] : tensor<2x3x2x2xf32> -> tensor<2x2x2x3xf32>
  %s = graph.reduce sum %t dims [1, 2] : tensor<2x2x2x3xf32> -> tensor<2x3xf32>
  %q = graph.reduce sum_squares %s dims [0, 1] : tensor<2x3xf32> -> tensor<f32>
  return %q : tensor<f32>
}

// -----

// A mean over one of two dims: 1/4 for the 4 reduced elements.
// CHECK-LABEL: func.func @forward_grad() -> tensor<f32>
// CHECK: [[ONE:%.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: [[G:%.*]] = graph.broadcast [[ONE]] dims [0] : tensor<f32> -> tensor<2xf32>
// CHECK-NEXT: [[SPREAD:%.*]] = graph.broadcast [[G]] dims [1] : tensor<2xf32> -> tensor<2x4xf32>
// CHECK-NEXT: [[DX:%.*]] = graph.scale [[SPREAD]] by 2.500000e-01 : tensor<2x4xf32>
// CHECK-NEXT: graph.accumulate [[DX]] into @grad.x : tensor<2x4xf32>
// CHECK-NEXT: return
graph.parameter @x : tensor<2x4xf32> init(normal, 2.000000e-02) hf "x"
func.func @forward() -> tensor<f32> {
  %x = graph.parameter_ref @x : tensor<2x4xf32>
  %m = graph.reduce mean %x dims [1] : tensor<2x4xf32> -> tensor<2xf32>
  %r = graph.reduce sum %m dims [0] : tensor<2xf32> -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// The loss: softmax_cross_entropy_grad gets the logits, labels, weights and
// the loss's (scalar) gradient, here 1/4 from the scale after it. The
// weights, even when read from a parameter, get no gradient.
// CHECK-LABEL: module {
// CHECK-NOT: @grad.w
// CHECK: graph.variable @grad.logits : tensor<2x3x5xf32> init(zeros) hf "grad.logits"
// CHECK-NOT: @grad.w
// CHECK-LABEL: func.func @forward_grad(
// CHECK-SAME: [[LABELS:%[a-z0-9]+]]: tensor<2x3xi32>) -> tensor<f32>
// CHECK-NEXT: [[L:%.*]] = graph.parameter_ref @logits : tensor<2x3x5xf32>
// CHECK-NEXT: [[W:%.*]] = graph.parameter_ref @w : tensor<2x3xf32>
// CHECK-NEXT: [[CE:%.*]] = graph.softmax_cross_entropy [[L]], [[LABELS]], [[W]] classes 4 : tensor<2x3x5xf32>, tensor<2x3xi32>, tensor<2x3xf32> -> tensor<f32>
// CHECK-NEXT: [[LOSS:%.*]] = graph.scale [[CE]] by 2.500000e-01 : tensor<f32>
// CHECK-NEXT: [[ONE:%.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: [[DCE:%.*]] = graph.scale [[ONE]] by 2.500000e-01 : tensor<f32>
// CHECK-NEXT: [[DL:%.*]] = graph.softmax_cross_entropy_grad [[L]], [[LABELS]], [[W]], [[DCE]] classes 4 : tensor<2x3x5xf32>, tensor<2x3xi32>, tensor<2x3xf32>, tensor<f32>
// CHECK-NEXT: graph.accumulate [[DL]] into @grad.logits : tensor<2x3x5xf32>
// CHECK-NEXT: return [[LOSS]] : tensor<f32>
graph.parameter @logits : tensor<2x3x5xf32> init(normal, 2.000000e-02) hf "logits"
graph.parameter @w : tensor<2x3xf32> init(ones) hf "w"
func.func @forward(%labels: tensor<2x3xi32>) -> tensor<f32> {
  %l = graph.parameter_ref @logits : tensor<2x3x5xf32>
  %w = graph.parameter_ref @w : tensor<2x3xf32>
  %ce = graph.softmax_cross_entropy %l, %labels, %w classes 4 : tensor<2x3x5xf32>, tensor<2x3xi32>, tensor<2x3xf32> -> tensor<f32>
  %s = graph.scale %ce by 2.500000e-01 : tensor<f32>
  return %s : tensor<f32>
}
