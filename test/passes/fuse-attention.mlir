// RUN: ferry-opt %s --split-input-file --ferry-fuse-attention | FileCheck %s

// ferry-fuse-attention: q kᵀ, its scale, the masked softmax, its dropout and
// the product with v become one graph.attention (before autodiff).

// The whole chain: the scale becomes the op's, the dropout's key and
// attributes too; the row logsumexp is unused in the forward.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT: %[[O:.*]], %{{.*}} = graph.attention %arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6 {probability = 1.000000e-01 : f64, purpose = "attention.probs", scale = 5.000000e-01 : f64} : tensor<2x2x8x4xf32>, tensor<2x8xf32> -> tensor<2x2x8xf32>
// CHECK-NEXT: return %[[O]]
// CHECK-NOT: graph.softmax
func.func @chain(%q: tensor<2x2x8x4xf32>, %k: tensor<2x2x8x4xf32>, %v: tensor<2x2x8x4xf32>, %mask: tensor<2x8xf32>, %seed: i64, %l: index, %off: index) -> tensor<2x2x8x4xf32> {
  %s = graph.matmul %q, %k {transpose_rhs} : tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x8xf32>
  %t = graph.scale %s by 5.000000e-01 : tensor<2x2x8x8xf32>
  %p = graph.softmax %t, %mask : tensor<2x2x8x8xf32>, tensor<2x8xf32>
  %d = graph.dropout %p, %seed, %l, %off {probability = 1.000000e-01 : f64, purpose = "attention.probs"} : tensor<2x2x8x8xf32>
  %o = graph.matmul %d, %v : tensor<2x2x8x8xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x4xf32>
  return %o : tensor<2x2x8x4xf32>
}

// -----

// Packed rows: the softmax's sequence ids and the dropout's keys become the
// attention's.
// CHECK-LABEL: func.func @packed
// CHECK-NEXT: %[[O:.*]], %{{.*}} = graph.attention %arg0, %arg1, %arg2, %arg3, %arg5, %arg6, %arg7 sequences %arg4 keys %arg8 {probability = 1.000000e-01 : f64, purpose = "attention.probs", scale = 5.000000e-01 : f64} : tensor<2x2x8x4xf32>, tensor<2x8xf32>, tensor<2x8xi32> keys tensor<2x8x2xi32> -> tensor<2x2x8xf32>
// CHECK-NEXT: return %[[O]]
func.func @packed(%q: tensor<2x2x8x4xf32>, %k: tensor<2x2x8x4xf32>, %v: tensor<2x2x8x4xf32>, %mask: tensor<2x8xf32>, %ids: tensor<2x8xi32>, %seed: i64, %l: index, %off: index, %keys: tensor<2x8x2xi32>) -> tensor<2x2x8x4xf32> {
  %s = graph.matmul %q, %k {transpose_rhs} : tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x8xf32>
  %t = graph.scale %s by 5.000000e-01 : tensor<2x2x8x8xf32>
  %p = graph.softmax %t, %mask sequences %ids : tensor<2x2x8x8xf32>, tensor<2x8xf32>, tensor<2x8xi32>
  %d = graph.dropout %p, %seed, %l, %off keys %keys {probability = 1.000000e-01 : f64, purpose = "attention.probs"} : tensor<2x2x8x8xf32> keys tensor<2x8x2xi32>
  %o = graph.matmul %d, %v : tensor<2x2x8x8xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x4xf32>
  return %o : tensor<2x2x8x4xf32>
}

// -----

// No scale and no dropout: scale 1, and a key that drops nothing.
// CHECK-LABEL: func.func @bare
// CHECK-DAG: %[[SEED:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : index
// CHECK: %[[O:.*]], %{{.*}} = graph.attention %arg0, %arg1, %arg2, %arg3, %[[SEED]], %[[ZERO]], %[[ZERO]] {probability = 0.000000e+00 : f64, purpose = "attention.probs", scale = 1.000000e+00 : f64}
// CHECK-NEXT: return %[[O]]
func.func @bare(%q: tensor<2x2x8x4xf32>, %k: tensor<2x2x8x4xf32>, %v: tensor<2x2x8x4xf32>, %mask: tensor<2x8xf32>) -> tensor<2x2x8x4xf32> {
  %s = graph.matmul %q, %k {transpose_rhs} : tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x8xf32>
  %p = graph.softmax %s, %mask : tensor<2x2x8x8xf32>, tensor<2x8xf32>
  %o = graph.matmul %p, %v : tensor<2x2x8x8xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x4xf32>
  return %o : tensor<2x2x8x4xf32>
}

