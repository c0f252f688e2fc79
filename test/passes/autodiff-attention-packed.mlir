// RUN: ferry-opt %s --ferry-autodiff | FileCheck %s

// Tests ferry-autodiff's rules over packed rows: the graph.attention_grad
// takes the forward's sequence ids and dropout keys too (the same keys left
// out, the same probabilities dropped), a dropout's gradient keeps its
// keys, and neither gets a gradient.
// CHECK-LABEL: func.func @forward_grad(
// CHECK: [[IDS:%.*]] = graph.parameter_ref @ids
// CHECK: [[KEYS:%.*]] = graph.parameter_ref @keys
// CHECK: graph.attention {{.*}} sequences [[IDS]] keys [[KEYS]] {{.*}} : tensor<2x2x8x4xf32>, tensor<2x8xf32>, tensor<2x8xi32> keys tensor<2x8x2xi32> -> tensor<2x2x8xf32>
// CHECK: graph.dropout {{.*}} keys [[KEYS]]
// The dropout's gradient: the same dropout (same keys) of the incoming one.
// CHECK: graph.dropout {{.*}} keys [[KEYS]]
// CHECK: graph.attention_grad {{.*}} sequences [[IDS]] keys [[KEYS]] {{.*}} : tensor<2x2x8x4xf32>, tensor<2x8xf32>, tensor<2x8xi32> keys tensor<2x8x2xi32> -> tensor<2x2x8xf32>
// CHECK-NOT: @grad.ids
// CHECK-NOT: @grad.keys
// CHECK: return
graph.parameter @q : tensor<2x2x8x4xf32> init(normal, 2.000000e-02) hf "q"
graph.parameter @k : tensor<2x2x8x4xf32> init(normal, 2.000000e-02) hf "k"
graph.parameter @v : tensor<2x2x8x4xf32> init(normal, 2.000000e-02) hf "v"
graph.parameter @mask : tensor<2x8xf32> init(zeros) hf "mask"
graph.variable @ids : tensor<2x8xi32> init(zeros) hf "ids"
graph.variable @keys : tensor<2x8x2xi32> init(zeros) hf "keys"
func.func @forward(%seed: i64, %offset: index) -> tensor<f32> {
  %c1 = arith.constant 1 : index
  %q = graph.parameter_ref @q : tensor<2x2x8x4xf32>
  %k = graph.parameter_ref @k : tensor<2x2x8x4xf32>
  %v = graph.parameter_ref @v : tensor<2x2x8x4xf32>
  %mask = graph.parameter_ref @mask : tensor<2x8xf32>
  %ids = graph.parameter_ref @ids : tensor<2x8xi32>
  %keys = graph.parameter_ref @keys : tensor<2x8x2xi32>
  %o, %lse = graph.attention %q, %k, %v, %mask, %seed, %c1, %offset sequences %ids keys %keys {probability = 1.000000e-01 : f64, purpose = "attention.probs", scale = 5.000000e-01 : f64} : tensor<2x2x8x4xf32>, tensor<2x8xf32>, tensor<2x8xi32> keys tensor<2x8x2xi32> -> tensor<2x2x8xf32>
  %h = graph.reshape %o : tensor<2x2x8x4xf32> -> tensor<2x8x8xf32>
  %d = graph.dropout %h, %seed, %c1, %offset keys %keys {probability = 1.000000e-01 : f64, purpose = "attention.output"} : tensor<2x8x8xf32> keys tensor<2x8x2xi32>
  %r = graph.reduce sum_squares %d dims [0, 1, 2] : tensor<2x8x8xf32> -> tensor<f32>
  return %r : tensor<f32>
}
