// RUN: ferry-opt %s --split-input-file --ferry-autodiff -verify-diagnostics

// Tests that result 0 must be a floating-point scalar. A regression test: this was once wrong.

// expected-error @+1 {{result 0 must be the scalar loss to differentiate}}
func.func @forward(%x: tensor<i32>) -> tensor<i32> {
  return %x : tensor<i32>
}
