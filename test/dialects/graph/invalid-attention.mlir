// RUN: ferry-opt %s --split-input-file --verify-diagnostics

// Tests that the queries are [batch, heads, seq, head_dim].
func.func @f(%q: tensor<2x8x4xf32>, %m: tensor<2x8xf32>, %s: i64, %i: index) {
  // expected-error @+1 {{expects query [batch, heads, seq, head_dim], found 'tensor<2x8x4xf32>'}}
  %o, %l = graph.attention %q, %q, %q, %m, %s, %i, %i {probability = 0.0 : f64, purpose = "p", scale = 1.0 : f64} : tensor<2x8x4xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

// -----

// Tests that head_dim is at most 64 (the CUDA kernel's tile).
func.func @f(%q: tensor<1x1x8x72xf32>, %m: tensor<1x8xf32>, %s: i64, %i: index) {
  // expected-error @+1 {{head_dim must be in [1, 64] (the CUDA kernel's tile), found 72}}
  %o, %l = graph.attention %q, %q, %q, %m, %s, %i, %i {probability = 0.0 : f64, purpose = "p", scale = 1.0 : f64} : tensor<1x1x8x72xf32>, tensor<1x8xf32> -> tensor<1x1x8xf32>
  return
}

// -----

// Tests that the mask is [batch, seq].
func.func @f(%q: tensor<2x2x8x4xf32>, %m: tensor<2x4xf32>, %s: i64, %i: index) {
  // expected-error @+1 {{expects mask 'tensor<2x8xf32>', found 'tensor<2x4xf32>'}}
  %o, %l = graph.attention %q, %q, %q, %m, %s, %i, %i {probability = 0.0 : f64, purpose = "p", scale = 1.0 : f64} : tensor<2x2x8x4xf32>, tensor<2x4xf32> -> tensor<2x2x8xf32>
  return
}

// -----

// Tests that the row logsumexp is [batch, heads, seq].
func.func @f(%q: tensor<2x2x8x4xf32>, %m: tensor<2x8xf32>, %s: i64, %i: index) {
  // expected-error @+1 {{expects row_logsumexp 'tensor<2x2x8xf32>', found 'tensor<2x8xf32>'}}
  %o, %l = graph.attention %q, %q, %q, %m, %s, %i, %i {probability = 0.0 : f64, purpose = "p", scale = 1.0 : f64} : tensor<2x2x8x4xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

// -----

// Tests that the scale is finite and non-zero.
func.func @f(%q: tensor<2x2x8x4xf32>, %m: tensor<2x8xf32>, %s: i64, %i: index) {
  // expected-error @+1 {{scale must be finite and non-zero, found 0}}
  %o, %l = graph.attention %q, %q, %q, %m, %s, %i, %i {probability = 0.0 : f64, purpose = "p", scale = 0.0 : f64} : tensor<2x2x8x4xf32>, tensor<2x8xf32> -> tensor<2x2x8xf32>
  return
}

// -----

// Tests the dropout probability's range.
func.func @f(%q: tensor<2x2x8x4xf32>, %m: tensor<2x8xf32>, %s: i64, %i: index) {
  // expected-error @+1 {{probability must be in [0, 1), found 1}}
  %o, %l = graph.attention %q, %q, %q, %m, %s, %i, %i {probability = 1.0 : f64, purpose = "p", scale = 1.0 : f64} : tensor<2x2x8x4xf32>, tensor<2x8xf32> -> tensor<2x2x8xf32>
  return
}

// -----

// Tests that the dropout site is named.
func.func @f(%q: tensor<2x2x8x4xf32>, %m: tensor<2x8xf32>, %s: i64, %i: index) {
  // expected-error @+1 {{needs a non-empty purpose naming the dropout site}}
  %o, %l = graph.attention %q, %q, %q, %m, %s, %i, %i {probability = 0.0 : f64, purpose = "", scale = 1.0 : f64} : tensor<2x2x8x4xf32>, tensor<2x8xf32> -> tensor<2x2x8xf32>
  return
}

// -----

// Tests the gradient's rules: the same shapes as the forward's.
func.func @f(%q: tensor<2x2x8x4xf32>, %m: tensor<2x6xf32>, %lse: tensor<2x2x8xf32>, %s: i64, %i: index) {
  // expected-error @+1 {{expects mask 'tensor<2x8xf32>', found 'tensor<2x6xf32>'}}
  %dq, %dk, %dv = graph.attention_grad %q, %q, %q, %m, %q, %lse, %q, %s, %i, %i {probability = 0.0 : f64, purpose = "p", scale = 1.0 : f64} : tensor<2x2x8x4xf32>, tensor<2x6xf32> -> tensor<2x2x8xf32>
  return
}

// -----

// Tests that sequence-major queries are [batch, seq, heads, head_dim]: the
// row logsumexp is still [batch, heads, seq].
func.func @f(%q: tensor<2x8x3x4xf32>, %m: tensor<2x8xf32>, %s: i64, %i: index) {
  // expected-error @+1 {{expects row_logsumexp 'tensor<2x3x8xf32>', found 'tensor<2x8x3xf32>'}}
  %o, %l = graph.attention %q, %q, %q, %m, %s, %i, %i {probability = 0.0 : f64, purpose = "p", scale = 1.0 : f64, sequence_major} : tensor<2x8x3x4xf32>, tensor<2x8xf32> -> tensor<2x8x3xf32>
  return
}

// -----

// Tests that dropout keys come with sequence ids (the kernel's buffer
// order).
func.func @f(%q: tensor<2x2x8x4xf32>, %m: tensor<2x8xf32>, %k: tensor<2x8x2xi32>, %s: i64, %i: index) {
  // expected-error @+1 {{takes dropout_keys only with sequences (packed rows)}}
  %o, %l = graph.attention %q, %q, %q, %m, %s, %i, %i keys %k {probability = 0.1 : f64, purpose = "p", scale = 1.0 : f64} : tensor<2x2x8x4xf32>, tensor<2x8xf32> keys tensor<2x8x2xi32> -> tensor<2x2x8xf32>
  return
}

// -----

// Tests that the sequence ids (packed rows) are i32 [batch, seq].
func.func @f(%q: tensor<2x2x8x4xf32>, %m: tensor<2x8xf32>, %ids: tensor<2x4xi32>, %s: i64, %i: index) {
  // expected-error @+1 {{expects sequence_ids i32 [batch = 2, seq = 8], found 'tensor<2x4xi32>'}}
  %o, %l = graph.attention %q, %q, %q, %m, %s, %i, %i sequences %ids {probability = 0.0 : f64, purpose = "p", scale = 1.0 : f64} : tensor<2x2x8x4xf32>, tensor<2x8xf32>, tensor<2x4xi32> -> tensor<2x2x8xf32>
  return
}
