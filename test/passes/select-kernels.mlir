// RUN: ferry-opt %s --ferry-select-kernels='programs=forward matmul-precision=bf16' | FileCheck %s
// RUN: ferry-opt %s --ferry-select-kernels='programs=forward' | FileCheck %s --check-prefix=FP32
// RUN: ferry-opt %s --ferry-select-kernels='programs=forward matmul-precision=bf16 gemm-workspace=4096' | FileCheck %s --check-prefix=SCRATCH

// Tests ferry-select-kernels alone: graph IR -> typed rt kernel ops on
// virtual buffers.
// * States come first, in declaration order after the program's input and
//   output states (one rt.state_ref each); temporaries are rt.allocs.
// * The integer argument is the input register r0; the loop gets r1 and the
//   parameter slice @layer.w[%l] is the slice of %layer.w at 64 * r1.
// * Storing a splat is a fill of the destination; the carried value lives
//   in the first temporary, copied in before the loop and at the end of each
//   body.
// * With matmul-precision=bf16 each GEMM gets a workspace for its rounded
//   inputs (4 bytes per element: 2x4 + 4x4 = 96 bytes) and the precision
//   flag 1; fp32 GEMMs get neither. gemm-workspace adds the backend's
//   cuBLASLt scratch after the rounded inputs, marked as `scratch` (which
//   ferry-place-buffers may shrink under a budget).
// * Nothing is forwarded yet: the copies stay (ferry-forward-buffers).

// CHECK: rt.state @arg.forward.x : tensor<2x4xf32> role "input" at 0 size 32
// CHECK: rt.state @output.forward.0 : tensor<2x4xf32> role "output" at 64 size 32
// CHECK: rt.state @layer.w : tensor<2x4x4xf32> role "parameter" at 128 size 128
// CHECK: rt.state @out : tensor<2x4xf32> role "state" at 256 size 32
// CHECK: rt.program @forward inputs ["step"] registers 2 transient 0 {
// CHECK-NEXT: %arg.forward.x = rt.state_ref @arg.forward.x
// CHECK-NEXT: %output.forward.0 = rt.state_ref @output.forward.0
// CHECK-NEXT: %layer.w = rt.state_ref @layer.w
// CHECK-NEXT: %out = rt.state_ref @out
// CHECK-NEXT: %[[T4:.*]] = rt.alloc size 32
// CHECK-NEXT: %[[T5:.*]] = rt.alloc size 32
// CHECK-NEXT: %[[T6:.*]] = rt.alloc size 96 {label = "bf16 matmul workspace"}
// CHECK-NEXT: %[[T7:.*]] = rt.alloc size 32
// CHECK-NEXT: %[[D:.*]] = rt.slice %out [0] size 32
// CHECK-NEXT: rt.fill dst(%[[D]]) {count = array<i64: 8>, value = 0.000000e+00 : f64}
// CHECK-NEXT: %[[S:.*]] = rt.slice %arg.forward.x [0] size 32
// CHECK-NEXT: %[[D:.*]] = rt.slice %[[T4]] [0] size 32
// CHECK-NEXT: rt.copy src(%[[S]]) dst(%[[D]]) {bytes = array<i64: 32>}
// CHECK-NEXT: rt.loop r 1 count 2 {
// CHECK-NEXT: %[[A:.*]] = rt.slice %[[T4]] [0] size 32
// CHECK-NEXT: %[[B:.*]] = rt.slice %layer.w [0, 0, 64] size 64
// CHECK-NEXT: %[[C:.*]] = rt.slice %[[T5]] [0] size 32
// CHECK-NEXT: %[[W:.*]] = rt.slice %[[T6]] [0] size 96
// CHECK-NEXT: rt.gemm a(%[[A]]) b(%[[B]]) c(%[[C]]) workspace(%[[W]]) {accumulate = array<i64: 0>, alpha = 1.000000e+00 : f64, batch = array<i64: 1>, k = array<i64: 4>, m = array<i64: 2>, n = array<i64: 4>, precision = array<i64: 1>, stride_a = array<i64: 8>, stride_b = array<i64: 16>, stride_c = array<i64: 8>, trans_a = array<i64: 0>, trans_b = array<i64: 1>}
// CHECK-NEXT: %[[X:.*]] = rt.slice %[[T5]] [0] size 32
// CHECK-NEXT: %[[O:.*]] = rt.slice %[[T7]] [0] size 32
// CHECK-NEXT: rt.tanh x(%[[X]]) out(%[[O]]) {count = array<i64: 8>}
// CHECK-NEXT: %[[S:.*]] = rt.slice %[[T7]] [0] size 32
// CHECK-NEXT: %[[D:.*]] = rt.slice %[[T4]] [0] size 32
// CHECK-NEXT: rt.copy src(%[[S]]) dst(%[[D]]) {bytes = array<i64: 32>}
// CHECK-NEXT: }
// CHECK-NEXT: %[[S:.*]] = rt.slice %[[T4]] [0] size 32
// CHECK-NEXT: %[[D:.*]] = rt.slice %out [0] size 32
// CHECK-NEXT: rt.copy src(%[[S]]) dst(%[[D]]) {bytes = array<i64: 32>}
// CHECK-NEXT: %[[S:.*]] = rt.slice %[[T4]] [0] size 32
// CHECK-NEXT: %[[D:.*]] = rt.slice %output.forward.0 [0] size 32
// CHECK-NEXT: rt.copy src(%[[S]]) dst(%[[D]]) {bytes = array<i64: 32>}
// CHECK-NEXT: }
// CHECK-NOT: graph.
// CHECK-NOT: func.func

