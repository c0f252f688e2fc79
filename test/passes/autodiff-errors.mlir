// RUN: ferry-opt %s --split-input-file --ferry-autodiff -verify-diagnostics

// Tests every diagnostic of ferry-autodiff (passes/Autodiff.cpp) and of the
// gradient rules (dialects/graph/GraphGradients.cpp).

// Tests that the entry function must exist (a module-level error).
// expected-error @+1 {{ferry-autodiff: no function @forward to differentiate}}
module {
  func.func @not_forward() -> tensor<f32> {
    %c = arith.constant dense<0.0> : tensor<f32>
    return %c : tensor<f32>
  }
}

// -----

// Tests that autodiff runs once: a function is already marked forward_grad.
// expected-error @+1 {{ferry-autodiff runs once: @forward_grad is already marked graph.entry = "forward_grad"}}
module {
  func.func @forward() -> tensor<f32> attributes {graph.entry = "forward"} {
    %c = arith.constant dense<0.0> : tensor<f32>
    return %c : tensor<f32>
  }
  func.func @forward_grad() -> tensor<f32> attributes {graph.entry = "forward_grad"} {
    %c = arith.constant dense<0.0> : tensor<f32>
    return %c : tensor<f32>
  }
}

// -----

// Tests that the function differentiated is the one marked forward, when one
// is (here the entry option names @forward but @model holds the mark).
module {
  // expected-error @+1 {{is not the function marked graph.entry = "forward" (@model is); differentiate that one}}
  func.func @forward() -> tensor<f32> {
    %c = arith.constant dense<0.0> : tensor<f32>
    return %c : tensor<f32>
  }
  func.func @model() -> tensor<f32> attributes {graph.entry = "forward"} {
    %c = arith.constant dense<0.0> : tensor<f32>
    return %c : tensor<f32>
  }
}

// -----

