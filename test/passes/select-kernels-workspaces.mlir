// RUN: ferry-opt %s --split-input-file --ferry-select-kernels='programs=forward matmul-precision=bf16' | FileCheck %s
// RUN: ferry-opt %s --split-input-file --ferry-select-kernels='programs=forward' | FileCheck %s --check-prefix=FP32

// Tests the kernels ferry-select-kernels gives a planned workspace, and the
// fused attention's parameters.

// graph.attention and graph.attention_grad: buffers [q, k, v, mask, out,
// lse] and [q, k, v, mask, out, lse, dout, dq, dk, dv, rows]; ints [batch,
// heads, seq, head_dim, seed, purpose hash, layer, sample offset,
// precision, sequence_major] with the layer and offset from register r0;
// floats [scale, p]. The gradient's workspace holds a float per query row (2 * 2 * 8 * 4
// bytes). bf16 GEMMs make the products bf16 (precision 1), fp32 ones fp32.
// CHECK: rt.buffer 10 size 128 {label = "attention_grad rows"}
// CHECK: rt.call "attention" buffers [array<i64: 0, 512, 0>, array<i64: 0, 512, 0>, array<i64: 0, 512, 0>, array<i64: 1, 64, 0>, array<i64: 5, 512, 0>, array<i64: 6, 128, 0>] ints [array<i64: 2>, array<i64: 2>, array<i64: 8>, array<i64: 4>, array<i64: 42>, array<i64: 167089591>, array<i64: 0, 1>, array<i64: 0, 1>, array<i64: 1>, array<i64: 0>] floats [5.000000e-01, 1.000000e-01]
// CHECK-NEXT: rt.call "attention_grad" buffers [array<i64: 0, 512, 0>, array<i64: 0, 512, 0>, array<i64: 0, 512, 0>, array<i64: 1, 64, 0>, array<i64: 5, 512, 0>, array<i64: 6, 128, 0>, array<i64: 5, 512, 0>, array<i64: 7, 512, 0>, array<i64: 8, 512, 0>, array<i64: 9, 512, 0>, array<i64: 10, 128, 0>] ints [array<i64: 2>, array<i64: 2>, array<i64: 8>, array<i64: 4>, array<i64: 42>, array<i64: 167089591>, array<i64: 0, 1>, array<i64: 0, 1>, array<i64: 1>, array<i64: 0>] floats [5.000000e-01, 1.000000e-01]
// FP32: rt.call "attention" {{.*}} array<i64: 0, 1>, array<i64: 0>, array<i64: 0>] floats [5.000000e-01, 1.000000e-01]
module {
  graph.variable @dq : tensor<2x2x8x4xf32> init(zeros) hf "dq"
  func.func @forward(%q: tensor<2x2x8x4xf32> {graph.input = "q"}, %m: tensor<2x8xf32> {graph.input = "mask"}, %ids: tensor<16xi32> {graph.input = "ids"}, %step: index {graph.input = "step"}) -> tensor<2x2x8x4xf32> {
    %seed = arith.constant 42 : i64
    %o, %lse = graph.attention %q, %q, %q, %m, %seed, %step, %step {probability = 1.000000e-01 : f64, purpose = "attention.probs", scale = 5.000000e-01 : f64} : tensor<2x2x8x4xf32>, tensor<2x8xf32> -> tensor<2x2x8xf32>
    %dq, %dk, %dv = graph.attention_grad %q, %q, %q, %m, %o, %lse, %o, %seed, %step, %step {probability = 1.000000e-01 : f64, purpose = "attention.probs", scale = 5.000000e-01 : f64} : tensor<2x2x8x4xf32>, tensor<2x8xf32> -> tensor<2x2x8xf32>
    graph.store %dq into @dq : tensor<2x2x8x4xf32>
    return %dv : tensor<2x2x8x4xf32>
  }
}

// -----

