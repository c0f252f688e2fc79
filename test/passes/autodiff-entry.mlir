// RUN: ferry-opt %s --ferry-autodiff=entry=loss | FileCheck %s
// RUN: ferry-opt %s --ferry-autodiff | FileCheck %s --check-prefix=DEFAULT

// Tests ferry-autodiff's entry option: the named function is differentiated
// into @<entry>_grad; without the option the entry is @forward.

// CHECK: graph.variable @grad.w : tensor<4xf32> init(zeros) hf "grad.w"
// CHECK-NOT: graph.variable @grad.v
// CHECK-LABEL: func.func @loss() -> tensor<f32>
// CHECK-LABEL: func.func @loss_grad() -> tensor<f32>
// CHECK-NEXT: [[W:%.*]] = graph.parameter_ref @w : tensor<4xf32>
// CHECK-NEXT: [[L:%.*]] = graph.reduce sum_squares [[W]] dims [0] : tensor<4xf32> -> tensor<f32>
// CHECK-NEXT: [[ONE:%.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: [[G:%.*]] = graph.broadcast [[ONE]] dims [0] : tensor<f32> -> tensor<4xf32>
// CHECK-NEXT: [[TWICE:%.*]] = graph.scale [[W]] by 2.000000e+00 : tensor<4xf32>
// CHECK-NEXT: [[DW:%.*]] = graph.mul [[G]], [[TWICE]] : tensor<4xf32>
// CHECK-NEXT: graph.accumulate [[DW]] into @grad.w : tensor<4xf32>
// CHECK-NEXT: return [[L]] : tensor<f32>
// CHECK-NOT: func.func @forward_grad

// DEFAULT: graph.variable @grad.v : tensor<4xf32> init(zeros) hf "grad.v"
// DEFAULT-NOT: graph.variable @grad.w
// DEFAULT: func.func @forward_grad() -> tensor<f32>
// DEFAULT: graph.accumulate %{{.*}} into @grad.v : tensor<4xf32>
// DEFAULT-NOT: func.func @loss_grad
graph.parameter @w : tensor<4xf32> init(normal, 2.000000e-02) hf "w"
graph.parameter @v : tensor<4xf32> init(normal, 2.000000e-02) hf "v"
func.func @loss() -> tensor<f32> {
  %w = graph.parameter_ref @w : tensor<4xf32>
  %r = graph.reduce sum_squares %w dims [0] : tensor<4xf32> -> tensor<f32>
  return %r : tensor<f32>
}
func.func @forward() -> tensor<f32> {
  %v = graph.parameter_ref @v : tensor<4xf32>
  %r = graph.reduce sum %v dims [0] : tensor<4xf32> -> tensor<f32>
  return %r : tensor<f32>
}
