// RUN: ferry-opt %s --ferry-select-kernels='programs=forward' | FileCheck %s

// Tests ferry-select-kernels on dropouts of a tensor-parallel rank's part
// of each sample (tensor_key_stride, set by ferry-partition-tensors): the
// dropout, softmax_dropout, dropout_softmax_grad, attention and
// attention_grad kernels carry it; the plain dropout's optional integers
// before it (packed rows' key layout and row length) read 0.
// CHECK-LABEL: rt.program @forward
// CHECK: rt.dropout x(%{{.*}}) out(%{{.*}}) {count = array<i64: 32>, key_layout = array<i64: 0>, key_seq = array<i64: 0>, layer = array<i64: 0, 1>, p = 1.000000e-01 : f64, per_sample = array<i64: 16>, purpose = {{.*}}, sample_offset = array<i64: 0, 1>, seed = array<i64: 42>, tensor_key_stride = array<i64: 16>}
// CHECK: rt.softmax_dropout {{.*}} tensor_key_stride = array<i64: 16>}
// CHECK: rt.dropout_softmax_grad {{.*}} tensor_key_stride = array<i64: 16>}
// CHECK: rt.attention {{.*}} sequence_major = array<i64: 0>, tensor_key_stride = array<i64: 16>}
// CHECK: rt.attention_grad {{.*}} sequence_major = array<i64: 0>, tensor_key_stride = array<i64: 16>}
module {
  func.func @forward(%x: tensor<2x1x4x4xf32> {graph.input = "x"}, %q: tensor<2x1x4x2xf32> {graph.input = "q"}, %m: tensor<2x4xf32> {graph.input = "mask"}, %step: index {graph.input = "step"}) -> (tensor<2x1x4x4xf32>, tensor<2x1x4x4xf32>, tensor<2x1x4x2xf32>) {
    %seed = arith.constant 42 : i64
    %d = graph.dropout %x, %seed, %step, %step {probability = 1.000000e-01 : f64, purpose = "attention.probs", tensor_key_stride = 16 : i64} : tensor<2x1x4x4xf32>
    %p, %pd = graph.softmax_dropout %d, %m, %seed, %step, %step {probability = 1.000000e-01 : f64, purpose = "attention.probs", tensor_key_stride = 16 : i64} : tensor<2x1x4x4xf32>, tensor<2x4xf32>
    %g = graph.dropout_softmax_grad %p, %pd, %seed, %step, %step {probability = 1.000000e-01 : f64, purpose = "attention.probs", tensor_key_stride = 16 : i64} : tensor<2x1x4x4xf32>
    %o, %lse = graph.attention %q, %q, %q, %m, %seed, %step, %step {probability = 1.000000e-01 : f64, purpose = "attention.probs", scale = 5.000000e-01 : f64, tensor_key_stride = 16 : i64} : tensor<2x1x4x2xf32>, tensor<2x4xf32> -> tensor<2x1x4xf32>
    %dq, %dk, %dv = graph.attention_grad %q, %q, %q, %m, %o, %lse, %o, %seed, %step, %step {probability = 1.000000e-01 : f64, purpose = "attention.probs", scale = 5.000000e-01 : f64, tensor_key_stride = 16 : i64} : tensor<2x1x4x2xf32>, tensor<2x4xf32> -> tensor<2x1x4xf32>
    return %g, %pd, %dv : tensor<2x1x4x4xf32>, tensor<2x1x4x4xf32>, tensor<2x1x4x2xf32>
  }
}
