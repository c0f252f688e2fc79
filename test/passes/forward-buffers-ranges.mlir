// RUN: ferry-opt %s --split-input-file --ferry-forward-buffers --verify-diagnostics | FileCheck %s

// Tests ferry-forward-buffers on ranges the lowering does not write itself
// but the IR allows:
// * one slice taken by both the producer and the copy: the producer gets a
//   slice of the destination of its own, the temporary goes;
// * a state named by two rt.state_refs is one buffer: a call touching it
//   through the other reference between the producer and the copy keeps
//   the copy;
// * a range that is not a slice is refused.

// CHECK-LABEL: rt.program @shared
// CHECK-NEXT: %[[A:.*]] = rt.state_ref @a
// CHECK-NEXT: %[[Y:.*]] = rt.state_ref @y
// CHECK-NEXT: %[[X:.*]] = rt.slice %[[A]] [0] size 32
// CHECK-NEXT: %[[O:.*]] = rt.slice %[[Y]] [0] size 32
// CHECK-NEXT: rt.tanh x(%[[X]]) out(%[[O]]) {count = array<i64: 8>}
// CHECK-NEXT: }
module {
  rt.state @a : tensor<8xf32> role "input" at 0 size 32 {hf = "a", init = "zeros", init_std = 0.0 : f64}
  rt.state @y : tensor<8xf32> role "state" at 64 size 32 {hf = "y", init = "zeros", init_std = 0.0 : f64}
  rt.program @shared inputs [] registers 0 transient 0 {
    %a = rt.state_ref @a
    %y = rt.state_ref @y
    %t = rt.alloc size 32
    %x = rt.slice %a [0] size 32
    %r = rt.slice %t [0] size 32
    rt.tanh x(%x) out(%r) {count = array<i64: 8>}
    %d = rt.slice %y [0] size 32
    rt.copy src(%r) dst(%d) {bytes = array<i64: 32>}
  }
}

// -----

// CHECK-LABEL: rt.program @aliased
// CHECK: rt.alloc size 32
// CHECK: rt.tanh
// CHECK: rt.fill
// CHECK: rt.copy
module {
  rt.state @a : tensor<8xf32> role "input" at 0 size 32 {hf = "a", init = "zeros", init_std = 0.0 : f64}
  rt.state @y : tensor<8xf32> role "state" at 64 size 32 {hf = "y", init = "zeros", init_std = 0.0 : f64}
  rt.program @aliased inputs [] registers 0 transient 0 {
    %a = rt.state_ref @a
    %y = rt.state_ref @y
    %y2 = rt.state_ref @y
    %t = rt.alloc size 32
    %x = rt.slice %a [0] size 32
    %r = rt.slice %t [0] size 32
    rt.tanh x(%x) out(%r) {count = array<i64: 8>}
    %f = rt.slice %y2 [0] size 32
    rt.fill dst(%f) {count = array<i64: 8>, value = 1.0 : f64}
    %s = rt.slice %t [0] size 32
    %d = rt.slice %y [0] size 32
    rt.copy src(%s) dst(%d) {bytes = array<i64: 32>}
  }
}

// -----

module {
  %other = builtin.unrealized_conversion_cast to !rt.range
  rt.program @p inputs [] registers 0 transient 0 {
    %arena = rt.arena
    %r = rt.slice %arena [0] size 32
    // expected-error @+1 {{takes a range that is not an rt.slice}}
    rt.tanh x(%r) out(%other) {count = array<i64: 8>}
  }
}
