// RUN: ferry-opt %s --split-input-file --verify-diagnostics

// Tests that normal initialisation needs a floating-point type.
// expected-error @+1 {{normal initialisation needs a floating-point type, found 'i32'}}
graph.variable @count : tensor<4xi32> init(normal, 2.000000e-02) hf "count"

// -----

// Tests that normal initialisation needs a standard deviation.
// expected-error @+1 {{normal initialisation needs a positive, finite standard deviation}}
graph.parameter @w : tensor<4x4xf32> init(normal) hf "w"

// -----

// Tests that the standard deviation must be positive.
// expected-error @+1 {{normal initialisation needs a positive, finite standard deviation}}
graph.parameter @w : tensor<4x4xf32> init(normal, -1.000000e+00) hf "w"

// -----

// Tests that the standard deviation must be finite.
// expected-error @+1 {{normal initialisation needs a positive, finite standard deviation}}
graph.parameter @w : tensor<4x4xf32> init(normal, 0x7FF0000000000000) hf "w"

// -----

// Tests that zeros and ones take no standard deviation.
// expected-error @+1 {{init(zeros) takes no standard deviation}}
graph.parameter @b : tensor<4xf32> init(zeros, 2.000000e-02) hf "b"

// -----

// Tests that the hf name must not be empty.
// expected-error @+1 {{needs a non-empty hf name}}
graph.parameter @b : tensor<4xf32> init(zeros) hf ""

// -----

// Tests that a scalar cannot be stacked.
// expected-error @+1 {{a scalar cannot be stacked}}
graph.variable @s : tensor<f32> init(zeros) hf "s.{}" stacked

// -----

// Tests that a stacked declaration needs a '{}' in its hf name.
// expected-error @+1 {{is stacked, so its hf name needs exactly one '{}' where the layer number goes, found "bert.encoder.layer.attention.self.query.weight"}}
graph.parameter @q : tensor<2x4x4xf32> init(normal, 2.000000e-02) hf "bert.encoder.layer.attention.self.query.weight" stacked

// -----

// Tests that an unstacked declaration has no '{}' in its hf name.
// expected-error @+1 {{has a '{}' layer placeholder but the declaration is not stacked}}
graph.parameter @q : tensor<4x4xf32> init(normal, 2.000000e-02) hf "bert.encoder.layer.{}.attention.self.query.weight"

// -----

// Tests that declarations live at module level.
func.func @f() {
  // expected-error @+1 {{expects parent op 'builtin.module'}}
  graph.parameter @w : tensor<4xf32> init(zeros) hf "w"
  return
}

// -----

