// RUN: ferry-opt %s --ferry-layout-arena | FileCheck %s

// Tests ferry-layout-arena alone.
// * States: @x and @y on the device, packed in declaration order at 64-byte
//   alignment (0 and 64: 192 bytes of states); @h, a remote buffer, at 0 of
//   host memory. Their provisional `at 999` is replaced.
// * Temporaries above the states (192), by live range, largest first: the
//   staging buffer %b7 (64 KiB, alive inside the loop) at 192; temporaries
//   %b3 and %b4, alive before the loop at different times, share 192 too.
// * Temporary %b5 is written before the loop and read inside it, so it lives
//   over the whole loop (the body runs twice): temporary %b6, written after
//   %b5's last read in the body, still gets its own place (65792, not 65728).
// * Every slice is then of the arena (%arena) or, for @h, of host memory
//   (%host) at its absolute address; no state_ref or alloc is left.
// * The plan: transient 65664 bytes, arena 192 + 65664; the phase runs twice
//   and loads 2 x 64 KiB. rt.recompute, read by ferry-place-buffers, goes.

// CHECK: module attributes {rt.alignment = 64 : i64, rt.arena_bytes = 65856 : i64, rt.host_bytes = 65536 : i64, rt.parameter_count = 16392 : i64, rt.state_bytes = 192 : i64} {
// CHECK-NEXT: rt.state @x : tensor<8xf32> role "parameter" at 0 size 32
// CHECK-NEXT: rt.state @h : tensor<16384xf32> role "parameter" at 0 size 65536 {{.*}}host
// CHECK-NEXT: rt.state @y : tensor<25xf32> role "state" at 64 size 100
// CHECK-NEXT: rt.program @f inputs [] registers 1 transient 65664 attributes {rt.max_live_bytes = 65664 : i64, rt.phase_names = ["p"], rt.phases = [{bytes_in = 131072 : i64, bytes_out = 0 : i64, executions = 2 : i64, flops = 0.000000e+00 : f64, name = "p", peak_bytes = 65856 : i64}]} {
// CHECK-NEXT: %arena = rt.arena{{$}}
// CHECK-NEXT: %host = rt.arena host
// CHECK-NEXT: %[[X:.*]] = rt.slice %arena [0] size 32
// CHECK-NEXT: %[[O:.*]] = rt.slice %arena [192] size 32
// CHECK-NEXT: rt.tanh x(%[[X]]) out(%[[O]])
// CHECK-NEXT: %[[X:.*]] = rt.slice %arena [192] size 32
// CHECK-NEXT: %[[O:.*]] = rt.slice %arena [0] size 32
// CHECK-NEXT: rt.tanh x(%[[X]]) out(%[[O]])
// CHECK-NEXT: %[[X:.*]] = rt.slice %arena [0] size 32
// CHECK-NEXT: %[[O:.*]] = rt.slice %arena [192] size 32
// CHECK-NEXT: rt.tanh x(%[[X]]) out(%[[O]])
// CHECK-NEXT: %[[X:.*]] = rt.slice %arena [192] size 32
// CHECK-NEXT: %[[O:.*]] = rt.slice %arena [0] size 32
// CHECK-NEXT: rt.tanh x(%[[X]]) out(%[[O]])
// CHECK-NEXT: %[[X:.*]] = rt.slice %arena [0] size 32
// CHECK-NEXT: %[[O:.*]] = rt.slice %arena [65728] size 32
// CHECK-NEXT: rt.tanh x(%[[X]]) out(%[[O]])
// CHECK-NEXT: rt.loop r 0 count 2 {
// CHECK-NEXT: rt.phase_begin {phase = array<i64: 0>}
// CHECK-NEXT: %[[S:.*]] = rt.slice %host [0] size 65536
// CHECK-NEXT: %[[D:.*]] = rt.slice %arena [192] size 65536
// CHECK-NEXT: rt.load src(%[[S]]) dst(%[[D]])
// CHECK-NEXT: rt.wait
// CHECK-NEXT: %[[X:.*]] = rt.slice %arena [65728] size 32
// CHECK-NEXT: %[[O:.*]] = rt.slice %arena [0] size 32
// CHECK-NEXT: rt.tanh x(%[[X]]) out(%[[O]])
// CHECK-NEXT: %[[X:.*]] = rt.slice %arena [0] size 32
// CHECK-NEXT: %[[O:.*]] = rt.slice %arena [65792] size 32
// CHECK-NEXT: rt.tanh x(%[[X]]) out(%[[O]])
// CHECK-NEXT: %[[X:.*]] = rt.slice %arena [65792] size 32
// CHECK-NEXT: %[[O:.*]] = rt.slice %arena [0] size 32
// CHECK-NEXT: rt.tanh x(%[[X]]) out(%[[O]])
// CHECK-NEXT: %[[X:.*]] = rt.slice %arena [192] size 32
// CHECK-NEXT: %[[O:.*]] = rt.slice %arena [64] size 32
// CHECK-NEXT: rt.tanh x(%[[X]]) out(%[[O]])
// CHECK-NEXT: rt.phase_end {phase = array<i64: 0>}
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NOT: rt.state_ref
// CHECK-NOT: rt.alloc
// CHECK-NOT: rt.recompute

