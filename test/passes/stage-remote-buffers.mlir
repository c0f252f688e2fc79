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
// CHECK-NEXT: rt.buffer 2 size 65536
// CHECK-NEXT: rt.buffer 3 size 131072 {label = "@layer.w (staged)"}
// CHECK-NEXT: rt.call "load" buffers [array<i64: 0, 65536, 0, 0>, array<i64: 3, 65536, 0>] ints [array<i64: 65536>, array<i64: 0>]
// CHECK-NEXT: rt.loop r 0 count 4 parity r 1 {
// CHECK-NEXT: rt.call "phase_begin"
// CHECK-NEXT: rt.call "wait" buffers [] ints [array<i64: 0>]
// CHECK-NEXT: rt.call "load" buffers [array<i64: 0, 65536, 65536, 65536>, array<i64: 3, 65536, 65536, 0, -65536>] ints [array<i64: 65536>, array<i64: 0>, array<i64: 1, 1>, array<i64: 4>]
// CHECK-NEXT: rt.call "copy" buffers [array<i64: 3, 65536, 0, 0, 65536>, array<i64: 2, 65536, 0>]
// CHECK-NEXT: rt.call "phase_end"
// CHECK-NEXT: }
// CHECK-NEXT: rt.call "wait" buffers [array<i64: 3, 131072, 0>] ints [array<i64: 0>]
// CHECK-NEXT: rt.call "fill" buffers [array<i64: 1, 8192, 0>]
module attributes {rt.prefetch_levels = ["next-layer"], rt.prefetch = "on (next layer only)"} {
  rt.state @layer.w : tensor<4x128x128xf32> role "parameter" at 0 size 262144 {hf = "layer.{}.w", init = "normal", init_std = 2.0e-02 : f64, host, stacked}
  rt.state @x : tensor<16x128xf32> role "input" at 262144 size 8192 {hf = "x", init = "zeros", init_std = 0.0 : f64}
  rt.program @train_step inputs [] registers 1 transient 0 attributes {rt.phase_names = ["layer"]} {
    rt.buffer 2 size 65536
    rt.loop r 0 count 4 {
      rt.call "phase_begin" buffers [] ints [array<i64: 0>] floats []
      rt.call "copy" buffers [array<i64: 0, 65536, 0, 65536>, array<i64: 2, 65536, 0>] ints [array<i64: 65536>] floats []
      rt.call "phase_end" buffers [] ints [array<i64: 0>] floats []
    }
    rt.call "fill" buffers [array<i64: 1, 8192, 0>] ints [array<i64: 2048>] floats [1.0]
  }
}

// -----

// Without prefetch, the phase loads its range when it starts and waits.
// CHECK: rt.program @train_step inputs [] registers 1
// CHECK-NEXT: rt.buffer 2 size 65536
// CHECK-NEXT: rt.buffer 3 size 65536 {label = "@layer.w (staged)"}
// CHECK-NEXT: rt.loop r 0 count 4 {
// CHECK-NEXT: rt.call "phase_begin"
// CHECK-NEXT: rt.call "load" buffers [array<i64: 0, 65536, 0, 65536>, array<i64: 3, 65536, 0>] ints [array<i64: 65536>, array<i64: 0>]
// CHECK-NEXT: rt.call "wait" buffers [] ints [array<i64: 0>]
// CHECK-NEXT: rt.call "copy" buffers [array<i64: 3, 65536, 0>, array<i64: 2, 65536, 0>]
// CHECK-NEXT: rt.call "phase_end"
module attributes {rt.prefetch_levels = []} {
  rt.state @layer.w : tensor<4x128x128xf32> role "parameter" at 0 size 262144 {hf = "layer.{}.w", init = "normal", init_std = 2.0e-02 : f64, host, stacked}
  rt.state @x : tensor<16x128xf32> role "input" at 262144 size 8192 {hf = "x", init = "zeros", init_std = 0.0 : f64}
  rt.program @train_step inputs [] registers 1 transient 0 attributes {rt.phase_names = ["layer"]} {
    rt.buffer 2 size 65536
    rt.loop r 0 count 4 {
      rt.call "phase_begin" buffers [] ints [array<i64: 0>] floats []
      rt.call "copy" buffers [array<i64: 0, 65536, 0, 65536>, array<i64: 2, 65536, 0>] ints [array<i64: 65536>] floats []
      rt.call "phase_end" buffers [] ints [array<i64: 0>] floats []
    }
    rt.call "fill" buffers [array<i64: 1, 8192, 0>] ints [array<i64: 2048>] floats [1.0]
  }
}

// -----

// A range the phase writes first is not loaded, only stored when the phase
// ends (event 1), and waited for.
// CHECK: rt.buffer 1 size 65536 {label = "@layer.w (staged)"}
// CHECK-NEXT: rt.loop r 0 count 4 {
// CHECK-NEXT: rt.call "phase_begin"
// CHECK-NEXT: rt.call "fill" buffers [array<i64: 1, 65536, 0>]
// CHECK-NEXT: rt.call "store" buffers [array<i64: 1, 65536, 0>, array<i64: 0, 65536, 0, 65536>] ints [array<i64: 65536>, array<i64: 1>]
// CHECK-NEXT: rt.call "wait" buffers [] ints [array<i64: 1>]
// CHECK-NEXT: rt.call "phase_end"
module attributes {rt.prefetch_levels = []} {
  rt.state @layer.w : tensor<4x128x128xf32> role "parameter" at 0 size 262144 {hf = "layer.{}.w", init = "normal", init_std = 2.0e-02 : f64, host, stacked}
  rt.program @train_step inputs [] registers 1 transient 0 attributes {rt.phase_names = ["layer.init"]} {
    rt.loop r 0 count 4 {
      rt.call "phase_begin" buffers [] ints [array<i64: 0>] floats []
      rt.call "fill" buffers [array<i64: 0, 65536, 0, 65536>] ints [array<i64: 16384>] floats [1.0]
      rt.call "phase_end" buffers [] ints [array<i64: 0>] floats []
    }
  }
}