// Tests that a reference must name a declaration.
func.func @f() -> tensor<4xf32> {
  // expected-error @+1 {{'missing' does not name a graph.parameter or graph.variable}}
  %0 = graph.parameter_ref @missing : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests that one layer's entry of a stacked parameter is read with
// parameter_slice (parameter_ref reads all layers).
graph.parameter @q : tensor<2x4xf32> init(zeros) hf "q.{}" stacked
func.func @f() -> tensor<4xf32> {
  // expected-error @+1 {{'q' is stacked: read one layer's entry with graph.parameter_slice}}
  %0 = graph.parameter_ref @q : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests that parameter_ref's type is the declared type.
graph.parameter @b : tensor<4xf32> init(zeros) hf "b"
func.func @f() -> tensor<8xf32> {
  // expected-error @+1 {{result type 'tensor<8xf32>' differs from the declared type 'tensor<4xf32>'}}
  %0 = graph.parameter_ref @b : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// Tests that parameter_slice needs a stacked declaration.
graph.parameter @b : tensor<4xf32> init(zeros) hf "b"
func.func @f(%l: index) -> tensor<f32> {
  // expected-error @+1 {{'b' is not stacked: read it with graph.parameter_ref}}
  %0 = graph.parameter_slice @b[%l] : tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Tests that parameter_slice drops exactly the layer dimension.
graph.parameter @q : tensor<2x4x8xf32> init(zeros) hf "q.{}" stacked
func.func @f(%l: index) -> tensor<8x4xf32> {
  // expected-error @+1 {{expects result type 'tensor<4x8xf32>' (the declared type without its layer dimension), found 'tensor<8x4xf32>'}}
  %0 = graph.parameter_slice @q[%l] : tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

// Tests that shapes must be static.
// expected-note @+1 {{prior use here}}
func.func @f(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{use of value '%x' expects different type than prior uses}}
  %0 = graph.gelu %x : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Tests that element types are f32, bf16 or f16.
func.func @f(%x: tensor<4xf64>) -> tensor<4xf64> {
  // expected-error @+1 {{must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float values}}
  %0 = graph.gelu %x : tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

// Tests iota's dimension range.
func.func @f() -> tensor<4x8xi32> {
  // expected-error @+1 {{dim 2 is out of range for rank 2}}
  %0 = graph.iota dim 2 : tensor<4x8xi32>
  return %0 : tensor<4x8xi32>
}

// -----

// Tests that the attention mask keeps the input mask's shape.
func.func @f(%m: tensor<4x8xi32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{expects the result to have the input mask's shape 4x8, found 4x16}}
  %0 = graph.attention_mask %m fill -1.000000e+04 : tensor<4x8xi32> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// Tests that the attention mask's fill is negative.
func.func @f(%m: tensor<4x8xi32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{fill must be negative and finite to hide padded keys, found 1}}
  %0 = graph.attention_mask %m fill 1.000000e+00 : tensor<4x8xi32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Tests that an embedding table has rank 2.
func.func @f(%t: tensor<2x32x8xf32>, %ids: tensor<4xi32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{expects a [rows, width] table, found shape 2x32x8}}
  %0 = graph.embedding %t[%ids] : tensor<2x32x8xf32>, tensor<4xi32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Tests that an embedding keeps the table's element type.
func.func @f(%t: tensor<32x8xf32>, %ids: tensor<4xi32>) -> tensor<4x8xbf16> {
  // expected-error @+1 {{expects result to have element type 'f32' (as table), found 'bf16'}}
  %0 = graph.embedding %t[%ids] : tensor<32x8xf32>, tensor<4xi32> -> tensor<4x8xbf16>
  return %0 : tensor<4x8xbf16>
}

// -----

// Tests the embedding's result shape: ids shape + row width.
func.func @f(%t: tensor<32x8xf32>, %ids: tensor<4x16xi32>) -> tensor<4x16x16xf32> {
  // expected-error @+1 {{expects result shape 4x16x8, found 4x16x16}}
  %0 = graph.embedding %t[%ids] : tensor<32x8xf32>, tensor<4x16xi32> -> tensor<4x16x16xf32>
  return %0 : tensor<4x16x16xf32>
}

// -----

// Tests that gather_positions takes [batch, seq, hidden].
func.func @f(%h: tensor<16x8xf32>, %p: tensor<4x3xi32>) -> tensor<4x3x8xf32> {
  // expected-error @+1 {{expects input [batch, seq, hidden], found shape 16x8}}
  %0 = graph.gather_positions %h[%p] : tensor<16x8xf32>, tensor<4x3xi32> -> tensor<4x3x8xf32>
  return %0 : tensor<4x3x8xf32>
}

// -----

// Tests that positions are [batch, predictions].
func.func @f(%h: tensor<4x16x8xf32>, %p: tensor<2x3xi32>) -> tensor<4x3x8xf32> {
  // expected-error @+1 {{expects positions [batch = 4, predictions], found shape 2x3}}
  %0 = graph.gather_positions %h[%p] : tensor<4x16x8xf32>, tensor<2x3xi32> -> tensor<4x3x8xf32>
  return %0 : tensor<4x3x8xf32>
}

// -----

// Tests that gather_positions keeps the element type.
func.func @f(%h: tensor<4x16x8xf32>, %p: tensor<4x3xi32>) -> tensor<4x3x8xf16> {
  // expected-error @+1 {{expects result to have element type 'f32' (as input), found 'f16'}}
  %0 = graph.gather_positions %h[%p] : tensor<4x16x8xf32>, tensor<4x3xi32> -> tensor<4x3x8xf16>
  return %0 : tensor<4x3x8xf16>
}

// -----

// Tests gather_positions' result shape.
func.func @f(%h: tensor<4x16x8xf32>, %p: tensor<4x3xi32>) -> tensor<4x16x8xf32> {
  // expected-error @+1 {{expects result shape 4x3x8, found 4x16x8}}
  %0 = graph.gather_positions %h[%p] : tensor<4x16x8xf32>, tensor<4x3xi32> -> tensor<4x16x8xf32>
  return %0 : tensor<4x16x8xf32>
}

// -----

// Tests take's dimension range.
func.func @f(%x: tensor<4x16xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{dim 2 is out of range for rank 2}}
  %0 = graph.take %x dim 2 index 0 : tensor<4x16xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests take's index range.
func.func @f(%x: tensor<4x16xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{index 16 is out of range for dimension 1 of size 16}}
  %0 = graph.take %x dim 1 index 16 : tensor<4x16xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests that take keeps the element type.
func.func @f(%x: tensor<4x16xf32>) -> tensor<4xbf16> {
  // expected-error @+1 {{expects result to have element type 'f32' (as input), found 'bf16'}}
  %0 = graph.take %x dim 1 index 0 : tensor<4x16xf32> -> tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// -----

// Tests take's result shape.
func.func @f(%x: tensor<4x16xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{expects result shape 4, found 16}}
  %0 = graph.take %x dim 1 index 0 : tensor<4x16xf32> -> tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

// Tests that matmul operands have rank 2 or more.
func.func @f(%a: tensor<8xf32>, %b: tensor<8x4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expects operands of rank 2 or more, found 8 and 8x4}}
  %0 = graph.matmul %a, %b : tensor<8xf32>, tensor<8x4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests that matmul operands share an element type.
func.func @f(%a: tensor<2x8xf32>, %b: tensor<8x4xbf16>) -> tensor<2x4xf32> {
  // expected-error @+1 {{expects rhs to have element type 'f32' (as lhs), found 'bf16'}}
  %0 = graph.matmul %a, %b : tensor<2x8xf32>, tensor<8x4xbf16> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// Tests that a batched rhs has lhs's batch dimensions.
func.func @f(%a: tensor<3x2x8xf32>, %b: tensor<5x8x4xf32>) -> tensor<3x2x4xf32> {
  // expected-error @+1 {{expects rhs to have rank 2 (shared) or the batch dimensions of lhs (3), found shape 5x8x4}}
  %0 = graph.matmul %a, %b : tensor<3x2x8xf32>, tensor<5x8x4xf32> -> tensor<3x2x4xf32>
  return %0 : tensor<3x2x4xf32>
}

// -----

// Tests that contraction sizes agree (transpose flags applied).
func.func @f(%x: tensor<4x16x8xf32>, %w: tensor<8x32xf32>) -> tensor<4x16x8xf32> {
  // expected-error @+1 {{contraction sizes differ: lhs has 8, rhs has 32 (lhs 4x16x8, rhs 8x32, rhs transposed)}}
  %0 = graph.matmul %x, %w {transpose_rhs} : tensor<4x16x8xf32>, tensor<8x32xf32> -> tensor<4x16x8xf32>
  return %0 : tensor<4x16x8xf32>
}

// -----

// Tests matmul's result shape.
func.func @f(%x: tensor<4x16x8xf32>, %w: tensor<32x8xf32>) -> tensor<4x32x16xf32> {
  // expected-error @+1 {{expects result shape 4x16x32, found 4x32x16}}
  %0 = graph.matmul %x, %w {transpose_rhs} : tensor<4x16x8xf32>, tensor<32x8xf32> -> tensor<4x32x16xf32>
  return %0 : tensor<4x32x16xf32>
}

// -----

// Tests that a bias matches the last dimension.
func.func @f(%x: tensor<4x16xf32>, %b: tensor<8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{expects a bias of shape 16 (the input's last dimension), found 8}}
  %0 = graph.bias_add %x, %b : tensor<4x16xf32>, tensor<8xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// Tests that a bias has the input's element type.
func.func @f(%x: tensor<4x16xf32>, %b: tensor<16xbf16>) -> tensor<4x16xf32> {
  // expected-error @+1 {{expects bias to have element type 'f32' (as input), found 'bf16'}}
  %0 = graph.bias_add %x, %b : tensor<4x16xf32>, tensor<16xbf16>
  return %0 : tensor<4x16xf32>
}

// -----

// Tests that layer_norm needs a dimension to normalise over.
func.func @f(%x: tensor<f32>, %g: tensor<1xf32>) -> tensor<f32> {
  // expected-error @+1 {{expects an input of rank 1 or more}}
  %0 = graph.layer_norm %x, %g, %g eps 1.000000e-12 : tensor<f32>, tensor<1xf32>
  return %0 : tensor<f32>
}

// -----

// Tests that layer_norm's scale and bias match the last dimension.
func.func @f(%x: tensor<4x16xf32>, %g: tensor<8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{expects scale of shape 16 (the input's last dimension), found 8}}
  %0 = graph.layer_norm %x, %g, %g eps 1.000000e-12 : tensor<4x16xf32>, tensor<8xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// Tests that layer_norm's scale has the input's element type.
func.func @f(%x: tensor<4x16xf32>, %g: tensor<16xf16>) -> tensor<4x16xf32> {
  // expected-error @+1 {{expects scale to have element type 'f32' (as input), found 'f16'}}
  %0 = graph.layer_norm %x, %g, %g eps 1.000000e-12 : tensor<4x16xf32>, tensor<16xf16>
  return %0 : tensor<4x16xf32>
}

// -----

// Tests that layer_norm's epsilon is positive.
func.func @f(%x: tensor<4x16xf32>, %g: tensor<16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{epsilon must be positive and finite, found 0}}
  %0 = graph.layer_norm %x, %g, %g eps 0.000000e+00 : tensor<4x16xf32>, tensor<16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// Tests that softmax needs [batch, ..., keys].
func.func @f(%x: tensor<16xf32>, %m: tensor<1x16xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{expects input [batch, ..., keys], found shape 16}}
  %0 = graph.softmax %x, %m : tensor<16xf32>, tensor<1x16xf32>
  return %0 : tensor<16xf32>
}

// -----

// Tests that the softmax mask is [batch, keys].
func.func @f(%x: tensor<4x2x16x16xf32>, %m: tensor<4x8xf32>) -> tensor<4x2x16x16xf32> {
  // expected-error @+1 {{expects mask [batch = 4, keys = 16], found shape 4x8}}
  %0 = graph.softmax %x, %m : tensor<4x2x16x16xf32>, tensor<4x8xf32>
  return %0 : tensor<4x2x16x16xf32>
}

// -----

// Tests that the softmax mask has the input's element type.
func.func @f(%x: tensor<4x16xf32>, %m: tensor<4x16xbf16>) -> tensor<4x16xf32> {
  // expected-error @+1 {{expects mask to have element type 'f32' (as input), found 'bf16'}}
  %0 = graph.softmax %x, %m : tensor<4x16xf32>, tensor<4x16xbf16>
  return %0 : tensor<4x16xf32>
}

// -----

// Tests that softmax's sequence ids are i32 [batch, keys].
func.func @f(%x: tensor<4x2x16x16xf32>, %m: tensor<4x16xf32>, %ids: tensor<4x8xi32>) -> tensor<4x2x16x16xf32> {
  // expected-error @+1 {{expects sequence_ids i32 [batch = 4, seq = 16], found 'tensor<4x8xi32>'}}
  %0 = graph.softmax %x, %m sequences %ids : tensor<4x2x16x16xf32>, tensor<4x16xf32>, tensor<4x8xi32>
  return %0 : tensor<4x2x16x16xf32>
}

// -----

// Tests that softmax with sequences needs as many queries as keys (each
// query row's sequence is the token at its index).
func.func @f(%x: tensor<4x2x8x16xf32>, %m: tensor<4x16xf32>, %ids: tensor<4x16xi32>) -> tensor<4x2x8x16xf32> {
  // expected-error @+1 {{with sequences expects input [batch, ..., queries, keys] with as many queries as keys, found shape 4x2x8x16}}
  %0 = graph.softmax %x, %m sequences %ids : tensor<4x2x8x16xf32>, tensor<4x16xf32>, tensor<4x16xi32>
  return %0 : tensor<4x2x8x16xf32>
}

// -----

// Tests that dropout keys are [batch, seq, 2].
func.func @f(%x: tensor<4x16x8xf32>, %s: i64, %l: index, %k: tensor<4x16x3xi32>) -> tensor<4x16x8xf32> {
  // expected-error @+1 {{expects dropout_keys i32 [batch = 4, seq, 2], found 'tensor<4x16x3xi32>'}}
  %0 = graph.dropout %x, %s, %l, %l keys %k {probability = 1.000000e-01 : f64, purpose = "p"} : tensor<4x16x8xf32> keys tensor<4x16x3xi32>
  return %0 : tensor<4x16x8xf32>
}

// -----

// Tests that keyed dropout runs over a sample's tokens or its attention
// probabilities.
func.func @f(%x: tensor<4x8x8xf32>, %s: i64, %l: index, %k: tensor<4x16x2xi32>) -> tensor<4x8x8xf32> {
  // expected-error @+1 {{with dropout_keys expects input [batch, seq = 16, ...] or [batch, heads, seq, seq], found shape 4x8x8}}
  %0 = graph.dropout %x, %s, %l, %l keys %k {probability = 1.000000e-01 : f64, purpose = "p"} : tensor<4x8x8xf32> keys tensor<4x16x2xi32>
  return %0 : tensor<4x8x8xf32>
}

// -----

// Tests that the fused softmax-dropout takes keys only with sequences (the
// kernel's buffer order).
func.func @f(%x: tensor<4x2x16x16xf32>, %m: tensor<4x16xf32>, %s: i64, %l: index, %k: tensor<4x16x2xi32>) {
  // expected-error @+1 {{takes dropout_keys only with sequences (packed rows)}}
  %p, %d = graph.softmax_dropout %x, %m, %s, %l, %l keys %k {probability = 1.000000e-01 : f64, purpose = "p"} : tensor<4x2x16x16xf32>, tensor<4x16xf32> keys tensor<4x16x2xi32>
  return
}

// -----

// Tests dropout's probability range.
func.func @f(%x: tensor<4x16xf32>, %s: i64, %l: index) -> tensor<4x16xf32> {
  // expected-error @+1 {{probability must be in [0, 1), found 1}}
  %0 = graph.dropout %x, %s, %l, %l {probability = 1.000000e+00 : f64, purpose = "p"} : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// Tests that dropout's leading dimension is the sample.
func.func @f(%x: tensor<f32>, %s: i64, %l: index) -> tensor<f32> {
  // expected-error @+1 {{expects an input whose leading dimension is the sample, found a scalar}}
  %0 = graph.dropout %x, %s, %l, %l {probability = 1.000000e-01 : f64, purpose = "p"} : tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Tests that dropout names its site.
func.func @f(%x: tensor<4x16xf32>, %s: i64, %l: index) -> tensor<4x16xf32> {
  // expected-error @+1 {{needs a non-empty purpose naming the dropout site}}
  %0 = graph.dropout %x, %s, %l, %l {probability = 1.000000e-01 : f64, purpose = ""} : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// Tests that reshape keeps the element count.
func.func @f(%x: tensor<4x16xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{cannot reshape 4x16 (64 elements) to 4x8 (32 elements)}}
  %0 = graph.reshape %x : tensor<4x16xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Tests that reshape keeps the element type.
func.func @f(%x: tensor<4x16xf32>) -> tensor<64xi32> {
  // expected-error @+1 {{expects result to have element type 'f32' (as input), found 'i32'}}
  %0 = graph.reshape %x : tensor<4x16xf32> -> tensor<64xi32>
  return %0 : tensor<64xi32>
}

// -----

// Tests that transpose takes a permutation.
func.func @f(%x: tensor<4x16x8xf32>) -> tensor<4x16x8xf32> {
  // expected-error @+1 {{permutation [0, 0, 2] is not a permutation of the 3 dimensions of the input}}
  %0 = graph.transpose %x [0, 0, 2] : tensor<4x16x8xf32> -> tensor<4x16x8xf32>
  return %0 : tensor<4x16x8xf32>
}

// -----

// Tests transpose's result shape.
func.func @f(%x: tensor<4x16x8xf32>) -> tensor<4x16x8xf32> {
  // expected-error @+1 {{expects result shape 4x8x16, found 4x16x8}}
  %0 = graph.transpose %x [0, 2, 1] : tensor<4x16x8xf32> -> tensor<4x16x8xf32>
  return %0 : tensor<4x16x8xf32>
}

// -----

// Tests that transpose keeps the element type.
func.func @f(%x: tensor<4x16xf32>) -> tensor<16x4xf16> {
  // expected-error @+1 {{expects result to have element type 'f32' (as input), found 'f16'}}
  %0 = graph.transpose %x [1, 0] : tensor<4x16xf32> -> tensor<16x4xf16>
  return %0 : tensor<16x4xf16>
}

// -----

// Tests that reduction dims are increasing and in range.
func.func @f(%x: tensor<4x16xf32>) -> tensor<f32> {
  // expected-error @+1 {{dims must be increasing and within the input's rank 2, found [1, 0]}}
  %0 = graph.reduce sum %x dims [1, 0] : tensor<4x16xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Tests that a reduction drops the reduced dims.
func.func @f(%x: tensor<4x16xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expects result shape 16, found 4}}
  %0 = graph.reduce mean %x dims [0] : tensor<4x16xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests that a reduction keeps the element type.
func.func @f(%x: tensor<4x16xf32>) -> tensor<bf16> {
  // expected-error @+1 {{expects result to have element type 'f32' (as input), found 'bf16'}}
  %0 = graph.reduce max %x dims [0, 1] : tensor<4x16xf32> -> tensor<bf16>
  return %0 : tensor<bf16>
}

// -----

// Tests that cross-entropy logits have a class dimension.
func.func @f(%x: tensor<f32>, %l: tensor<i32>) -> tensor<f32> {
  // expected-error @+1 {{expects logits [..., classes], found a scalar}}
  %0 = graph.softmax_cross_entropy %x, %l, %x classes 1 : tensor<f32>, tensor<i32>, tensor<f32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Tests that labels are the logits without the class dimension.
func.func @f(%x: tensor<4x3x32xf32>, %l: tensor<4x32xi32>, %w: tensor<4x3xf32>) -> tensor<f32> {
  // expected-error @+1 {{expects labels of shape 4x3 (the logits without the class dimension), found 4x32}}
  %0 = graph.softmax_cross_entropy %x, %l, %w classes 30 : tensor<4x3x32xf32>, tensor<4x32xi32>, tensor<4x3xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Tests that weights have the labels' shape.
func.func @f(%x: tensor<4x3x32xf32>, %l: tensor<4x3xi32>, %w: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{expects weights of shape 4x3 (as labels), found 4}}
  %0 = graph.softmax_cross_entropy %x, %l, %w classes 30 : tensor<4x3x32xf32>, tensor<4x3xi32>, tensor<4xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Tests that the class count fits the logits (padding excluded, never added).
func.func @f(%x: tensor<4x3x32xf32>, %l: tensor<4x3xi32>, %w: tensor<4x3xf32>) -> tensor<f32> {
  // expected-error @+1 {{classes 40 must be in [1, 32] (the logits' last dimension)}}
  %0 = graph.softmax_cross_entropy %x, %l, %w classes 40 : tensor<4x3x32xf32>, tensor<4x3xi32>, tensor<4x3xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Tests that weights have the logits' element type.
func.func @f(%x: tensor<4x3x32xf32>, %l: tensor<4x3xi32>, %w: tensor<4x3xf16>) -> tensor<f32> {
  // expected-error @+1 {{expects weights to have element type 'f32' (as logits), found 'f16'}}
  %0 = graph.softmax_cross_entropy %x, %l, %w classes 30 : tensor<4x3x32xf32>, tensor<4x3xi32>, tensor<4x3xf16> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Tests that a negative dimension is out of range, not wrapped around.
func.func @f(%x: tensor<4x16xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{dim -1 is out of range for rank 2}}
  %0 = graph.take %x dim -1 index 0 : tensor<4x16xf32> -> tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

// Tests that a negative class count is rejected.
func.func @f(%x: tensor<4x32xf32>, %l: tensor<4xi32>, %w: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{classes -3 must be in [1, 32] (the logits' last dimension)}}
  %0 = graph.softmax_cross_entropy %x, %l, %w classes -3 : tensor<4x32xf32>, tensor<4xi32>, tensor<4xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Tests that a bias needs a dimension to add along.
func.func @f(%x: tensor<f32>, %b: tensor<1xf32>) -> tensor<f32> {
  // expected-error @+1 {{expects an input of rank 1 or more, found a scalar}}
  %0 = graph.bias_add %x, %b : tensor<f32>, tensor<1xf32>
  return %0 : tensor<f32>
}

// -----

// Tests that a scale factor is finite.
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{factor must be finite, found INF}}
  %0 = graph.scale %x by 0x7FF0000000000000 : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests that the cross-entropy result has the logits' element type.
func.func @f(%x: tensor<4x32xf32>, %l: tensor<4xi32>, %w: tensor<4xf32>) -> tensor<bf16> {
  // expected-error @+1 {{expects result to have element type 'f32' (as logits), found 'bf16'}}
  %0 = graph.softmax_cross_entropy %x, %l, %w classes 30 : tensor<4x32xf32>, tensor<4xi32>, tensor<4xf32> -> tensor<bf16>
  return %0 : tensor<bf16>
}

// -----

// Tests that layer_norm_grad needs a dimension to normalise over.
func.func @f(%x: tensor<f32>, %g: tensor<1xf32>) -> tensor<f32> {
  // expected-error @+1 {{expects an input of rank >= 1, found a scalar}}
  %dx, %dg, %db = graph.layer_norm_grad %x, %g, %x eps 1.000000e-12 : tensor<f32>, tensor<1xf32>
  return %dx : tensor<f32>
}

// -----

// Tests that layer_norm_grad's scale matches the input's last dimension.
func.func @f(%x: tensor<4x8xf32>, %g: tensor<4xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{expects scale of shape 8 (the input's last dimension), found 4}}
  %dx, %dg, %db = graph.layer_norm_grad %x, %g, %x eps 1.000000e-12 : tensor<4x8xf32>, tensor<4xf32>
  return %dx : tensor<4x8xf32>
}

// -----

// Tests that embedding_grad produces a [rows, width] table.
func.func @f(%dy: tensor<4x8xf32>, %ids: tensor<4xi32>) -> tensor<32xf32> {
  // expected-error @+1 {{expects a [rows, width] result, found shape 32}}
  %0 = graph.embedding_grad %dy[%ids] : tensor<4x8xf32>, tensor<4xi32> -> tensor<32xf32>
  return %0 : tensor<32xf32>
}

// -----

// Tests that embedding_grad's grad has the ids' shape, then the row width.
func.func @f(%dy: tensor<4x6xf32>, %ids: tensor<4xi32>) -> tensor<32x8xf32> {
  // expected-error @+1 {{expects grad of shape 4x8 (the ids' shape, then the row width), found 4x6}}
  %0 = graph.embedding_grad %dy[%ids] : tensor<4x6xf32>, tensor<4xi32> -> tensor<32x8xf32>
  return %0 : tensor<32x8xf32>
}

// -----

// Tests that embedding_grad keeps the grad's element type.
func.func @f(%dy: tensor<4x8xf32>, %ids: tensor<4xi32>) -> tensor<32x8xbf16> {
  // expected-error @+1 {{expects result to have element type 'f32' (as grad), found 'bf16'}}
  %0 = graph.embedding_grad %dy[%ids] : tensor<4x8xf32>, tensor<4xi32> -> tensor<32x8xbf16>
  return %0 : tensor<32x8xbf16>
}

// -----

// Tests that gather_positions_grad produces [batch, seq, hidden] from
// [batch, predictions] positions.
func.func @f(%dm: tensor<4x3x8xf32>, %pos: tensor<2x3xi32>) -> tensor<4x16x8xf32> {
  // expected-error @+1 {{expects a [batch, seq, hidden] result and [batch, predictions] positions, found 4x16x8 and 2x3}}
  %0 = graph.gather_positions_grad %dm[%pos] : tensor<4x3x8xf32>, tensor<2x3xi32> -> tensor<4x16x8xf32>
  return %0 : tensor<4x16x8xf32>
}

// -----

// Tests that gather_positions_grad keeps the grad's element type.
func.func @f(%dm: tensor<4x3x8xf32>, %pos: tensor<4x3xi32>) -> tensor<4x16x8xf16> {
  // expected-error @+1 {{expects result to have element type 'f32' (as grad), found 'f16'}}
  %0 = graph.gather_positions_grad %dm[%pos] : tensor<4x3x8xf32>, tensor<4x3xi32> -> tensor<4x16x8xf16>
  return %0 : tensor<4x16x8xf16>
}

// -----

// Tests gather_positions_grad's grad shape: [batch, predictions, hidden].
func.func @f(%dm: tensor<4x5x8xf32>, %pos: tensor<4x3xi32>) -> tensor<4x16x8xf32> {
  // expected-error @+1 {{expects grad of shape 4x3x8, found 4x5x8}}
  %0 = graph.gather_positions_grad %dm[%pos] : tensor<4x5x8xf32>, tensor<4x3xi32> -> tensor<4x16x8xf32>
  return %0 : tensor<4x16x8xf32>
}

// -----

// Tests take_grad's dimension and index range.
func.func @f(%dc: tensor<4x8xf32>) -> tensor<4x16x8xf32> {
  // expected-error @+1 {{dim 1 index 16 is out of range for the result shape 4x16x8}}
  %0 = graph.take_grad %dc dim 1 index 16 : tensor<4x8xf32> -> tensor<4x16x8xf32>
  return %0 : tensor<4x16x8xf32>
}

// -----

// Tests that take_grad's dimension is not wrapped around when negative.
func.func @f(%dc: tensor<4x8xf32>) -> tensor<4x16x8xf32> {
  // expected-error @+1 {{dim -1 index 0 is out of range for the result shape 4x16x8}}
  %0 = graph.take_grad %dc dim -1 index 0 : tensor<4x8xf32> -> tensor<4x16x8xf32>
  return %0 : tensor<4x16x8xf32>
}

// -----

// Tests take_grad's grad shape: the result without dimension dim.
func.func @f(%dc: tensor<4x16xf32>) -> tensor<4x16x8xf32> {
  // expected-error @+1 {{expects grad of shape 4x8, found 4x16}}
  %0 = graph.take_grad %dc dim 1 index 0 : tensor<4x16xf32> -> tensor<4x16x8xf32>
  return %0 : tensor<4x16x8xf32>
}

// -----

// Tests that take_grad keeps the grad's element type.
func.func @f(%dc: tensor<4x8xf32>) -> tensor<4x16x8xbf16> {
  // expected-error @+1 {{expects result to have element type 'f32' (as grad), found 'bf16'}}
  %0 = graph.take_grad %dc dim 1 index 0 : tensor<4x8xf32> -> tensor<4x16x8xbf16>
  return %0 : tensor<4x16x8xbf16>
}

// -----

// Tests that broadcast dims are increasing and within the result's rank.
func.func @f(%x: tensor<3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{dims must be increasing and within the result's rank 2, found [2]}}
  %0 = graph.broadcast %x dims [2] : tensor<3xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// Tests that broadcast dims are listed once, in increasing order.
func.func @f(%x: tensor<f32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{dims must be increasing and within the result's rank 2, found [1, 0]}}
  %0 = graph.broadcast %x dims [1, 0] : tensor<f32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// Tests that broadcast's input is the result without the inserted dims.
func.func @f(%x: tensor<4xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{expects input of shape 3 (the result without dims [0]), found 4}}
  %0 = graph.broadcast %x dims [0] : tensor<4xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// Tests that broadcast keeps the element type.
func.func @f(%x: tensor<3xf32>) -> tensor<4x3xf16> {
  // expected-error @+1 {{expects result to have element type 'f32' (as input), found 'f16'}}
  %0 = graph.broadcast %x dims [0] : tensor<3xf32> -> tensor<4x3xf16>
  return %0 : tensor<4x3xf16>
}

// -----

// Tests that the cross-entropy gradient's logits have a class dimension.
func.func @f(%x: tensor<f32>, %l: tensor<i32>, %w: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{expects logits [..., classes], found a scalar}}
  %0 = graph.softmax_cross_entropy_grad %x, %l, %w, %w classes 1 : tensor<f32>, tensor<i32>, tensor<f32>, tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Tests that the cross-entropy gradient's labels and weights are the logits
// without the class dimension.
func.func @f(%x: tensor<4x32xf32>, %l: tensor<4xi32>, %w: tensor<5xf32>, %g: tensor<f32>) -> tensor<4x32xf32> {
  // expected-error @+1 {{expects labels and weights of shape 4, found 4 and 5}}
  %0 = graph.softmax_cross_entropy_grad %x, %l, %w, %g classes 30 : tensor<4x32xf32>, tensor<4xi32>, tensor<5xf32>, tensor<f32>
  return %0 : tensor<4x32xf32>
}

// -----

// Tests that the cross-entropy gradient's class count fits the logits.
func.func @f(%x: tensor<4x32xf32>, %l: tensor<4xi32>, %w: tensor<4xf32>, %g: tensor<f32>) -> tensor<4x32xf32> {
  // expected-error @+1 {{classes 33 must be in [1, 32] (the logits' last dimension)}}
  %0 = graph.softmax_cross_entropy_grad %x, %l, %w, %g classes 33 : tensor<4x32xf32>, tensor<4xi32>, tensor<4xf32>, tensor<f32>
  return %0 : tensor<4x32xf32>
}

// -----

// Tests that argmax_correct's logits have a class dimension.
func.func @f(%x: tensor<f32>, %l: tensor<i32>, %w: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{expects logits [..., classes], found a scalar}}
  %0 = graph.argmax_correct %x, %l, %w classes 1 : tensor<f32>, tensor<i32>, tensor<f32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Tests that argmax_correct's labels are the logits without the class
// dimension.
func.func @f(%x: tensor<4x32xf32>, %l: tensor<3xi32>, %w: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{expects labels and weights of shape 4, found 3 and 4}}
  %0 = graph.argmax_correct %x, %l, %w classes 30 : tensor<4x32xf32>, tensor<3xi32>, tensor<4xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Tests that argmax_correct rejects a class count of zero.
func.func @f(%x: tensor<4x32xf32>, %l: tensor<4xi32>, %w: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{classes 0 must be in [1, 32] (the logits' last dimension)}}
  %0 = graph.argmax_correct %x, %l, %w classes 0 : tensor<4x32xf32>, tensor<4xi32>, tensor<4xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Tests that a store names a declaration.
func.func @f(%v: tensor<4xf32>) {
  // expected-error @+1 {{'missing' does not name a graph.parameter or graph.variable}}
  graph.store %v into @missing : tensor<4xf32>
  return
}

// -----

// Tests that an unstacked declaration takes no layer index.
graph.variable @g : tensor<4xf32> init(zeros) hf "g"
func.func @f(%v: tensor<4xf32>, %l: index) {
  // expected-error @+1 {{'g' is not stacked: give no layer index}}
  graph.accumulate %v into @g[%l] : tensor<4xf32>
  return
}

// -----

// Tests that a stored value has the declared type.
graph.variable @g : tensor<4xf32> init(zeros) hf "g"
func.func @f(%v: tensor<8xf32>) {
  // expected-error @+1 {{value type 'tensor<8xf32>' differs from 'tensor<4xf32>'}}
  graph.store %v into @g : tensor<8xf32>
  return
}

// -----

// Tests that an entry stored at a layer index drops the layer dimension.
graph.variable @stash : tensor<2x4xf32> init(zeros) hf "stash.{}" stacked
func.func @f(%v: tensor<2x4xf32>, %l: index) {
  // expected-error @+1 {{value type 'tensor<2x4xf32>' differs from 'tensor<4xf32>'}}
  graph.store %v into @stash[%l] : tensor<2x4xf32>
  return
}

// -----

// Tests that a whole stacked declaration is accumulated with all its layers.
graph.variable @grad.stack : tensor<2x4xf32> init(zeros) hf "grad.stack.{}" stacked
func.func @f(%v: tensor<4xf32>) {
  // expected-error @+1 {{value type 'tensor<4xf32>' differs from 'tensor<2x4xf32>'}}
  graph.accumulate %v into @grad.stack : tensor<4xf32>
  return
}

// -----

// Tests the learning-rate schedule kinds.
func.func @f(%s: index) -> tensor<f32> {
  // expected-error @+1 {{kind must be poly or constant, found 'cosine'}}
  %0 = graph.learning_rate %s {kind = "cosine", lr = 1.0e-03 : f64, warmup_steps = 0 : i64,
      start_warmup_step = 0 : i64, power = 1.0 : f64, total_steps = 100 : i64} : tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Tests that the schedule has at least one step.
func.func @f(%s: index) -> tensor<f32> {
  // expected-error @+1 {{total_steps must be >= 1}}
  %0 = graph.learning_rate %s {kind = "poly", lr = 1.0e-03 : f64, warmup_steps = 0 : i64,
      start_warmup_step = 0 : i64, power = 1.0 : f64, total_steps = 0 : i64} : tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Tests the optimizer kinds.
graph.parameter @w : tensor<4xf32> init(zeros) hf "w"
graph.variable @grad.w : tensor<4xf32> init(zeros) hf "grad.w"
graph.variable @m.w : tensor<4xf32> init(zeros) hf "m.w"
graph.variable @v.w : tensor<4xf32> init(zeros) hf "v.w"
func.func @f(%lr: tensor<f32>, %n: tensor<f32>, %s: index) {
  // expected-error @+1 {{optimizer must be lamb or adamw, found 'sgd'}}
  graph.optimizer_update @w grad @grad.w moments @m.w, @v.w lr %lr norm %n step %s
      {optimizer = "sgd", beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-06 : f64,
       weight_decay = 0.01 : f64, clip_norm = 1.0 : f64} : tensor<f32>, tensor<f32>
  return
}

// -----

// Tests that the optimizer's gradient and moments are declared.
graph.parameter @w : tensor<4xf32> init(zeros) hf "w"
graph.variable @grad.w : tensor<4xf32> init(zeros) hf "grad.w"
graph.variable @m.w : tensor<4xf32> init(zeros) hf "m.w"
func.func @f(%lr: tensor<f32>, %n: tensor<f32>, %s: index) {
  // expected-error @+1 {{'v.w' does not name a graph.parameter or graph.variable}}
  graph.optimizer_update @w grad @grad.w moments @m.w, @v.w lr %lr norm %n step %s
      {optimizer = "adamw", beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-06 : f64,
       weight_decay = 0.01 : f64, clip_norm = 1.0 : f64} : tensor<f32>, tensor<f32>
  return
}

// -----

// Tests that the optimizer's moments have the parameter's type.
graph.parameter @w : tensor<4xf32> init(zeros) hf "w"
graph.variable @grad.w : tensor<4xf32> init(zeros) hf "grad.w"
graph.variable @m.w : tensor<8xf32> init(zeros) hf "m.w"
graph.variable @v.w : tensor<4xf32> init(zeros) hf "v.w"
func.func @f(%lr: tensor<f32>, %n: tensor<f32>, %s: index) {
  // expected-error @+1 {{'m.w' has type 'tensor<8xf32>', the parameter 'w' has 'tensor<4xf32>'}}
  graph.optimizer_update @w grad @grad.w moments @m.w, @v.w lr %lr norm %n step %s
      {optimizer = "adamw", beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-06 : f64,
       weight_decay = 0.01 : f64, clip_norm = 1.0 : f64} : tensor<f32>, tensor<f32>
  return
}

// -----

// Tests that the optimizer updates a declared parameter.
graph.variable @grad.w : tensor<4xf32> init(zeros) hf "grad.w"
graph.variable @m.w : tensor<4xf32> init(zeros) hf "m.w"
graph.variable @v.w : tensor<4xf32> init(zeros) hf "v.w"
func.func @f(%lr: tensor<f32>, %n: tensor<f32>, %s: index) {
  // expected-error @+1 {{'w' does not name a graph.parameter or graph.variable}}
  graph.optimizer_update @w grad @grad.w moments @m.w, @v.w lr %lr norm %n step %s
      {optimizer = "lamb", beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-06 : f64,
       weight_decay = 0.01 : f64, clip_norm = 1.0 : f64} : tensor<f32>, tensor<f32>
  return
}

// -----

// Tests that a fused matmul checks its shapes as graph.matmul does.
func.func @f(%x: tensor<4x16x8xf32>, %w: tensor<8x32xf32>) -> tensor<4x16x8xf32> {
  // expected-error @+1 {{contraction sizes differ: lhs has 8, rhs has 32 (lhs 4x16x8, rhs 8x32, rhs transposed)}}
  %0 = graph.fused_matmul %x, %w {transpose_rhs} : tensor<4x16x8xf32>, tensor<8x32xf32> -> tensor<4x16x8xf32>
  return %0 : tensor<4x16x8xf32>
}

// -----

// Tests that a fused matmul's bias runs along the product's last dimension.
func.func @f(%x: tensor<4x16x8xf32>, %w: tensor<32x8xf32>, %b: tensor<16xf32>) -> tensor<4x16x32xf32> {
  // expected-error @+1 {{expects a bias of shape 32 (the product's last dimension), found 16}}
  %0 = graph.fused_matmul %x, %w bias %b {transpose_rhs} : tensor<4x16x8xf32>, tensor<32x8xf32>, tensor<16xf32> -> tensor<4x16x32xf32>
  return %0 : tensor<4x16x32xf32>
}

// -----

// Tests that a bias gradient needs a rank-2 lhs used transposed.
func.func @f(%dy: tensor<64x32xf32>, %x: tensor<32x8xf32>) -> tensor<64x8xf32> {
  // expected-error @+1 {{computes a bias gradient only from a rank-2 lhs used transposed (the weight gradient of a linear layer)}}
  %0, %1 = graph.fused_matmul %dy, %x : tensor<64x32xf32>, tensor<32x8xf32> -> tensor<64x8xf32>, tensor<64xf32>
  return %0 : tensor<64x8xf32>
}

// -----

// Tests the bias gradient's shape: one value per row of the product.
func.func @f(%dy: tensor<64x32xf32>, %x: tensor<64x8xf32>) -> tensor<32x8xf32> {
  // expected-error @+1 {{expects result shape 32, found 8}}
  %0, %1 = graph.fused_matmul %dy, %x {transpose_lhs} : tensor<64x32xf32>, tensor<64x8xf32> -> tensor<32x8xf32>, tensor<8xf32>
  return %0 : tensor<32x8xf32>
}

// -----

// Tests that one GEMM has one epilogue.
func.func @f(%dy: tensor<64x32xf32>, %x: tensor<64x8xf32>, %b: tensor<8xf32>) -> tensor<32x8xf32> {
  // expected-error @+1 {{takes a bias or computes a bias gradient, not both (one GEMM epilogue)}}
  %0, %1 = graph.fused_matmul %dy, %x bias %b {transpose_lhs} : tensor<64x32xf32>, tensor<64x8xf32>, tensor<8xf32> -> tensor<32x8xf32>, tensor<32xf32>
  return %0 : tensor<32x8xf32>
}

// -----

// Tests that alpha is finite.
func.func @f(%q: tensor<2x16x8xf32>) -> tensor<2x16x16xf32> {
  // expected-error @+1 {{alpha must be finite, found INF}}
  %0 = graph.fused_matmul %q, %q {transpose_rhs, alpha = 0x7FF0000000000000 : f64} : tensor<2x16x8xf32>, tensor<2x16x8xf32> -> tensor<2x16x16xf32>
  return %0 : tensor<2x16x16xf32>
}

// -----

// Tests that the fused softmax checks its mask as graph.softmax does.
func.func @f(%s: tensor<2x2x4x4xf32>, %mask: tensor<2x3xf32>, %seed: i64, %l: index) {
  // expected-error @+1 {{expects mask [batch = 2, keys = 4], found shape 2x3}}
  %p, %d = graph.softmax_dropout %s, %mask, %seed, %l, %l {probability = 0.1 : f64, purpose = "attention.probs"} : tensor<2x2x4x4xf32>, tensor<2x3xf32>
  return
}

// -----

// Tests the fused softmax's dropout probability.
func.func @f(%s: tensor<2x2x4x4xf32>, %mask: tensor<2x4xf32>, %seed: i64, %l: index) {
  // expected-error @+1 {{probability must be in [0, 1), found 1}}
  %p, %d = graph.softmax_dropout %s, %mask, %seed, %l, %l {probability = 1.0 : f64, purpose = "attention.probs"} : tensor<2x2x4x4xf32>, tensor<2x4xf32>
  return
}

// -----

// Tests that the fused gradient names its dropout site.
func.func @f(%p: tensor<2x2x4x4xf32>, %seed: i64, %l: index) {
  // expected-error @+1 {{needs a non-empty purpose naming the dropout site}}
  %dx = graph.dropout_softmax_grad %p, %p, %seed, %l, %l {probability = 0.1 : f64, purpose = ""} : tensor<2x2x4x4xf32>
  return
}

// -----

// Tests that the fused gradient takes the softmax's output, not a vector.
func.func @f(%p: tensor<4xf32>, %seed: i64, %l: index) {
  // expected-error @+1 {{expects the softmax's output [batch, ..., keys], found shape 4}}
  %dx = graph.dropout_softmax_grad %p, %p, %seed, %l, %l {probability = 0.1 : f64, purpose = "attention.probs"} : tensor<4xf32>
  return
}

// -----

// Tests the fused layer norm's parameters against the input's width.
func.func @f(%x: tensor<2x4x8xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{expects scale of shape 8 (the input's last dimension), found 4}}
  %s, %y = graph.residual_layer_norm %x, %x, %g, %g eps 1.0e-12 : tensor<2x4x8xf32>, tensor<4xf32>
  return
}

// -----

// Tests that the fused dropout comes whole: operands and attributes.
func.func @f(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %seed: i64, %l: index) {
  // expected-error @+1 {{takes a dropout's seed, layer, sample offset, probability and purpose together or none of them}}
  %s, %y = graph.residual_layer_norm %x, %x, %g, %g eps 1.0e-12 dropout %seed, %l, %l : tensor<2x4x8xf32>, tensor<8xf32>
  return
}

// -----

// Tests the fused dropout's probability.
func.func @f(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %seed: i64, %l: index) {
  // expected-error @+1 {{probability must be in [0, 1), found 1.5}}
  %s, %y = graph.residual_layer_norm %x, %x, %g, %g eps 1.0e-12 dropout %seed, %l, %l {probability = 1.5 : f64, purpose = "p"} : tensor<2x4x8xf32>, tensor<8xf32>
  return
}

// -----

// Tests the fused layer norm's epsilon, as graph.layer_norm's.
func.func @f(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{epsilon must be positive and finite, found 0}}
  %s, %y = graph.residual_layer_norm %x, %x, %g, %g eps 0.0 : tensor<2x4x8xf32>, tensor<8xf32>
  return
}

// -----

// Tests the fused layer norm's parameter element type.
func.func @f(%x: tensor<2x4x8xf32>, %g: tensor<8xbf16>) {
  // expected-error @+1 {{expects scale to have element type 'f32' (as input), found 'bf16'}}
  %s, %y = graph.residual_layer_norm %x, %x, %g, %g eps 1.0e-12 : tensor<2x4x8xf32>, tensor<8xbf16>
  return
}
