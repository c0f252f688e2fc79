// RUN: ferry-opt %s --split-input-file --ferry-recompute -verify-diagnostics

// Every error of ferry-recompute, one per case, on hand-written stand-ins for
// ferry-autodiff's output.

graph.variable @stash.b.1 : tensor<3x2xf32> init(zeros) hf "stash.b.1.{}" stacked
func.func @b_fwd(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %y = graph.add %x, %x : tensor<2xf32>
  return %y, %y : tensor<2xf32>, tensor<2xf32>
}
func.func @f(%x0: tensor<2xf32>) -> tensor<2xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %h = scf.for %l = %c0 to %c3 step %c1 iter_args(%x = %x0) -> (tensor<2xf32>) {
    %r:2 = func.call @b_fwd(%x) : (tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)
    graph.store %r#1 into @stash.b.1[%l] : tensor<2xf32>
    scf.yield %r#0 : tensor<2xf32>
  }
  // A stash read by anything but the layer's own backward.
  // expected-error @+1 {{ferry-recompute: the stash @stash.b.1 is read by something other than one call to @b_bwd}}
  %s = graph.parameter_slice @stash.b.1[%c1] : tensor<2xf32>
  %y = graph.add %s, %h : tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

graph.variable @stash.b.1 : tensor<3x2xf32> init(zeros) hf "stash.b.1.{}" stacked
func.func @b_fwd(%x: tensor<2xf32>, %l: index) -> (tensor<2xf32>, tensor<2xf32>) {
  %y = graph.add %x, %x : tensor<2xf32>
  return %y, %y : tensor<2xf32>, tensor<2xf32>
}
func.func @b_bwd(%s: tensor<2xf32>, %dy: tensor<2xf32>) -> tensor<2xf32> {
  %y = graph.add %s, %dy : tensor<2xf32>
  return %y : tensor<2xf32>
}
func.func @f(%x0: tensor<2xf32>) -> tensor<2xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %h = scf.for %l = %c0 to %c3 step %c1 iter_args(%x = %x0) -> (tensor<2xf32>) {
    %r:2 = func.call @b_fwd(%x, %l) : (tensor<2xf32>, index) -> (tensor<2xf32>, tensor<2xf32>)
    graph.store %r#1 into @stash.b.1[%l] : tensor<2xf32>
    scf.yield %r#0 : tensor<2xf32>
  }
  %s = graph.parameter_slice @stash.b.1[%c1] : tensor<2xf32>
  // The backward's leading operands must be the forward's arguments.
  // expected-error @+1 {{ferry-recompute: the leading operands of @b_bwd are not the arguments of @b_fwd, so its forward cannot be re-run}}
  %g = func.call @b_bwd(%s, %h) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %g : tensor<2xf32>
}

// -----

graph.variable @stash.b.1 : tensor<3x2xf32> init(zeros) hf "stash.b.1.{}" stacked
func.func private @b_fwd(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)
func.func @f(%x0: tensor<2xf32>) -> tensor<2xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %h = scf.for %l = %c0 to %c3 step %c1 iter_args(%x = %x0) -> (tensor<2xf32>) {
    // expected-error @+1 {{ferry-recompute: @b_fwd has no body to re-run}}
    %r:2 = func.call @b_fwd(%x) : (tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)
    graph.store %r#1 into @stash.b.1[%l] : tensor<2xf32>
    scf.yield %r#0 : tensor<2xf32>
  }
  return %h : tensor<2xf32>
}

// -----

graph.variable @stash.b.1 : tensor<3x2xf32> init(zeros) hf "stash.b.1.{}" stacked
func.func @b_fwd(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %y = graph.add %x, %x : tensor<2xf32>
  return %y, %x : tensor<2xf32>, tensor<2xf32>
}
func.func @f(%x0: tensor<2xf32>) -> tensor<2xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %h = scf.for %l = %c0 to %c3 step %c1 iter_args(%x = %x0) -> (tensor<2xf32>) {
    %r:2 = func.call @b_fwd(%x) : (tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)
    graph.store %r#1 into @stash.b.1[%l] : tensor<2xf32>
    // One stash filled from two different results.
    // expected-error @+1 {{ferry-recompute: the stash @stash.b.1 holds results of two different calls}}
    graph.store %r#0 into @stash.b.1[%l] : tensor<2xf32>
    scf.yield %r#0 : tensor<2xf32>
  }
  return %h : tensor<2xf32>
}