// -----

// Not fused: the probabilities have a second use (they would have to be
// stored after all).
// CHECK-LABEL: func.func @probs_used_twice
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
func.func @probs_used_twice(%q: tensor<2x2x8x4xf32>, %k: tensor<2x2x8x4xf32>, %v: tensor<2x2x8x4xf32>, %mask: tensor<2x8xf32>) -> (tensor<2x2x8x4xf32>, tensor<2x2x8x8xf32>) {
  %s = graph.matmul %q, %k {transpose_rhs} : tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x8xf32>
  %p = graph.softmax %s, %mask : tensor<2x2x8x8xf32>, tensor<2x8xf32>
  %o = graph.matmul %p, %v : tensor<2x2x8x8xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x4xf32>
  return %o, %p : tensor<2x2x8x4xf32>, tensor<2x2x8x8xf32>
}

// -----

// Not fused: head_dim 80 is past the kernels' 64.
// CHECK-LABEL: func.func @wide_heads
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
func.func @wide_heads(%q: tensor<1x1x8x80xf32>, %k: tensor<1x1x8x80xf32>, %v: tensor<1x1x8x80xf32>, %mask: tensor<1x8xf32>) -> tensor<1x1x8x80xf32> {
  %s = graph.matmul %q, %k {transpose_rhs} : tensor<1x1x8x80xf32>, tensor<1x1x8x80xf32> -> tensor<1x1x8x8xf32>
  %p = graph.softmax %s, %mask : tensor<1x1x8x8xf32>, tensor<1x8xf32>
  %o = graph.matmul %p, %v : tensor<1x1x8x8xf32>, tensor<1x1x8x80xf32> -> tensor<1x1x8x80xf32>
  return %o : tensor<1x1x8x80xf32>
}

// -----

// Not fused: keys from another sequence (cross-attention shapes).
// CHECK-LABEL: func.func @other_keys
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
func.func @other_keys(%q: tensor<1x1x8x4xf32>, %k: tensor<1x1x6x4xf32>, %v: tensor<1x1x6x4xf32>, %mask: tensor<1x6xf32>) -> tensor<1x1x8x4xf32> {
  %s = graph.matmul %q, %k {transpose_rhs} : tensor<1x1x8x4xf32>, tensor<1x1x6x4xf32> -> tensor<1x1x8x6xf32>
  %p = graph.softmax %s, %mask : tensor<1x1x8x6xf32>, tensor<1x6xf32>
  %o = graph.matmul %p, %v : tensor<1x1x8x6xf32>, tensor<1x1x6x4xf32> -> tensor<1x1x8x4xf32>
  return %o : tensor<1x1x8x4xf32>
}

// -----

