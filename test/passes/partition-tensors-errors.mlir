// RUN: ferry-opt %s --split-input-file --verify-diagnostics --ferry-partition-tensors

// Tests ferry-partition-tensors' errors: a split value meeting a replicated
// one in an element-wise op, a layer norm over a split value, a dropout
// whose rank's part of a sample is not one block (split along dimension 2
// of 5 rows: every row's part is this rank's), a matmul of splits that are neither column- nor row-parallel
// nor a shared batch dimension, a function returning a split value, a
// reshape that scatters the split, a partitioned module, an embedding
// table split along its width, and logits split along their rows.

module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 1>} {
  graph.parameter @w : tensor<8x4xf32> init(normal, 2.000000e-02) hf "w" sharding <split = 0>
  func.func @forward(%x: tensor<3x4xf32> {graph.input = "x"}) -> tensor<3x8xf32> attributes {graph.entry = "forward"} {
    %w = graph.parameter_ref @w : tensor<8x4xf32>
    %y = graph.matmul %x, %w {transpose_rhs} : tensor<3x4xf32>, tensor<8x4xf32> -> tensor<3x8xf32>
    %r = graph.parameter_ref @w : tensor<8x4xf32>
    %z = graph.matmul %x, %r {transpose_rhs} : tensor<3x4xf32>, tensor<8x4xf32> -> tensor<3x8xf32>
    %c = arith.constant dense<1.0> : tensor<3x8xf32>
    // expected-error @+1 {{'graph.add' op has an operand replicated over the tensor group, and ferry-partition-tensors has no rule for it here}}
    %s = graph.add %y, %c : tensor<3x8xf32>
    return %s : tensor<3x8xf32>
  }
}

// -----

module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 1>} {
  graph.parameter @w : tensor<8x4xf32> init(normal, 2.000000e-02) hf "w" sharding <split = 0>
  graph.parameter @s : tensor<8xf32> init(ones) hf "s"
  func.func @forward(%x: tensor<3x4xf32> {graph.input = "x"}) -> tensor<3x8xf32> attributes {graph.entry = "forward"} {
    %w = graph.parameter_ref @w : tensor<8x4xf32>
    %s = graph.parameter_ref @s : tensor<8xf32>
    %y = graph.matmul %x, %w {transpose_rhs} : tensor<3x4xf32>, tensor<8x4xf32> -> tensor<3x8xf32>
    // expected-error @+1 {{'graph.layer_norm' op has an operand split along dimension 1 over the tensor group, and ferry-partition-tensors has no rule for it here}}
    %n = graph.layer_norm %y, %s, %s eps 1.000000e-12 : tensor<3x8xf32>, tensor<8xf32>
    return %n : tensor<3x8xf32>
  }
}

// -----

module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 1>} {
  graph.parameter @w : tensor<8x4xf32> init(normal, 2.000000e-02) hf "w" sharding <split = 0>
  func.func @forward(%x: tensor<3x5x4xf32> {graph.input = "x"}, %seed: i64 {graph.input = "seed"}, %o: index {graph.input = "sample_offset"}) -> tensor<3x5x8xf32> attributes {graph.entry = "forward"} {
    %l = arith.constant 0 : index
    %w = graph.parameter_ref @w : tensor<8x4xf32>
    %y = graph.matmul %x, %w {transpose_rhs} : tensor<3x5x4xf32>, tensor<8x4xf32> -> tensor<3x5x8xf32>
    // expected-error @+1 {{'graph.dropout' op has an operand split along dimension 2 over the tensor group}}
    %d = graph.dropout %y, %seed, %l, %o {probability = 1.000000e-01 : f64, purpose = "p"} : tensor<3x5x8xf32>
    return %d : tensor<3x5x8xf32>
  }
}

// -----

module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 1>} {
  graph.parameter @w : tensor<8x4xf32> init(normal, 2.000000e-02) hf "w" sharding <split = 0>
  graph.parameter @v : tensor<8x8xf32> init(normal, 2.000000e-02) hf "v" sharding <split = 1>
  func.func @forward(%x: tensor<3x4xf32> {graph.input = "x"}) -> tensor<3x8xf32> attributes {graph.entry = "forward"} {
    %w = graph.parameter_ref @w : tensor<8x4xf32>
    %v = graph.parameter_ref @v : tensor<8x8xf32>
    %y = graph.matmul %x, %w {transpose_rhs} : tensor<3x4xf32>, tensor<8x4xf32> -> tensor<3x8xf32>
    // expected-error @+1 {{'graph.matmul' op multiplies a left operand split along dimension 1 by a right operand split along dimension 1 over the tensor group}}
    %z = graph.matmul %y, %v : tensor<3x8xf32>, tensor<8x8xf32> -> tensor<3x8xf32>
    return %z : tensor<3x8xf32>
  }
}

