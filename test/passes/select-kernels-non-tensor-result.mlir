// RUN: ferry-opt %s --split-input-file --ferry-select-kernels='programs=forward' -verify-diagnostics

// Tests that an op with a non-tensor result that ferry-lower-to-rt cannot
// fold into an affine index (anything but arith.constant / addi / subi / muli)
// is rejected with a diagnostic. A regression test: this was once wrong.

graph.parameter @b : tensor<3x4xf32> init(zeros) hf "b.{}" stacked
func.func @forward(%i: index {graph.input = "i"}) -> tensor<4xf32> {
  %c2 = arith.constant 2 : index
  // expected-error @+1 {{ferry-lower-to-rt has no kernel for this op}}
  %k = arith.divui %i, %c2 : index
  %b = graph.parameter_slice @b[%k] : tensor<4xf32>
  return %b : tensor<4xf32>
}

// -----

func.func @forward(%x: tensor<4xf32> {graph.input = "x"}, %i: index {graph.input = "i"}) -> tensor<4xf32> {
  // expected-error @+1 {{ferry-lower-to-rt has no kernel for this op}}
  %s = arith.index_cast %i : index to i64
  %c0 = arith.constant 0 : index
  %d = graph.dropout %x, %s, %c0, %c0 {probability = 1.000000e-01 : f64, purpose = "p"} : tensor<4xf32>
  return %d : tensor<4xf32>
}
