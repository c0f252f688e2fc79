// RUN: ferry-opt %s --ferry-autodiff | FileCheck %s

// Tests ferry-autodiff's rule for graph.attention: one graph.attention_grad
// from the forward's operands, its result and its row logsumexp (the
// probabilities are recomputed, never stored), with the same dropout key,
// scale and attributes; query, key and value get its three gradients, the
// mask none.
// CHECK-LABEL: module {
// CHECK-NOT: @grad.mask
// CHECK-LABEL: func.func @forward_grad(
// CHECK: [[Q:%.*]] = graph.parameter_ref @q
// CHECK: [[K:%.*]] = graph.parameter_ref @k
// CHECK: [[V:%.*]] = graph.parameter_ref @v
// CHECK: [[M:%.*]] = graph.parameter_ref @mask
// CHECK: [[O:%[a-z_0-9]+]], [[LSE:%[a-z_0-9]+]] = graph.attention [[Q]], [[K]], [[V]], [[M]], %arg0, [[L:%.*]], %arg1 {probability = 1.000000e-01 : f64, purpose = "attention.probs", scale = 5.000000e-01 : f64}
// CHECK: [[DO:%.*]] = graph.mul
// The row logsumexp's gradient is zeros, which nothing reads (the clean-up
// after the training passes removes it).
// CHECK-NEXT: arith.constant dense<0.000000e+00> : tensor<2x2x8xf32>
// CHECK-NEXT: [[DQ:%[a-z_0-9]+]], [[DK:%[a-z_0-9]+]], [[DV:%[a-z_0-9]+]] = graph.attention_grad [[Q]], [[K]], [[V]], [[M]], [[O]], [[LSE]], [[DO]], %arg0, [[L]], %arg1 {probability = 1.000000e-01 : f64, purpose = "attention.probs", scale = 5.000000e-01 : f64} : tensor<2x2x8x4xf32>, tensor<2x8xf32> -> tensor<2x2x8xf32>
// CHECK-DAG: graph.accumulate [[DQ]] into @grad.q
// CHECK-DAG: graph.accumulate [[DK]] into @grad.k
// CHECK-DAG: graph.accumulate [[DV]] into @grad.v
// CHECK-NOT: graph.softmax
// CHECK: return
graph.parameter @q : tensor<2x2x8x4xf32> init(normal, 2.000000e-02) hf "q"
graph.parameter @k : tensor<2x2x8x4xf32> init(normal, 2.000000e-02) hf "k"
graph.parameter @v : tensor<2x2x8x4xf32> init(normal, 2.000000e-02) hf "v"
graph.parameter @mask : tensor<2x8xf32> init(zeros) hf "mask"
func.func @forward(%seed: i64, %offset: index) -> tensor<f32> {
  %c1 = arith.constant 1 : index
  %q = graph.parameter_ref @q : tensor<2x2x8x4xf32>
  %k = graph.parameter_ref @k : tensor<2x2x8x4xf32>
  %v = graph.parameter_ref @v : tensor<2x2x8x4xf32>
  %mask = graph.parameter_ref @mask : tensor<2x8xf32>
  %o, %lse = graph.attention %q, %k, %v, %mask, %seed, %c1, %offset {probability = 1.000000e-01 : f64, purpose = "attention.probs", scale = 5.000000e-01 : f64} : tensor<2x2x8x4xf32>, tensor<2x8xf32> -> tensor<2x2x8xf32>
  %r = graph.reduce sum_squares %o dims [0, 1, 2, 3] : tensor<2x2x8x4xf32> -> tensor<f32>
  return %r : tensor<f32>
}
