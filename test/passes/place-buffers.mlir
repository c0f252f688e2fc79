// RUN: ferry-opt %s --ferry-place-buffers | FileCheck %s --check-prefix=NONE
// RUN: ferry-opt %s --ferry-place-buffers=device-budget=250000 | FileCheck %s --check-prefix=ROOM
// RUN: ferry-opt %s --ferry-place-buffers=device-budget=150000 | FileCheck %s --check-prefix=TIGHT
// RUN: ferry-opt %s "--ferry-place-buffers=device-budget=250000 prefetch=false" | FileCheck %s --check-prefix=OFF

// Tests ferry-place-buffers alone. @layer.w (256 KiB) is only touched inside
// the phase that is the layer loop's body, so it may be a remote buffer;
// @x is used outside any phase and stays on the device.
// * No budget: everything stays on the device, nothing is recorded.
// * 250000 bytes: on the device @layer.w needs 262144 + 8192 + 65536; in
//   host memory, double-buffered one layer ahead, 8192 + 2 * 65536 + 65536 =
//   204800, which fits with every prefetch level.
// * 150000 bytes: 204800 does not fit; dropping levels in order (layer and
//   micro-batch, layer only, micro-batch only), the first that fits is
//   "next micro-batch only" (one staged copy of the layer: 139264 bytes).
// * prefetch=false: no level, and the note says why.
// The program itself is unchanged: ferry-stage-remote-buffers applies this.

// NONE-NOT: host
// NONE-NOT: rt.prefetch
// NONE: %[[T:.*]] = rt.alloc size 65536
// NONE: %[[A:.*]] = rt.slice %layer.w [0, 65536] size 65536
// NONE-NEXT: %[[B:.*]] = rt.slice %[[T]] [0] size 65536
// NONE-NEXT: rt.copy src(%[[A]]) dst(%[[B]])

// ROOM: module attributes {rt.prefetch = "on (next layer and next micro-batch, the first layer during the phase before its loop)", rt.prefetch_levels = ["next-layer", "next-micro-batch", "first-layer-early"]} {
// ROOM-NEXT: rt.state @layer.w : {{.*}} {hf = "layer.{}.w", host,
// ROOM-NEXT: rt.state @x : {{.*}} {hf = "x", init = "zeros"
// ROOM: %[[T:.*]] = rt.alloc size 65536
// ROOM: %[[A:.*]] = rt.slice %layer.w [0, 65536] size 65536
// ROOM-NEXT: %[[B:.*]] = rt.slice %[[T]] [0] size 65536
// ROOM-NEXT: rt.copy src(%[[A]]) dst(%[[B]])

// TIGHT: module attributes {rt.prefetch = "reduced to next micro-batch only: double-buffering everything needs 204800 bytes at the peak, over the 150000-byte budget", rt.prefetch_levels = ["next-micro-batch"]} {
// TIGHT-NEXT: rt.state @layer.w : {{.*}} host

// OFF: module attributes {rt.prefetch = "off (execution.prefetch: false)", rt.prefetch_levels = []} {
// OFF-NEXT: rt.state @layer.w : {{.*}} host

module {
  rt.state @layer.w : tensor<4x128x128xf32> role "parameter" at 0 size 262144 {hf = "layer.{}.w", init = "normal", init_std = 2.0e-02 : f64, stacked}
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