// The head split of q, k and v ([0, 2, 1, 3] transposes of [batch, seq,
// heads, dim]) and the merge of the result go: the attention reads and
// writes [batch, seq, heads, dim] itself (sequence_major); the row
// logsumexp stays [batch, heads, seq].
// CHECK-LABEL: func.func @head_split
// CHECK-NEXT: %[[O:.*]], %{{.*}} = graph.attention %arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6 {probability = 1.000000e-01 : f64, purpose = "attention.probs", scale = 5.000000e-01 : f64, sequence_major} : tensor<2x8x2x4xf32>, tensor<2x8xf32> -> tensor<2x2x8xf32>
// CHECK-NEXT: return %[[O]]
// CHECK-NOT: graph.transpose
func.func @head_split(%q: tensor<2x8x2x4xf32>, %k: tensor<2x8x2x4xf32>, %v: tensor<2x8x2x4xf32>, %mask: tensor<2x8xf32>, %seed: i64, %l: index, %off: index) -> tensor<2x8x2x4xf32> {
  %qt = graph.transpose %q [0, 2, 1, 3] : tensor<2x8x2x4xf32> -> tensor<2x2x8x4xf32>
  %kt = graph.transpose %k [0, 2, 1, 3] : tensor<2x8x2x4xf32> -> tensor<2x2x8x4xf32>
  %vt = graph.transpose %v [0, 2, 1, 3] : tensor<2x8x2x4xf32> -> tensor<2x2x8x4xf32>
  %s = graph.matmul %qt, %kt {transpose_rhs} : tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x8xf32>
  %t = graph.scale %s by 5.000000e-01 : tensor<2x2x8x8xf32>
  %p = graph.softmax %t, %mask : tensor<2x2x8x8xf32>, tensor<2x8xf32>
  %d = graph.dropout %p, %seed, %l, %off {probability = 1.000000e-01 : f64, purpose = "attention.probs"} : tensor<2x2x8x8xf32>
  %o = graph.matmul %d, %vt : tensor<2x2x8x8xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x4xf32>
  %m = graph.transpose %o [0, 2, 1, 3] : tensor<2x2x8x4xf32> -> tensor<2x8x2x4xf32>
  return %m : tensor<2x8x2x4xf32>
}

// -----

// The transposes stay when the result is not merged back (the attention
// keeps the head-major layout).
// CHECK-LABEL: func.func @no_merge
// CHECK: graph.transpose
// CHECK: graph.attention
// CHECK-NOT: sequence_major
func.func @no_merge(%q: tensor<2x8x2x4xf32>, %mask: tensor<2x8xf32>) -> tensor<2x2x8x4xf32> {
  %qt = graph.transpose %q [0, 2, 1, 3] : tensor<2x8x2x4xf32> -> tensor<2x2x8x4xf32>
  %kt = graph.transpose %q [0, 2, 1, 3] : tensor<2x8x2x4xf32> -> tensor<2x2x8x4xf32>
  %vt = graph.transpose %q [0, 2, 1, 3] : tensor<2x8x2x4xf32> -> tensor<2x2x8x4xf32>
  %s = graph.matmul %qt, %kt {transpose_rhs} : tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x8xf32>
  %p = graph.softmax %s, %mask : tensor<2x2x8x8xf32>, tensor<2x8xf32>
  %o = graph.matmul %p, %vt : tensor<2x2x8x8xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x4xf32>
  return %o : tensor<2x2x8x4xf32>
}

// -----

// Tensor parallelism: the dropout of a rank's heads keeps its
// tensor_key_stride in the fused attention.
// CHECK-LABEL: func.func @split_heads
// CHECK-NEXT: %[[O:.*]], %{{.*}} = graph.attention {{.*}} {probability = 1.000000e-01 : f64, purpose = "attention.probs", scale = 5.000000e-01 : f64, tensor_key_stride = 64 : i64}
// CHECK-NEXT: return %[[O]]
func.func @split_heads(%q: tensor<2x1x8x4xf32>, %k: tensor<2x1x8x4xf32>, %v: tensor<2x1x8x4xf32>, %mask: tensor<2x8xf32>, %seed: i64, %l: index, %off: index) -> tensor<2x1x8x4xf32> {
  %s = graph.matmul %q, %k {transpose_rhs} : tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32> -> tensor<2x1x8x8xf32>
  %t = graph.scale %s by 5.000000e-01 : tensor<2x1x8x8xf32>
  %p = graph.softmax %t, %mask : tensor<2x1x8x8xf32>, tensor<2x8xf32>
  %d = graph.dropout %p, %seed, %l, %off {probability = 1.000000e-01 : f64, purpose = "attention.probs", tensor_key_stride = 64 : i64} : tensor<2x1x8x8xf32>
  %o = graph.matmul %d, %v : tensor<2x1x8x8xf32>, tensor<2x1x8x4xf32> -> tensor<2x1x8x4xf32>
  return %o : tensor<2x1x8x4xf32>
}