// -----

module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 1>} {
  graph.parameter @w : tensor<8x4xf32> init(normal, 2.000000e-02) hf "w" sharding <split = 0>
  func.func @project(%x: tensor<3x4xf32>, %w: tensor<8x4xf32>) -> tensor<3x8xf32> {
    %y = graph.matmul %x, %w {transpose_rhs} : tensor<3x4xf32>, tensor<8x4xf32> -> tensor<3x8xf32>
    // expected-error @+1 {{'func.return' op returns a value split along dimension 1 over the tensor group}}
    return %y : tensor<3x8xf32>
  }
  func.func @forward(%x: tensor<3x4xf32> {graph.input = "x"}) -> tensor<3x8xf32> attributes {graph.entry = "forward"} {
    %w = graph.parameter_ref @w : tensor<8x4xf32>
    %y = func.call @project(%x, %w) : (tensor<3x4xf32>, tensor<8x4xf32>) -> tensor<3x8xf32>
    return %y : tensor<3x8xf32>
  }
}

// -----

module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 1>} {
  graph.parameter @w : tensor<6x4xf32> init(normal, 2.000000e-02) hf "w" sharding <split = 0>
  func.func @forward(%x: tensor<3x4xf32> {graph.input = "x"}) -> tensor<3x6xf32> attributes {graph.entry = "forward"} {
    %w = graph.parameter_ref @w : tensor<6x4xf32>
    %y = graph.matmul %x, %w {transpose_rhs} : tensor<3x4xf32>, tensor<6x4xf32> -> tensor<3x6xf32>
    // expected-error @+1 {{'graph.reshape' op reshapes a value split along dimension 1 into 'tensor<9x2xf32>', where its parts are not one dimension's}}
    %r = graph.reshape %y : tensor<3x6xf32> -> tensor<9x2xf32>
    %b = graph.reshape %r : tensor<9x2xf32> -> tensor<3x6xf32>
    return %b : tensor<3x6xf32>
  }
}

// -----

// expected-error @+1 {{is partitioned already (its graph.mesh says partitioned = true)}}
module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 1, partitioned = true>} {
}

// -----

// A table split along its width: the lookup's rows would be split, which
// ferry-partition-tensors does not follow (the vocabulary-parallel rule
// takes a table split along its rows).
module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 1>} {
  graph.parameter @table : tensor<8x4xf32> init(normal, 2.000000e-02) hf "table" sharding <split = 1>
  func.func @forward(%ids: tensor<3xi32> {graph.input = "ids"}) -> tensor<3x4xf32> attributes {graph.entry = "forward"} {
    %t = graph.parameter_ref @table : tensor<8x4xf32>
    // expected-error @+1 {{'graph.embedding' op has an operand split along dimension 1 over the tensor group, and ferry-partition-tensors has no rule for it here}}
    %e = graph.embedding %t[%ids] : tensor<8x4xf32>, tensor<3xi32> -> tensor<3x4xf32>
    return %e : tensor<3x4xf32>
  }
}

// -----

// Logits split along their rows, not their classes.
module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 1>} {
  graph.parameter @w : tensor<8x4xf32> init(normal, 2.000000e-02) hf "w" sharding <split = 0>
  func.func @forward(%x: tensor<3x4xf32> {graph.input = "x"}, %labels: tensor<8xi32> {graph.input = "labels"}, %weights: tensor<8xf32> {graph.input = "weights"}) -> tensor<f32> attributes {graph.entry = "forward"} {
    %w = graph.parameter_ref @w : tensor<8x4xf32>
    %y = graph.matmul %x, %w {transpose_rhs} : tensor<3x4xf32>, tensor<8x4xf32> -> tensor<3x8xf32>
    %t = graph.transpose %y [1, 0] : tensor<3x8xf32> -> tensor<8x3xf32>
    // expected-error @+1 {{'graph.softmax_cross_entropy' op has an operand split along dimension 0 over the tensor group, and ferry-partition-tensors has no rule for it here}}
    %l = graph.softmax_cross_entropy %t, %labels, %weights classes 3 : tensor<8x3xf32>, tensor<8xi32>, tensor<8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