// Tests that result 0 must be a scalar: the loss.
graph.parameter @a : tensor<4xf32> init(normal, 2.000000e-02) hf "a"
// expected-error @+1 {{result 0 must be the scalar loss to differentiate}}
func.func @forward() -> tensor<4xf32> {
  %a = graph.parameter_ref @a : tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

// Tests that the entry must have a result.
// expected-error @+1 {{result 0 must be the scalar loss to differentiate}}
func.func @forward() {
  return
}

// -----

// Tests that reduce max, used only for metrics, has no gradient rule.
graph.parameter @a : tensor<4xf32> init(normal, 2.000000e-02) hf "a"
func.func @forward() -> tensor<f32> {
  %a = graph.parameter_ref @a : tensor<4xf32>
  // expected-error @+1 {{has no gradient rule: reduce max is used only for metrics}}
  %m = graph.reduce max %a dims [0] : tensor<4xf32> -> tensor<f32>
  return %m : tensor<f32>
}

// -----

// Tests that an op without GradientOpInterface on the loss's path through a
// parameter is rejected (argmax_correct is a metric).
graph.parameter @l : tensor<4x8xf32> init(normal, 2.000000e-02) hf "l"
func.func @forward(%labels: tensor<4xi32>, %w: tensor<4xf32>) -> tensor<f32> {
  %l = graph.parameter_ref @l : tensor<4x8xf32>
  // expected-error @+1 {{has no gradient rule (GradientOpInterface), but the loss depends on its result through a parameter}}
  %c = graph.argmax_correct %l, %labels, %w classes 8 : tensor<4x8xf32>, tensor<4xi32>, tensor<4xf32> -> tensor<f32>
  return %c : tensor<f32>
}

// -----

// Tests that the layer loop must start at 0.
graph.parameter @w : tensor<3x4xf32> init(normal, 2.000000e-02) hf "w.{}" stacked
func.func @blk(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.mul %x, %w : tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func @forward(%x: tensor<4xf32>) -> tensor<f32> {
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  // expected-error @+1 {{ferry-autodiff reverses loops from 0 with step 1 and a constant bound only}}
  %h = scf.for %l = %c1 to %c3 step %c1 iter_args(%a = %x) -> (tensor<4xf32>) {
    %w = graph.parameter_slice @w[%l] : tensor<4xf32>
    %y = func.call @blk(%a, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    scf.yield %y : tensor<4xf32>
  }
  %r = graph.reduce sum %h dims [0] : tensor<4xf32> -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// Tests that the layer loop must have step 1.
graph.parameter @w : tensor<4x4xf32> init(normal, 2.000000e-02) hf "w.{}" stacked
func.func @blk(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.mul %x, %w : tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func @forward(%x: tensor<4xf32>) -> tensor<f32> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  // expected-error @+1 {{ferry-autodiff reverses loops from 0 with step 1 and a constant bound only}}
  %h = scf.for %l = %c0 to %c4 step %c2 iter_args(%a = %x) -> (tensor<4xf32>) {
    %w = graph.parameter_slice @w[%l] : tensor<4xf32>
    %y = func.call @blk(%a, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    scf.yield %y : tensor<4xf32>
  }
  %r = graph.reduce sum %h dims [0] : tensor<4xf32> -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// Tests that the layer loop must have a constant bound.
graph.parameter @w : tensor<3x4xf32> init(normal, 2.000000e-02) hf "w.{}" stacked
func.func @forward(%x: tensor<4xf32>, %n: index) -> tensor<f32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{ferry-autodiff reverses loops from 0 with step 1 and a constant bound only}}
  %h = scf.for %l = %c0 to %n step %c1 iter_args(%a = %x) -> (tensor<4xf32>) {
    %w = graph.parameter_slice @w[%l] : tensor<4xf32>
    scf.yield %a : tensor<4xf32>
  }
  %r = graph.reduce sum %h dims [0] : tensor<4xf32> -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// Tests that a differentiated loop body holds only calls, parameter reads and
// index arithmetic.
graph.parameter @w : tensor<3x4xf32> init(normal, 2.000000e-02) hf "w.{}" stacked
func.func @forward(%x: tensor<4xf32>) -> tensor<f32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %h = scf.for %l = %c0 to %c3 step %c1 iter_args(%a = %x) -> (tensor<4xf32>) {
    %w = graph.parameter_slice @w[%l] : tensor<4xf32>
    // expected-error @+1 {{in a differentiated loop body: put the loop body's computation in a function (only calls, parameter reads and index arithmetic may appear there)}}
    %y = graph.mul %a, %w : tensor<4xf32>
    scf.yield %y : tensor<4xf32>
  }
  %r = graph.reduce sum %h dims [0] : tensor<4xf32> -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// Tests that a differentiated block needs a body.
graph.parameter @w : tensor<4xf32> init(normal, 2.000000e-02) hf "w"
func.func private @ext(tensor<4xf32>) -> tensor<f32>
func.func @forward() -> tensor<f32> {
  %w = graph.parameter_ref @w : tensor<4xf32>
  // expected-error @+1 {{calls @ext, which has no body to differentiate}}
  %r = func.call @ext(%w) : (tensor<4xf32>) -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// Tests that a differentiated block is straight-line (no calls or loops).
graph.parameter @w : tensor<4xf32> init(normal, 2.000000e-02) hf "w"
func.func @inner(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.gelu %x : tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func @outer(%x: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{inside differentiated block @outer: blocks must be straight-line graph ops}}
  %y = func.call @inner(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %r = graph.reduce sum %y dims [0] : tensor<4xf32> -> tensor<f32>
  return %r : tensor<f32>
}
func.func @forward() -> tensor<f32> {
  %w = graph.parameter_ref @w : tensor<4xf32>
  %r = func.call @outer(%w) : (tensor<4xf32>) -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// Tests that every call of a block differentiates the same arguments.
graph.parameter @w : tensor<4xf32> init(normal, 2.000000e-02) hf "w"
func.func @blk(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %z = graph.mul %x, %y : tensor<4xf32>
  return %z : tensor<4xf32>
}
func.func @forward(%x: tensor<4xf32>) -> tensor<f32> {
  %w = graph.parameter_ref @w : tensor<4xf32>
  %a = func.call @blk(%w, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{calls @blk with a different set of differentiated arguments than an earlier call; ferry-autodiff needs one signature per block}}
  %b = func.call @blk(%x, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s = graph.add %a, %b : tensor<4xf32>
  %r = graph.reduce sum %s dims [0] : tensor<4xf32> -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// Tests that a batched, transposed lhs with a shared rank-2 rhs has no
// gradient rule.
graph.parameter @x : tensor<2x3x4xf32> init(normal, 2.000000e-02) hf "x"
graph.parameter @w : tensor<3x5xf32> init(normal, 2.000000e-02) hf "w"
func.func @forward() -> tensor<f32> {
  %x = graph.parameter_ref @x : tensor<2x3x4xf32>
  %w = graph.parameter_ref @w : tensor<3x5xf32>
  // expected-error @+1 {{has no gradient rule for a transposed batched lhs with a shared rank-2 rhs}}
  %y = graph.matmul %x, %w {transpose_lhs} : tensor<2x3x4xf32>, tensor<3x5xf32> -> tensor<2x4x5xf32>
  %r = graph.reduce sum %y dims [0, 1, 2] : tensor<2x4x5xf32> -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// Tests that a non-tensor value computed in the loop cannot be stashed.
graph.parameter @w : tensor<3x4xf32> init(normal, 2.000000e-02) hf "w.{}" stacked
func.func @blk(%x: tensor<4xf32>, %w: tensor<4xf32>, %s: i64) -> tensor<4xf32> {
  %y = graph.mul %x, %w : tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func @forward(%x: tensor<4xf32>, %seed: index) -> tensor<f32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %h = scf.for %l = %c0 to %c3 step %c1 iter_args(%a = %x) -> (tensor<4xf32>) {
    %w = graph.parameter_slice @w[%l] : tensor<4xf32>
    %s = arith.index_cast %l : index to i64
    // expected-error @+1 {{passes a non-tensor value computed in the loop; ferry-autodiff cannot store it for the backward}}
    %y = func.call @blk(%a, %w, %s) : (tensor<4xf32>, tensor<4xf32>, i64) -> tensor<4xf32>
    scf.yield %y : tensor<4xf32>
  }
  %r = graph.reduce sum %h dims [0] : tensor<4xf32> -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// Tests that a rule's failure inside a block function is reported at the op
// in the block.
graph.parameter @a : tensor<4xf32> init(normal, 2.000000e-02) hf "a"
func.func @metric(%x: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{has no gradient rule: reduce max is used only for metrics}}
  %m = graph.reduce max %x dims [0] : tensor<4xf32> -> tensor<f32>
  return %m : tensor<f32>
}
func.func @forward() -> tensor<f32> {
  %a = graph.parameter_ref @a : tensor<4xf32>
  %m = func.call @metric(%a) : (tensor<4xf32>) -> tensor<f32>
  return %m : tensor<f32>
}

// -----

// Tests that ops without a gradient rule are fine off the loss's path: here
// reduce max and argmax_correct only feed result 1, a metric.
graph.parameter @l : tensor<4x8xf32> init(normal, 2.000000e-02) hf "l"
func.func @forward(%labels: tensor<4xi32>, %w: tensor<4xf32>) -> (tensor<f32>, tensor<f32>) {
  %l = graph.parameter_ref @l : tensor<4x8xf32>
  %loss = graph.softmax_cross_entropy %l, %labels, %w classes 8 : tensor<4x8xf32>, tensor<4xi32>, tensor<4xf32> -> tensor<f32>
  %c = graph.argmax_correct %l, %labels, %w classes 8 : tensor<4x8xf32>, tensor<4xi32>, tensor<4xf32> -> tensor<f32>
  %m = graph.reduce max %l dims [0, 1] : tensor<4x8xf32> -> tensor<f32>
  %s = graph.add %c, %m : tensor<f32>
  return %loss, %s : tensor<f32>, tensor<f32>
}
