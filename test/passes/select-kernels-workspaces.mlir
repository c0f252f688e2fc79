// RUN: ferry-opt %s --split-input-file --ferry-select-kernels='programs=forward matmul-precision=bf16' | FileCheck %s
// RUN: ferry-opt %s --split-input-file --ferry-select-kernels='programs=forward' | FileCheck %s --check-prefix=FP32

// Tests the kernels ferry-select-kernels gives a planned workspace, and the
// fused attention's parameters.

// graph.attention and graph.attention_grad: operands q, k, v, mask, out,
// lse and q, k, v, mask, out, lse, dout, dq, dk, dv, workspace (the rows);
// ints batch, heads, seq, head_dim, seed, purpose hash, layer, sample
// offset, precision, sequence_major with the layer and offset from register
// r0; floats scale, p. The gradient's workspace holds a float per query row
// (2 * 2 * 8 * 4 bytes). bf16 GEMMs make the products bf16 (precision 1),
// fp32 ones fp32.
// CHECK: %dq = rt.state_ref @dq
// CHECK-NEXT: %[[T5:.*]] = rt.alloc size 512
// CHECK-NEXT: %[[T6:.*]] = rt.alloc size 128
// CHECK-NEXT: %[[T7:.*]] = rt.alloc size 512
// CHECK-NEXT: %[[T8:.*]] = rt.alloc size 512
// CHECK-NEXT: %[[T9:.*]] = rt.alloc size 512
// CHECK-NEXT: %[[T10:.*]] = rt.alloc size 128 {label = "attention_grad rows"}
// CHECK-NEXT: %[[Q:.*]] = rt.slice %arg.forward.q [0] size 512
// CHECK-NEXT: %[[K:.*]] = rt.slice %arg.forward.q [0] size 512
// CHECK-NEXT: %[[V:.*]] = rt.slice %arg.forward.q [0] size 512
// CHECK-NEXT: %[[M:.*]] = rt.slice %arg.forward.mask [0] size 64
// CHECK-NEXT: %[[O:.*]] = rt.slice %[[T5]] [0] size 512
// CHECK-NEXT: %[[L:.*]] = rt.slice %[[T6]] [0] size 128
// CHECK-NEXT: rt.attention q(%[[Q]]) k(%[[K]]) v(%[[V]]) mask(%[[M]]) out(%[[O]]) lse(%[[L]]) {batch = array<i64: 2>, head_dim = array<i64: 4>, heads = array<i64: 2>, layer = array<i64: 0, 1>, p = 1.000000e-01 : f64, precision = array<i64: 1>, purpose = array<i64: 167089591>, sample_offset = array<i64: 0, 1>, scale = 5.000000e-01 : f64, seed = array<i64: 42>, seq = array<i64: 8>, sequence_major = array<i64: 0>}
// CHECK-NEXT: %[[Q:.*]] = rt.slice %arg.forward.q [0] size 512
// CHECK-NEXT: %[[K:.*]] = rt.slice %arg.forward.q [0] size 512
// CHECK-NEXT: %[[V:.*]] = rt.slice %arg.forward.q [0] size 512
// CHECK-NEXT: %[[M:.*]] = rt.slice %arg.forward.mask [0] size 64
// CHECK-NEXT: %[[O:.*]] = rt.slice %[[T5]] [0] size 512
// CHECK-NEXT: %[[L:.*]] = rt.slice %[[T6]] [0] size 128
// CHECK-NEXT: %[[DO:.*]] = rt.slice %[[T5]] [0] size 512
// CHECK-NEXT: %[[DQ:.*]] = rt.slice %[[T7]] [0] size 512
// CHECK-NEXT: %[[DK:.*]] = rt.slice %[[T8]] [0] size 512
// CHECK-NEXT: %[[DV:.*]] = rt.slice %[[T9]] [0] size 512
// CHECK-NEXT: %[[W:.*]] = rt.slice %[[T10]] [0] size 128
// CHECK-NEXT: rt.attention_grad q(%[[Q]]) k(%[[K]]) v(%[[V]]) mask(%[[M]]) out(%[[O]]) lse(%[[L]]) dout(%[[DO]]) dq(%[[DQ]]) dk(%[[DK]]) dv(%[[DV]]) workspace(%[[W]]) {batch = array<i64: 2>, head_dim = array<i64: 4>, heads = array<i64: 2>, layer = array<i64: 0, 1>, p = 1.000000e-01 : f64, precision = array<i64: 1>, purpose = array<i64: 167089591>, sample_offset = array<i64: 0, 1>, scale = 5.000000e-01 : f64, seed = array<i64: 42>, seq = array<i64: 8>, sequence_major = array<i64: 0>}
// FP32: rt.attention {{.*}} p = 1.000000e-01 : f64, precision = array<i64: 0>, purpose = {{.*}}, sample_offset = array<i64: 0, 1>, scale = 5.000000e-01 : f64, {{.*}}, sequence_major = array<i64: 0>}
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
// CHECK: %output.forward.2 = rt.state_ref @output.forward.2
// CHECK-NEXT: %[[T8:.*]] = rt.alloc size 1024
// CHECK-NEXT: %[[T9:.*]] = rt.alloc size 1792 {label = "embedding_grad sort"}
// CHECK-NEXT: %[[T10:.*]] = rt.alloc size 4
// CHECK-NEXT: %[[T11:.*]] = rt.alloc size 96 {label = "softmax_cross_entropy rows"}
// CHECK-NEXT: %[[T12:.*]] = rt.alloc size 4
// CHECK-NEXT: %[[T13:.*]] = rt.alloc size 96 {label = "argmax_correct rows"}
// CHECK-NEXT: %[[I:.*]] = rt.slice %arg.forward.ids [0] size 256
// CHECK-NEXT: %[[DY:.*]] = rt.slice %arg.forward.dy [0] size 2048
// CHECK-NEXT: %[[DT:.*]] = rt.slice %[[T8]] [0] size 1024
// CHECK-NEXT: %[[W:.*]] = rt.slice %[[T9]] [0] size 1792
// CHECK-NEXT: rt.embedding_grad ids(%[[I]]) dy(%[[DY]]) dtable(%[[DT]]) workspace(%[[W]]) {accumulate = array<i64: 0>, rows = array<i64: 64>, vocab = array<i64: 32>, width = array<i64: 8>}
// CHECK-NEXT: rt.slice
// CHECK-NEXT: rt.slice
// CHECK-NEXT: rt.slice
// CHECK-NEXT: %[[O:.*]] = rt.slice %[[T10]] [0] size 4
// CHECK-NEXT: %[[W:.*]] = rt.slice %[[T11]] [0] size 96
// CHECK-NEXT: rt.softmax_cross_entropy {{.*}} out(%[[O]]) workspace(%[[W]]) {classes = array<i64: 30>, cols = array<i64: 32>, rows = array<i64: 12>}
// CHECK-NEXT: rt.slice
// CHECK-NEXT: rt.slice
// CHECK-NEXT: rt.slice
// CHECK-NEXT: %[[O:.*]] = rt.slice %[[T12]] [0] size 4
// CHECK-NEXT: %[[W:.*]] = rt.slice %[[T13]] [0] size 96
// CHECK-NEXT: rt.argmax_correct {{.*}} out(%[[O]]) workspace(%[[W]]) {classes = array<i64: 30>, cols = array<i64: 32>, rows = array<i64: 12>}
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
// CHECK: rt.attention {{.*}} {batch = array<i64: 2>, head_dim = array<i64: 4>, heads = array<i64: 3>, {{.*}}, p = 0.000000e+00 : f64, {{.*}}, scale = 5.000000e-01 : f64, {{.*}}, seq = array<i64: 8>, sequence_major = array<i64: 1>}
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
// CHECK: %[[T:.*]] = rt.alloc size 48 {label = "layer_norm_grad rows"}
// CHECK: %[[W:.*]] = rt.slice %[[T]] [0] size 48
// CHECK-NEXT: rt.layer_norm_grad {{.*}} workspace(%[[W]]) {cols = array<i64: 4>, eps = {{.*}}, rows = array<i64: 6>}
module {
  func.func @forward(%x: tensor<2x3x4xf32> {graph.input = "x"}, %s: tensor<4xf32> {graph.input = "s"}, %dy: tensor<2x3x4xf32> {graph.input = "dy"}) -> (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %dx, %ds, %db = graph.layer_norm_grad %x, %s, %dy eps 9.9999999999999998E-13 : tensor<2x3x4xf32>, tensor<4xf32>
    return %dx, %ds, %db : tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}
