// RUN: ferry-opt %s --split-input-file --ferry-autodiff | FileCheck %s

// Tests ferry-autodiff's rules for the ops whose backward is a dedicated op or
// the op itself: layer_norm -> layer_norm_grad (input, scale and bias
// gradients from the forward input), softmax -> softmax_grad (from the
// forward result; the additive mask gets no gradient), dropout -> the same
// dropout of the gradient (same seed, layer, sample offset, probability and
// purpose: the mask is regenerated, not stored), gelu -> gelu_grad (from the
// input), tanh -> tanh_grad (from the result).

// layer_norm: one layer_norm_grad gives all three gradients. The loss is a
// sum of squares, whose gradient is 2 * y.
// CHECK-LABEL: func.func @forward_grad() -> tensor<f32>
// CHECK-NEXT: [[X:%.*]] = graph.parameter_ref @x : tensor<2x4xf32>
// CHECK-NEXT: [[S:%.*]] = graph.parameter_ref @ln.scale : tensor<4xf32>
// CHECK-NEXT: [[B:%.*]] = graph.parameter_ref @ln.bias : tensor<4xf32>
// CHECK-NEXT: [[Y:%.*]] = graph.layer_norm [[X]], [[S]], [[B]] eps 9.9999999999999998E-13 : tensor<2x4xf32>, tensor<4xf32>
// CHECK-NEXT: graph.reduce sum_squares [[Y]] dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
// CHECK-NEXT: [[ONE:%.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: [[G:%.*]] = graph.broadcast [[ONE]] dims [0, 1] : tensor<f32> -> tensor<2x4xf32>
// CHECK-NEXT: [[TWICE:%.*]] = graph.scale [[Y]] by 2.000000e+00 : tensor<2x4xf32>
// CHECK-NEXT: [[DY:%.*]] = graph.mul [[G]], [[TWICE]] : tensor<2x4xf32>
// CHECK-NEXT: [[DX:%[a-z_0-9]+]], [[DS:%[a-z_0-9]+]], [[DB:%[a-z_0-9]+]] = graph.layer_norm_grad [[X]], [[S]], [[DY]] eps 9.9999999999999998E-13 : tensor<2x4xf32>, tensor<4xf32>
// CHECK-NEXT: graph.accumulate [[DB]] into @grad.ln.bias : tensor<4xf32>
// CHECK-NEXT: graph.accumulate [[DS]] into @grad.ln.scale : tensor<4xf32>
// CHECK-NEXT: graph.accumulate [[DX]] into @grad.x : tensor<2x4xf32>
// CHECK-NEXT: return
graph.parameter @x : tensor<2x4xf32> init(normal, 2.000000e-02) hf "x"
graph.parameter @ln.scale : tensor<4xf32> init(ones) hf "ln.scale" no_weight_decay
graph.parameter @ln.bias : tensor<4xf32> init(zeros) hf "ln.bias" no_weight_decay
func.func @forward() -> tensor<f32> {
  %x = graph.parameter_ref @x : tensor<2x4xf32>
  %g = graph.parameter_ref @ln.scale : tensor<4xf32>
  %b = graph.parameter_ref @ln.bias : tensor<4xf32>
  %y = graph.layer_norm %x, %g, %b eps 9.9999999999999998E-13 : tensor<2x4xf32>, tensor<4xf32>
  %r = graph.reduce sum_squares %y dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// softmax: softmax_grad of the forward result. The mask, even when it is
// computed from a parameter, gets no gradient.
// CHECK-LABEL: module {
// CHECK-NOT: @grad.mask
// CHECK: graph.variable @grad.s : tensor<2x3x4xf32> init(zeros) hf "grad.s"
// CHECK-NOT: @grad.mask
// CHECK-LABEL: func.func @forward_grad() -> tensor<f32>
// CHECK-NEXT: [[S:%.*]] = graph.parameter_ref @s : tensor<2x3x4xf32>
// CHECK-NEXT: [[M:%.*]] = graph.parameter_ref @mask : tensor<2x4xf32>
// CHECK-NEXT: [[P:%.*]] = graph.softmax [[S]], [[M]] : tensor<2x3x4xf32>, tensor<2x4xf32>
// CHECK-NEXT: graph.reduce sum_squares [[P]]
// CHECK-NEXT: [[ONE:%.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: [[G:%.*]] = graph.broadcast [[ONE]] dims [0, 1, 2] : tensor<f32> -> tensor<2x3x4xf32>
// CHECK-NEXT: [[TWICE:%.*]] = graph.scale [[P]] by 2.000000e+00 : tensor<2x3x4xf32>
// CHECK-NEXT: [[DP:%.*]] = graph.mul [[G]], [[TWICE]] : tensor<2x3x4xf32>
// CHECK-NEXT: [[DS:%.*]] = graph.softmax_grad [[P]], [[DP]] : tensor<2x3x4xf32>
// CHECK-NEXT: graph.accumulate [[DS]] into @grad.s : tensor<2x3x4xf32>
// CHECK-NEXT: return
graph.parameter @s : tensor<2x3x4xf32> init(normal, 2.000000e-02) hf "s"
graph.parameter @mask : tensor<2x4xf32> init(zeros) hf "mask"
func.func @forward() -> tensor<f32> {
  %s = graph.parameter_ref @s : tensor<2x3x4xf32>
  %mask = graph.parameter_ref @mask : tensor<2x4xf32>
  %p = graph.softmax %s, %mask : tensor<2x3x4xf32>, tensor<2x4xf32>
  %r = graph.reduce sum_squares %p dims [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// dropout: the gradient goes through the same dropout, with the forward's
// seed, layer and sample offset operands and attributes.
// CHECK-LABEL: func.func @forward_grad(
// CHECK-SAME: [[SEED:%[a-z0-9]+]]: i64, [[OFF:%[a-z0-9]+]]: index) -> tensor<f32>
// CHECK-NEXT: [[L:%.*]] = arith.constant 3 : index
// CHECK-NEXT: [[H:%.*]] = graph.parameter_ref @h : tensor<2x4xf32>
// CHECK-NEXT: [[D:%.*]] = graph.dropout [[H]], [[SEED]], [[L]], [[OFF]] {probability = 1.000000e-01 : f64, purpose = "ffn.output"} : tensor<2x4xf32>
// CHECK-NEXT: graph.reduce sum_squares [[D]]
// CHECK-NEXT: [[ONE:%.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: [[G:%.*]] = graph.broadcast [[ONE]] dims [0, 1] : tensor<f32> -> tensor<2x4xf32>
// CHECK-NEXT: [[TWICE:%.*]] = graph.scale [[D]] by 2.000000e+00 : tensor<2x4xf32>
// CHECK-NEXT: [[DD:%.*]] = graph.mul [[G]], [[TWICE]] : tensor<2x4xf32>
// CHECK-NEXT: [[DH:%.*]] = graph.dropout [[DD]], [[SEED]], [[L]], [[OFF]] {probability = 1.000000e-01 : f64, purpose = "ffn.output"} : tensor<2x4xf32>
// CHECK-NEXT: graph.accumulate [[DH]] into @grad.h : tensor<2x4xf32>
// CHECK-NEXT: return
graph.parameter @h : tensor<2x4xf32> init(normal, 2.000000e-02) hf "h"
func.func @forward(%seed: i64, %offset: index) -> tensor<f32> {
  %c3 = arith.constant 3 : index
  %h = graph.parameter_ref @h : tensor<2x4xf32>
  %d = graph.dropout %h, %seed, %c3, %offset {probability = 1.000000e-01 : f64, purpose = "ffn.output"} : tensor<2x4xf32>
  %r = graph.reduce sum_squares %d dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// gelu and tanh: tanh_grad reads tanh's result, gelu_grad gelu's input.
// CHECK-LABEL: func.func @forward_grad() -> tensor<f32>
// CHECK-NEXT: [[H:%.*]] = graph.parameter_ref @h : tensor<2x4xf32>
// CHECK-NEXT: [[Y:%.*]] = graph.gelu [[H]] : tensor<2x4xf32>
// CHECK-NEXT: [[T:%.*]] = graph.tanh [[Y]] : tensor<2x4xf32>
// CHECK-NEXT: graph.reduce sum [[T]]
// CHECK-NEXT: [[ONE:%.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: [[G:%.*]] = graph.broadcast [[ONE]] dims [0, 1] : tensor<f32> -> tensor<2x4xf32>
// CHECK-NEXT: [[DY:%.*]] = graph.tanh_grad [[T]], [[G]] : tensor<2x4xf32>
// CHECK-NEXT: [[DH:%.*]] = graph.gelu_grad [[H]], [[DY]] : tensor<2x4xf32>
// CHECK-NEXT: graph.accumulate [[DH]] into @grad.h : tensor<2x4xf32>
// CHECK-NEXT: return
graph.parameter @h : tensor<2x4xf32> init(normal, 2.000000e-02) hf "h"
func.func @forward() -> tensor<f32> {
  %h = graph.parameter_ref @h : tensor<2x4xf32>
  %y = graph.gelu %h : tensor<2x4xf32>
  %t = graph.tanh %y : tensor<2x4xf32>
  %r = graph.reduce sum %t dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %r : tensor<f32>
}
