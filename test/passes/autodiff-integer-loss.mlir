// RUN: ferry-opt %s --split-input-file --ferry-autodiff -verify-diagnostics
// XFAIL: *

// Tests that result 0 must be a floating-point scalar. Known bug:
// Autodiff::run checks only the rank (and casts result 0 to RankedTensorType
// without checking it is one), so an integer scalar loss is accepted and
// seeded with the bit pattern of 1.0f (`dense<1065353216> : tensor<i32>`).
// Remove the XFAIL line when fixed.

// expected-error @+1 {{result 0 must be the scalar loss to differentiate}}
func.func @forward(%x: tensor<i32>) -> tensor<i32> {
  return %x : tensor<i32>
}
