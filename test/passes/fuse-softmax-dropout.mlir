// RUN: ferry-opt %s --split-input-file --ferry-fuse-softmax-dropout | FileCheck %s

// ferry-fuse-softmax-dropout: the attention probabilities and their dropout
// in one op, and their gradient through the dropout in one op.

// Forward: the softmax's other use (the stash the backward reads) takes the
// fused op's probabilities; the softmax is gone.
// CHECK-LABEL: func.func @forward
// CHECK-NEXT: %[[P:.*]], %[[D:.*]] = graph.softmax_dropout %arg0, %arg1, %arg2, %arg3, %arg4 {probability = 1.000000e-01 : f64, purpose = "attention.probs"} : tensor<2x2x4x4xf32>, tensor<2x4xf32>
// CHECK-NEXT: graph.store %[[P]] into @stash.p
// CHECK-NEXT: return %[[D]]
graph.variable @stash.p : tensor<2x2x4x4xf32> init(zeros) hf "stash.p"
func.func @forward(%s: tensor<2x2x4x4xf32>, %mask: tensor<2x4xf32>, %seed: i64, %l: index, %off: index) -> tensor<2x2x4x4xf32> {
  %p = graph.softmax %s, %mask : tensor<2x2x4x4xf32>, tensor<2x4xf32>
  graph.store %p into @stash.p : tensor<2x2x4x4xf32>
  %d = graph.dropout %p, %seed, %l, %off {probability = 1.000000e-01 : f64, purpose = "attention.probs"} : tensor<2x2x4x4xf32>
  return %d : tensor<2x2x4x4xf32>
}

// -----

// Packed rows: the softmax's sequence ids and the dropout's keys go with
// them into the fused ops, forward and backward.
// CHECK-LABEL: func.func @packed
// CHECK-NEXT: %[[P:.*]], %[[D:.*]] = graph.softmax_dropout %arg0, %arg1, %arg4, %arg5, %arg6 sequences %arg2 keys %arg3 {probability = 1.000000e-01 : f64, purpose = "attention.probs"} : tensor<2x2x4x4xf32>, tensor<2x4xf32>, tensor<2x4xi32> keys tensor<2x4x2xi32>
// CHECK-NEXT: %[[DX:.*]] = graph.dropout_softmax_grad %[[P]], %[[D]], %arg4, %arg5, %arg6 keys %arg3 {probability = 1.000000e-01 : f64, purpose = "attention.probs"} : tensor<2x2x4x4xf32> keys tensor<2x4x2xi32>
// CHECK-NEXT: return %[[DX]]
func.func @packed(%s: tensor<2x2x4x4xf32>, %mask: tensor<2x4xf32>, %ids: tensor<2x4xi32>, %keys: tensor<2x4x2xi32>, %seed: i64, %l: index, %off: index) -> tensor<2x2x4x4xf32> {
  %p = graph.softmax %s, %mask sequences %ids : tensor<2x2x4x4xf32>, tensor<2x4xf32>, tensor<2x4xi32>
  %d = graph.dropout %p, %seed, %l, %off keys %keys {probability = 1.000000e-01 : f64, purpose = "attention.probs"} : tensor<2x2x4x4xf32> keys tensor<2x4x2xi32>
  %g = graph.dropout %d, %seed, %l, %off keys %keys {probability = 1.000000e-01 : f64, purpose = "attention.probs"} : tensor<2x2x4x4xf32> keys tensor<2x4x2xi32>
  %dx = graph.softmax_grad %p, %g : tensor<2x2x4x4xf32>
  return %dx : tensor<2x2x4x4xf32>
}

// -----

// Backward: the dropout of the incoming gradient feeds only the softmax's
// gradient.
// CHECK-LABEL: func.func @backward
// CHECK-NEXT: %[[DX:.*]] = graph.dropout_softmax_grad %arg0, %arg1, %arg2, %arg3, %arg4 {probability = 1.000000e-01 : f64, purpose = "attention.probs"} : tensor<2x2x4x4xf32>
// CHECK-NEXT: return %[[DX]]
func.func @backward(%p: tensor<2x2x4x4xf32>, %dy: tensor<2x2x4x4xf32>, %seed: i64, %l: index, %off: index) -> tensor<2x2x4x4xf32> {
  %d = graph.dropout %dy, %seed, %l, %off {probability = 1.000000e-01 : f64, purpose = "attention.probs"} : tensor<2x2x4x4xf32>
  %dx = graph.softmax_grad %p, %d : tensor<2x2x4x4xf32>
  return %dx : tensor<2x2x4x4xf32>
}

// -----

// The layer index computed after the softmax: the fused op goes where the
// dropout was, and a use of the probabilities before it keeps the softmax.
// CHECK-LABEL: func.func @late_operands
// CHECK-NEXT: %[[P:.*]] = graph.softmax
// CHECK-NEXT: graph.store %[[P]] into @stash.q
// CHECK-NEXT: %[[L:.*]] = arith.addi
// CHECK-NEXT: %{{.*}}, %[[D:.*]] = graph.softmax_dropout %arg0, %arg1, %arg2, %[[L]], %arg4
// CHECK-NEXT: return %[[D]]
graph.variable @stash.q : tensor<2x2x4x4xf32> init(zeros) hf "stash.q"
func.func @late_operands(%s: tensor<2x2x4x4xf32>, %mask: tensor<2x4xf32>, %seed: i64, %l0: index, %off: index) -> tensor<2x2x4x4xf32> {
  %p = graph.softmax %s, %mask : tensor<2x2x4x4xf32>, tensor<2x4xf32>
  graph.store %p into @stash.q : tensor<2x2x4x4xf32>
  %l = arith.addi %l0, %l0 : index
  %d = graph.dropout %p, %seed, %l, %off {probability = 1.000000e-01 : f64, purpose = "attention.probs"} : tensor<2x2x4x4xf32>
  return %d : tensor<2x2x4x4xf32>
}

