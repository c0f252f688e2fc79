// RUN: ferry-opt %s --ferry-partition-tensors | FileCheck %s

// Tests ferry-partition-tensors' vocabulary-parallel rules at T = 2 on a
// word embedding of 16 rows (13 real classes, 3 padded) tied to an MLM
// head:
// * the lookup in the split table takes tensor_row_stride = 8 (this rank's
//   rows start at id rank x 8) and is all-reduced at once (g), so what
//   follows is replicated;
// * the head's matmul by the table is column-parallel (f on its input, the
//   logits split along their classes), and the split decoder bias adds to
//   this rank's classes;
// * the cross-entropy becomes the rows' maxima (one class_max, one max
//   all-reduce, shared with the metric), each rank's class_stats summed
//   over the group, and cross_entropy_of_stats; the metric becomes
//   class_argmax, a max all-reduce and index_correct. No op gathers the
//   logits.

// CHECK: graph.parameter @word : tensor<8x4xf32> {{.*}} sharding <split = 0>
// CHECK: graph.parameter @decoder.bias : tensor<8xf32> {{.*}} sharding <split = 0>
// CHECK-LABEL: func.func @forward(
// CHECK: %[[W:.*]] = graph.parameter_ref @word : tensor<8x4xf32>
// CHECK: %[[B:.*]] = graph.parameter_ref @decoder.bias : tensor<8xf32>
// CHECK: %[[E:.*]] = graph.embedding %[[W]][%{{.*}}] {tensor_row_stride = 8 : i64} : tensor<8x4xf32>, tensor<2x3xi32> -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[G:.*]] = graph.all_reduce %[[E]] replicas 2 over tensor : tensor<2x3x4xf32>
// CHECK-NEXT: %[[H:.*]] = graph.gelu %[[G]] : tensor<2x3x4xf32>
// CHECK-NEXT: %[[F:.*]] = graph.copy_to_group %[[H]] replicas 2 over tensor : tensor<2x3x4xf32>
// CHECK-NEXT: %[[L:.*]] = graph.matmul %[[F]], %[[W]] {transpose_rhs} : tensor<2x3x4xf32>, tensor<8x4xf32> -> tensor<2x3x8xf32>
// CHECK-NEXT: %[[LOGITS:.*]] = graph.bias_add %[[L]], %[[B]] : tensor<2x3x8xf32>, tensor<8xf32>
// CHECK-NEXT: %[[LM:.*]] = graph.class_max %[[LOGITS]] classes 13 stride 8 : tensor<2x3x8xf32> -> tensor<2x3xf32>
// CHECK-NEXT: %[[M:.*]] = graph.all_reduce %[[LM]] replicas 2 over tensor reduction max : tensor<2x3xf32>
// CHECK-NEXT: %[[S:.*]] = graph.class_stats %[[LOGITS]], %{{.*}}, %[[M]] classes 13 stride 8 : tensor<2x3x8xf32>, tensor<2x3xi32>, tensor<2x3xf32> -> tensor<2x3x2xf32>
// CHECK-NEXT: %[[SUMS:.*]] = graph.all_reduce %[[S]] replicas 2 over tensor : tensor<2x3x2xf32>
// CHECK-NEXT: %[[LOSS:.*]] = graph.cross_entropy_of_stats %[[SUMS]], %[[M]], %{{.*}} : tensor<2x3x2xf32>, tensor<2x3xf32>, tensor<2x3xf32> -> tensor<f32>
// CHECK-NEXT: %[[A:.*]] = graph.class_argmax %[[LOGITS]], %[[M]] classes 13 stride 8 : tensor<2x3x8xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT: %[[LOWEST:.*]] = graph.all_reduce %[[A]] replicas 2 over tensor reduction max : tensor<2x3xf32>
// CHECK-NEXT: %[[C:.*]] = graph.index_correct %[[LOWEST]], %{{.*}}, %{{.*}} classes 13 : tensor<2x3xf32>, tensor<2x3xi32>, tensor<2x3xf32> -> tensor<f32>
// CHECK-NEXT: return %[[LOSS]], %[[C]] : tensor<f32>, tensor<f32>
// CHECK-NOT: graph.softmax_cross_entropy
// CHECK-NOT: graph.argmax_correct
// CHECK-NOT: graph.all_gather
module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 1>} {
  graph.parameter @word : tensor<16x4xf32> init(normal, 2.000000e-02) hf "word" sharding <split = 0>
  graph.parameter @decoder.bias : tensor<16xf32> init(zeros) hf "decoder.bias" sharding <split = 0>
  func.func @forward(%ids: tensor<2x3xi32> {graph.input = "ids"}, %labels: tensor<2x3xi32> {graph.input = "labels"}, %weights: tensor<2x3xf32> {graph.input = "weights"}) -> (tensor<f32>, tensor<f32>) attributes {graph.entry = "forward"} {
    %w = graph.parameter_ref @word : tensor<16x4xf32>
    %b = graph.parameter_ref @decoder.bias : tensor<16xf32>
    %e = graph.embedding %w[%ids] : tensor<16x4xf32>, tensor<2x3xi32> -> tensor<2x3x4xf32>
    %h = graph.gelu %e : tensor<2x3x4xf32>
    %l = graph.matmul %h, %w {transpose_rhs} : tensor<2x3x4xf32>, tensor<16x4xf32> -> tensor<2x3x16xf32>
    %logits = graph.bias_add %l, %b : tensor<2x3x16xf32>, tensor<16xf32>
    %loss = graph.softmax_cross_entropy %logits, %labels, %weights classes 13 : tensor<2x3x16xf32>, tensor<2x3xi32>, tensor<2x3xf32> -> tensor<f32>
    %c = graph.argmax_correct %logits, %labels, %weights classes 13 : tensor<2x3x16xf32>, tensor<2x3xi32>, tensor<2x3xf32> -> tensor<f32>
    return %loss, %c : tensor<f32>, tensor<f32>
  }
}
