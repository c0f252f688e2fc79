// RUN: ferry-opt %s --split-input-file --verify-diagnostics

// Each verifier error of the losses over split classes
// (GraphClassSplitOps.td) and of a vocabulary-parallel embedding's stride.

// Tests that the stride is this rank's classes.
func.func @f(%l: tensor<2x8xf32>) {
  // expected-error @+1 {{tensor_class_stride 4 must equal the logits' last dimension 8 (every rank holds as many classes)}}
  %m = graph.class_max %l classes 13 stride 4 : tensor<2x8xf32> -> tensor<2xf32>
  return
}

// -----

// Tests that the classes are at least 1 and at most 2^24 (float indices).
func.func @f(%l: tensor<2x8xf32>) {
  // expected-error @+1 {{classes 0 must be in [1, 16777216]}}
  %m = graph.class_max %l classes 0 stride 8 : tensor<2x8xf32> -> tensor<2xf32>
  return
}

// -----

// Tests that the logits are not a scalar.
func.func @f(%l: tensor<f32>) {
  // expected-error @+1 {{expects logits [..., classes], found a scalar}}
  %m = graph.class_max %l classes 1 stride 1 : tensor<f32> -> tensor<f32>
  return
}

// -----

// Tests class_max's result shape.
func.func @f(%l: tensor<2x8xf32>) {
  // expected-error @+1 {{expects result of shape 2 (the logits without the class dimension), found 8}}
  %m = graph.class_max %l classes 13 stride 8 : tensor<2x8xf32> -> tensor<8xf32>
  return
}

// -----

// Tests class_stats' labels.
func.func @f(%l: tensor<2x8xf32>, %y: tensor<3xi32>, %m: tensor<2xf32>) {
  // expected-error @+1 {{expects labels of shape 2 (the logits without the class dimension), found 3}}
  %s = graph.class_stats %l, %y, %m classes 13 stride 8 : tensor<2x8xf32>, tensor<3xi32>, tensor<2xf32> -> tensor<2x2xf32>
  return
}

// -----

// Tests class_stats' result: a sum and a target logit a row.
func.func @f(%l: tensor<2x8xf32>, %y: tensor<2xi32>, %m: tensor<2xf32>) {
  // expected-error @+1 {{expects result of shape 2x2 (a sum and a target logit a row), found 2x3}}
  %s = graph.class_stats %l, %y, %m classes 13 stride 8 : tensor<2x8xf32>, tensor<2xi32>, tensor<2xf32> -> tensor<2x3xf32>
  return
}

// -----

// Tests class_stats_grad's incoming gradient.
func.func @f(%l: tensor<2x8xf32>, %y: tensor<2xi32>, %m: tensor<2xf32>, %g: tensor<2xf32>) {
  // expected-error @+1 {{expects grad of shape 2x2 (graph.class_stats's result), found 2}}
  %d = graph.class_stats_grad %l, %y, %m, %g classes 13 stride 8 : tensor<2x8xf32>, tensor<2xi32>, tensor<2xf32>, tensor<2xf32>
  return
}

// -----

// Tests cross_entropy_of_stats' stats.
func.func @f(%s: tensor<2x3xf32>, %m: tensor<2xf32>, %w: tensor<2xf32>) {
  // expected-error @+1 {{expects stats [..., 2] (a sum and a target logit a row), found 2x3}}
  %l = graph.cross_entropy_of_stats %s, %m, %w : tensor<2x3xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<f32>
  return
}

// -----

// Tests cross_entropy_of_stats' weights.
func.func @f(%s: tensor<2x2xf32>, %m: tensor<2xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{expects weights of shape 2 (the stats without their last dimension), found 4}}
  %l = graph.cross_entropy_of_stats %s, %m, %w : tensor<2x2xf32>, tensor<2xf32>, tensor<4xf32> -> tensor<f32>
  return
}

// -----

// Tests cross_entropy_of_stats_grad's weights.
func.func @f(%s: tensor<2x2xf32>, %w: tensor<3xf32>, %g: tensor<f32>) {
  // expected-error @+1 {{expects weights of shape 2 (the stats without their last dimension), found 3}}
  %d = graph.cross_entropy_of_stats_grad %s, %w, %g : tensor<2x2xf32>, tensor<3xf32>, tensor<f32>
  return
}

// -----

// Tests class_argmax's row maxima.
func.func @f(%l: tensor<2x8xf32>, %m: tensor<3xf32>) {
  // expected-error @+1 {{expects row_max of shape 2 (the logits without the class dimension), found 3}}
  %a = graph.class_argmax %l, %m classes 13 stride 8 : tensor<2x8xf32>, tensor<3xf32> -> tensor<2xf32>
  return
}

// -----

// Tests index_correct's labels.
func.func @f(%a: tensor<2xf32>, %y: tensor<3xi32>, %w: tensor<2xf32>) {
  // expected-error @+1 {{expects labels of shape 2 (as negated_index), found 3}}
  %c = graph.index_correct %a, %y, %w classes 13 : tensor<2xf32>, tensor<3xi32>, tensor<2xf32> -> tensor<f32>
  return
}

// -----

// Tests that a vocabulary-parallel embedding's stride is its table's rows.
func.func @f(%t: tensor<8x4xf32>, %ids: tensor<3xi32>) {
  // expected-error @+1 {{tensor_row_stride 16 must equal the table's rows 8 (every rank holds as many rows)}}
  %e = graph.embedding %t[%ids] {tensor_row_stride = 16 : i64} : tensor<8x4xf32>, tensor<3xi32> -> tensor<3x4xf32>
  return
}

// -----

// The same for its gradient.
func.func @f(%g: tensor<3x4xf32>, %ids: tensor<3xi32>) {
  // expected-error @+1 {{tensor_row_stride 4 must equal the table's rows 8 (every rank holds as many rows)}}
  %d = graph.embedding_grad %g[%ids] {tensor_row_stride = 4 : i64} : tensor<3x4xf32>, tensor<3xi32> -> tensor<8x4xf32>
  return
}
