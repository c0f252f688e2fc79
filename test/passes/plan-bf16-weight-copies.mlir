// RUN: ferry-opt %s --split-input-file --ferry-plan-bf16-weight-copies | FileCheck %s

// Tests ferry-plan-bf16-weight-copies alone, on calls over virtual buffers
// (states @x, @w, @ws, @u, the temporaries %b4 and %b5; @w, @ws and @u are
// parameters, @ws stacked: two 8x8 layers of 256 bytes):
// * @w, read by a bf16 GEMM in the micro-batch loop r0, is copied once
//   before that loop (a new alloc of 128 bytes, a scale by 1 writing bf16);
// * @ws, read per layer (offset 256 * r1 forward, 256 - 256 * r2 backward),
//   is copied whole (512 -> 256 bytes) before r0, and both layer loops read
//   their layer's half of the one copy (offsets 128 * r1, 128 - 128 * r2);
// * @u is written (fill) in the loop that reads it: its copy is made
//   inside, before the GEMM;
// * @w again after a fill of @w at the top level: a new copy, not the first;
// * an fp32 GEMM (precision 0) and the input @x stay as they are.
// A GEMM without a bf16 mask has nothing between `batch` and `k` in its
// (alphabetical) attributes, where `bf16` would sort.

// CHECK-LABEL: rt.program @f
// CHECK: %[[B4:.*]] = rt.alloc size 64{{$}}
// CHECK-NEXT: %[[B5:.*]] = rt.alloc size 64{{$}}
// CHECK-NEXT: %[[W1:.*]] = rt.alloc size 128 {bf16, label = "bf16 copy of @w"}
// CHECK-NEXT: %[[WS:.*]] = rt.alloc size 256 {bf16, label = "bf16 copy of @ws"}
// CHECK-NEXT: %[[U:.*]] = rt.alloc size 128 {bf16, label = "bf16 copy of @u"}
// CHECK-NEXT: %[[W2:.*]] = rt.alloc size 128 {bf16, label = "bf16 copy of @w"}
// CHECK-NEXT: %[[S0:.*]] = rt.slice %w [0] size 256
// CHECK-NEXT: %[[S1:.*]] = rt.slice %[[W1]] [0] size 128
// CHECK-NEXT: rt.scale x(%[[S0]]) out(%[[S1]]) {bf16 = 2 : i64, count = array<i64: 64>, factor = 1.000000e+00 : f64}
// CHECK-NEXT: %[[S2:.*]] = rt.slice %ws [0] size 512
// CHECK-NEXT: %[[S3:.*]] = rt.slice %[[WS]] [0] size 256
// CHECK-NEXT: rt.scale x(%[[S2]]) out(%[[S3]]) {bf16 = 2 : i64, count = array<i64: 128>, factor = 1.000000e+00 : f64}
// CHECK-NEXT: rt.loop r 0 count 2 {
// CHECK-NEXT: %[[G0:.*]] = rt.slice %x [0] size 64
// CHECK-NEXT: %[[G1:.*]] = rt.slice %[[W1]] [0] size 128
// CHECK-NEXT: %[[G2:.*]] = rt.slice %[[B4]] [0] size 64
// CHECK-NEXT: rt.gemm a(%[[G0]]) b(%[[G1]]) c(%[[G2]]) {{\{.*, bf16 = 2 : i64, .*\}$}}
// CHECK-NEXT: rt.loop r 1 count 2 {
// CHECK-NEXT: %[[H0:.*]] = rt.slice %[[B4]] [0] size 64
// CHECK-NEXT: %[[H1:.*]] = rt.slice %[[WS]] [0, 0, 128] size 128
// CHECK-NEXT: %[[H2:.*]] = rt.slice %[[B5]] [0] size 64
// CHECK-NEXT: rt.gemm a(%[[H0]]) b(%[[H1]]) c(%[[H2]]) {{\{.*, bf16 = 2 : i64, .*\}$}}
// CHECK-NEXT: }
// CHECK-NEXT: rt.loop r 2 count 2 {
// CHECK-NEXT: %[[I0:.*]] = rt.slice %[[B5]] [0] size 64
// CHECK-NEXT: %[[I1:.*]] = rt.slice %[[WS]] [128, 0, 0, -128] size 128
// CHECK-NEXT: %[[I2:.*]] = rt.slice %[[B4]] [0] size 64
// CHECK-NEXT: rt.gemm a(%[[I0]]) b(%[[I1]]) c(%[[I2]]) {{\{.*, bf16 = 2 : i64, .*\}$}}
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: rt.loop r 0 count 2 {
// CHECK-NEXT: %[[J0:.*]] = rt.slice %u [0] size 256
// CHECK-NEXT: %[[J1:.*]] = rt.slice %[[U]] [0] size 128
// CHECK-NEXT: rt.scale x(%[[J0]]) out(%[[J1]]) {bf16 = 2 : i64, count = array<i64: 64>, factor = 1.000000e+00 : f64}
// CHECK-NEXT: %[[K0:.*]] = rt.slice %x [0] size 64
// CHECK-NEXT: %[[K1:.*]] = rt.slice %[[U]] [0] size 128
// CHECK-NEXT: %[[K2:.*]] = rt.slice %[[B4]] [0] size 64
// CHECK-NEXT: rt.gemm a(%[[K0]]) b(%[[K1]]) c(%[[K2]]) {{\{.*, bf16 = 2 : i64, .*\}$}}
// CHECK-NEXT: %[[F0:.*]] = rt.slice %u [0] size 256
// CHECK-NEXT: rt.fill dst(%[[F0]]){{.*}}
// CHECK-NEXT: }
// CHECK-NEXT: %[[L0:.*]] = rt.slice %x [0] size 64
// CHECK-NEXT: %[[L1:.*]] = rt.slice %w [0] size 256
// CHECK-NEXT: %[[L2:.*]] = rt.slice %[[B4]] [0] size 64
// CHECK-NEXT: rt.gemm a(%[[L0]]) b(%[[L1]]) c(%[[L2]]) {{\{.*, batch = array<i64: 1>, k = .*\}$}}
// CHECK-NEXT: %[[F1:.*]] = rt.slice %w [0] size 256
// CHECK-NEXT: rt.fill dst(%[[F1]])
// CHECK-NEXT: %[[M0:.*]] = rt.slice %w [0] size 256
// CHECK-NEXT: %[[M1:.*]] = rt.slice %[[W2]] [0] size 128
// CHECK-NEXT: rt.scale x(%[[M0]]) out(%[[M1]])
// CHECK-NEXT: %[[N0:.*]] = rt.slice %x [0] size 64
// CHECK-NEXT: %[[N1:.*]] = rt.slice %[[W2]] [0] size 128
// CHECK-NEXT: %[[N2:.*]] = rt.slice %[[B4]] [0] size 64
// CHECK-NEXT: rt.gemm a(%[[N0]]) b(%[[N1]]) c(%[[N2]]) {{\{.*, bf16 = 2 : i64, .*\}$}}

module {
  rt.state @x : tensor<2x8xf32> role "input" at 0 size 64 {hf = "x", init = "zeros", init_std = 0.0 : f64}
  rt.state @w : tensor<8x8xf32> role "parameter" at 0 size 256 {hf = "w", init = "zeros", init_std = 0.0 : f64}
  rt.state @ws : tensor<2x8x8xf32> role "parameter" at 0 size 512 {hf = "ws", init = "zeros", init_std = 0.0 : f64}
  rt.state @u : tensor<8x8xf32> role "parameter" at 0 size 256 {hf = "u", init = "zeros", init_std = 0.0 : f64}
  rt.program @f inputs [] registers 3 transient 0 {
    %x = rt.state_ref @x
    %w = rt.state_ref @w
    %ws = rt.state_ref @ws
    %u = rt.state_ref @u
    %b4 = rt.alloc size 64
    %b5 = rt.alloc size 64
    rt.loop r 0 count 2 {
      %r0 = rt.slice %x [0] size 64
      %r1 = rt.slice %w [0] size 256
      %r2 = rt.slice %b4 [0] size 64
      rt.gemm a(%r0) b(%r1) c(%r2) {batch = array<i64: 1>, m = array<i64: 2>, n = array<i64: 8>, k = array<i64: 8>, trans_a = array<i64: 0>, trans_b = array<i64: 0>, stride_a = array<i64: 16>, stride_b = array<i64: 64>, stride_c = array<i64: 16>, accumulate = array<i64: 0>, precision = array<i64: 1>, alpha = 1.0 : f64}
      rt.loop r 1 count 2 {
        %r3 = rt.slice %b4 [0] size 64
        %r4 = rt.slice %ws [0, 0, 256] size 256
        %r5 = rt.slice %b5 [0] size 64
        rt.gemm a(%r3) b(%r4) c(%r5) {batch = array<i64: 1>, m = array<i64: 2>, n = array<i64: 8>, k = array<i64: 8>, trans_a = array<i64: 0>, trans_b = array<i64: 0>, stride_a = array<i64: 16>, stride_b = array<i64: 64>, stride_c = array<i64: 16>, accumulate = array<i64: 0>, precision = array<i64: 1>, alpha = 1.0 : f64}
      }
      rt.loop r 2 count 2 {
        %r6 = rt.slice %b5 [0] size 64
        %r7 = rt.slice %ws [256, 0, 0, -256] size 256
        %r8 = rt.slice %b4 [0] size 64
        rt.gemm a(%r6) b(%r7) c(%r8) {batch = array<i64: 1>, m = array<i64: 2>, n = array<i64: 8>, k = array<i64: 8>, trans_a = array<i64: 0>, trans_b = array<i64: 1>, stride_a = array<i64: 16>, stride_b = array<i64: 64>, stride_c = array<i64: 16>, accumulate = array<i64: 0>, precision = array<i64: 1>, alpha = 1.0 : f64}
      }
    }
    rt.loop r 0 count 2 {
      %r9 = rt.slice %x [0] size 64
      %r10 = rt.slice %u [0] size 256
      %r11 = rt.slice %b4 [0] size 64
      rt.gemm a(%r9) b(%r10) c(%r11) {batch = array<i64: 1>, m = array<i64: 2>, n = array<i64: 8>, k = array<i64: 8>, trans_a = array<i64: 0>, trans_b = array<i64: 0>, stride_a = array<i64: 16>, stride_b = array<i64: 64>, stride_c = array<i64: 16>, accumulate = array<i64: 0>, precision = array<i64: 1>, alpha = 1.0 : f64}
      %r12 = rt.slice %u [0] size 256
      rt.fill dst(%r12) {count = array<i64: 64>, value = 0.0 : f64}
    }
    %r13 = rt.slice %x [0] size 64
    %r14 = rt.slice %w [0] size 256
    %r15 = rt.slice %b4 [0] size 64
    rt.gemm a(%r13) b(%r14) c(%r15) {batch = array<i64: 1>, m = array<i64: 2>, n = array<i64: 8>, k = array<i64: 8>, trans_a = array<i64: 0>, trans_b = array<i64: 0>, stride_a = array<i64: 16>, stride_b = array<i64: 64>, stride_c = array<i64: 16>, accumulate = array<i64: 0>, precision = array<i64: 0>, alpha = 1.0 : f64}
    %r16 = rt.slice %w [0] size 256
    rt.fill dst(%r16) {count = array<i64: 64>, value = 0.0 : f64}
    %r17 = rt.slice %x [0] size 64
    %r18 = rt.slice %w [0] size 256
    %r19 = rt.slice %b4 [0] size 64
    rt.gemm a(%r17) b(%r18) c(%r19) {batch = array<i64: 1>, m = array<i64: 2>, n = array<i64: 8>, k = array<i64: 8>, trans_a = array<i64: 0>, trans_b = array<i64: 0>, stride_a = array<i64: 16>, stride_b = array<i64: 64>, stride_c = array<i64: 16>, accumulate = array<i64: 0>, precision = array<i64: 1>, alpha = 1.0 : f64}
  }
}

// -----

// A phase inside the layer loop: the copy of the layer's weight is made in
// the phase (after phase_begin, out of the micro-batch loop r1 only), one
// layer at a time, so the weight stays a phase-only state that may live in
// host memory. A GEMM operand already stored as bf16 is left alone.

// CHECK-LABEL: rt.program @p
// CHECK: %[[B2:.*]] = rt.alloc size 64{{$}}
// CHECK-NEXT: %[[B4:.*]] = rt.alloc size 32 {bf16}
// CHECK-NEXT: %[[C:.*]] = rt.alloc size 128 {bf16, label = "bf16 copy of @ws"}
// CHECK: rt.loop r 0 count 2 {
// CHECK-NEXT: rt.phase_begin
// CHECK-NEXT: %[[S0:.*]] = rt.slice %ws [0, 256] size 256
// CHECK-NEXT: %[[S1:.*]] = rt.slice %[[C]] [0] size 128
// CHECK-NEXT: rt.scale x(%[[S0]]) out(%[[S1]]) {bf16 = 2 : i64, count = array<i64: 64>, factor = 1.000000e+00 : f64}
// CHECK-NEXT: rt.loop r 1 count 2 {
// CHECK-NEXT: %[[G0:.*]] = rt.slice %x [0] size 64
// CHECK-NEXT: %[[G1:.*]] = rt.slice %[[C]] [0] size 128
// CHECK-NEXT: %[[G2:.*]] = rt.slice %[[B2]] [0] size 64
// CHECK-NEXT: rt.gemm a(%[[G0]]) b(%[[G1]]) c(%[[G2]]) {{\{.*, bf16 = 2 : i64, .*\}$}}
// CHECK-NEXT: %[[H0:.*]] = rt.slice %[[B4]] [0] size 32
// CHECK-NEXT: %[[H1:.*]] = rt.slice %[[C]] [0] size 128
// CHECK-NEXT: %[[H2:.*]] = rt.slice %[[B2]] [0] size 64
// CHECK-NEXT: rt.gemm a(%[[H0]]) b(%[[H1]]) c(%[[H2]]) {{\{.*, bf16 = 3 : i64, .*\}$}}
// CHECK-NEXT: }
// CHECK-NEXT: rt.phase_end

module {
  rt.state @x : tensor<2x8xf32> role "input" at 0 size 64 {hf = "x", init = "zeros", init_std = 0.0 : f64}
  rt.state @ws : tensor<2x8x8xf32> role "parameter" at 0 size 512 {hf = "ws", init = "zeros", init_std = 0.0 : f64}
  rt.program @p inputs [] registers 2 transient 0 attributes {rt.phase_names = ["layer"]} {
    %x = rt.state_ref @x
    %ws = rt.state_ref @ws
    %b2 = rt.alloc size 64
    %b4 = rt.alloc size 32 {bf16}
    rt.loop r 0 count 2 {
      rt.phase_begin {phase = array<i64: 0>}
      rt.loop r 1 count 2 {
        %r20 = rt.slice %x [0] size 64
        %r21 = rt.slice %ws [0, 256] size 256
        %r22 = rt.slice %b2 [0] size 64
        rt.gemm a(%r20) b(%r21) c(%r22) {batch = array<i64: 1>, m = array<i64: 2>, n = array<i64: 8>, k = array<i64: 8>, trans_a = array<i64: 0>, trans_b = array<i64: 0>, stride_a = array<i64: 16>, stride_b = array<i64: 64>, stride_c = array<i64: 16>, accumulate = array<i64: 0>, precision = array<i64: 1>, alpha = 1.0 : f64}
        %r23 = rt.slice %b4 [0] size 32
        %r24 = rt.slice %ws [0, 256] size 256
        %r25 = rt.slice %b2 [0] size 64
        rt.gemm a(%r23) b(%r24) c(%r25) {batch = array<i64: 1>, m = array<i64: 2>, n = array<i64: 8>, k = array<i64: 8>, trans_a = array<i64: 0>, trans_b = array<i64: 0>, stride_a = array<i64: 16>, stride_b = array<i64: 64>, stride_c = array<i64: 16>, accumulate = array<i64: 0>, precision = array<i64: 1>, alpha = 1.0 : f64, bf16 = 1 : i64}
      }
      rt.phase_end {phase = array<i64: 0>}
    }
  }
}

// -----

// One block, two phases reading the same weight: each phase makes its own
// copy (a copy never lives across phases). A bias-gradient epilogue sums
// its unrounded a, so a parameter there stays fp32.

// CHECK-LABEL: rt.program @q
// CHECK: %[[B2:.*]] = rt.alloc size 64{{$}}
// CHECK-NEXT: %[[B3:.*]] = rt.alloc size 32{{$}}
// CHECK-NEXT: %[[C4:.*]] = rt.alloc size 128 {bf16, label = "bf16 copy of @w"}
// CHECK-NEXT: %[[C5:.*]] = rt.alloc size 128 {bf16, label = "bf16 copy of @w"}
// CHECK-NEXT: rt.phase_begin {phase = array<i64: 0>}
// CHECK-NEXT: %[[S0:.*]] = rt.slice %w [0] size 256
// CHECK-NEXT: %[[S1:.*]] = rt.slice %[[C4]] [0] size 128
// CHECK-NEXT: rt.scale x(%[[S0]]) out(%[[S1]])
// CHECK-NEXT: %[[G0:.*]] = rt.slice %x [0] size 64
// CHECK-NEXT: %[[G1:.*]] = rt.slice %[[C4]] [0] size 128
// CHECK-NEXT: %[[G2:.*]] = rt.slice %[[B2]] [0] size 64
// CHECK-NEXT: rt.gemm a(%[[G0]]) b(%[[G1]]) c(%[[G2]])
// CHECK-NEXT: rt.phase_end
// CHECK-NEXT: rt.phase_begin {phase = array<i64: 1>}
// CHECK-NEXT: %[[T0:.*]] = rt.slice %w [0] size 256
// CHECK-NEXT: %[[T1:.*]] = rt.slice %[[C5]] [0] size 128
// CHECK-NEXT: rt.scale x(%[[T0]]) out(%[[T1]])
// CHECK-NEXT: %[[H0:.*]] = rt.slice %x [0] size 64
// CHECK-NEXT: %[[H1:.*]] = rt.slice %[[C5]] [0] size 128
// CHECK-NEXT: %[[H2:.*]] = rt.slice %[[B2]] [0] size 64
// CHECK-NEXT: rt.gemm a(%[[H0]]) b(%[[H1]]) c(%[[H2]])
// CHECK-NEXT: %[[E0:.*]] = rt.slice %w [0] size 256
// CHECK-NEXT: %[[E1:.*]] = rt.slice %x [0] size 64
// CHECK-NEXT: %[[E2:.*]] = rt.slice %[[B2]] [0] size 64
// CHECK-NEXT: %[[E3:.*]] = rt.slice %[[B3]] [0] size 32
// CHECK-NEXT: rt.gemm_epilogue a(%[[E0]]) b(%[[E1]]) c(%[[E2]]) vector(%[[E3]]) {{\{.*, batch = array<i64: 1>, epilogue = .*\}$}}
// CHECK-NEXT: rt.phase_end

module {
  rt.state @x : tensor<2x8xf32> role "input" at 0 size 64 {hf = "x", init = "zeros", init_std = 0.0 : f64}
  rt.state @w : tensor<8x8xf32> role "parameter" at 0 size 256 {hf = "w", init = "zeros", init_std = 0.0 : f64}
  rt.program @q inputs [] registers 0 transient 0 attributes {rt.phase_names = ["a", "b"]} {
    %x = rt.state_ref @x
    %w = rt.state_ref @w
    %b2 = rt.alloc size 64
    %b3 = rt.alloc size 32
    rt.phase_begin {phase = array<i64: 0>}
    %r26 = rt.slice %x [0] size 64
    %r27 = rt.slice %w [0] size 256
    %r28 = rt.slice %b2 [0] size 64
    rt.gemm a(%r26) b(%r27) c(%r28) {batch = array<i64: 1>, m = array<i64: 2>, n = array<i64: 8>, k = array<i64: 8>, trans_a = array<i64: 0>, trans_b = array<i64: 0>, stride_a = array<i64: 16>, stride_b = array<i64: 64>, stride_c = array<i64: 16>, accumulate = array<i64: 0>, precision = array<i64: 1>, alpha = 1.0 : f64}
    rt.phase_end {phase = array<i64: 0>}
    rt.phase_begin {phase = array<i64: 1>}
    %r29 = rt.slice %x [0] size 64
    %r30 = rt.slice %w [0] size 256
    %r31 = rt.slice %b2 [0] size 64
    rt.gemm a(%r29) b(%r30) c(%r31) {batch = array<i64: 1>, m = array<i64: 2>, n = array<i64: 8>, k = array<i64: 8>, trans_a = array<i64: 0>, trans_b = array<i64: 0>, stride_a = array<i64: 16>, stride_b = array<i64: 64>, stride_c = array<i64: 16>, accumulate = array<i64: 0>, precision = array<i64: 1>, alpha = 1.0 : f64}
    %r32 = rt.slice %w [0] size 256
    %r33 = rt.slice %x [0] size 64
    %r34 = rt.slice %b2 [0] size 64
    %r35 = rt.slice %b3 [0] size 32
    rt.gemm_epilogue a(%r32) b(%r33) c(%r34) vector(%r35) {batch = array<i64: 1>, m = array<i64: 8>, n = array<i64: 2>, k = array<i64: 8>, trans_a = array<i64: 1>, trans_b = array<i64: 1>, stride_a = array<i64: 64>, stride_b = array<i64: 16>, stride_c = array<i64: 16>, accumulate = array<i64: 0>, precision = array<i64: 1>, epilogue = array<i64: 2>, alpha = 1.0 : f64}
    rt.phase_end {phase = array<i64: 1>}
  }
}
