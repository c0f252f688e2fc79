// RUN: ferry-opt %s --split-input-file --ferry-stage-remote-buffers | FileCheck %s

// Tests ferry-stage-remote-buffers alone. @layer.w is a remote buffer
// (`host`); the phase is the whole body of the layer loop r0 and reads
// layer r0's entry (offset 65536 * r0).

// With rt.prefetch_levels = ["next-layer"], the entry is double-buffered:
// a staging buffer of two halves, a parity register r1 (r0 & 1) picking
// the half the kernels use; layer 0 is loaded before the loop; each
// iteration waits for its half, then loads layer r0 + 1 into the other half
// (guarded by r0 + 1 < 4) while it computes; a wait after the loop holds
// both halves live until the copies are done.
// CHECK: module attributes {rt.prefetch = "on (next layer only); 1 staged ranges double-buffered (loaded while the previous layer or micro-batch computes), 0 loaded when their phase starts"} {
// CHECK: rt.program @train_step inputs [] registers 2
// CHECK-NEXT: %layer.w = rt.state_ref @layer.w
// CHECK-NEXT: %x = rt.state_ref @x
// CHECK-NEXT: %[[T:.*]] = rt.alloc size 65536
// CHECK-NEXT: %[[S:.*]] = rt.alloc size 131072 {label = "@layer.w (staged)"}
// CHECK-NEXT: %[[A:.*]] = rt.slice %layer.w [0, 0] size 65536
// CHECK-NEXT: %[[B:.*]] = rt.slice %[[S]] [0] size 65536
// CHECK-NEXT: rt.load src(%[[A]]) dst(%[[B]]) {bytes = array<i64: 65536>, event = array<i64: 0>}
// CHECK-NEXT: rt.loop r 0 count 4 parity r 1 {
// CHECK-NEXT: rt.phase_begin {phase = array<i64: 0>}
// CHECK-NEXT: rt.wait {event = array<i64: 0>}
// CHECK-NEXT: %[[A:.*]] = rt.slice %layer.w [65536, 65536] size 65536
// CHECK-NEXT: %[[B:.*]] = rt.slice %[[S]] [65536, 0, -65536] size 65536
// CHECK-NEXT: rt.load src(%[[A]]) dst(%[[B]]) {bytes = array<i64: 65536>, event = array<i64: 0>, guard = array<i64: 1, 1>, limit = array<i64: 4>}
// CHECK-NEXT: %[[A:.*]] = rt.slice %[[S]] [0, 0, 65536] size 65536
// CHECK-NEXT: %[[B:.*]] = rt.slice %[[T]] [0] size 65536
// CHECK-NEXT: rt.copy src(%[[A]]) dst(%[[B]])
// CHECK-NEXT: rt.phase_end {phase = array<i64: 0>}
// CHECK-NEXT: }
// CHECK-NEXT: %[[A:.*]] = rt.slice %[[S]] [0] size 131072
// CHECK-NEXT: rt.wait pending(%[[A]]) {event = array<i64: 0>}
// CHECK-NEXT: %[[A:.*]] = rt.slice %x [0] size 8192
// CHECK-NEXT: rt.fill dst(%[[A]])
module attributes {rt.prefetch_levels = ["next-layer"], rt.prefetch = "on (next layer only)"} {
  rt.state @layer.w : tensor<4x128x128xf32> role "parameter" at 0 size 262144 {hf = "layer.{}.w", init = "normal", init_std = 2.0e-02 : f64, host, stacked}
  rt.state @x : tensor<16x128xf32> role "input" at 262144 size 8192 {hf = "x", init = "zeros", init_std = 0.0 : f64}
  rt.program @train_step inputs [] registers 1 transient 0 attributes {rt.phase_names = ["layer"]} {
    %layer.w = rt.state_ref @layer.w
    %x = rt.state_ref @x
    %b2 = rt.alloc size 65536
    rt.loop r 0 count 4 {
      rt.phase_begin {phase = array<i64: 0>}
      %r0 = rt.slice %layer.w [0, 65536] size 65536
      %r1 = rt.slice %b2 [0] size 65536
      rt.copy src(%r0) dst(%r1) {bytes = array<i64: 65536>}
      rt.phase_end {phase = array<i64: 0>}
    }
    %r2 = rt.slice %x [0] size 8192
    rt.fill dst(%r2) {count = array<i64: 2048>, value = 1.0 : f64}
  }
}

// -----

