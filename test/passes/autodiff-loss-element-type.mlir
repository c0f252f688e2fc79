// RUN: ferry-opt %s --split-input-file --ferry-autodiff | FileCheck %s

// Tests that the backward is seeded with d(loss)/d(loss) = 1 in the loss's
// own element type. A regression test: this was once wrong.

// CHECK-LABEL: func.func @forward_grad() -> tensor<bf16>
// CHECK: [[ONE:%.*]] = arith.constant dense<1.000000e+00> : tensor<bf16>
// CHECK-NEXT: [[G:%.*]] = graph.broadcast [[ONE]] dims [0] : tensor<bf16> -> tensor<4xbf16>
// CHECK-NEXT: graph.accumulate [[G]] into @grad.a : tensor<4xbf16>
graph.parameter @a : tensor<4xbf16> init(normal, 2.000000e-02) hf "a"
func.func @forward() -> tensor<bf16> {
  %a = graph.parameter_ref @a : tensor<4xbf16>
  %r = graph.reduce sum %a dims [0] : tensor<4xbf16> -> tensor<bf16>
  return %r : tensor<bf16>
}

// -----

// CHECK-LABEL: func.func @forward_grad() -> tensor<f16>
// CHECK: [[ONE:%.*]] = arith.constant dense<1.000000e+00> : tensor<f16>
// CHECK-NEXT: [[G:%.*]] = graph.broadcast [[ONE]] dims [0] : tensor<f16> -> tensor<4xf16>
// CHECK-NEXT: graph.accumulate [[G]] into @grad.a : tensor<4xf16>
graph.parameter @a : tensor<4xf16> init(normal, 2.000000e-02) hf "a"
func.func @forward() -> tensor<f16> {
  %a = graph.parameter_ref @a : tensor<4xf16>
  %r = graph.reduce sum %a dims [0] : tensor<4xf16> -> tensor<f16>
  return %r : tensor<f16>
}