// -----

// Left alone: a dropout of something else, and a dropped gradient with a
// second use.
// CHECK-LABEL: func.func @unfused
// CHECK-NOT: softmax_dropout
// CHECK-NOT: dropout_softmax_grad
// CHECK: return
func.func @unfused(%x: tensor<2x4xf32>, %p: tensor<2x2x4x4xf32>, %dy: tensor<2x2x4x4xf32>, %seed: i64, %l: index, %off: index) -> (tensor<2x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) {
  %a = graph.gelu %x : tensor<2x4xf32>
  %b = graph.dropout %a, %seed, %l, %off {probability = 1.000000e-01 : f64, purpose = "ffn"} : tensor<2x4xf32>
  %d = graph.dropout %dy, %seed, %l, %off {probability = 1.000000e-01 : f64, purpose = "attention.probs"} : tensor<2x2x4x4xf32>
  %dx = graph.softmax_grad %p, %d : tensor<2x2x4x4xf32>
  return %b, %dx, %d : tensor<2x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>
}

// -----

// The fused op at the dropout (its layer index is computed after the
// softmax): a use of the probabilities inside a loop between the two keeps
// the softmax (the fused op is defined after it).
// CHECK-LABEL: func.func @nested_use
// CHECK-NEXT: %[[P:.*]] = graph.softmax
// CHECK: scf.for
// CHECK-NEXT: graph.store %[[P]] into @stash.r
// CHECK: graph.softmax_dropout
graph.variable @stash.r : tensor<2x2x4x4xf32> init(zeros) hf "stash.r"
func.func @nested_use(%s: tensor<2x2x4x4xf32>, %mask: tensor<2x4xf32>, %seed: i64, %l: index, %off: index) -> tensor<2x2x4x4xf32> {
  %p = graph.softmax %s, %mask : tensor<2x2x4x4xf32>, tensor<2x4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.for %i = %c0 to %c2 step %c1 {
    graph.store %p into @stash.r : tensor<2x2x4x4xf32>
  }
  %l2 = arith.addi %l, %c1 : index
  %d = graph.dropout %p, %seed, %l2, %off {probability = 1.000000e-01 : f64, purpose = "attention.probs"} : tensor<2x2x4x4xf32>
  return %d : tensor<2x2x4x4xf32>
}

// -----

// A store between the softmax and the dropout into what the softmax reads:
// fusing at the dropout would read the new contents, so nothing fuses.
// CHECK-LABEL: func.func @written_between
// CHECK-NOT: graph.softmax_dropout
// CHECK: return
graph.variable @scores : tensor<2x2x4x4xf32> init(zeros) hf "scores"
func.func @written_between(%new: tensor<2x2x4x4xf32>, %mask: tensor<2x4xf32>, %seed: i64, %l: index, %off: index) -> tensor<2x2x4x4xf32> {
  %s = graph.parameter_ref @scores : tensor<2x2x4x4xf32>
  %p = graph.softmax %s, %mask : tensor<2x2x4x4xf32>, tensor<2x4xf32>
  graph.store %new into @scores : tensor<2x2x4x4xf32>
  %l2 = arith.addi %l, %l : index
  %d = graph.dropout %p, %seed, %l2, %off {probability = 1.000000e-01 : f64, purpose = "attention.probs"} : tensor<2x2x4x4xf32>
  return %d : tensor<2x2x4x4xf32>
}

// -----

// Tensor parallelism: a dropout of a rank's heads (tensor_key_stride) keeps
// its stride in both fused ops.
// CHECK-LABEL: func.func @split_heads
// CHECK-NEXT: %[[P:.*]], %[[D:.*]] = graph.softmax_dropout {{.*}} {probability = 1.000000e-01 : f64, purpose = "attention.probs", tensor_key_stride = 16 : i64}
// CHECK-NEXT: %[[DX:.*]] = graph.dropout_softmax_grad %[[P]], %[[D]], {{.*}} {probability = 1.000000e-01 : f64, purpose = "attention.probs", tensor_key_stride = 16 : i64}
// CHECK-NEXT: return %[[DX]]
func.func @split_heads(%s: tensor<2x1x4x4xf32>, %mask: tensor<2x4xf32>, %seed: i64, %l: index, %off: index) -> tensor<2x1x4x4xf32> {
  %p = graph.softmax %s, %mask : tensor<2x1x4x4xf32>, tensor<2x4xf32>
  %d = graph.dropout %p, %seed, %l, %off {probability = 1.000000e-01 : f64, purpose = "attention.probs", tensor_key_stride = 16 : i64} : tensor<2x1x4x4xf32>
  %g = graph.dropout %d, %seed, %l, %off {probability = 1.000000e-01 : f64, purpose = "attention.probs", tensor_key_stride = 16 : i64} : tensor<2x1x4x4xf32>
  %dx = graph.softmax_grad %p, %g : tensor<2x1x4x4xf32>
  return %dx : tensor<2x1x4x4xf32>
}