module attributes {rt.recompute} {
  rt.state @x : tensor<8xf32> role "parameter" at 999 size 32 {hf = "x", init = "zeros", init_std = 0.0 : f64}
  rt.state @h : tensor<16384xf32> role "parameter" at 999 size 65536 {hf = "h", init = "zeros", init_std = 0.0 : f64, host}
  rt.state @y : tensor<25xf32> role "state" at 999 size 100 {hf = "y", init = "zeros", init_std = 0.0 : f64}
  rt.program @f inputs [] registers 1 transient 0 attributes {rt.phase_names = ["p"]} {
    %x = rt.state_ref @x
    %h = rt.state_ref @h
    %y = rt.state_ref @y
    %b3 = rt.alloc size 32
    %b4 = rt.alloc size 32
    %b5 = rt.alloc size 32
    %b6 = rt.alloc size 32
    %b7 = rt.alloc size 65536 {label = "@h (staged)"}
    %r0 = rt.slice %x [0] size 32
    %r1 = rt.slice %b3 [0] size 32
    rt.tanh x(%r0) out(%r1) {count = array<i64: 8>}
    %r2 = rt.slice %b3 [0] size 32
    %r3 = rt.slice %x [0] size 32
    rt.tanh x(%r2) out(%r3) {count = array<i64: 8>}
    %r4 = rt.slice %x [0] size 32
    %r5 = rt.slice %b4 [0] size 32
    rt.tanh x(%r4) out(%r5) {count = array<i64: 8>}
    %r6 = rt.slice %b4 [0] size 32
    %r7 = rt.slice %x [0] size 32
    rt.tanh x(%r6) out(%r7) {count = array<i64: 8>}
    %r8 = rt.slice %x [0] size 32
    %r9 = rt.slice %b5 [0] size 32
    rt.tanh x(%r8) out(%r9) {count = array<i64: 8>}
    rt.loop r 0 count 2 {
      rt.phase_begin {phase = array<i64: 0>}
      %r10 = rt.slice %h [0] size 65536
      %r11 = rt.slice %b7 [0] size 65536
      rt.load src(%r10) dst(%r11) {bytes = array<i64: 65536>, event = array<i64: 0>}
      rt.wait pending() {event = array<i64: 0>}
      %r12 = rt.slice %b5 [0] size 32
      %r13 = rt.slice %x [0] size 32
      rt.tanh x(%r12) out(%r13) {count = array<i64: 8>}
      %r14 = rt.slice %x [0] size 32
      %r15 = rt.slice %b6 [0] size 32
      rt.tanh x(%r14) out(%r15) {count = array<i64: 8>}
      %r16 = rt.slice %b6 [0] size 32
      %r17 = rt.slice %x [0] size 32
      rt.tanh x(%r16) out(%r17) {count = array<i64: 8>}
      %r18 = rt.slice %b7 [0] size 32
      %r19 = rt.slice %y [0] size 32
      rt.tanh x(%r18) out(%r19) {count = array<i64: 8>}
      rt.phase_end {phase = array<i64: 0>}
    }
  }
}
