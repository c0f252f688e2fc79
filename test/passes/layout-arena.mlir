// RUN: ferry-opt %s --ferry-layout-arena | FileCheck %s

// Tests ferry-layout-arena alone.
// * States: @x and @y on the device, packed in declaration order at 64-byte
//   alignment (0 and 64: 192 bytes of states); @h, a remote buffer, at 0 of
//   host memory. Their provisional `at 999` is replaced.
// * Temporaries above the states (192), by live range, largest first: the
//   staging buffer 7 (64 KiB, alive inside the loop) at 192; temporaries 3
//   and 4, alive before the loop at different times, share 192 too.
// * Temporary 5 is written before the loop and read inside it, so it lives
//   over the whole loop (the body runs twice): temporary 6, written after 5's
//   last read in the body, still gets its own place (65792, not 65728).
// * The plan: transient 65664 bytes, arena 192 + 65664; the phase runs twice
//   and loads 2 x 64 KiB. rt.recompute, read by ferry-place-buffers, goes.

// CHECK: module attributes {rt.alignment = 64 : i64, rt.arena_bytes = 65856 : i64, rt.host_bytes = 65536 : i64, rt.parameter_count = 16392 : i64, rt.state_bytes = 192 : i64} {
// CHECK-NEXT: rt.state @x : tensor<8xf32> role "parameter" at 0 size 32
// CHECK-NEXT: rt.state @h : tensor<16384xf32> role "parameter" at 0 size 65536 {{.*}}host
// CHECK-NEXT: rt.state @y : tensor<25xf32> role "state" at 64 size 100
// CHECK-NEXT: rt.program @f inputs [] registers 1 transient 65664 attributes {rt.max_live_bytes = 65664 : i64, rt.phase_names = ["p"], rt.phases = [{bytes_in = 131072 : i64, bytes_out = 0 : i64, executions = 2 : i64, flops = 0.000000e+00 : f64, name = "p", peak_bytes = 65856 : i64}]} {
// CHECK-NEXT: rt.kernel "tanh" buffers [array<i64: 32, 0>, array<i64: 32, 192>]
// CHECK-NEXT: rt.kernel "tanh" buffers [array<i64: 32, 192>, array<i64: 32, 0>]
// CHECK-NEXT: rt.kernel "tanh" buffers [array<i64: 32, 0>, array<i64: 32, 192>]
// CHECK-NEXT: rt.kernel "tanh" buffers [array<i64: 32, 192>, array<i64: 32, 0>]
// CHECK-NEXT: rt.kernel "tanh" buffers [array<i64: 32, 0>, array<i64: 32, 65728>]
// CHECK-NEXT: rt.loop r 0 count 2 {
// CHECK-NEXT: rt.kernel "phase_begin"
// CHECK-NEXT: rt.kernel "load" buffers [array<i64: 65536, 0>, array<i64: 65536, 192>]
// CHECK-NEXT: rt.kernel "wait"
// CHECK-NEXT: rt.kernel "tanh" buffers [array<i64: 32, 65728>, array<i64: 32, 0>]
// CHECK-NEXT: rt.kernel "tanh" buffers [array<i64: 32, 0>, array<i64: 32, 65792>]
// CHECK-NEXT: rt.kernel "tanh" buffers [array<i64: 32, 65792>, array<i64: 32, 0>]
// CHECK-NEXT: rt.kernel "tanh" buffers [array<i64: 32, 192>, array<i64: 32, 64>]
// CHECK-NEXT: rt.kernel "phase_end"
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NOT: rt.call
// CHECK-NOT: rt.recompute

module attributes {rt.recompute} {
  rt.state @x : tensor<8xf32> role "parameter" at 999 size 32 {hf = "x", init = "zeros", init_std = 0.0 : f64}
  rt.state @h : tensor<16384xf32> role "parameter" at 999 size 65536 {hf = "h", init = "zeros", init_std = 0.0 : f64, host}
  rt.state @y : tensor<25xf32> role "state" at 999 size 100 {hf = "y", init = "zeros", init_std = 0.0 : f64}
  rt.program @f inputs [] registers 1 transient 0 attributes {rt.phase_names = ["p"]} {
    rt.buffer 3 size 32
    rt.buffer 4 size 32
    rt.buffer 5 size 32
    rt.buffer 6 size 32
    rt.buffer 7 size 65536 {label = "@h (staged)"}
    rt.call "tanh" buffers [array<i64: 0, 32, 0>, array<i64: 3, 32, 0>] ints [array<i64: 8>] floats []
    rt.call "tanh" buffers [array<i64: 3, 32, 0>, array<i64: 0, 32, 0>] ints [array<i64: 8>] floats []
    rt.call "tanh" buffers [array<i64: 0, 32, 0>, array<i64: 4, 32, 0>] ints [array<i64: 8>] floats []
    rt.call "tanh" buffers [array<i64: 4, 32, 0>, array<i64: 0, 32, 0>] ints [array<i64: 8>] floats []
    rt.call "tanh" buffers [array<i64: 0, 32, 0>, array<i64: 5, 32, 0>] ints [array<i64: 8>] floats []
    rt.loop r 0 count 2 {
      rt.call "phase_begin" buffers [] ints [array<i64: 0>] floats []
      rt.call "load" buffers [array<i64: 1, 65536, 0>, array<i64: 7, 65536, 0>] ints [array<i64: 65536>, array<i64: 0>] floats []
      rt.call "wait" buffers [] ints [array<i64: 0>] floats []
      rt.call "tanh" buffers [array<i64: 5, 32, 0>, array<i64: 0, 32, 0>] ints [array<i64: 8>] floats []
      rt.call "tanh" buffers [array<i64: 0, 32, 0>, array<i64: 6, 32, 0>] ints [array<i64: 8>] floats []
      rt.call "tanh" buffers [array<i64: 6, 32, 0>, array<i64: 0, 32, 0>] ints [array<i64: 8>] floats []
      rt.call "tanh" buffers [array<i64: 7, 32, 0>, array<i64: 2, 32, 0>] ints [array<i64: 8>] floats []
      rt.call "phase_end" buffers [] ints [array<i64: 0>] floats []
    }
  }
}