// The sums the CUDA backend adds in a fixed order: embedding_grad's stable
// sort of its 64 ids (4 * (3 * 64 + 256) bytes), and a double per row for
// the loss and the accuracy count (12 rows: 96 bytes).
// CHECK: rt.buffer 9 size 1792 {label = "embedding_grad sort"}
// CHECK: rt.buffer 11 size 96 {label = "softmax_cross_entropy rows"}
// CHECK: rt.buffer 13 size 96 {label = "argmax_correct rows"}
// CHECK: rt.call "embedding_grad" buffers [array<i64: 1, 256, 0>, array<i64: 0, 2048, 0>, array<i64: 8, 1024, 0>, array<i64: 9, 1792, 0>] ints [array<i64: 64>, array<i64: 8>, array<i64: 32>, array<i64: 0>]
// CHECK-NEXT: rt.call "softmax_cross_entropy" buffers [{{.*}}, array<i64: 10, 4, 0>, array<i64: 11, 96, 0>] ints [array<i64: 12>, array<i64: 32>, array<i64: 30>]
// CHECK-NEXT: rt.call "argmax_correct" buffers [{{.*}}, array<i64: 12, 4, 0>, array<i64: 13, 96, 0>] ints [array<i64: 12>, array<i64: 32>, array<i64: 30>]
module {
  func.func @forward(%dy: tensor<4x16x8xf32> {graph.input = "dy"}, %ids: tensor<4x16xi32> {graph.input = "ids"}, %logits: tensor<4x3x32xf32> {graph.input = "logits"}, %labels: tensor<4x3xi32> {graph.input = "labels"}, %w: tensor<4x3xf32> {graph.input = "w"}) -> (tensor<32x8xf32>, tensor<f32>, tensor<f32>) {
    %0 = graph.embedding_grad %dy[%ids] : tensor<4x16x8xf32>, tensor<4x16xi32> -> tensor<32x8xf32>
    %ce = graph.softmax_cross_entropy %logits, %labels, %w classes 30 : tensor<4x3x32xf32>, tensor<4x3xi32>, tensor<4x3xf32> -> tensor<f32>
    %ac = graph.argmax_correct %logits, %labels, %w classes 30 : tensor<4x3x32xf32>, tensor<4x3xi32>, tensor<4x3xf32> -> tensor<f32>
    return %0, %ce, %ac : tensor<32x8xf32>, tensor<f32>, tensor<f32>
  }
}

// -----

// Sequence-major attention: heads and seq read from dimensions 2 and 1,
// and the layout flag 1.
// CHECK: rt.call "attention" buffers {{.*}} ints [array<i64: 2>, array<i64: 3>, array<i64: 8>, array<i64: 4>, {{.*}}, array<i64: 1>] floats [5.000000e-01, 0.000000e+00]
module {
  func.func @forward(%q: tensor<2x8x3x4xf32> {graph.input = "q"}, %m: tensor<2x8xf32> {graph.input = "mask"}) -> tensor<2x8x3x4xf32> {
    %seed = arith.constant 0 : i64
    %c0 = arith.constant 0 : index
    %o, %lse = graph.attention %q, %q, %q, %m, %seed, %c0, %c0 {probability = 0.000000e+00 : f64, purpose = "attention.probs", scale = 5.000000e-01 : f64, sequence_major} : tensor<2x8x3x4xf32>, tensor<2x8xf32> -> tensor<2x3x8xf32>
    return %o : tensor<2x8x3x4xf32>
  }
}

// -----

// layer_norm_grad: each row's mean and reciprocal deviation for the CUDA
// column pass, planned (6 rows: 2 floats each, 48 bytes) so that no kernel
// allocates and a step can be captured as a CUDA graph.
// CHECK: rt.buffer {{[0-9]+}} size 48 {label = "layer_norm_grad rows"}
// CHECK: rt.call "layer_norm_grad" buffers [{{.*}}, array<i64: {{[0-9]+}}, 48, 0>] ints [array<i64: 6>, array<i64: 4>]
module {
  func.func @forward(%x: tensor<2x3x4xf32> {graph.input = "x"}, %s: tensor<4xf32> {graph.input = "s"}, %dy: tensor<2x3x4xf32> {graph.input = "dy"}) -> (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %dx, %ds, %db = graph.layer_norm_grad %x, %s, %dy eps 9.9999999999999998E-13 : tensor<2x3x4xf32>, tensor<4xf32>
    return %dx, %ds, %db : tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}
