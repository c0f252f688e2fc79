// RUN: ferry-opt %s --split-input-file --verify-diagnostics --ferry-partition-tensors | FileCheck %s

// Tests ferry-partition-tensors on packed rows' dropout keys at T = 2: the
// attention probabilities [batch, heads, seq, seq] split along the heads
// take tensor_key_stride (this rank's heads x seq x seq: their keys are
// offset by the rank's first head, as unpacked elements are); a token's
// elements split along the hidden dimension cannot be keyed so, and are an
// error naming the op.

// CHECK-LABEL: func.func @forward(
// CHECK: graph.dropout %{{.*}} keys %{{.*}} {probability = 1.000000e-01 : f64, purpose = "probs", tensor_key_stride = 16 : i64} : tensor<3x1x4x4xf32> keys tensor<3x4x2xi32>
module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 1>} {
  graph.parameter @q : tensor<8x8xf32> init(normal, 2.000000e-02) hf "q" sharding <split = 0>
  func.func @forward(%x: tensor<3x4x8xf32> {graph.input = "x"}, %keys: tensor<3x4x2xi32> {graph.input = "keys"}, %seed: i64 {graph.input = "seed"}, %o: index {graph.input = "offset"}) -> tensor<3x4x8xf32> attributes {graph.entry = "forward"} {
    %l = arith.constant 0 : index
    %w = graph.parameter_ref @q : tensor<8x8xf32>
    %q = graph.matmul %x, %w {transpose_rhs} : tensor<3x4x8xf32>, tensor<8x8xf32> -> tensor<3x4x8xf32>
    %r = graph.reshape %q : tensor<3x4x8xf32> -> tensor<3x4x2x4xf32>
    %t = graph.transpose %r [0, 2, 1, 3] : tensor<3x4x2x4xf32> -> tensor<3x2x4x4xf32>
    %d = graph.dropout %t, %seed, %l, %o keys %keys {probability = 1.000000e-01 : f64, purpose = "probs"} : tensor<3x2x4x4xf32> keys tensor<3x4x2xi32>
    %b = graph.transpose %d [0, 2, 1, 3] : tensor<3x2x4x4xf32> -> tensor<3x4x2x4xf32>
    %c = graph.reshape %b : tensor<3x4x2x4xf32> -> tensor<3x4x8xf32>
    %w2 = graph.parameter_ref @q : tensor<8x8xf32>
    %s = graph.matmul %c, %w2 : tensor<3x4x8xf32>, tensor<8x8xf32> -> tensor<3x4x8xf32>
    return %s : tensor<3x4x8xf32>
  }
}

// -----

module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 1>} {
  graph.parameter @w : tensor<8x8xf32> init(normal, 2.000000e-02) hf "w" sharding <split = 0>
  func.func @forward(%x: tensor<3x4x8xf32> {graph.input = "x"}, %keys: tensor<3x4x2xi32> {graph.input = "keys"}, %seed: i64 {graph.input = "seed"}, %o: index {graph.input = "offset"}) -> tensor<3x4x8xf32> attributes {graph.entry = "forward"} {
    %l = arith.constant 0 : index
    %w = graph.parameter_ref @w : tensor<8x8xf32>
    %y = graph.matmul %x, %w {transpose_rhs} : tensor<3x4x8xf32>, tensor<8x8xf32> -> tensor<3x4x8xf32>
    // expected-error @+1 {{'graph.dropout' op has an operand split along dimension 2 over the tensor group, and ferry-partition-tensors has no rule for it here}}
    %d = graph.dropout %y, %seed, %l, %o keys %keys {probability = 1.000000e-01 : f64, purpose = "hidden"} : tensor<3x4x8xf32> keys tensor<3x4x2xi32>
    return %d : tensor<3x4x8xf32>
  }
}