// FP32-NOT: workspace
// FP32: %[[T4:.*]] = rt.alloc size 32
// FP32-NEXT: %[[T5:.*]] = rt.alloc size 32
// FP32: rt.loop r 1 count 2 {
// FP32-NEXT: %[[A:.*]] = rt.slice %[[T4]] [0] size 32
// FP32-NEXT: %[[B:.*]] = rt.slice %layer.w [0, 0, 64] size 64
// FP32-NEXT: %[[C:.*]] = rt.slice %[[T5]] [0] size 32
// FP32-NEXT: rt.gemm a(%[[A]]) b(%[[B]]) c(%[[C]]) {accumulate = array<i64: 0>, alpha = 1.000000e+00 : f64, batch = array<i64: 1>, k = array<i64: 4>, m = array<i64: 2>, n = array<i64: 4>, stride_a = array<i64: 8>, stride_b = array<i64: 16>, stride_c = array<i64: 8>, trans_a = array<i64: 0>, trans_b = array<i64: 1>}

// SCRATCH: %[[T6:.*]] = rt.alloc size 4192 {label = "bf16 matmul workspace", scratch = 4096 : i64}
// SCRATCH: %[[W:.*]] = rt.slice %[[T6]] [0] size 4192
// SCRATCH-NEXT: rt.gemm {{.*}} workspace(%[[W]]) {{.*}} precision = array<i64: 1>,

module {
  graph.parameter @layer.w : tensor<2x4x4xf32> init(normal, 2.000000e-02) hf "layer.{}.w" stacked
  graph.variable @out : tensor<2x4xf32> init(zeros) hf "out"
  func.func @forward(%x: tensor<2x4xf32> {graph.input = "x"}, %step: index {graph.input = "step"}) -> tensor<2x4xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %zero = arith.constant dense<0.0> : tensor<2x4xf32>
    graph.store %zero into @out : tensor<2x4xf32>
    %h = scf.for %l = %c0 to %c2 step %c1 iter_args(%xl = %x) -> (tensor<2x4xf32>) {
      %w = graph.parameter_slice @layer.w[%l] : tensor<4x4xf32>
      %y = graph.matmul %xl, %w {transpose_rhs} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
      %t = graph.tanh %y : tensor<2x4xf32>
      scf.yield %t : tensor<2x4xf32>
    }
    graph.store %h into @out : tensor<2x4xf32>
    return %h : tensor<2x4xf32>
  }
}