// Without prefetch, the phase loads its range when it starts and waits.
// CHECK: rt.program @train_step inputs [] registers 1
// CHECK-NEXT: %layer.w = rt.state_ref @layer.w
// CHECK-NEXT: %x = rt.state_ref @x
// CHECK-NEXT: %[[T:.*]] = rt.alloc size 65536
// CHECK-NEXT: %[[S:.*]] = rt.alloc size 65536 {label = "@layer.w (staged)"}
// CHECK-NEXT: rt.loop r 0 count 4 {
// CHECK-NEXT: rt.phase_begin {phase = array<i64: 0>}
// CHECK-NEXT: %[[A:.*]] = rt.slice %layer.w [0, 65536] size 65536
// CHECK-NEXT: %[[B:.*]] = rt.slice %[[S]] [0] size 65536
// CHECK-NEXT: rt.load src(%[[A]]) dst(%[[B]]) {bytes = array<i64: 65536>, event = array<i64: 0>}
// CHECK-NEXT: rt.wait {event = array<i64: 0>}
// CHECK-NEXT: %[[A:.*]] = rt.slice %[[S]] [0] size 65536
// CHECK-NEXT: %[[B:.*]] = rt.slice %[[T]] [0] size 65536
// CHECK-NEXT: rt.copy src(%[[A]]) dst(%[[B]])
// CHECK-NEXT: rt.phase_end {phase = array<i64: 0>}
module attributes {rt.prefetch_levels = []} {
  rt.state @layer.w : tensor<4x128x128xf32> role "parameter" at 0 size 262144 {hf = "layer.{}.w", init = "normal", init_std = 2.0e-02 : f64, host, stacked}
  rt.state @x : tensor<16x128xf32> role "input" at 262144 size 8192 {hf = "x", init = "zeros", init_std = 0.0 : f64}
  rt.program @train_step inputs [] registers 1 transient 0 attributes {rt.phase_names = ["layer"]} {
    %layer.w = rt.state_ref @layer.w
    %x = rt.state_ref @x
    %b2 = rt.alloc size 65536
    rt.loop r 0 count 4 {
      rt.phase_begin {phase = array<i64: 0>}
      %r3 = rt.slice %layer.w [0, 65536] size 65536
      %r4 = rt.slice %b2 [0] size 65536
      rt.copy src(%r3) dst(%r4) {bytes = array<i64: 65536>}
      rt.phase_end {phase = array<i64: 0>}
    }
    %r5 = rt.slice %x [0] size 8192
    rt.fill dst(%r5) {count = array<i64: 2048>, value = 1.0 : f64}
  }
}

// -----

// A range the phase writes first is not loaded, only stored when the phase
// ends (event 1), and waited for.
// CHECK: %[[S:.*]] = rt.alloc size 65536 {label = "@layer.w (staged)"}
// CHECK-NEXT: rt.loop r 0 count 4 {
// CHECK-NEXT: rt.phase_begin {phase = array<i64: 0>}
// CHECK-NEXT: %[[A:.*]] = rt.slice %[[S]] [0] size 65536
// CHECK-NEXT: rt.fill dst(%[[A]])
// CHECK-NEXT: %[[A:.*]] = rt.slice %[[S]] [0] size 65536
// CHECK-NEXT: %[[B:.*]] = rt.slice %layer.w [0, 65536] size 65536
// CHECK-NEXT: rt.store src(%[[A]]) dst(%[[B]]) {bytes = array<i64: 65536>, event = array<i64: 1>}
// CHECK-NEXT: rt.wait {event = array<i64: 1>}
// CHECK-NEXT: rt.phase_end {phase = array<i64: 0>}
module attributes {rt.prefetch_levels = []} {
  rt.state @layer.w : tensor<4x128x128xf32> role "parameter" at 0 size 262144 {hf = "layer.{}.w", init = "normal", init_std = 2.0e-02 : f64, host, stacked}
  rt.program @train_step inputs [] registers 1 transient 0 attributes {rt.phase_names = ["layer.init"]} {
    %layer.w = rt.state_ref @layer.w
    rt.loop r 0 count 4 {
      rt.phase_begin {phase = array<i64: 0>}
      %r6 = rt.slice %layer.w [0, 65536] size 65536
      rt.fill dst(%r6) {count = array<i64: 16384>, value = 1.0 : f64}
      rt.phase_end {phase = array<i64: 0>}
    }
  }
}

// -----

// A loop with an empty body (an scf.for of index arithmetic only) is left
// alone, wherever it is: the phase's range is staged as usual.
// CHECK: rt.program @train_step inputs [] registers 2
// CHECK: rt.loop r 1 count 2 {
// CHECK-NEXT: }
// CHECK: rt.phase_begin {phase = array<i64: 0>}
// CHECK: rt.load
// CHECK: rt.loop r 0 count 3 {
// CHECK-NEXT: }
// CHECK: rt.phase_end {phase = array<i64: 0>}
module attributes {rt.prefetch_levels = [], rt.prefetch = "off"} {
  rt.state @w : tensor<128x128xf32> role "parameter" at 0 size 65536 {hf = "w", init = "normal", init_std = 2.0e-02 : f64, host}
  rt.program @train_step inputs [] registers 2 transient 0 attributes {rt.phase_names = ["p"]} {
    %w = rt.state_ref @w
    %t = rt.alloc size 65536
    rt.loop r 1 count 2 {
    }
    rt.phase_begin {phase = array<i64: 0>}
    %r0 = rt.slice %w [0] size 65536
    %r1 = rt.slice %t [0] size 65536
    rt.copy src(%r0) dst(%r1) {bytes = array<i64: 65536>}
    rt.loop r 0 count 3 {
    }
    rt.phase_end {phase = array<i64: 0>}
  }
}
