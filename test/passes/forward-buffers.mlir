// RUN: ferry-opt %s --ferry-forward-buffers | FileCheck %s

// Tests ferry-forward-buffers alone, on calls over virtual buffers (states
// @a, @w, @y, @grad.u, @grad.v and temporaries %b5-%b8):
// * tanh into temporary %b5, only copied into @y: tanh writes @y itself and
//   the copy and the temporary's alloc go;
// * a GEMM (alpha 1) into temporary %b6, only accumulated into @grad.u: the
//   GEMM adds into @grad.u (its accumulate flag becomes 1);
// * the same with alpha 0.3 is kept: alpha * AB + D in one rounding is not
//   D + (alpha * AB) unless alpha is a power of two;
// * temporary %b8, written outside the loop and copied inside it, is kept:
//   every use must sit in the same loop body.

// CHECK: rt.program @f inputs [] registers 1 transient 0 {
// CHECK-NEXT: %a = rt.state_ref @a
// CHECK-NEXT: %w = rt.state_ref @w
// CHECK-NEXT: %y = rt.state_ref @y
// CHECK-NEXT: %grad.u = rt.state_ref @grad.u
// CHECK-NEXT: %grad.v = rt.state_ref @grad.v
// CHECK-NEXT: %[[B7:.*]] = rt.alloc size 32{{$}}
// CHECK-NEXT: %[[B8:.*]] = rt.alloc size 32{{$}}
// CHECK-NEXT: %[[X0:.*]] = rt.slice %a [0] size 32
// CHECK-NEXT: %[[X1:.*]] = rt.slice %y [0] size 32
// CHECK-NEXT: rt.tanh x(%[[X0]]) out(%[[X1]])
// CHECK-NEXT: %[[G0:.*]] = rt.slice %a [0] size 32
// CHECK-NEXT: %[[G1:.*]] = rt.slice %w [0] size 64
// CHECK-NEXT: %[[G2:.*]] = rt.slice %grad.u [0] size 32
// CHECK-NEXT: rt.gemm a(%[[G0]]) b(%[[G1]]) c(%[[G2]]) {accumulate = array<i64: 1>, alpha = 1.000000e+00 : f64, batch = array<i64: 1>, k = array<i64: 4>, m = array<i64: 2>, n = array<i64: 4>, stride_a = array<i64: 8>, stride_b = array<i64: 16>, stride_c = array<i64: 8>, trans_a = array<i64: 0>, trans_b = array<i64: 1>}
// CHECK-NEXT: %[[H0:.*]] = rt.slice %a [0] size 32
// CHECK-NEXT: %[[H1:.*]] = rt.slice %w [0] size 64
// CHECK-NEXT: %[[H2:.*]] = rt.slice %[[B7]] [0] size 32
// CHECK-NEXT: rt.gemm a(%[[H0]]) b(%[[H1]]) c(%[[H2]]) {accumulate = array<i64: 0>, alpha = 3.000000e-01 : f64, {{.*}}}
// CHECK-NEXT: %[[A0:.*]] = rt.slice %[[B7]] [0] size 32
// CHECK-NEXT: %[[A1:.*]] = rt.slice %grad.v [0] size 32
// CHECK-NEXT: rt.accumulate src(%[[A0]]) dst(%[[A1]])
// CHECK-NEXT: %[[T0:.*]] = rt.slice %a [0] size 32
// CHECK-NEXT: %[[T1:.*]] = rt.slice %[[B8]] [0] size 32
// CHECK-NEXT: rt.tanh x(%[[T0]]) out(%[[T1]])
// CHECK-NEXT: rt.loop r 0 count 2 {
// CHECK-NEXT: %[[C0:.*]] = rt.slice %[[B8]] [0] size 32
// CHECK-NEXT: %[[C1:.*]] = rt.slice %y [0] size 32
// CHECK-NEXT: rt.copy src(%[[C0]]) dst(%[[C1]]){{.*}}
// CHECK-NEXT: }
// CHECK-NEXT: }

module {
  rt.state @a : tensor<2x4xf32> role "input" at 0 size 32 {hf = "a", init = "zeros", init_std = 0.0 : f64}
  rt.state @w : tensor<4x4xf32> role "parameter" at 64 size 64 {hf = "w", init = "zeros", init_std = 0.0 : f64}
  rt.state @y : tensor<2x4xf32> role "state" at 128 size 32 {hf = "y", init = "zeros", init_std = 0.0 : f64}
  rt.state @grad.u : tensor<2x4xf32> role "gradient" at 192 size 32 {hf = "grad.u", init = "zeros", init_std = 0.0 : f64}
  rt.state @grad.v : tensor<2x4xf32> role "gradient" at 256 size 32 {hf = "grad.v", init = "zeros", init_std = 0.0 : f64}
  rt.program @f inputs [] registers 1 transient 0 {
    %a = rt.state_ref @a
    %w = rt.state_ref @w
    %y = rt.state_ref @y
    %grad.u = rt.state_ref @grad.u
    %grad.v = rt.state_ref @grad.v
    %b5 = rt.alloc size 32
    %b6 = rt.alloc size 32
    %b7 = rt.alloc size 32
    %b8 = rt.alloc size 32
    %r0 = rt.slice %a [0] size 32
    %r1 = rt.slice %b5 [0] size 32
    rt.tanh x(%r0) out(%r1) {count = array<i64: 8>}
    %r2 = rt.slice %b5 [0] size 32
    %r3 = rt.slice %y [0] size 32
    rt.copy src(%r2) dst(%r3) {bytes = array<i64: 32>}
    %r4 = rt.slice %a [0] size 32
    %r5 = rt.slice %w [0] size 64
    %r6 = rt.slice %b6 [0] size 32
    rt.gemm a(%r4) b(%r5) c(%r6) {batch = array<i64: 1>, m = array<i64: 2>, n = array<i64: 4>, k = array<i64: 4>, trans_a = array<i64: 0>, trans_b = array<i64: 1>, stride_a = array<i64: 8>, stride_b = array<i64: 16>, stride_c = array<i64: 8>, accumulate = array<i64: 0>, alpha = 1.0 : f64}
    %r7 = rt.slice %b6 [0] size 32
    %r8 = rt.slice %grad.u [0] size 32
    rt.accumulate src(%r7) dst(%r8) {count = array<i64: 8>}
    %r9 = rt.slice %a [0] size 32
    %r10 = rt.slice %w [0] size 64
    %r11 = rt.slice %b7 [0] size 32
    rt.gemm a(%r9) b(%r10) c(%r11) {batch = array<i64: 1>, m = array<i64: 2>, n = array<i64: 4>, k = array<i64: 4>, trans_a = array<i64: 0>, trans_b = array<i64: 1>, stride_a = array<i64: 8>, stride_b = array<i64: 16>, stride_c = array<i64: 8>, accumulate = array<i64: 0>, alpha = 0.3 : f64}
    %r12 = rt.slice %b7 [0] size 32
    %r13 = rt.slice %grad.v [0] size 32
    rt.accumulate src(%r12) dst(%r13) {count = array<i64: 8>}
    %r14 = rt.slice %a [0] size 32
    %r15 = rt.slice %b8 [0] size 32
    rt.tanh x(%r14) out(%r15) {count = array<i64: 8>}
    rt.loop r 0 count 2 {
      %r16 = rt.slice %b8 [0] size 32
      %r17 = rt.slice %y [0] size 32
      rt.copy src(%r16) dst(%r17) {bytes = array<i64: 32>}
    }
  }
}
