// RUN: ferry-opt %s --split-input-file --ferry-select-kernels='programs=forward' -verify-diagnostics

// Tests the diagnostics of ferry-select-kernels (passes/SelectKernels.cpp,
// passes/lowering/); the messages name the lowering, ferry-lower-to-rt.

// Tests that every program named in programs=... exists (a module-level
// error).
// expected-error @+1 {{ferry-select-kernels: no function @forward}}
module {
  graph.parameter @w : tensor<4xf32> init(zeros) hf "w"
  func.func @other() {
    return
  }
}

// -----

// Tests that float constants must be splats (a fill).
func.func @forward() -> tensor<2xf32> {
  // expected-error @+1 {{ferry-lower-to-rt supports integer scalars and splat f32 or i32 constants only}}
  %c = arith.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
  %g = graph.gelu %c : tensor<2xf32>
  return %g : tensor<2xf32>
}

// -----

// Tests that integer tensor constants must be splats too (a fill_i32).
func.func @forward() -> tensor<2xi32> {
  // expected-error @+1 {{ferry-lower-to-rt supports integer scalars and splat f32 or i32 constants only}}
  %c = arith.constant dense<[0, 1]> : tensor<2xi32>
  %r = graph.reshape %c : tensor<2xi32> -> tensor<2xi32>
  return %r : tensor<2xi32>
}

// -----

// Tests that loops start at 0.
graph.parameter @b : tensor<3x4xf32> init(zeros) hf "b.{}" stacked
func.func @forward(%x: tensor<4xf32> {graph.input = "x"}) -> tensor<4xf32> {
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  // expected-error @+1 {{ferry-lower-to-rt lowers loops from 0 with step 1 and constant bounds}}
  %o = scf.for %l = %c1 to %c3 step %c1 iter_args(%a = %x) -> (tensor<4xf32>) {
    %b = graph.parameter_slice @b[%l] : tensor<4xf32>
    %y = graph.add %a, %b : tensor<4xf32>
    scf.yield %y : tensor<4xf32>
  }
  return %o : tensor<4xf32>
}

// -----

// Tests that loops have step 1.
func.func @forward(%x: tensor<4xf32> {graph.input = "x"}) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  // expected-error @+1 {{ferry-lower-to-rt lowers loops from 0 with step 1 and constant bounds}}
  %o = scf.for %l = %c0 to %c4 step %c2 iter_args(%a = %x) -> (tensor<4xf32>) {
    %y = graph.gelu %a : tensor<4xf32>
    scf.yield %y : tensor<4xf32>
  }
  return %o : tensor<4xf32>
}

// -----

// Tests that a loop bound cannot depend on a program input.
func.func @forward(%x: tensor<4xf32> {graph.input = "x"}, %n: index {graph.input = "n"}) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{ferry-lower-to-rt lowers loops from 0 with step 1 and constant bounds}}
  %o = scf.for %l = %c0 to %n step %c1 iter_args(%a = %x) -> (tensor<4xf32>) {
    %y = graph.gelu %a : tensor<4xf32>
    scf.yield %y : tensor<4xf32>
  }
  return %o : tensor<4xf32>
}

// -----

// Tests that reductions run over contiguous dimensions.
func.func @forward(%x: tensor<2x3x4xf32> {graph.input = "x"}) -> tensor<3xf32> {
  // expected-error @+1 {{ferry-lower-to-rt needs contiguous dimensions to reduce or broadcast}}
  %r = graph.reduce sum %x dims [0, 2] : tensor<2x3x4xf32> -> tensor<3xf32>
  return %r : tensor<3xf32>
}

// -----

// Tests that broadcasts insert contiguous dimensions.
func.func @forward(%x: tensor<3xf32> {graph.input = "x"}) -> tensor<2x3x4xf32> {
  // expected-error @+1 {{ferry-lower-to-rt needs contiguous dimensions to reduce or broadcast}}
  %r = graph.broadcast %x dims [0, 2] : tensor<3xf32> -> tensor<2x3x4xf32>
  return %r : tensor<2x3x4xf32>
}

// -----

// Tests that states are f32 or i32.
// expected-error @+1 {{ferry-lower-to-rt supports f32 and i32 states, found 'bf16'}}
graph.parameter @w : tensor<4xbf16> init(zeros) hf "w"
func.func @forward() {
  return
}

// -----

// Tests that addresses stay affine: a product of two register-dependent
// indices is rejected.
graph.parameter @b : tensor<3x4xf32> init(zeros) hf "b.{}" stacked
func.func @forward(%i: index {graph.input = "i"}, %j: index {graph.input = "j"}) -> tensor<4xf32> {
  // expected-error @+1 {{multiplies two register-dependent indices; addresses must stay affine}}
  %k = arith.muli %i, %j : index
  %b = graph.parameter_slice @b[%k] : tensor<4xf32>
  return %b : tensor<4xf32>
}

// -----

// Tests that an op without a kernel is rejected.
graph.parameter @w : tensor<4xf32> init(zeros) hf "w"
func.func @forward(%x: tensor<4xf32> {graph.input = "x"}) -> tensor<4xf32> {
  // expected-error @+1 {{ferry-lower-to-rt has no kernel for this op}}
  %y = arith.addf %x, %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Tests that transposes have rank 6 or less.
func.func @forward(%x: tensor<1x1x1x1x1x1x2xf32> {graph.input = "x"}) -> tensor<2x1x1x1x1x1x1xf32> {
  // expected-error @+1 {{transposes of rank > 6 are not lowered}}
  %y = graph.transpose %x [6, 0, 1, 2, 3, 4, 5] : tensor<1x1x1x1x1x1x2xf32> -> tensor<2x1x1x1x1x1x1xf32>
  return %y : tensor<2x1x1x1x1x1x1xf32>
}

// -----

// Tests that called functions need a body to inline.
graph.parameter @w : tensor<4xf32> init(zeros) hf "w"
func.func private @ext(tensor<4xf32>) -> tensor<4xf32>
func.func @forward(%x: tensor<4xf32> {graph.input = "x"}) -> tensor<4xf32> {
  // expected-error @+1 {{calls a function without a body}}
  %y = func.call @ext(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// A read still used after a write to the same declaration: reads are lowered
// as views, so this would see the written value; refused.
graph.variable @v : tensor<4xf32> init(zeros) hf "v"
func.func @forward() -> tensor<4xf32> {
  %a = graph.parameter_ref @v : tensor<4xf32>
  %two = arith.constant dense<2.0> : tensor<4xf32>
  // expected-error @+1 {{writes @v while an earlier read of it is still used below; ferry-lower-to-rt lowers reads as views, so copy the value (or move the read after the write)}}
  graph.store %two into @v : tensor<4xf32>
  %s = graph.add %a, %a : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// Tests that a split parameter needs a partitioned module.
module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 1>} {
  // expected-error @+1 {{is split over the tensor group, but the module is not partitioned; run ferry-partition-tensors first}}
  graph.parameter @w : tensor<4xf32> init(zeros) hf "w" sharding <split = 0>
  func.func @forward(%x: tensor<4xf32> {graph.input = "x"}) -> (tensor<4xf32> {graph.output = "y"}) {
    return %x : tensor<4xf32>
  }
}
